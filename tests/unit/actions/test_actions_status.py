"""The status action and condition merging: Kubernetes semantics (meta.SetStatusCondition), the
status subresource written only when the status would change, with the changed fields only."""

from __future__ import annotations

from typing import Any

import pytest
from actions_fakes import frozen_copy

from kinrun.clock import FakeClock
from kinrun.actions import compile_actions
from kinrun.conditions import (ConditionError, check_condition, remove_status_condition,
                               set_status_condition)
from kinrun.actions.errors import RenderError
from kinrun.errors import ConfigError

T0, T1 = "2023-11-14T22:13:20Z", "2023-11-14T23:13:20Z"
NOW = 1700003600.0  # 2023-11-14T23:13:20Z


def ready(status: str = "True", reason: str = "Synced", **more: Any) -> dict[str, Any]:
    return {"type": "Ready", "status": status, "reason": reason, "message": "", **more}


def test_a_new_condition_is_appended_with_now_as_its_transition_time():
    """A type not in the list is appended, lastTransitionTime now."""
    other = {"type": "Other", "status": "False", "reason": "X", "lastTransitionTime": T0}
    merged, changed = set_status_condition([other], ready(), T1)
    assert changed and merged == [other, {**ready(), "lastTransitionTime": T1}]


def test_same_status_keeps_the_transition_time_and_updates_reason_and_message_in_place():
    """Reason, message, observedGeneration change in place; lastTransitionTime stays."""
    existing = [{**ready(), "lastTransitionTime": T0}, {"type": "Other", "status": "True"}]
    merged, changed = set_status_condition(
        existing, ready(reason="Again", message="m", observedGeneration=3), T1)
    assert changed
    assert merged[0] == {**ready(reason="Again", message="m", observedGeneration=3),
                         "lastTransitionTime": T0}
    assert merged[1] == existing[1]


def test_a_status_change_moves_the_transition_time():
    """lastTransitionTime changes exactly when status does."""
    merged, changed = set_status_condition([{**ready(), "lastTransitionTime": T0}],
                                           ready("False"), T1)
    assert changed and merged == [{**ready("False"), "lastTransitionTime": T1}]


def test_setting_the_same_condition_again_changes_nothing():
    """An identical condition is no change (and the input list is not modified)."""
    existing = [{**ready(), "lastTransitionTime": T0}]
    before = frozen_copy({"c": existing})
    merged, changed = set_status_condition(existing, ready(), T1)
    assert not changed and merged == existing
    assert frozen_copy({"c": existing}) == before


def test_remove_status_condition():
    """RemoveStatusCondition: drops that type only."""
    merged, changed = remove_status_condition([ready(), {"type": "B"}], "Ready")
    assert changed and merged == [{"type": "B"}]
    assert remove_status_condition(merged, "Ready") == (merged, False)


@pytest.mark.parametrize("condition,problem", [
    pytest.param({"type": "Ready", "status": "yes", "reason": "R"}, "status must be", id="status"),
    pytest.param({"type": "Ready", "status": "True", "reason": "not camel"}, "CamelCase",
                 id="reason"),
    pytest.param({"type": "Ready", "status": "True"}, "CamelCase", id="no-reason"),
    pytest.param({"type": "bad type!", "status": "True", "reason": "R"}, "qualified", id="type"),
    pytest.param({"type": "Ready", "status": "True", "reason": "R", "x": 1}, "unknown", id="field"),
])
def test_check_condition_refuses_what_the_api_server_refuses(condition, problem):
    """metav1.Condition's validation: type, status, reason, no other fields."""
    with pytest.raises(ConditionError, match=problem):
        check_condition(condition)


def test_check_condition_turns_a_boolean_status_into_text():
    """status: true -> "True" (a template's boolean value)."""
    assert check_condition({"type": "Ready", "status": True, "reason": "R"})["status"] == "True"


# -- the action ---------------------------------------------------------------------------


def foo(status: dict[str, Any] | None = None, generation: int = 2) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "example.com/v1", "kind": "Foo",
        "metadata": {"name": "f", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                     "generation": generation}}
    if status is not None:
        obj["status"] = status
    return obj


def render(spec: dict[str, Any], obj: dict[str, Any] | None, **variables: Any) -> list[Any]:
    from kinrun.templating import TemplateEngine

    engine = TemplateEngine(None, clock=FakeClock(wall=NOW))
    program = compile_actions([{"status": spec}], controller="c", engine=engine)
    return list(program.render(key="ns/f", obj=obj).steps)


SPEC = {"fields": {"replicas": "{{ obj.metadata.generation * 2 }}", "phase": "Running"},
        "conditions": [{"type": "Ready", "status": "{{ obj.metadata.generation > 1 }}",
                        "reason": "Synced", "message": "gen {{ obj.metadata.generation }}"}]}


def test_first_status_write_sets_fields_observed_generation_and_conditions():
    """One merge patch of /status, with the resourceVersion read as precondition."""
    (req,) = render(SPEC, foo())
    assert (req.verb, req.kind, req.name, req.namespace, req.subresource, req.patch_type) == \
        ("patch", "Foo", "f", "ns", "status", "merge")
    assert req.body == {"metadata": {"resourceVersion": "7"}, "status": {
        "replicas": 4, "phase": "Running", "observedGeneration": 2,
        "conditions": [{"type": "Ready", "status": "True", "reason": "Synced",
                        "message": "gen 2", "observedGeneration": 2,
                        "lastTransitionTime": T1}]}}


def test_nothing_is_sent_when_the_status_would_not_change():
    """The status as written before: no step at all (no write loop)."""
    (req,) = render(SPEC, foo())
    written = req.body["status"]
    assert render(SPEC, foo({**written, "conditions": [
        {**written["conditions"][0], "lastTransitionTime": T0}]})) == []


def test_only_the_changed_fields_are_sent_and_a_null_removes_one():
    """The patch holds what differs; fields: {x: null} removes x."""
    current = {"replicas": 4, "phase": "Running", "observedGeneration": 2, "old": {"a": 1, "b": 2}}
    (req,) = render({"fields": {"phase": "Failed", "old": {"a": None}}}, foo(current))
    assert req.body["status"] == {"phase": "Failed", "old": {"a": None}}


def test_a_new_generation_with_the_same_condition_status_keeps_its_transition_time():
    """observedGeneration moves; lastTransitionTime does not."""
    cond = {"type": "Ready", "status": "True", "reason": "Synced", "message": "gen 2",
            "observedGeneration": 2, "lastTransitionTime": T0}
    status = {"replicas": 6, "phase": "Running", "observedGeneration": 2, "conditions": [cond]}
    (req,) = render(SPEC, foo(status, generation=3))
    assert req.body["status"]["observedGeneration"] == 3
    (merged,) = req.body["status"]["conditions"]
    assert merged["lastTransitionTime"] == T0 and merged["observedGeneration"] == 3
    assert merged["message"] == "gen 3"


def test_observed_generation_false_leaves_it_alone():
    """observedGeneration: false: neither status nor conditions get it."""
    (req,) = render({**SPEC, "observedGeneration": False}, foo())
    assert "observedGeneration" not in req.body["status"]
    assert "observedGeneration" not in req.body["status"]["conditions"][0]


def test_a_bad_condition_fails_the_render():
    """A rendered condition the API server would refuse is a RenderError (nothing sent)."""
    with pytest.raises(RenderError, match="status must be one of"):
        render({"conditions": [{"type": "Ready", "status": "{{ 'maybe' }}", "reason": "R"}]},
               foo())


@pytest.mark.parametrize(("condition", "problem"), [
    ({"type": "Ready", "status": "Maybe", "reason": "{{ obj.metadata.name }}"}, "status must be"),
    ({"type": "Ready", "status": "{{ 'True' }}", "reason": "not camel"}, "must be CamelCase"),
    ({"type": "Ready", "status": "True"}, "must be CamelCase"),
    ({"type": "not a type!", "status": "True", "reason": "R"}, "not a qualified name"),
])
def test_a_condition_no_render_can_make_valid_is_refused_when_compiled(condition, problem):
    """A literal field the API server refuses fails every reconcile: refused at compile time
    (``kinrun validate`` and run start), at the condition's key; templated fields are not."""
    with pytest.raises(ConfigError, match=problem) as caught:
        render({"conditions": [{"type": "Ok", "status": "True", "reason": "R"}, condition]},
               foo())
    assert "conditions[1]" in str(caught.value)


def test_templated_condition_fields_are_left_to_render_time():
    """Every field templated: compiles; only the rendered value is checked."""
    (req,) = render({"conditions": [{"type": "{{ 'Ready' }}", "status": "{{ 'True' }}",
                                     "reason": "{{ 'R' }}"}]}, foo())
    assert req.body["status"]["conditions"][0]["type"] == "Ready"


def test_status_in_on_delete_fails_the_render():
    """There is no object (onDelete): the status action cannot write."""
    with pytest.raises(RenderError, match="no longer exists"):
        render(SPEC, None)


def test_fields_may_not_set_conditions():
    """conditions and observedGeneration have their own keys."""
    with pytest.raises(ConfigError, match="own key"):
        render({"fields": {"conditions": []}}, foo())


def plan_render(kind: str, api_version: str, obj: dict[str, Any]) -> list[Any]:
    """The status steps of one reconcile of ``obj`` by a config's compiled controller (the
    plan fits the action to the kind's schema)."""
    from kinrun.config import load_text
    from kinrun.plan import plan

    compiled = plan(load_text(f"""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  objs: {{apiVersion: {api_version}, kind: {kind}}}
controllers:
  - name: c
    for: objs
    reconcile:
      actions:
        - status:
            conditions: [{{type: Annotated, status: "True", reason: Done, message: m}}]
"""), clock=FakeClock(wall=NOW))
    return list(compiled.controllers[0].actions.render(key="ns/f", obj=obj).steps)


def test_a_kind_that_cannot_keep_observed_generation_is_not_written_again():
    """A Deployment's conditions have no observedGeneration, a Pod's status has none at all:
    the server drops what kinrun would stamp there, so stamping it would make every reconcile
    differ from the stored status and write it again (a write loop). The status as the server
    keeps it sends nothing."""
    for kind, api_version, top in (("Deployment", "apps/v1", True), ("Pod", "v1", False)):
        obj = {**foo(), "apiVersion": api_version, "kind": kind}
        (req,) = plan_render(kind, api_version, obj)
        status = req.body["status"]
        assert ("observedGeneration" in status) is top, kind
        assert "observedGeneration" not in status["conditions"][0], kind
        stored = {**obj, "status": status}   # what the server keeps of the write
        assert plan_render(kind, api_version, stored) == [], kind


def test_a_kind_without_a_schema_still_gets_observed_generation():
    """A custom kind with no schema known offline keeps the default: both stamped."""
    (req,) = plan_render("Foo", "example.com/v1", foo())
    assert req.body["status"]["observedGeneration"] == 2
    assert req.body["status"]["conditions"][0]["observedGeneration"] == 2
