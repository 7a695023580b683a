"""``kinrun init NAME``: a new controller's folder, ready to validate, test, deploy and check in CI.

    NAME/
      NAME.yaml                     a config (a ConfigMap labelled NAME.kinrun.dev/enabled=true
                                    gets an owned child ConfigMap), the schema modeline first
      tests/NAME.test.yaml          `kinrun test` cases of it (apply, then delete on removal)
      deploy/base/                  `kinrun manifests NAME.yaml --service-account-namespace NAME
                                    --with namespace`: runs in namespace NAME, watches all
                                    (regenerate it after each config change)
      deploy/kustomization.yaml     an overlay: the base's files, the image pinned in images:
      ci/kinrun-check.sh            `kinrun validate` + `kinrun test` + the base is current;
                                    exits non-zero on the first failure (any CI runs it)
      .github/workflows/kinrun.yaml the same as a GitHub Actions workflow

As kubebuilder's ``init`` scaffolds a project that builds and passes its tests before the
user changes a line, every file here is checked by ``tests/unit/cli/test_cli_init.py``:
validate passes, the cases pass, the base is what ``kinrun manifests`` writes. Departures
from kubebuilder, on purpose: no Go module, Makefile or Dockerfile (the controller is the
config; the image is kinrun's own), and the deploy folder is a plain kustomize overlay.

Refuses (:class:`ScaffoldError`) a NAME that is not a DNS-1123 label, and a folder that exists
and is not empty: nothing is overwritten.
"""

from __future__ import annotations

import re
from pathlib import Path

from kinrun.errors import KinrunError

NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
"""A DNS-1123 label: the controller's name is its Deployment's and its ConfigMaps' prefix."""


class ScaffoldError(KinrunError):
    """``kinrun init`` cannot write: a bad name, or a folder in the way (``path``)."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


CONFIG = """\
# {name}: made by `kinrun init {name}`. Validate: kinrun validate {name}.yaml
# Every key: `kinrun schema` (a JSON Schema for editors).
# Run on the embedded API server (no cluster): kinrun {name}.yaml --embedded
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  parents:                              # list+watch these ConfigMaps, cached
    apiVersion: v1
    kind: ConfigMap
    labelSelector: {name}.kinrun.dev/enabled=true
controllers:
  - name: {name}
    for: parents                        # one key per ConfigMap: "namespace/name"
    reconcile:
      actions:                          # while the ConfigMap exists
        - apply:                        # server-side apply, owned by the parent
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{{{ obj.metadata.name }}}}-child"
                namespace: "{{{{ obj.metadata.namespace }}}}"
              data:
                parent: "{{{{ obj.metadata.name }}}}"
      onDelete:                         # once it is gone
        - delete:
            target:
              apiVersion: v1
              kind: ConfigMap
              name: "{{{{ key.split('/')[1] }}}}-child"
              namespace: "{{{{ key.split('/')[0] }}}}"
"""

CASES = """\
# kinrun test tests/{name}.test.yaml
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: ../{name}.yaml
cases:
  - name: a labelled ConfigMap gets an owned child
    given:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {{name: settings, namespace: default, labels: {{{name}.kinrun.dev/enabled: "true"}}}}
    expect:
      requests:
        - key: default/settings
          verb: apply
          kind: ConfigMap
          name: settings-child
          body:
            metadata:
              ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: settings, controller: true}}]
            data: {{parent: settings}}
      results:
        default/settings: done

  - name: the child is deleted once the parent is gone
    given:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {{name: settings, namespace: default, labels: {{{name}.kinrun.dev/enabled: "true"}}}}
    when:
      - deleted: default/settings
    expect:
      requests:
        - {{verb: apply, name: settings-child}}
        - {{verb: delete, kind: ConfigMap, name: settings-child}}

  - name: an unlabelled ConfigMap is left alone
    given:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {{name: plain, namespace: default}}
    expect:
      requests: []
"""

OVERLAY_HEAD = """\
# The overlay of {name}: base/ is `kinrun manifests {name}.yaml -o deploy/base
# --service-account-namespace {name} --with namespace`: kinrun runs in namespace {name} and
# watches every namespace (add --namespace NS to watch one). Regenerate it after each config
# change: ci/kinrun-check.sh fails when it is stale. Pin your registry and tag in images:. kustomize v2.0.3 (kubectl 1.20)
# takes files only in resources, so the base's files are listed one by one.
"""

CHECK = """\
#!/bin/sh
# CI check of {name}: the config validates, its cases pass, the deploy base is current.
# Needs `kinrun` on PATH (pip install kinrun). Run from the folder that holds {name}.yaml.
set -eu
kinrun validate {name}.yaml
kinrun test tests/*.test.yaml
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
kinrun manifests {name}.yaml -o "$fresh" --service-account-namespace {name} --with namespace >/dev/null
diff -r "$fresh" deploy/base || {{
  echo "deploy/base is stale: kinrun manifests {name}.yaml -o deploy/base --service-account-namespace {name} --with namespace" >&2
  exit 1
}}
"""

WORKFLOW = """\
# GitHub Actions: the same check as ci/kinrun-check.sh on every push and pull request.
name: kinrun
on: [push, pull_request]
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {{python-version: "3.11"}}
      - run: pip install kinrun=={version}
      - run: sh ci/kinrun-check.sh
"""


def init(name: str, parent: Path) -> list[Path]:
    """Write the folder ``parent/name`` (see the module docstring); returns the files written.
    Raises ScaffoldError (bad name, folder in the way), ConfigError (never, for a valid name:
    the config is compiled to write the base) and OSError."""
    from kinrun import __version__

    if not NAME_RE.match(name):
        raise ScaffoldError(f"{name!r} is not a DNS-1123 label (lower-case letters, digits "
                            "and '-', at most 63 characters): it names the Deployment")
    root = parent / name
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ScaffoldError(f"{root} exists and is not an empty folder: nothing written", root)
    texts = {f"{name}.yaml": CONFIG, f"tests/{name}.test.yaml": CASES, "ci/kinrun-check.sh": CHECK,
             ".github/workflows/kinrun.yaml": WORKFLOW}
    written = []
    for rel, template in texts.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(name=name, version=__version__), encoding="utf-8")
        written.append(path)
    (root / "ci/kinrun-check.sh").chmod(0o755)
    return [*written, *_deploy(name, root)]


def _deploy(name: str, root: Path) -> list[Path]:
    """deploy/base (``kinrun manifests``) and the overlay listing its files."""
    import yaml

    from kinrun.config import load
    from kinrun.manifests import Names, write_base

    config_path = root / f"{name}.yaml"
    base = write_base(load(config_path), root / "deploy/base",  # labelled as CI runs it
                      Names.for_config(config_path, service_account_namespace=name),
                      extras=["namespace"],
                      source=f"{name}.yaml")
    listed = yaml.safe_load((root / "deploy/base/kustomization.yaml").read_text())
    overlay = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
               "resources": [f"base/{r}" for r in listed["resources"]],
               "images": listed["images"]}
    path = root / "deploy/kustomization.yaml"
    path.write_text(OVERLAY_HEAD.format(name=name) + yaml.safe_dump(overlay, sort_keys=False))
    return [*base, path]
