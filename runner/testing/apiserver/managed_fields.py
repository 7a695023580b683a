"""A coarse ``metadata.managedFields`` bookkeeping, so objects look like a real server's.

Each write through the API records one entry per (manager, operation, subresource) with the
time and a ``fieldsV1`` set listing the object's fields down to three levels (a real server
tracks every leaf and uses the sets to detect apply conflicts; this one does not).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
_DEPTH = 3


def _field_set(value: Any, depth: int) -> Obj:
    if not isinstance(value, dict) or depth == 0:
        return {}
    return {f"f:{k}": _field_set(v, depth - 1) for k, v in value.items()}


def fields_v1(obj: Obj, subresource: str) -> Obj:
    """The fieldsV1 set for ``obj``: ``status`` only for the status subresource, else
    labels/annotations/finalizers/ownerReferences plus every top-level field but status."""
    if subresource == "status":
        return {"f:status": _field_set(obj.get("status"), _DEPTH - 1)}
    meta = obj.get("metadata") or {}
    out: Obj = {}
    kept = {k: meta[k] for k in ("labels", "annotations", "finalizers", "ownerReferences") if k in meta}
    if kept:
        out["f:metadata"] = _field_set(kept, _DEPTH - 1)
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[f"f:{key}"] = _field_set(value, _DEPTH - 1)
    return out


def record(obj: Obj, *, manager: str, operation: str, api_version: str, subresource: str,
           now: str) -> None:
    """Set or refresh ``obj``'s managedFields entry for this writer (``obj`` and its metadata
    are owned by the caller and are modified)."""
    meta = obj.setdefault("metadata", {})
    fields = fields_v1(obj, subresource)
    entries = [m for m in meta.get("managedFields") or [] if isinstance(m, dict)]
    same = [m for m in entries if m.get("manager") == manager and m.get("operation") == operation
            and m.get("subresource", "") == subresource]
    if same and same[0].get("fieldsV1") == fields:
        return                          # unchanged ownership: keep the entry (and its time)
    entry: Obj = {"manager": manager, "operation": operation, "apiVersion": api_version,
                  "time": now, "fieldsType": "FieldsV1", "fieldsV1": fields}
    if subresource:
        entry["subresource"] = subresource
    meta["managedFields"] = [m for m in entries if not any(m is x for x in same)] + [entry]
