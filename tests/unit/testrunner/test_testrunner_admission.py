"""kinrun test admission cases: a request in, allowed/denied/patch/warnings out, answered by
the config's webhooks through the code the HTTPS server runs; mismatches are failures that
say what differs."""

from __future__ import annotations

import re
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


REPLICAS = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {deployments: {apiVersion: apps/v1, kind: Deployment}}
controllers: [{name: noop, for: deployments, reconcile: {actions: [{log: "{{ key }}"}]}}]
admission:
  webhooks:
    - name: replicas.apps.example.com
      type: validating
      rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments],
               operations: [CREATE, UPDATE, DELETE]}]
      validate:
        - {when: "operation != 'DELETE' and object.spec.replicas > 10", deny: too many replicas}
        - {when: "operation == 'DELETE' and object is not none", deny: "DELETE sent an object"}
        - {when: "operation == 'DELETE' and oldObject.metadata.name == 'keep'", deny: "kept"}
    - name: widgets.example.com
      type: validating
      rules: [{apiGroups: [example.com], apiVersions: [v1], resources: [widgets],
               operations: [CREATE]}]
      validate: [{when: "object.spec.size == 3", deny: "size {{ object.spec.size }}"}]
"""
WIDGETS = """
      - apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: widgets.example.com}
        spec:
          group: example.com
          scope: Namespaced
          names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
          versions:
            - name: v1
              served: true
              storage: true
              schema:
                openAPIV3Schema:
                  type: object
                  properties:
                    spec:
                      type: object
                      properties: {size: {type: integer, default: 3}}"""
DEPLOYMENT = """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: NAME, namespace: default}
        spec:
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: c, image: nginx}]}"""


def replicas_cases(tmp_path: Path, cases: str) -> Path:
    (tmp_path / "replicas.yaml").write_text(REPLICAS)
    path = tmp_path / "replicas.test.yaml"
    path.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\n"
                    "config: replicas.yaml\ncases:\n" + cases)
    return path


def deployment(name: str, key: str = "object") -> str:
    return f"\n      {key}:" + DEPLOYMENT.replace("NAME", name)


def test_the_object_is_defaulted_as_the_server_defaults_it(tmp_path: Path) -> None:
    """The webhooks see the object decoded and defaulted as kube-apiserver (and --embedded)
    sends it: a Deployment without replicas has replicas 1, for object and oldObject."""
    outcomes = run(replicas_cases(tmp_path, f"""\
  - name: created
    admission:{deployment("web")}
    expect:
      admission:
        allowed: true
        object: {{spec: {{replicas: 1}}}}
  - name: updated
    admission:
      operation: UPDATE{deployment("web")}{deployment("web", "oldObject")}
    expect:
      admission: {{allowed: true}}
"""))
    assert [o.passed for o in outcomes] == [True, True], [
        f.message for o in outcomes for f in o.failures]


WIDGETS_REQUIRING_COLOR = WIDGETS.replace(
    "properties: {size: {type: integer, default: 3}}",
    "required: [color]\n                      properties: {size: {type: integer, default: 3}, "
    "color: {type: string}}")


@pytest.mark.parametrize("crd", [WIDGETS, WIDGETS_REQUIRING_COLOR],
                         ids=["defaulted", "required-field-not-checked-yet"])
def test_a_custom_resource_gets_its_crds_defaults_not_yet_its_validation(tmp_path: Path,
                                                                        crd: str) -> None:
    """The CRD (given) schema's defaults are in the object the webhooks see; its validation
    is not done yet (kube-apiserver validates after mutating admission, which may fill a
    required field): a Widget without its required ``spec.color`` reaches the webhooks."""
    outcomes = run(replicas_cases(tmp_path, f"""\
  - name: defaulted
    given:{crd}
    admission:
      object: {{apiVersion: example.com/v1, kind: Widget,
               metadata: {{name: w, namespace: default}}, spec: {{}}}}
    expect:
      admission: {{allowed: false, message: size 3}}
"""))
    assert [o.passed for o in outcomes] == [True], [
        f.message for o in outcomes for f in o.failures]


def test_an_object_the_server_refuses_fails_the_case_naming_it(tmp_path: Path) -> None:
    """A value of the wrong type: the server's 400, naming object or oldObject."""
    bad = deployment("web").replace("{name: c, image: nginx}", "{name: c, image: [nginx]}")
    outcomes = run(replicas_cases(tmp_path, f"""\
  - name: bad object
    admission:{bad}
    expect:
      admission: {{allowed: true}}
  - name: bad oldObject
    admission:
      operation: UPDATE{deployment("web")}{bad.replace("object:", "oldObject:")}
    expect:
      admission: {{allowed: true}}
"""))
    failed = [f.message for o in outcomes for f in o.failures]
    assert len(failed) == 2 and "admission: the server refused object" in failed[0] \
        and "admission: the server refused oldObject" in failed[1], failed
    assert all("cannot be handled as" in m or "image" in m for m in failed), failed


def test_a_delete_sends_the_old_object_and_no_object(tmp_path: Path) -> None:
    """DELETE: oldObject is the object deleted; object is absent (or null) and sent null."""
    outcomes = run(replicas_cases(tmp_path, f"""\
  - name: deleted
    admission:
      operation: DELETE{deployment("web", "oldObject")}
    expect:
      admission: {{allowed: true}}
  - name: kept
    admission:
      operation: DELETE
      object: null{deployment("keep", "oldObject")}
    expect:
      admission: {{allowed: false, message: kept}}
"""))
    assert [o.passed for o in outcomes] == [True, True], [
        f.message for o in outcomes for f in o.failures]


@pytest.mark.parametrize("operation,keys,said", [
    ("DELETE", ("object", "oldObject"), "admission.object: DELETE sends no object"),
    ("DELETE", ("object",), "admission: DELETE needs 'oldObject'"),
    ("UPDATE", ("object",), "admission: UPDATE needs 'oldObject'"),
    ("CREATE", ("oldObject",), "admission: CREATE needs 'object'"),
    ("CREATE", ("object", "oldObject"), "admission.oldObject: CREATE sends no oldObject"),
])
def test_the_objects_an_operation_sends_are_checked_at_load(
        tmp_path: Path, operation: str, keys: tuple[str, ...], said: str) -> None:
    """object: CREATE, UPDATE, CONNECT; oldObject: UPDATE, DELETE (located, exit 2)."""
    body = "".join(deployment("web", key) for key in keys)
    path = replicas_cases(tmp_path, f"""\
  - name: one
    admission:
      operation: {operation}{body}
    expect:
      admission: {{allowed: true}}
""")
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_test_file(path)
