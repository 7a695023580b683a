"""The thread-safe, indexed object map under every informer cache (as client-go
``tools/cache/thread_safe_store.go`` and ``store.go``'s ``cache``).

``ThreadSafeStore`` is keyed by the caller; ``KeyedIndexer`` wraps it with a key function to make
the ``Indexer`` that informers and listers use.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from kinrun.cache.index import (
    NAMESPACE_INDEX,
    IndexConflictError,
    Indexers,
    IndexFunc,
    UnknownIndexError,
    meta_namespace_index_func,
)
from kinrun.cache.listwatch import Obj
from kinrun.cache.store import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key

KeyFunc = Callable[[Obj], str]


class IndexFuncError(ValueError):
    """An index function raised or returned a non-list; carries ``index_name`` and ``key``.

    The store is left unchanged (the object is neither stored nor indexed)."""

    def __init__(self, index_name: str, key: str, cause: BaseException | str) -> None:
        super().__init__(f"index {index_name!r} failed for {key!r}: {cause}")
        self.index_name = index_name
        self.key = key


def _index_values(name: str, func: IndexFunc, key: str, obj: Obj | None) -> list[str]:
    if obj is None:
        return []
    try:
        values = func(obj)
    except Exception as err:
        raise IndexFuncError(name, key, err) from err
    if not isinstance(values, list | tuple | set | frozenset):
        raise IndexFuncError(name, key, f"returned {type(values).__name__}, not a list")
    return list(values)


class ThreadSafeStore:
    """A map key -> object plus named indexes, all changed together under one lock.

    Thread-safety: every public method is thread-safe. Methods named ``*_locked`` need the lock
    held, taken with ``with store.locked():`` (that is how an informer applies all deltas of one
    key in one critical section). Objects are shared and read-only: never modify what you put in
    or get out.

    Invariants (hold whenever the lock is free):
      * ``_indices[name][value]`` holds ``key`` iff ``key in _items`` and ``value`` is one of
        ``_indexers[name](_items[key])``; no empty value sets are kept.
      * ``_indexers`` and ``_indices`` have the same names.
    """

    def __init__(self, indexers: Indexers | None = None) -> None:
        self._lock = threading.Lock()
        self.lock = self._lock  # for ``with store.lock:`` around ``*_locked`` calls (hot path)
        self._items: dict[str, Obj] = {}
        self._indexers: Indexers = {}
        self._indices: dict[str, dict[str, set[str]]] = {}
        if indexers:
            self.add_indexers(indexers)

    @contextmanager
    def locked(self) -> Iterator[ThreadSafeStore]:
        """Hold the store lock for a batch of ``*_locked`` calls."""
        with self._lock:
            yield self

    # -- writes ------------------------------------------------------------------------------

    def add(self, key: str, obj: Obj) -> None:
        """Insert or replace ``key``. Raises IndexFuncError (store unchanged)."""
        with self._lock:
            self.update_locked(key, obj)

    update = add

    def delete(self, key: str) -> None:
        """Remove ``key`` and its index entries; unknown keys are ignored."""
        with self._lock:
            self.delete_locked(key)

    def replace(self, items: dict[str, Obj], resource_version: str = "") -> None:
        """Swap the whole content for ``items`` and rebuild every index (client-go Replace).
        Raises IndexFuncError (store unchanged)."""
        with self._lock:
            indices = {n: self._build_index(n, f, items) for n, f in self._indexers.items()}
            self._items = dict(items)
            self._indices = indices

    def resync(self) -> None:
        """Nothing to do for a plain store (client-go: a no-op kept for the Store interface)."""

    def update_locked(self, key: str, obj: Obj) -> Obj | None:
        """Store ``obj`` under ``key``, move its index entries; returns the old object. Lock held."""
        old = self._items.get(key)
        changes = [(name, _index_values(name, f, key, old), _index_values(name, f, key, obj))
                   for name, f in self._indexers.items()]
        for name, old_values, new_values in changes:
            self._reindex_locked(name, key, old_values, new_values)
        self._items[key] = obj
        return old

    def delete_locked(self, key: str) -> Obj | None:
        """Remove ``key`` and its index entries; returns the removed object. Lock held."""
        old = self._items.pop(key, None)
        if old is None:
            return None
        for name, func in self._indexers.items():
            try:
                values = _index_values(name, func, key, old)
            except IndexFuncError:
                values = self._values_holding(name, key)
            self._reindex_locked(name, key, values, [])
        return old

    def _values_holding(self, name: str, key: str) -> list[str]:
        return [v for v, keys in self._indices[name].items() if key in keys]

    def _reindex_locked(self, name: str, key: str, old: list[str], new: list[str]) -> None:
        if old == new:
            return
        index = self._indices[name]
        for value in old:
            if value not in new:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
        for value in new:
            index.setdefault(value, set()).add(key)

    # -- reads -------------------------------------------------------------------------------

    def get(self, key: str) -> Obj | None:
        """The object under ``key`` or None."""
        return self._items.get(key)  # a single dict read is atomic under the GIL

    get_locked = get

    def list(self) -> list[Obj]:
        """A new list of every object (the objects themselves are shared)."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> list[str]:
        """A new list of every key."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def index(self, index_name: str, obj: Obj) -> list[Obj]:
        """Objects sharing any ``index_name`` value with ``obj``. UnknownIndexError (a
        KeyError): unknown index."""
        with self._lock:
            index = self._index_locked(index_name)
            keys: set[str] = set()
            for value in _index_values(index_name, self._indexers[index_name], "<query>", obj):
                keys |= index.get(value, set())
            return [self._items[k] for k in keys]

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value``. UnknownIndexError (a KeyError): unknown index."""
        with self._lock:
            keys = self._index_locked(index_name).get(value, ())
            return [self._items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys filed under ``value``. UnknownIndexError (a KeyError): unknown index."""
        with self._lock:
            return list(self._index_locked(index_name).get(value, ()))

    def _index_locked(self, index_name: str) -> dict[str, set[str]]:
        """The index ``index_name`` (value -> keys); UnknownIndexError naming the known ones."""
        try:
            return self._indices[index_name]
        except KeyError:
            raise UnknownIndexError(index_name, self._indexers) from None

    def list_index_func_values(self, index_name: str) -> list[str]:
        """Values that have at least one object under ``index_name`` (empty for unknown index)."""
        with self._lock:
            return list(self._indices.get(index_name, {}))

    def get_indexers(self) -> Indexers:
        """A copy of the registered index functions."""
        with self._lock:
            return dict(self._indexers)

    def add_indexers(self, indexers: Indexers) -> None:
        """Register index functions and index every stored object at once.

        Raises IndexConflictError when a name exists, IndexFuncError when a function fails on a
        stored object (nothing is registered then)."""
        with self._lock:
            for name in indexers:
                if name in self._indexers:
                    raise IndexConflictError(name)
            built = {n: self._build_index(n, f, self._items) for n, f in indexers.items()}
            self._indexers.update(indexers)
            self._indices.update(built)

    def update_indexers(self, indexers: Indexers, remove: Iterable[str] = ()) -> None:
        """Set index functions (a name present is replaced) and drop the ``remove`` names;
        each set index is rebuilt from every stored object at once. Raises IndexFuncError
        when a function fails on a stored object (nothing changes then). For hot reload."""
        with self._lock:
            built = {n: self._build_index(n, f, self._items) for n, f in indexers.items()}
            for name in remove:
                self._indexers.pop(name, None)
                self._indices.pop(name, None)
            self._indexers.update(indexers)
            self._indices.update(built)

    @staticmethod
    def _build_index(name: str, func: IndexFunc, items: dict[str, Obj]) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for key, obj in items.items():
            for value in _index_values(name, func, key, obj):
                index.setdefault(value, set()).add(key)
        return index


class KeyedIndexer:
    """An ``Indexer`` that computes keys with ``key_func`` over a ``ThreadSafeStore`` (client-go
    ``cache`` / NewIndexer). Thread-safe; returned objects are shared and read-only.

    The default key function handles tombstones, and the namespace index is built in unless
    ``indexers`` already names it or ``namespace_index=False``.
    """

    def __init__(self, key_func: KeyFunc = deletion_handling_meta_namespace_key,
                 indexers: Indexers | None = None, *, namespace_index: bool = True) -> None:
        all_indexers: Indexers = {}
        if namespace_index:
            all_indexers[NAMESPACE_INDEX] = meta_namespace_index_func
        all_indexers.update(indexers or {})
        self.key_func = key_func
        self.store = ThreadSafeStore(all_indexers)

    def add(self, obj: Obj) -> None:
        """Insert or replace the object under its key."""
        self.store.add(self.key_func(obj), obj)

    update = add

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Remove the object (or tombstone) by its key."""
        self.store.delete(self.key_func(obj))

    def get(self, obj: Obj) -> Obj | None:
        """The stored object with ``obj``'s key, or None."""
        return self.store.get(self.key_func(obj))

    def get_by_key(self, key: str) -> Obj | None:
        """The stored object under ``key``, or None."""
        return self.store.get(key)

    def list(self) -> list[Obj]:
        """Every stored object."""
        return self.store.list()

    def list_keys(self) -> list[str]:
        """Every stored key."""
        return self.store.list_keys()

    def replace(self, objects: list[Obj], resource_version: str = "") -> None:
        """Swap the content for ``objects``."""
        self.store.replace({self.key_func(o): o for o in objects}, resource_version)

    def resync(self) -> None:
        """No-op (client-go cache.Resync)."""

    def index(self, index_name: str, obj: Obj) -> list[Obj]:
        """See ``ThreadSafeStore.index``."""
        return self.store.index(index_name, obj)

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """See ``ThreadSafeStore.by_index``."""
        return self.store.by_index(index_name, value)

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """See ``ThreadSafeStore.index_keys``."""
        return self.store.index_keys(index_name, value)

    def list_index_func_values(self, index_name: str) -> list[str]:
        """See ``ThreadSafeStore.list_index_func_values``."""
        return self.store.list_index_func_values(index_name)

    def get_indexers(self) -> Indexers:
        """See ``ThreadSafeStore.get_indexers``."""
        return self.store.get_indexers()

    def add_indexers(self, indexers: Indexers) -> None:
        """See ``ThreadSafeStore.add_indexers``."""
        self.store.add_indexers(indexers)

    def __len__(self) -> int:
        return len(self.store)


def new_indexer(key_func: KeyFunc = deletion_handling_meta_namespace_key,
                indexers: Indexers | None = None) -> KeyedIndexer:
    """An empty ``Indexer`` with the namespace index plus ``indexers`` (client-go NewIndexer)."""
    return KeyedIndexer(key_func, indexers)
