"""`kinrun validate` is load + plan: it refuses what the run would refuse before a cluster,
with file:line, and accepts exactly what the run accepts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[3]

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


def validate(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + text)
    return subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", str(path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("text,message,line", [
    pytest.param("""\
informers:
  pods:
    apiVersion: v1
    kind: Pod
    indexers: {byNode: {plugin: true}}
controllers:
  - {name: c, for: pods, reconcile: {actions: [{log: hi}]}}
""", "no plugin supplies index 'byNode'", 7, id="plugin-index-nobody-supplies"),
    pytest.param("""\
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
  nss: {apiVersion: v1, kind: Namespace}
controllers:
  - name: c
    for: cms
    watches: [{informer: nss}]
    reconcile: {actions: [{log: hi}]}
""", "a cluster-scoped object cannot have a namespaced owner", 9, id="owner-scope"),
    pytest.param("""\
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [a]}
  secrets: {apiVersion: v1, kind: Secret, namespaces: [b]}
controllers:
  - name: c
    for: cms
    watches: [{informer: secrets, mapTo: owner}]
    reconcile: {actions: [{log: hi}]}
""", "an owner lives in its dependent's namespace", 9, id="owner-namespaces-disjoint"),
    pytest.param("""\
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - patch: {subresource: scale, patch: "spec: {replicas: 1}"}
""", "subresource", 10, id="patch-scale"),
    pytest.param("""\
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              metdata: {name: "{{ obj.metadata.name }}-x"}
              data: {a: b}
""", "the manifest has no kind or metadata", 11, id="apply-manifest-without-kind"),
])
def test_validate_refuses_what_the_run_refuses(tmp_path, text, message, line):
    """Each config loads but cannot run: validate exits 2 naming the file, line and problem."""
    done = validate(tmp_path, text)
    assert done.returncode == 2, done.stdout
    assert message in done.stderr
    assert f"c.yaml:{line}:" in done.stderr


def test_validate_accepts_what_the_actions_implement(tmp_path):
    """apply.fieldManager, event.target and a delete without target are valid and compile."""
    done = validate(tmp_path, """\
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - apply: {fieldManager: mine, manifest: "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}"}
      onDelete:
        - event:
            reason: Gone
            message: "{{ key }} left ({{ reason }})"
            target: {apiVersion: v1, kind: Namespace, name: default, namespace: ""}
        - delete: {}
""")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("c.yaml: ok")


def test_validate_accepts_manifests_only_rendering_shows(tmp_path):
    """A manifest whose shape only rendering shows (a set block, kind or apiVersion in
    branches) and fields a built-in kind gained after 1.20 (the clusters kinrun deploys to
    are newer) are not refused by reading the text: a run checks what it renders."""
    done = validate(tmp_path, """\
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - apply:
            manifest: |
              {% set labels %}
              app: web
              {% endset %}
              {% if obj.data.v1 | default(false) %}
              apiVersion: networking.k8s.io/v1
              {% else %}
              apiVersion: networking.k8s.io/v1beta1
              {% endif %}
              kind: Ingress
              metadata:
                name: "{{ obj.metadata.name }}-x"
                labels:
                  {{ labels | indent(4) }}
        - apply:
            manifest: |
              apiVersion: v1
              kind: Service
              metadata: {name: "{{ obj.metadata.name }}-s"}
              spec: {internalTrafficPolicy: Local, ports: [{port: 80, protocol: TCP}]}
""")
    assert done.returncode == 0, done.stderr
