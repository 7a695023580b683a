"""The config schema and the action compiler accept exactly the same actions: every field the
schema defines compiles, every field it lacks is refused by both, required fields and enums
agree (the schema is the one source: kinrun.config.schema.action_fields)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from kinrun.actions import compile_actions
from kinrun.actions.kinds import BUILTIN_KINDS
from kinrun.config.schema import action_fields, action_required, load_schema
from kinrun.errors import ConfigError

OBJECT_KINDS = [k for k in BUILTIN_KINDS if action_fields(k)]
TARGET = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"}
CHILD = {"name": "config", "manifest": "{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}"}


def _schema_ok(action: dict[str, Any]) -> bool:
    validator = jsonschema.Draft202012Validator({"$defs": load_schema()["$defs"],
                                                 "$ref": "#/$defs/action"})
    return validator.is_valid(action)


def _compiles(action: dict[str, Any]) -> bool:
    try:
        compile_actions([action], controller="c")
    except ConfigError:
        return False
    return True


def _sample(prop: dict[str, Any]) -> Any:
    ref = prop.get("$ref", "")
    if "enum" in prop:
        return prop["enum"][0]
    if ref.endswith("/objectRef"):
        return dict(TARGET)
    if ref.endswith("/expression"):
        return "[]"
    if ref.endswith("/template"):
        return "kind: ConfigMap"
    if "pattern" in prop and "default" in prop:  # a name with a syntax: its default is one
        return prop["default"]
    kind = prop["type"][0] if isinstance(prop["type"], list) else prop["type"]
    if kind == "array":  # children.resources: one child with its required fields
        item = prop["items"]
        return [{name: CHILD.get(name, _sample(item["properties"][name]))
                 for name in item.get("required", ())}]
    return {"boolean": True, "string": "kinrun-test", "object": {}}[kind]


def _minimal(kind: str) -> dict[str, Any]:
    fields = action_fields(kind)
    return {name: _sample(fields[name]) for name in action_required(kind)}


def _both(action: dict[str, Any]) -> tuple[bool, bool]:
    return _schema_ok(action), _compiles(action)


@pytest.mark.parametrize("kind,field", [(k, f) for k in OBJECT_KINDS for f in action_fields(k)])
def test_every_schema_field_compiles(kind, field):
    """Each field the schema defines for a kind is accepted by the schema and the compiler."""
    value = {**_minimal(kind), field: _sample(action_fields(kind)[field])}
    assert _both({kind: value}) == (True, True)


@pytest.mark.parametrize("kind", OBJECT_KINDS)
def test_a_field_the_schema_lacks_is_refused_by_both(kind):
    """An unknown field is refused by the schema and by the compiler."""
    assert _both({kind: {**_minimal(kind), "bogus": "x"}}) == (False, False)


@pytest.mark.parametrize("kind,field", [(k, f) for k in OBJECT_KINDS for f in action_required(k)])
def test_required_fields_agree(kind, field):
    """Leaving out a required field is refused by both."""
    value = {k: v for k, v in _minimal(kind).items() if k != field}
    assert _both({kind: value}) == (False, False)


@pytest.mark.parametrize("kind,field", [(k, f) for k in OBJECT_KINDS for f, p in
                                        action_fields(k).items() if "enum" in p])
def test_enums_agree(kind, field):
    """Every enum value is accepted by both; a value outside the enum by neither."""
    for value in action_fields(kind)[field]["enum"]:
        assert _both({kind: {**_minimal(kind), field: value}}) == (True, True), value
    assert _both({kind: {**_minimal(kind), field: "scale"}}) == (False, False)


@pytest.mark.parametrize("kind", OBJECT_KINDS)
def test_optional_fields_are_optional_for_both(kind):
    """The required fields alone make a valid action for both."""
    assert _both({kind: _minimal(kind)}) == (True, True)


@pytest.mark.parametrize("value,ok", [("30s", True), (5, True), ("{{ 3 }}s", True),
                                      ("soon", False)])
def test_requeue_after_forms_agree(value, ok):
    """requeueAfter: a duration, a number of seconds or a template; nothing else."""
    assert _both({"requeueAfter": value}) == (ok, ok)


@pytest.mark.parametrize("action,ok", [
    pytest.param({"stop": "done here"}, True, id="stop-string"),
    pytest.param({"stop": {"message": "done"}}, True, id="stop-mapping"),
    pytest.param({"stop": ""}, False, id="stop-empty"),
    pytest.param({"stop": {}}, False, id="stop-no-message"),
    pytest.param({"fail": {"message": "bad", "permanent": True}}, True, id="fail-permanent"),
    pytest.param({"fail": "bad"}, False, id="fail-string"),
    pytest.param({"fail": {"message": "bad", "permanent": "yes"}}, False, id="fail-permanent-text"),
])
def test_stop_and_fail_forms_agree(action, ok):
    """stop: a message or {message}; fail: {message, permanent} only; both agree."""
    assert _both(action) == (ok, ok)


def test_stop_and_fail_are_in_the_schema_one_of():
    """The schema's action oneOf names every built-in kind, stop and fail included."""
    kinds = [b["required"][0] for b in load_schema()["$defs"]["action"]["oneOf"]]
    assert set(BUILTIN_KINDS) <= set(kinds)
    assert {"stop", "fail"} <= set(OBJECT_KINDS)
