"""Status conditions with Kubernetes semantics: merge by type, transition times that move only
when a condition's status does.

A condition is a plain dict shaped as apimachinery's ``metav1.Condition`` (``type``,
``status``: ``True`` | ``False`` | ``Unknown``, ``observedGeneration``, ``lastTransitionTime``
RFC 3339 in whole seconds, ``reason``, ``message``). :func:`set_status_condition` is
apimachinery's ``meta.SetStatusCondition`` (``k8s.io/apimachinery/pkg/api/meta/conditions.go``)
over such dicts:

* a condition whose ``type`` is not in the list is appended, with ``lastTransitionTime`` now
  unless it carries one;
* an existing condition of that type is updated in place, keeping its position: ``status``,
  ``reason``, ``message`` and ``observedGeneration`` take the new values, and
  ``lastTransitionTime`` changes (to the new one's, else now) only when ``status`` changed;
* conditions of other types are left as they are.

:func:`check_condition` refuses what kube-apiserver would refuse for a ``metav1.Condition``
(the OpenAPI validation of its fields), so a bad template fails while rendering, before
anything is sent. Pure data: no I/O, no clock (callers pass ``now``); inputs are never
modified.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Condition = dict[str, Any]

CONDITION_STATUSES = ("True", "False", "Unknown")
"""The values of ``metav1.ConditionStatus``."""

_TYPE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                   r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
TYPE_MAX, REASON_MAX, MESSAGE_MAX = 316, 1024, 32768
"""Length limits of ``metav1.Condition`` (type, reason, message), as its OpenAPI schema."""


class ConditionError(ValueError):
    """A condition that kube-apiserver would refuse; the message names the field."""


def find_status_condition(conditions: Iterable[Mapping[str, Any]] | None,
                          type_: str) -> Mapping[str, Any] | None:
    """The condition of ``type_`` in ``conditions`` (None when absent), as
    ``meta.FindStatusCondition``."""
    for condition in conditions or ():
        if isinstance(condition, Mapping) and condition.get("type") == type_:
            return condition
    return None


def set_status_condition(conditions: Sequence[Mapping[str, Any]] | None,
                         new: Mapping[str, Any], now: str) -> tuple[list[Condition], bool]:
    """``conditions`` with ``new`` merged in by type (module docstring), and whether anything
    changed. ``now``: the RFC 3339 time (``2023-11-14T22:13:20Z``) for a transition when
    ``new`` carries no ``lastTransitionTime``. Returns a new list of new dicts."""
    out = [dict(c) for c in conditions or ()]
    for i, existing in enumerate(out):
        if existing.get("type") != new.get("type"):
            continue
        merged = dict(existing)
        if existing.get("status") != new.get("status"):
            merged["status"] = new.get("status")
            merged["lastTransitionTime"] = new.get("lastTransitionTime") or now
        for field in ("reason", "message", "observedGeneration"):
            if field in new:
                merged[field] = new[field]
        out[i] = merged
        return out, merged != existing
    added = dict(new)
    added["lastTransitionTime"] = added.get("lastTransitionTime") or now
    out.append(added)
    return out, True


def remove_status_condition(conditions: Sequence[Mapping[str, Any]] | None,
                            type_: str) -> tuple[list[Condition], bool]:
    """``conditions`` without the one of ``type_``, and whether it was there, as
    ``meta.RemoveStatusCondition``."""
    out = [dict(c) for c in conditions or () if c.get("type") != type_]
    return out, len(out) != len(conditions or ())


def check_condition(condition: Any) -> Condition:
    """``condition`` checked as kube-apiserver checks a ``metav1.Condition``: a mapping with
    ``type`` (a qualified name, at most 316 characters), ``status`` (True, False or Unknown; a
    boolean becomes True/False), ``reason`` (CamelCase: a letter, then letters, digits, ``_``,
    ``,`` or ``:``; at most 1024), optional ``message`` (a string, at most 32768) and
    ``observedGeneration`` (an integer >= 0). Returns a new dict with ``status`` normalised and
    ``message`` defaulted to ""; raises ConditionError naming the field."""
    if not isinstance(condition, Mapping):
        raise ConditionError(f"a condition must be a mapping, got {condition!r}")
    unknown = sorted(set(condition) - {"type", "status", "reason", "message",
                                       "observedGeneration", "lastTransitionTime"})
    if unknown:
        raise ConditionError(f"condition: unknown field(s) {', '.join(map(str, unknown))}")
    out = dict(condition)
    type_ = out.get("type")
    if not isinstance(type_, str) or not _TYPE.match(type_) or len(type_) > TYPE_MAX:
        raise ConditionError(f"condition type {type_!r} is not a qualified name such as Ready "
                             "or example.com/Ready")
    status = out.get("status")
    if isinstance(status, bool):
        status = "True" if status else "False"
    if status not in CONDITION_STATUSES:
        raise ConditionError(f"condition {type_}: status must be one of "
                             f"{', '.join(CONDITION_STATUSES)}, got {status!r}")
    out["status"] = status
    reason = out.get("reason")
    if not isinstance(reason, str) or not _REASON.match(reason) or len(reason) > REASON_MAX:
        raise ConditionError(f"condition {type_}: reason {reason!r} must be CamelCase (a "
                             "letter, then letters, digits, '_', ',' or ':'), as metav1.Condition")
    message = out.get("message", "")
    if not isinstance(message, str) or len(message) > MESSAGE_MAX:
        raise ConditionError(f"condition {type_}: message must be a string of at most "
                             f"{MESSAGE_MAX} characters")
    out["message"] = message
    generation = out.get("observedGeneration")
    if generation is not None and (isinstance(generation, bool) or not isinstance(
            generation, int) or generation < 0):
        raise ConditionError(f"condition {type_}: observedGeneration must be an integer >= 0, "
                             f"got {generation!r}")
    return out
