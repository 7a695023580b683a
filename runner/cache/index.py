"""Indexes over a store (as client-go ``tools/cache/index.go``).

An index function maps an object to zero or more index values (one object may appear under
several values); an ``Indexer`` is a store that keeps named indexes current with every change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from kinrun.cache.listwatch import Obj
from kinrun.cache.store import Store
from kinrun.errors import KinrunError

IndexFunc = Callable[[Obj], list[str]]
"""Object -> the index values it is filed under (may be empty). Must not modify the object."""

Indexers = dict[str, IndexFunc]
"""Index name -> index function."""

NAMESPACE_INDEX = "namespace"
"""Name of the built-in index by ``metadata.namespace`` (client-go NamespaceIndex)."""


def meta_namespace_index_func(obj: Obj) -> list[str]:
    """``[metadata.namespace]`` ("" for cluster-scoped objects) (client-go MetaNamespaceIndexFunc)."""
    meta = obj.get("metadata") or {}
    return [meta.get("namespace") or ""]


class IndexConflictError(ValueError):
    """An indexer name is already registered; carries the ``name``."""

    def __init__(self, name: str) -> None:
        super().__init__(f"indexer conflict: {name!r}")
        self.name = name


class UnknownIndexError(KinrunError, KeyError):
    """A lookup named an index that is not registered (client-go's ``ByIndex`` answers
    ``Index with name %s does not exist``). ``index_name``: the name asked for; ``known``: the
    registered index names, sorted; ``informer``: the informer's name ("" when the store does
    not know it; ``Lister`` fills it in). A KeyError, as before; ``str()`` is one line:
    ``informer 'cms' has no index 'nope' (its indexes: byNode, namespace)``."""

    def __init__(self, index_name: str, known: Iterable[str], informer: str = "") -> None:
        self.index_name, self.known, self.informer = index_name, tuple(sorted(known)), informer
        super().__init__(index_name)

    def __str__(self) -> str:
        owner = f"informer {self.informer!r}" if self.informer else "the cache"
        return (f"{owner} has no index {self.index_name!r} "
                f"(its indexes: {', '.join(self.known) or 'none'})")

    def for_informer(self, informer: str) -> UnknownIndexError:
        """The same error naming ``informer``."""
        return UnknownIndexError(self.index_name, self.known, informer)


class Indexer(Store, Protocol):
    """A Store with named indexes (client-go Indexer). Returned objects are read-only."""

    def index(self, index_name: str, obj: Obj) -> list[Obj]:
        """Objects sharing any index value with ``obj`` under ``index_name``. UnknownIndexError (a KeyError) if the index is unknown."""
        ...

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys of the objects filed under ``value``. UnknownIndexError if the index is unknown."""
        ...

    def list_index_func_values(self, index_name: str) -> list[str]:
        """Every value that currently has objects under ``index_name``."""
        ...

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value``. UnknownIndexError if the index is unknown."""
        ...

    def get_indexers(self) -> Indexers: ...

    def add_indexers(self, indexers: Indexers) -> None:
        """Register more indexes; existing objects are indexed at once. IndexConflictError on
        a name clash."""
        ...
