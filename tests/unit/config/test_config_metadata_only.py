"""validate refuses what a metadata-only informer cannot serve; transform.drop paths are
checked; the keys reach the plan."""

from __future__ import annotations

import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

HEAD = """apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods:
    apiVersion: v1
    kind: Pod
    metadataOnly: true
"""


CONTROLLER = """controllers:
  - {name: c, for: pods, reconcile: {actions: [{log: "{{ obj.metadata.name }}"}]}}
"""


def compile_text(text: str):
    if "controllers:" not in text:
        text += CONTROLLER
    return plan(load_text(text), plugin_manager=new_plugin_manager())


def test_metadata_only_and_drop_reach_the_plan() -> None:
    p = compile_text(HEAD + """    transform: {drop: [metadata.annotations.a\\.b]}
    indexers: {byApp: "obj.metadata.labels.app"}
controllers:
  - name: c
    for: pods
    reconcile:
      actions:
        - log: "{{ obj.metadata.name }} {{ obj.kind }} {{ obj['metadata'].labels }}"
""")
    informer = p.informers["pods"]
    assert informer.spec.metadata_only is True
    assert informer.transform_id == "stripManagedFields+drop:metadata.annotations.a\\.b"
    obj = {"metadata": {"name": "x", "annotations": {"a.b": "1", "c": "2"}}}
    assert informer.transform(obj) == {"metadata": {"name": "x", "annotations": {"c": "2"}}}


def test_defaults_keep_whole_objects_and_strip_managed_fields() -> None:
    p = compile_text(HEAD.replace("    metadataOnly: true\n", ""))
    informer = p.informers["pods"]
    assert informer.spec.metadata_only is False
    assert informer.transform_id == "stripManagedFields"


@pytest.mark.parametrize(("tail", "message"), [
    ("""controllers:
  - name: c
    for: pods
    reconcile:
      actions:
        - log: "{{ obj.spec.nodeName }}"
""", "action actions[0].log reads obj.spec"),
    ("""controllers:
  - name: c
    for: pods
    reconcile:
      actions:
        - log: {message: hi, level: info}
          when: "obj['status'].phase == 'Running'"
""", "reads obj.status"),
    ("""controllers:
  - name: c
    for: pods
    reconcile:
      vars: {node: "obj.get('spec').nodeName"}
      actions: [{log: "{{ node }}"}]
""", "var node reads obj.spec"),
    ("""    indexers: {byNode: "obj.spec.nodeName"}
""", "index 'byNode' reads obj.spec"),
    ("""    fieldSelector: status.phase=Running
""", "fieldSelector 'status.phase' is not a metadata field"),
])
def test_validate_refuses_reads_a_metadata_only_informer_cannot_serve(tail: str,
                                                                      message: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_text(HEAD + tail)
    assert message in str(info.value)
    assert info.value.line is not None


def test_mapping_template_over_a_metadata_only_secondary_is_checked() -> None:
    text = """apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
  pods: {apiVersion: v1, kind: Pod, metadataOnly: true}
controllers:
  - name: c
    for: cms
    reconcile: {actions: [{log: "{{ obj.data }}"}]}
    watches:
      - {informer: pods, mapTo: {template: "{{ obj.metadata.namespace }}/{{ obj.spec.x }}"}}
"""
    with pytest.raises(ConfigError) as info:
        compile_text(text)
    assert ("the mapTo template reads obj.spec, but informer 'pods' is metadataOnly"
            in str(info.value))
    compile_text(text.replace("obj.spec.x", "obj.metadata.labels.app"))  # metadata: accepted


@pytest.mark.parametrize("path", ["metadata.name", "a..b", "kind"])
def test_validate_refuses_bad_drop_paths(path: str) -> None:
    with pytest.raises(ConfigError) as info:
        compile_text(HEAD + f"    transform: {{drop: ['{path}']}}\n")
    assert "transform.drop[0]" in str(info.value)
