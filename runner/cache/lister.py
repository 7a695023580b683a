"""Listers: read-only views of an informer's indexer (as client-go's generated listers)."""

from __future__ import annotations

from kinrun.cache.index import NAMESPACE_INDEX, Indexer, UnknownIndexError
from kinrun.cache.listwatch import Obj


class Lister:
    """Reads from an indexer. Thread-safe; returned objects are shared and must not be modified.
    ``name``: the informer's, named by UnknownIndexError."""

    def __init__(self, indexer: Indexer, name: str = "") -> None:
        self._indexer = indexer
        self.name = name

    def get(self, key: str) -> Obj | None:
        """The object under ``key`` ("ns/name" or "name"), or None."""
        return self._indexer.get_by_key(key)

    def list(self, namespace: str | None = None) -> list[Obj]:
        """Every object, or those of one ``namespace``."""
        if namespace is None:
            return self._indexer.list()
        return self._indexer.by_index(NAMESPACE_INDEX, namespace)

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value`` in index ``index_name``. UnknownIndexError (a
        KeyError) naming this informer and its indexes: unknown index."""
        try:
            return self._indexer.by_index(index_name, value)
        except UnknownIndexError as err:
            raise err.for_informer(err.informer or self.name) from None

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys filed under ``value`` in index ``index_name``. UnknownIndexError: unknown
        index (as ``by_index``)."""
        try:
            return self._indexer.index_keys(index_name, value)
        except UnknownIndexError as err:
            raise err.for_informer(err.informer or self.name) from None

    def list_index_func_values(self, index_name: str) -> list[str]:
        """Every value that has at least one object under index ``index_name``, sorted (client-go
        ``Indexer.ListIndexFuncValues``). UnknownIndexError: unknown index (as ``by_index``;
        the indexer itself answers [] for one)."""
        known = self._indexer.get_indexers()
        if index_name not in known:
            raise UnknownIndexError(index_name, known, self.name)
        return sorted(self._indexer.list_index_func_values(index_name))
