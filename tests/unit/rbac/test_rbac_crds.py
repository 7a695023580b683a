"""kinrun.rbac with CRD files (kinrun.crds): a custom kind's plural and scope without a cluster,
and a scope never guessed."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kinrun.config import load
from kinrun.crds import CrdSet
from kinrun.errors import ConfigError
from kinrun.hooks import hookimpl
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.rbac import CLUSTER, rbac_needs

ROOT = Path(__file__).resolve().parents[3]
HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: foos.example.com}}
spec:
  group: example.com
  scope: {scope}
  names: {{kind: Foo, plural: foos, singular: foo, shortNames: [fo]}}
  versions:
    - {{name: v1, served: true, storage: true}}
    - {{name: v0, served: false, storage: false}}
"""

EVENT_ON_FOO = """\
informers:
  foos: {informer}
controllers:
  - name: c
    for: foos
    reconcile:
      actions:
        - event: {{reason: Seen, message: "{{{{ key }}}}"}}
"""


def write(tmp_path: Path, body: str, *, scope: str | None = "Namespaced",
          informer: str = "{apiVersion: example.com/v1, resource: foos}") -> Path:
    if scope is not None:
        (tmp_path / "crds").mkdir(exist_ok=True)
        (tmp_path / "crds" / "foo.yaml").write_text("---\nkind: Namespace\n---\n"
                                                    + CRD.format(scope=scope))
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + textwrap.dedent(body).format(informer=informer))
    return path


def event_scopes(needs) -> set[str]:
    return {p.scope for p in needs.permissions if p.resource == "events"}


def test_events_of_a_custom_kind_of_unknown_scope_are_refused_not_granted_in_default(
        tmp_path: Path) -> None:
    """Without the CRD, a resource: informer's scope is unknown: its Events are refused with
    a hint at crds:, never granted in `default` only (the under-grant of issue 31)."""
    config = load(write(tmp_path, EVENT_ON_FOO, scope=None))
    with pytest.raises(ConfigError) as err:
        rbac_needs(plan(config))
    assert "crds:" in str(err.value) and "namespaced is unknown" in str(err.value)
    assert "c.yaml:" in str(err.value)


@pytest.mark.parametrize("scope,expected", [("Namespaced", {CLUSTER}), ("Cluster", {"default"})])
def test_crds_in_the_config_tell_the_scope_of_events(tmp_path: Path, scope: str,
                                                     expected: set[str]) -> None:
    """With crds: in the config, a namespaced Foo's Events go to any namespace (cluster-wide,
    as the informer watches all), a cluster-scoped Foo's to default."""
    path = write(tmp_path, "crds: [crds]\n" + EVENT_ON_FOO, scope=scope)
    assert event_scopes(rbac_needs(plan(load(path)))) == expected


def test_crds_given_on_the_side_and_by_kind(tmp_path: Path) -> None:
    """A kind: informer of a CRD is resolved from a CrdSet passed in (--crd), with the
    namespaces the informer watches."""
    path = write(tmp_path, EVENT_ON_FOO, informer="{apiVersion: example.com/v1, kind: Foo, "
                                                  "namespaces: [team-a, team-b]}")
    needs = rbac_needs(plan(load(path)), crds=CrdSet.load([tmp_path / "crds"]))
    assert event_scopes(needs) == {"team-a", "team-b"}
    watched = {(p.scope, p.verb) for p in needs.permissions if p.resource == "foos"}
    assert watched == {(ns, v) for ns in ("team-a", "team-b") for v in ("list", "watch")}


def test_unserved_versions_and_other_documents_are_not_resolved(tmp_path: Path) -> None:
    """v0 is not served: it resolves to nothing; the Namespace document is skipped."""
    write(tmp_path, EVENT_ON_FOO)
    crds = CrdSet.load([tmp_path / "crds"])
    assert len(crds) == 1
    assert crds.lookup("example.com/v0", "Foo") is None
    found = crds.lookup("example.com/v1", "fo")
    assert found is not None and (found.plural, found.namespaced) == ("foos", True)


def test_a_missing_crd_file_is_a_config_error_in_validate(tmp_path: Path) -> None:
    """`kinrun validate` refuses a crds: entry that does not exist, naming the path."""
    path = write(tmp_path, "crds: [nope.yaml]\n" + EVENT_ON_FOO, scope=None)
    run = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert "nope.yaml" in run.stderr and "no such CRD file" in run.stderr


def test_a_crd_without_scope_is_refused_with_its_file(tmp_path: Path) -> None:
    """A CRD document without a valid spec.scope is a ConfigError naming file#document."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(CRD.format(scope="Everywhere"))
    with pytest.raises(ConfigError, match=r"bad.yaml#0.*Namespaced or Cluster"):
        CrdSet.load([bad])


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "examples/configs").glob("*.yaml")))
def test_rbac_of_every_example_needs_no_cluster(example: str) -> None:
    """Every example config's RBAC is computed offline (sample-controller through crds:)."""
    needs = rbac_needs(plan(load(ROOT / "examples/configs" / example)))
    assert needs.permissions


@pytest.mark.parametrize("scope, where", [("Cluster", "cluster-wide"), ("Namespaced", "in a")])
def test_plugin_rules_on_a_crd_follow_its_scope(tmp_path: Path, scope: str, where: str) -> None:
    """A plugin kind's rule on a crds: CRD is granted where its scope says: cluster-wide for
    a cluster-scoped one (a Role cannot grant it), in the reconciled namespaces otherwise."""
    def touch(args, obj, ctx):
        return []
    touch.RBAC_RULES = [{"apiGroups": ["example.com"], "resources": ["foos"], "verbs": ["get"]}]

    class Plugin:
        @hookimpl
        def kinrun_action_kinds(self):
            return {"touch": touch}
    pm = new_plugin_manager()
    pm.register(Plugin())
    path = write(tmp_path, "crds: [crds]\ninformers:\n  cms: {{apiVersion: v1, kind: ConfigMap, "
                 "namespaces: [a]}}\ncontrollers:\n  - {{name: c, for: cms, reconcile: "
                 "{{actions: [{{plugin: touch}}]}}}}\n", scope=scope)
    assert f"get example.com/foos {where}" in {str(p) for p in rbac_needs(plan(load(path), pm)).permissions}
