"""The read and run interfaces of an informer, as client-go's ``cache.SharedIndexInformer`` and
its generated listers: what the rest of kinrun may rely on, whichever implementation it holds.

    ListerInterface     get, list, by_index, index_keys: read-only views of a cache
    IndexReader         list, by_index, index_keys: what ``ReconcileContext.indexers`` holds
    InformerInterface   handlers, indexes, start/stop, sync, its lister and shared informers

Implemented by ``Lister`` and ``MultiNamespaceLister`` (listers), ``Indexer`` implementations
and ``MultiNamespaceLister`` (index readers), ``SharedIndexInformer`` and
``MultiNamespaceInformer`` (informers); a contract test checks each. Objects returned by any of
them are shared and must not be modified. Types only: no state, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kinrun.cache.handler import ResourceEventHandler
from kinrun.cache.index import Indexers
from kinrun.cache.listwatch import Obj

if TYPE_CHECKING:
    from kinrun.cache.shared_informer import SharedIndexInformer


@runtime_checkable
class IndexReader(Protocol):
    """Reads one cache by its indexes. Thread-safe."""

    def list(self) -> list[Obj]:
        """Every object."""
        ...

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value`` in index ``index_name``. KeyError: unknown index."""
        ...

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys filed under ``value`` in index ``index_name``. KeyError: unknown index."""
        ...


@runtime_checkable
class ListerInterface(Protocol):
    """A read-only view of one informer's cache (client-go's generated listers). Thread-safe."""

    def get(self, key: str) -> Obj | None:
        """The object under ``key`` ("ns/name" or "name"), or None."""
        ...

    def list(self, namespace: str | None = None) -> list[Obj]:
        """Every object, or those of one ``namespace``."""
        ...

    def by_index(self, index_name: str, value: str) -> list[Obj]:
        """Objects filed under ``value`` in index ``index_name``. KeyError: unknown index."""
        ...

    def index_keys(self, index_name: str, value: str) -> list[str]:
        """Keys filed under ``value`` in index ``index_name``. KeyError: unknown index."""
        ...


@runtime_checkable
class InformerInterface(Protocol):
    """One configured informer: a shared informer, or one per namespace behind one face
    (client-go ``SharedIndexInformer``). Every method is thread-safe."""

    lister: ListerInterface

    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None, *,
                          synchronous: bool = False) -> Any:
        """Register ``handler``; returns its registration (one, or one per namespace), for
        ``remove_event_handler``."""
        ...

    def remove_event_handler(self, registration: Any) -> bool:
        """Unregister what ``add_event_handler`` returned."""
        ...

    def add_indexers(self, indexers: Indexers) -> None:
        """Add indexes (before or after start)."""
        ...

    def start(self) -> None:
        """Start listing and watching."""
        ...

    def stop(self, timeout: float = 5.0) -> None:
        """Stop, waiting at most ``timeout`` seconds for the threads."""
        ...

    def has_synced(self) -> bool:
        """The initial list is in the cache."""
        ...

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block until synced (True) or ``timeout`` seconds passed (False)."""
        ...

    def shared_informers(self) -> Iterable[SharedIndexInformer]:
        """The shared informers behind this one (itself, or one per namespace)."""
        ...

    def index_reader(self) -> IndexReader:
        """What reads its cache by index: its Indexer, or its lister over several namespaces."""
        ...
