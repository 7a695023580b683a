"""Object keys and the Store protocol (as client-go ``tools/cache/store.go``).

A key is ``"namespace/name"`` for a namespaced object and ``"name"`` for a cluster-scoped one.
A store keeps objects by key; the thread-safe store underneath bears the burden of thread
safety. Objects handed to and returned from a store are shared and read-only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from kinrun.cache.listwatch import Obj


class KeyFuncError(ValueError):
    """An object has no usable key (no ``metadata.name``); carries the object."""

    def __init__(self, message: str, obj: Any) -> None:
        super().__init__(message)
        self.obj = obj


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A deletion the informer did not see as an event, found by a relist (client-go's type).

    ``key``: the object's key; ``obj``: the last state the cache knew (may be stale, may be
    None when it was never stored). Handlers' ``on_delete`` receives this instead of the object.
    """

    key: str
    obj: Obj | None


def meta_namespace_key(obj: Obj) -> str:
    """``"ns/name"``, or ``"name"`` when cluster-scoped (client-go MetaNamespaceKeyFunc).

    Raises KeyFuncError when ``metadata.name`` is missing or empty."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    if not name:
        raise KeyFuncError("object has no metadata.name", obj)
    ns = meta.get("namespace")
    return f"{ns}/{name}" if ns else name


def deletion_handling_meta_namespace_key(obj: Obj | DeletedFinalStateUnknown) -> str:
    """As ``meta_namespace_key``, but a tombstone yields its own key (client-go
    DeletionHandlingMetaNamespaceKeyFunc)."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key(obj)


def split_meta_namespace_key(key: str) -> tuple[str, str]:
    """``"ns/name"`` -> ``("ns", "name")``; ``"name"`` -> ``("", "name")``.

    Raises ValueError for more than one ``/`` or an empty name (client-go SplitMetaNamespaceKey)."""
    parts = key.split("/")
    if len(parts) == 1 and parts[0]:
        return "", parts[0]
    if len(parts) == 2 and parts[1]:
        return parts[0], parts[1]
    raise ValueError(f"unexpected key format: {key!r}")


def resource_version(obj: Obj) -> str:
    """``metadata.resourceVersion`` as the opaque string it is ("" when absent)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return (meta.get("resourceVersion") or "") if isinstance(meta, dict) else ""


class Store(Protocol):
    """A keyed collection of objects (client-go Store). Returned objects must not be modified."""

    def add(self, obj: Obj) -> None: ...

    def update(self, obj: Obj) -> None: ...

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> None: ...

    def list(self) -> list[Obj]: ...

    def list_keys(self) -> list[str]: ...

    def get(self, obj: Obj) -> Obj | None: ...

    def get_by_key(self, key: str) -> Obj | None: ...

    def replace(self, objects: list[Obj], resource_version: str) -> None: ...

    def resync(self) -> None: ...
