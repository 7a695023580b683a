"""Whether a child of a ``children`` action is ready, when its config gives no ``readyWhen``.

The defaults follow what kro and Java Operator SDK users expect of common kinds, and what
``kubectl rollout status`` and ``kubectl wait`` check:

- **Deployment**: the ``Available`` condition is True and the controller has seen the latest
  spec (``status.observedGeneration`` >= ``metadata.generation``); without conditions,
  ``status.availableReplicas`` >= ``spec.replicas`` (default 1).
- **StatefulSet, ReplicaSet**: ``status.readyReplicas`` >= ``spec.replicas`` (default 1);
  **DaemonSet**: ``status.numberReady`` >= ``status.desiredNumberScheduled``; each with the
  observedGeneration check.
- **Job**: the ``Complete`` condition is True (``Failed`` True is reported as the reason).
- **Service**: ``spec.clusterIP`` is set (``None`` for a headless Service counts), or
  ``type: ExternalName``.
- **Any other object with a ``Ready`` condition** (custom resources, as kro's default): that
  condition is True.
- **Anything else**: ready once it exists.

An absent child is never ready ("not created yet"). Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Readiness = tuple[bool, str]
"""(ready, why not: "" when ready)."""


def default_ready(obj: Mapping[str, Any] | None) -> Readiness:
    """The readiness of the live child ``obj`` (None: absent) by its kind (module
    docstring)."""
    if obj is None:
        return False, "not created yet"
    kind = obj.get("kind")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    stale = _stale(obj, status)
    if kind in ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet") and stale:
        return False, stale
    if kind == "Deployment":
        available = _condition(status, "Available")
        if available is not None:
            return _true(available, "Available")
        return _replicas(spec, status, "availableReplicas", "available")
    if kind in ("StatefulSet", "ReplicaSet"):
        return _replicas(spec, status, "readyReplicas", "ready")
    if kind == "DaemonSet":
        want, ready = status.get("desiredNumberScheduled") or 0, status.get("numberReady") or 0
        return (True, "") if ready >= want else (False, f"{ready} of {want} pods ready")
    if kind == "Job":
        failed = _condition(status, "Failed")
        if failed is not None and failed.get("status") == "True":
            return False, f"failed: {failed.get('reason') or ''} {failed.get('message') or ''}".strip()
        return _true(_condition(status, "Complete"), "Complete")
    if kind == "Service":
        if spec.get("type") == "ExternalName" or spec.get("clusterIP"):
            return True, ""
        return False, "no cluster IP yet"
    ready = _condition(status, "Ready")
    return _true(ready, "Ready") if ready is not None else (True, "")


def _stale(obj: Mapping[str, Any], status: Mapping[str, Any]) -> str:
    generation = (obj.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return f"generation {generation} not observed yet"
    return ""


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return condition
    return None


def _true(condition: Mapping[str, Any] | None, kind: str) -> Readiness:
    if condition is None:
        return False, f"no {kind} condition yet"
    if condition.get("status") == "True":
        return True, ""
    detail = condition.get("message") or condition.get("reason") or ""
    return False, f"{kind} is {condition.get('status')}" + (f": {detail}" if detail else "")


def _replicas(spec: Mapping[str, Any], status: Mapping[str, Any], field: str,
              word: str) -> Readiness:
    want = spec.get("replicas", 1)
    want = want if isinstance(want, int) else 1
    have = status.get(field) or 0
    return (True, "") if have >= want else (False, f"{have} of {want} replicas {word}")
