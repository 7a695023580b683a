"""The ``status`` action: write the reconciled object's status subresource, only when it changes.

::

    - status:
        fields: {availableReplicas: "{{ deploy.status.availableReplicas | default(0) }}"}
        conditions:
          - {type: Ready, status: "{{ ready }}", reason: Synced, message: "..."}
        observedGeneration: true        # the default

Rendering computes the status the object should have, from the cached object (``obj.status``):

1. ``fields`` merged into it with JSON merge patch rules (RFC 7386: a mapping merges, ``null``
   removes the field, anything else replaces it). A string that is exactly one
   ``{{ expression }}`` keeps the expression's type (a number stays a number, so it compares
   equal to what the server stores); a string mixing text and ``{{ }}`` renders as text.
   ``fields`` may also be one template rendering a YAML mapping. ``conditions`` and
   ``observedGeneration`` are set by their own keys, not here;
2. ``observedGeneration`` (unless ``observedGeneration: false``): ``obj.metadata.generation``,
   where the kind's schema keeps one (:meth:`StatusAction.fit`; so in each condition too);
3. each of ``conditions`` merged in by type with apimachinery's ``meta.SetStatusCondition``
   semantics (``kinrun.conditions``): ``lastTransitionTime`` is the plan's clock (``now()``)
   when the condition is new or its ``status`` changed, else kept; ``reason``, ``message`` and
   ``observedGeneration`` (the object's generation) are updated in place; conditions of other
   types are kept.

When the result equals ``obj.status`` the action renders no step at all: nothing is sent, so a
status write, which changes the object and queues it again, cannot start a write loop (the next
reconcile computes the same status and stops there). Otherwise one request is sent: a JSON merge
patch of ``/status`` holding only what differs (``null`` for removed fields; the whole
``conditions`` list, as merge patches replace lists), with ``metadata.resourceVersion`` of the
object as read as its precondition (optimistic concurrency, as controller-runtime's
``Status().Patch`` with ``MergeFromWithOptimisticLock``): when the object changed since the
cache saw it the server answers 409 Conflict and the reconcile is retried with backoff, on the
newer object, so a concurrent writer of other conditions is never overwritten.

The kind must have a status subresource (built-in kinds with a status; a CRD with
``subresources: {status: {}}``). A field the server does not keep (pruned by the CRD's schema)
differs again at every reconcile and is written every time: declare it in the schema (the
reconcile warns once per such field, ``kinrun.reconcile``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jinja2

from kinrun.actions.kinds import (
    CheckError, Render, Scope, _options, _setting, compile_document, reconciled_target,
)
from kinrun.actions.results import json_default
from kinrun.actions.steps import Step
from kinrun.clock import Clock
from kinrun.conditions import ConditionError, check_condition, set_status_condition
from kinrun.kube.events import rfc3339
from kinrun.kube.request import ApiRequest
from kinrun.templating import SourceLocation, TemplateEngine, split_expression

Obj = dict[str, Any]
_OWN_KEYS = ("conditions", "observedGeneration")


def compile_values(value: Any, engine: TemplateEngine, loc: SourceLocation) -> Render:
    """Compile a value whose strings may be templates, keeping types: returns
    ``render(variables)`` building a fresh copy in which a string that is exactly one
    ``{{ expression }}`` becomes the expression's value (an undefined one is an error), a
    string mixing text and ``{{ }}``/``{% %}`` its rendered text, any other value itself
    (mapping keys are not templated)."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return lambda _v: value
        if value.strip().startswith("{{") and split_expression(value) is not None:
            expression = engine.expression(split_expression(value) or "", loc)
            return lambda v: _defined(expression.evaluate(v))
        return engine.template(value, loc).render
    if isinstance(value, Mapping):
        items = [(k, compile_values(v, engine, loc.child(f".{k}"))) for k, v in value.items()]
        return lambda v: {k: f(v) for k, f in items}
    if isinstance(value, (list, tuple)):
        parts = [compile_values(item, engine, loc.child(f"[{i}]"))
                 for i, item in enumerate(value)]
        return lambda v: [f(v) for f in parts]
    return lambda _v: value


_STAND_INS = {"type": "Ready", "status": "True", "reason": "Templated", "message": "",
              "observedGeneration": 0, "lastTransitionTime": ""}
"""What a templated field of a condition is checked as: any value it could render."""


def _check_literal_conditions(conditions: Any, loc: SourceLocation) -> None:
    """ConfigError at ``conditions[i]`` for a condition written in the file that no render
    can make valid (``kinrun.conditions.check_condition``: a literal ``status: Maybe``, a
    literal ``reason: not camel``, a missing ``reason``, an unknown field): the run would
    refuse it at every reconcile. Templated fields are checked as :data:`_STAND_INS`; a
    templated list or condition is left to render time."""
    for index, item in enumerate(conditions if isinstance(conditions, (list, tuple)) else ()):
        if not isinstance(item, Mapping):
            continue
        probe = {key: _STAND_INS.get(key, value) if _templated(value) else value
                 for key, value in item.items()}
        try:
            check_condition(probe)
        except ConditionError as exc:
            raise loc.child(f"[{index}]").config_error(
                f"{exc}; kube-apiserver would refuse it at every reconcile") from None


def _templated(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _defined(value: Any) -> Any:
    if isinstance(value, jinja2.Undefined):
        str(value)  # StrictUndefined: raises, naming what is missing
    return value


def _json(value: Any, what: str) -> Any:
    """A JSON copy of a rendered value (CheckError when it is not JSON data)."""
    try:
        return json.loads(json.dumps(value, default=json_default))  # render: placeholders
    except (TypeError, ValueError) as exc:
        raise CheckError(f"status: {what} is not JSON data: {exc}") from None


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: ``patch`` applied to ``target``; returns a new value (the
    inputs are not modified)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def merge_diff(current: Mapping[str, Any], desired: Mapping[str, Any]) -> Obj:
    """The JSON merge patch that turns ``current`` into ``desired`` (both mappings): changed
    keys with their new value (nested mappings as their own diff), removed keys as None."""
    diff: Obj = {key: None for key in current if key not in desired}
    for key, value in desired.items():
        old = current.get(key)
        if key in current and old == value:
            continue
        if isinstance(old, dict) and isinstance(value, dict):
            diff[key] = merge_diff(old, value)
        else:
            diff[key] = value
    return diff


def _compile_option(value: Any, engine: TemplateEngine, loc: SourceLocation) -> Render | None:
    """``fields``/``conditions`` compiled: a string as one YAML document template
    (``compile_document``), a mapping or list as :func:`compile_values`; None when empty."""
    if isinstance(value, str):
        return compile_document(value, engine, loc)
    return compile_values(value, engine, loc) if value else None


class StatusAction:
    """``status: {fields, conditions, observedGeneration: true}`` -> a merge patch of the
    reconciled object's ``/status``, or nothing when the status would not change (module
    docstring). ``clock``: its ``wall()`` stamps ``lastTransitionTime`` (the plan's clock)."""

    kind = "status"
    VERBS: tuple[str, ...] = ("patch",)
    """RBAC verbs on ``RESOURCE/status`` of the reconciled object (``kinrun.rbac``)."""
    SUBRESOURCE = "status"
    """The subresource the verbs apply to."""
    DRY_RUN_VERBS: tuple[str, ...] = ("get",)
    """Added under ``--dry-run``: the current status is read to show the change."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation,
                 clock: Clock) -> None:
        value = _options(value or {}, loc, "status")  # {}: observedGeneration alone
        fields, conditions = value.get("fields"), value.get("conditions")
        if isinstance(fields, Mapping):
            own = [k for k in _OWN_KEYS if k in fields]
            if own:
                raise loc.child(".fields").config_error(
                    f"status.fields: {', '.join(own)} is set by its own key of status "
                    "(conditions: a list merged by type; observedGeneration: true/false)")
        self._fields = _compile_option(fields, engine, loc.child(".fields"))
        _check_literal_conditions(conditions, loc.child(".conditions"))
        self._conditions = _compile_option(conditions, engine, loc.child(".conditions"))
        observed = _setting(value, "status", "observedGeneration")
        if not isinstance(observed, bool):
            raise loc.config_error(f"status.observedGeneration must be true or false, got "
                                   f"{observed!r}")
        self._observed = observed
        self._clock = clock
        graph = _setting(value, "status", "graphCondition")
        if graph is not None and (not isinstance(graph, str) or not graph):
            raise loc.config_error(f"status.graphCondition must be a condition type or null, "
                                   f"got {graph!r}")
        self._graph: str | None = graph
        self._stamps = (observed, observed)
        """Whether ``observedGeneration`` is set (status, each condition): :meth:`fit`."""

    def fit(self, schema: Any) -> None:
        """Set ``observedGeneration`` only where the reconciled kind's ``schema`` keeps it
        (``kinrun.openapi.keeps``; None: unknown, set both as configured). A built-in kind's
        conditions (a Deployment's, a Pod's) have no such field, nor has a Pod's or a Job's
        status: the server drops it, so the status computed here would differ from the
        stored one at every reconcile and be written again each time. Called once by the
        plan, before the program runs (the action is immutable from then on)."""
        from kinrun.openapi import keeps

        if schema is not None:
            self._stamps = (self._observed and keeps(schema, ("status", "observedGeneration")),
                            self._observed and keeps(schema, (
                                "status", "conditions", "[]", "observedGeneration")))

    def render(self, scope: Scope) -> list[Step]:
        target = reconciled_target(scope, "status")
        obj = scope.obj or {}
        current = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        desired = self.desired(scope, current, (obj.get("metadata") or {}).get("generation"))
        if desired == current:
            return []
        body: Obj = {"status": merge_diff(current, desired)}
        if target.resource_version:
            body["metadata"] = {"resourceVersion": target.resource_version}
        return [ApiRequest("patch", target.api_version, target.kind, target.name,
                           target.namespace, body=body, patch_type="merge",
                           subresource="status")]

    def desired(self, scope: Scope, current: Mapping[str, Any], generation: Any) -> Obj:
        """The status the object should have (module docstring), as a new dict."""
        desired = _json(current, "obj.status")
        if self._fields is not None:
            fields = _json(self._fields(scope.variables), "fields")
            if not isinstance(fields, dict):
                raise CheckError(f"status: fields must render to a mapping, got {fields!r}")
            own = [k for k in _OWN_KEYS if k in fields]
            if own:
                raise CheckError(f"status: fields rendered {', '.join(own)}: set it by its own "
                                 "key of status")
            desired = merge_patch(desired, fields)
        counted = isinstance(generation, int)
        if counted and self._stamps[0]:
            desired["observedGeneration"] = generation
        graph = self.graph_condition(scope.variables)
        if self._conditions is not None or graph is not None:
            desired["conditions"] = self._merged_conditions(scope, desired, generation,
                                                            counted and self._stamps[1], graph)
        return desired

    def graph_condition(self, variables: Mapping[str, Any]) -> Obj | None:
        """The ``graphCondition`` from a ``children`` action's ``children_ready`` and
        ``children_not_ready`` (``kinrun.actions.children``): True with reason
        ``ChildrenReady``; False with ``ChildWaiting`` or ``ChildNotReady`` and the message
        ``NAME: why``. None without a graph in ``variables`` or with ``graphCondition: null``."""
        if self._graph is None or "children_ready" not in variables:
            return None
        if variables["children_ready"]:
            return {"type": self._graph, "status": "True", "reason": "ChildrenReady",
                    "message": "every child is ready"}
        first = variables.get("children_not_ready") or {}
        reason = "ChildWaiting" if first.get("state") == "waiting" else "ChildNotReady"
        return {"type": self._graph, "status": "False", "reason": reason,
                "message": f"{first.get('name')}: {first.get('reason')}"}

    def _merged_conditions(self, scope: Scope, desired: Obj, generation: Any,
                           observed: bool, graph: Obj | None = None) -> list[Obj]:
        rendered = (_json(self._conditions(scope.variables), "conditions")
                    if self._conditions is not None else [])
        if not isinstance(rendered, list):
            raise CheckError(f"status: conditions must render to a list, got {rendered!r}")
        if graph is not None and not any(isinstance(c, Mapping) and c.get("type") == graph["type"]
                                         for c in rendered):
            rendered.append(graph)
        merged = desired.get("conditions")
        merged = merged if isinstance(merged, list) else []
        now = rfc3339(self._clock.wall())
        seen: set[str] = set()
        for item in rendered:
            try:
                condition = check_condition(item)
            except ConditionError as exc:
                raise CheckError(f"status: {exc}") from None
            if condition["type"] in seen:
                raise CheckError(f"status: condition {condition['type']} is given twice")
            seen.add(condition["type"])
            if observed:
                condition.setdefault("observedGeneration", generation)
            merged, _ = set_status_condition(merged, condition, now)
        return merged
