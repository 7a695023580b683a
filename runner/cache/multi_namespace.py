"""One logical informer over several namespaces: a shared informer per namespace behind the
informer API (resourceVersions of different watches cannot be merged, so each namespace keeps
its own reflector, as controller-runtime's multi-namespace cache does)."""

from __future__ import annotations

from kinrun.cache.handler import ResourceEventHandler
from kinrun.cache.index import Indexers
from kinrun.cache.listwatch import Obj
from kinrun.cache.shared_informer import ListenerRegistration, SharedIndexInformer, wait_for_cache_sync
from kinrun.cache.store import split_meta_namespace_key


class MultiNamespaceLister:
    """A Lister over per-namespace informers; ``get`` routes by the key's namespace.
    Thread-safe; returned objects are shared and read-only."""

    def __init__(self, informers: dict[str, SharedIndexInformer]) -> None:
        self._informers = informers

    def get(self, key: str) -> Obj | None:
        """The object under "ns/name" from that namespace's informer, or None."""
        try:
            namespace, _ = split_meta_namespace_key(key)
        except ValueError:
            return None
        informer = self._informers.get(namespace)
        return informer.lister.get(key) if informer is not None else None

    def list(self, namespace: str | None = None) -> list[Obj]:
        """Every object, or those of one namespace."""
        if namespace is not None:
            informer = self._informers.get(namespace)
            return informer.lister.list(namespace) if informer is not None else []
        return [o for inf in self._informers.values() for o in inf.lister.list()]

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value`` in every namespace. KeyError: unknown index."""
        return [o for inf in self._informers.values() for o in inf.lister.by_index(index_name, value)]

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys filed under ``value`` in every namespace."""
        return [k for inf in self._informers.values() for k in inf.lister.index_keys(index_name, value)]

    def list_index_func_values(self, index_name: str) -> list[str]:
        """Values with objects under ``index_name`` in any namespace, sorted, each once."""
        return sorted({v for inf in self._informers.values()
                       for v in inf.lister.list_index_func_values(index_name)})


class MultiNamespaceInformer:
    """The SharedIndexInformer API (handlers, lister, indexers, sync, start/stop) over one
    informer per namespace. Handlers are registered on each; a handler receives each
    namespace's notifications on that namespace's listener thread. Thread-safe."""

    def __init__(self, informers: dict[str, SharedIndexInformer]) -> None:
        if not informers:
            raise ValueError("MultiNamespaceInformer needs at least one namespace")
        self.informers = dict(informers)
        self.lister = MultiNamespaceLister(self.informers)

    def add_event_handler(self, handler: ResourceEventHandler, resync_period: float | None = None,
                          *, synchronous: bool = False) -> list[ListenerRegistration]:
        """Register ``handler`` on every namespace's informer (arguments as
        ``SharedIndexInformer.add_event_handler``); returns the registrations. A synchronous
        handler is called from every namespace's processing thread, so it must be thread-safe."""
        return [inf.add_event_handler(handler, resync_period, synchronous=synchronous)
                for inf in self.informers.values()]

    def remove_event_handler(self, registrations: list[ListenerRegistration]) -> bool:
        """Unregister what ``add_event_handler`` returned."""
        return all([r.informer.remove_event_handler(r) for r in registrations])

    def add_indexers(self, indexers: Indexers) -> None:
        """Add indexes to every namespace's informer."""
        for informer in self.informers.values():
            informer.add_indexers(indexers)

    def start(self) -> None:
        """Start every namespace's informer."""
        for informer in self.informers.values():
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every namespace's informer."""
        for informer in self.informers.values():
            informer.stop(timeout)

    def shared_informers(self) -> list[SharedIndexInformer]:
        """One shared informer per namespace (``InformerInterface``)."""
        return list(self.informers.values())

    def index_reader(self) -> MultiNamespaceLister:
        """Its lister, which reads every namespace's indexes (``InformerInterface``)."""
        return self.lister

    def has_synced(self) -> bool:
        """True once every namespace's informer synced."""
        return all(inf.has_synced() for inf in self.informers.values())

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until every namespace synced (``timeout`` s overall)."""
        return wait_for_cache_sync(*self.informers.values(), timeout=timeout)
