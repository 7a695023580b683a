"""kinrun test admission cases: a request in, allowed/denied/patch/warnings out, answered by
the config's webhooks through the code the HTTPS server runs; mismatches are failures that
say what differs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.errors import ConfigError
from kinrun.testing.casefile import load_test_file
from kinrun.testing.runner import prepare, run_case

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "tests" / "foo-admission.test.yaml"


def run(path: Path) -> list:
    prepared = prepare(path)
    return [run_case(prepared, case, timeout=30) for case in prepared.tests.cases]


def variant(tmp_path: Path, old: str, new: str) -> Path:
    text = EXAMPLE.read_text().replace(old, new).replace("../", str(ROOT / "examples") + "/")
    path = tmp_path / "t.test.yaml"
    path.write_text(text)
    return path


def test_the_example_cases_pass() -> None:
    """Defaulting with a patch, a quota denial naming its field, a warning."""
    assert all(outcome.passed for outcome in run(EXAMPLE))


@pytest.mark.parametrize("old,new,said", [
    ('message: "asks for 5 replicas; the quota of default is 3"', 'message: "nope"',
     "message: 'nope' not found"),
    ("field: spec.replicas", "field: spec.size", "field: expected 'spec.size'"),
    ('warnings: ["Deployment shared is named by another Foo too"]', "warnings: []",
     "warnings: expected []"),
    ("spec: {deploymentName: web, replicas: 1}", "spec: {deploymentName: web, replicas: 2}",
     "object: the expected fields are not in the patched object"),
])
def test_a_mismatch_fails_saying_what_differs(tmp_path: Path, old: str, new: str,
                                             said: str) -> None:
    """Each part of expect.admission is compared; the failure names the part."""
    outcomes = run(variant(tmp_path, old, new))
    failed = [f.message for o in outcomes for f in o.failures]
    assert len(failed) == 1 and said in failed[0], failed


def test_an_unknown_webhook_is_a_run_failure(tmp_path: Path) -> None:
    """A webhook name the config lacks: the case fails naming the config's webhooks."""
    outcomes = run(variant(tmp_path, "webhook: foo-quota.samplecontroller.example.com",
                           "webhook: nope.example.com"))
    failed = [f.message for o in outcomes for f in o.failures]
    assert any("no webhook 'nope.example.com'" in m and "foo-defaults" in m for m in failed)


def test_a_bad_message_regex_is_a_located_error(tmp_path: Path) -> None:
    """expect.admission.message is a regex, checked at load."""
    with pytest.raises(ConfigError, match=r"expect\.admission\.message"):
        load_test_file(variant(tmp_path, 'message: "asks for 5', 'message: "(asks for 5'))


COPIER = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  sources: {apiVersion: v1, kind: ConfigMap, labelSelector: role=source}
controllers:
  - name: copier
    for: sources
    reconcile:
      actions:
        - name: child
          apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-copy", namespace: default}
              data: {{ obj.data | tojson }}
        - log: "copy stamped={{ results.child.metadata.labels.stamped }}"
admission:
  webhooks:
    - name: stamp.example.com
      type: mutating
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps],
               operations: [CREATE, UPDATE]}]
      objectSelector: {matchExpressions: [{key: role, operator: DoesNotExist}]}
      mutate:
        - mergePatch: |
            metadata: {labels: {stamped: "yes"}}
    - name: no-passwords.example.com
      type: validating
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps],
               operations: [CREATE, UPDATE]}]
      objectSelector: {matchExpressions: [{key: role, operator: DoesNotExist}]}
      validate:
        - when: "'password' in (object.data | default({}))"
          deny: "no passwords in {{ name }}"
"""
COPIER_CASES = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: copier.yaml
cases:
  - name: the copy is stamped by the config's mutating webhook
    given:
      - {apiVersion: v1, kind: ConfigMap, data: {k: v},
         metadata: {name: a, namespace: default, labels: {role: source}}}
    expect:
      logs: ["copy stamped=yes"]
      results: {default/a: done}
  - name: a copy with a password is refused by the config's validating webhook
    given:
      - {apiVersion: v1, kind: ConfigMap, data: {password: x},
         metadata: {name: b, namespace: default, labels: {role: source}}}
    expect:
      results: {default/b: {outcome: retry, message: "no passwords in b-copy"}}
"""


def test_the_controllers_writes_meet_the_configs_webhooks(tmp_path: Path) -> None:
    """As on a cluster (and on --embedded), the embedded server of a case sends the
    controller's own writes to the config's webhooks: a child is stored as the mutating
    webhook patched it (the apply's answer carries the label) and a child the validating
    webhook refuses fails the reconcile with its message."""
    (tmp_path / "copier.yaml").write_text(COPIER)
    path = tmp_path / "copier.test.yaml"
    path.write_text(COPIER_CASES)
    outcomes = run(path)
    assert [o.passed for o in outcomes] == [True, True], [
        f.message for o in outcomes for f in o.failures]
