"""InformerSet: one configured informer, backed by one shared informer per namespace.

The API server watches one namespace or all of them, so ``namespaces: [a, b]`` takes one
SharedIndexInformer per namespace (as controller-runtime's multi-namespace cache does). An
InformerSet makes them look like one: handlers are added to each, and its lister routes a key
to the informer of its namespace, or merges results across them.

Thread-safety: immutable after construction; every method is thread-safe (the informers are).
"""

from __future__ import annotations

from collections.abc import Mapping

from kinrun.cache import ListenerRegistration, ResourceEventHandler, SharedIndexInformer
from kinrun.cache.listwatch import Obj


class InformerSet:
    """The informers of one configured informer.

    ``name``: the config's informer name; ``by_namespace``: namespace -> informer, or
    ``{None: informer}`` for an all-namespaces (or cluster-scoped) informer. The set is also
    its own lister (``get``/``list``/``by_index``/``index_keys``, as ``kinrun.cache.Lister``).
    """

    def __init__(self, name: str, by_namespace: Mapping[str | None, SharedIndexInformer]) -> None:
        if not by_namespace:
            raise ValueError(f"informer {name!r}: no namespaces")
        self.name = name
        self.by_namespace = dict(by_namespace)
        self._all = self.by_namespace.get(None)

    @property
    def informers(self) -> list[SharedIndexInformer]:
        """Every informer of the set."""
        return list(self.by_namespace.values())

    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None) -> list[ListenerRegistration]:
        """Add ``handler`` to every informer of the set (see SharedIndexInformer)."""
        return [inf.add_event_handler(handler, resync_period) for inf in self.informers]

    def has_synced(self) -> bool:
        """Whether every informer of the set has synced."""
        return all(inf.has_synced() for inf in self.informers)

    def __len__(self) -> int:
        return sum(len(inf.indexer.list_keys()) for inf in self.informers)

    # -- lister --------------------------------------------------------------------------------

    def _for_key(self, key: str) -> SharedIndexInformer | None:
        if self._all is not None:
            return self._all
        namespace = key.split("/", 1)[0] if "/" in key else ""
        return self.by_namespace.get(namespace)

    def get(self, key: str) -> Obj | None:
        """The cached object under ``key`` ("ns/name" or "name"), or None. Read-only."""
        informer = self._for_key(key)
        return None if informer is None else informer.indexer.get_by_key(key)

    def list(self) -> list[Obj]:
        """Every cached object of the set. Read-only."""
        return [obj for inf in self.informers for obj in inf.indexer.list()]

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects whose index ``index_name`` holds ``value``. KeyError: unknown index."""
        return [obj for inf in self.informers for obj in inf.indexer.by_index(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys whose index ``index_name`` holds ``value``. KeyError: unknown index."""
        return [k for inf in self.informers for k in inf.indexer.index_keys(index_name, value)]
