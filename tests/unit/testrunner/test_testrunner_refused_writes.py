"""kinrun test on the embedded server: a write the server refuses for good is a permanent
failure naming the field, not retried."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.testing.runner import prepare, run_case

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\n"
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap, labelSelector: app}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: Service
              metadata: {name: "{{ obj.metadata.name }}", namespace: default}
              spec:
                ports: [{port: 80{{ ', protocol: TCP' if obj.data.proto == 'yes' else '' }}}]
            ownerReference: true
"""
CM = "{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default, labels: {app: x}}, data: {proto: '%s'}}"


def run(tmp_path: Path, cases: str, config: str = CONFIG):
    (tmp_path / "c.yaml").write_text(config)
    path = tmp_path / "t.test.yaml"
    path.write_text(HEAD + "cases:\n" + cases)
    prepared = prepare(path)
    return [run_case(prepared, case, timeout=10) for case in prepared.tests.cases]


def test_an_apply_refused_as_untypable_is_permanent_and_sent_once(tmp_path: Path) -> None:
    """A Service port without protocol: 500 ``failed to create typed patch object`` naming
    ``.spec.ports`` and the key (as kube-apiserver 1.20), one apply, result permanent (not
    retried after the clock moves)."""
    [outcome] = run(tmp_path, f"""\
  - name: refused
    given: [{CM % "no"}]
    when: [{{after: 10m}}]
    expect:
      requests:
        - {{key: default/a, verb: apply, kind: Service, error: "500.*typed patch"}}
      results: {{default/a: {{outcome: permanent, message: "spec.ports: element 0.*protocol"}}}}
""")
    assert outcome.passed, [f.text() for f in outcome.failures]



INVALID = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap, labelSelector: app}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - create:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.data.proto }}", namespace: default}
"""


@pytest.mark.parametrize(("name", "error", "passes"), [
    pytest.param("Bad_Name", None, False, id="refused-not-expected-to-fail"),
    pytest.param("Bad_Name", "422 Invalid", True, id="refused-as-expected"),
    pytest.param("Bad_Name", "409", False, id="refused-with-another-code"),
    pytest.param("good", None, True, id="created"),
    pytest.param("good", "422", False, id="created-but-expected-to-fail"),
])
def test_an_expected_request_matches_by_its_outcome(tmp_path: Path, name: str,
                                                    error: str | None, passes: bool) -> None:
    """An expected request without ``error`` matches only a request that succeeded; with it
    only one that failed with an error the regular expression finds."""
    field = "" if error is None else f", error: '{error}'"
    [outcome] = run(tmp_path, f"""\
  - name: create
    given: [{CM % name}]
    expect:
      requests: [{{verb: create, kind: ConfigMap{field}}}]
""", config=INVALID)
    assert outcome.passed is passes, [f.text() for f in outcome.failures]
