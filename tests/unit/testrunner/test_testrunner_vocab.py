"""End to end under `kinrun test` (the embedded server): a Namespace controller that labels the
Namespace it reconciles (no self-ownership) and keeps its children's ApplySet in a separate
ConfigMap parent (the Namespace itself is never given ApplySet metadata)."""

from __future__ import annotations

from pathlib import Path

from kinrun.testing.runner import prepare, run_case

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  nss: {apiVersion: v1, kind: Namespace, labelSelector: team}
controllers:
  - name: quota
    for: nss
    predicates: [generationChanged]
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: Namespace
              metadata: {name: "{{ obj.metadata.name }}", labels: {managed: "yes"}}
        - applySet:
            parent: {apiVersion: v1, kind: ConfigMap, name: applyset, namespace: "{{ obj.metadata.name }}"}
            manifests: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: settings, namespace: "{{ obj.metadata.name }}"}
              data: {a: b}
"""
CASES = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: c.yaml
cases:
  - name: labels itself without owning itself, and keeps the ApplySet off the Namespace
    given:
      - {apiVersion: v1, kind: Namespace, metadata: {name: team-a, labels: {team: a}}}
    expect:
      requests:
        - key: team-a
          verb: apply
          kind: Namespace
          name: team-a
          bodyEquals:
            apiVersion: v1
            kind: Namespace
            metadata: {name: team-a, labels: {managed: "yes"}}
        - key: team-a
          verb: apply
          kind: ConfigMap
          namespace: team-a
          name: applyset
          body:
            metadata:
              labels: {applyset.kubernetes.io/id: &id applyset-MDJm5g8Q_wkwYDYjVU1cP6Og9WQQkBwfQduA1_VCrag-v1}
              annotations: {applyset.kubernetes.io/contains-group-kinds: ConfigMap}
              ownerReferences: [{kind: Namespace, name: team-a, controller: true}]
        - key: team-a
          verb: apply
          kind: ConfigMap
          name: settings
          body:
            metadata:
              labels: {applyset.kubernetes.io/part-of: *id}
              ownerReferences: [{kind: Namespace, name: team-a, controller: true}]
      results:
        team-a: done
"""


def test_a_namespace_controller_neither_owns_nor_marks_its_namespace(tmp_path: Path) -> None:
    """The Namespace apply carries no ownerReferences (bodyEquals); the ApplySet parent is a
    ConfigMap applied in the Namespace, owned by it; the child is part of that set."""
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "t.test.yaml").write_text(CASES)
    prepared = prepare(tmp_path / "t.test.yaml")
    results = [run_case(prepared, case, timeout=10) for case in prepared.tests.cases]
    assert [list(r.failures) for r in results] == [[]]
