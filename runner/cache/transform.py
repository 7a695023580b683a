"""Transforms applied to objects before they are cached (as client-go ``TransformFunc``)."""

from __future__ import annotations

from kinrun.cache.listwatch import Obj

STRIP_MANAGED_FIELDS = "stripManagedFields"
"""The transform id (for ``InformerKey.transform``) of ``strip_managed_fields``."""


def strip_managed_fields(obj: Obj) -> Obj:
    """``obj`` without ``metadata.managedFields``: a new top-level dict and metadata dict; every
    other value is shared (no deep copy). Returns ``obj`` itself when there is nothing to strip."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    new_meta = dict(meta)
    del new_meta["managedFields"]
    new = dict(obj)
    new["metadata"] = new_meta
    return new
