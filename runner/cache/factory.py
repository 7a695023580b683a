"""SharedInformerFactory: one informer per distinct watch, however many controllers ask (as
client-go ``informers.SharedInformerFactory``)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace

from kinrun.cache.index import IndexConflictError, Indexers
from kinrun.cache.listwatch import ListerWatcher
from kinrun.cache.multi_namespace import MultiNamespaceInformer
from kinrun.cache.shared_informer import SharedIndexInformer, Transform, wait_for_cache_sync
from kinrun.clock import Clock


@dataclass(frozen=True, slots=True)
class InformerKey:
    """The identity of a shared informer: what is listed and watched, and how it is transformed.

    ``resource``: resource id "group/version/resource" ("/v1/pods" or "v1/pods" for the core
    group: any stable spelling, compared as is); ``namespace``: one namespace, or None for all;
    ``label_selector`` / ``field_selector``: as sent to the server ("" = none); ``transform``: an
    id naming the transform ("" = none), e.g. "stripManagedFields" (``FieldPruner.id`` for a
    pruning transform); ``metadata_only``: objects are listed and watched as
    PartialObjectMetadata (apiVersion, kind, metadata), as client-go's metadata informers;
    ``projection``: the fields decoded (a hashable ``kinrun.kube.projection.Projection``, which
    the ListerWatcher builder reads), or None for whole objects.
    """

    resource: str
    namespace: str | None = None
    label_selector: str = ""
    field_selector: str = ""
    transform: str = ""
    metadata_only: bool = False
    projection: Hashable | None = None


class SharedInformerFactory:
    """Creates, starts and stops shared informers.

    ``lister_watcher_for(key)`` builds the ListerWatcher for a new key (called once per key).
    Thread-safety: every method is thread-safe; informers requested after ``start`` are
    started at once.
    """

    def __init__(self, lister_watcher_for: Callable[[InformerKey], ListerWatcher],
                 clock: Clock | None = None) -> None:
        self._lister_watcher_for = lister_watcher_for
        self._clock = clock
        self._lock = threading.Lock()
        self._informers: dict[InformerKey, SharedIndexInformer] = {}
        self._started = False

    def set_lister_watcher_for(self,
                               lister_watcher_for: Callable[[InformerKey], ListerWatcher]) -> None:
        """Build the ListerWatchers of keys requested from now on with ``lister_watcher_for``
        (hot reload: the new config's resources); running informers keep theirs."""
        with self._lock:
            self._lister_watcher_for = lister_watcher_for

    def informer_for(self, key: InformerKey, *, kind: str | None = None,
                     resync_period: float = 0.0, indexers: Indexers | None = None,
                     transform: Transform | None = None, name: str = "",
                     inactivity_timeout: float | None = None) -> SharedIndexInformer:
        """The informer for ``key``, created on first request.

        Later requests for the same key get the same informer: their ``indexers`` are added
        (a name already present is kept when it is the same function, else IndexConflictError),
        and their ``resync_period`` should be given per handler to ``add_event_handler``
        (the informer keeps the first request's default). ``transform`` must match ``key.transform``;
        only the first request's callable is used. ``inactivity_timeout`` (s, > 0): the
        reflector's watch inactivity limit (``Reflector``; None = its default,
        ``reflector.DEFAULT_INACTIVITY_TIMEOUT``); like ``resync_period``, the first request's
        value is kept. Raises ValueError for a limit <= 0."""
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = SharedIndexInformer(
                    self._lister_watcher_for(key), kind=kind, resync_period=resync_period,
                    indexers=indexers, transform=transform, clock=self._clock,
                    name=name or _informer_name(key),
                    reflector_options={"inactivity_timeout": inactivity_timeout})
                self._informers[key] = informer
                if self._started:
                    informer.start()
                return informer
        _merge_indexers(informer, indexers or {})
        return informer

    def informer_for_namespaces(self, key: InformerKey, namespaces: Iterable[str] | None, *,
                                kind: str | None = None, resync_period: float = 0.0,
                                indexers: Indexers | None = None,
                                transform: Transform | None = None, name: str = "",
                                inactivity_timeout: float | None = None,
                                ) -> SharedIndexInformer | MultiNamespaceInformer:
        """For a config's ``namespaces`` list: None (all namespaces) or one namespace gives the
        shared informer for ``key`` with that namespace; several give a
        ``MultiNamespaceInformer`` over one shared informer per namespace (each shared with
        any other request for that namespace). ``key.namespace`` is ignored. The other
        arguments as for ``informer_for`` (``inactivity_timeout`` applies to every namespace's
        reflector)."""
        names = sorted(set(namespaces)) if namespaces is not None else None
        kw = {"kind": kind, "resync_period": resync_period, "indexers": indexers,
              "transform": transform, "inactivity_timeout": inactivity_timeout}
        if names is None or len(names) == 1:
            ns = names[0] if names else None
            return self.informer_for(replace(key, namespace=ns), name=name, **kw)  # type: ignore[arg-type]
        return MultiNamespaceInformer({
            ns: self.informer_for(replace(key, namespace=ns), name=f"{name}-{ns}" if name else "", **kw)  # type: ignore[arg-type]
            for ns in names})

    def informers(self) -> dict[InformerKey, SharedIndexInformer]:
        """A snapshot of every informer created so far."""
        with self._lock:
            return dict(self._informers)

    def start(self) -> None:
        """Start every informer (and, from now on, every new one)."""
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def remove(self, keys: Iterable[InformerKey], timeout: float = 5.0) -> None:
        """Stop the informers of ``keys`` and forget them (hot reload: no informer name uses
        them any more); a later request for such a key creates a new informer (a new LIST).
        Unknown keys are ignored."""
        with self._lock:
            gone = [self._informers.pop(key) for key in keys if key in self._informers]
        for informer in gone:
            informer.stop(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every informer and join its threads."""
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            informer.stop(timeout)

    def wait_for_cache_sync(self, timeout: float | None = None) -> dict[InformerKey, bool]:
        """Block until every started informer synced (``timeout`` s overall); returns each
        key's ``has_synced()``."""
        informers = self.informers()
        wait_for_cache_sync(*informers.values(), timeout=timeout)
        return {key: inf.has_synced() for key, inf in informers.items()}


def _informer_name(key: InformerKey) -> str:
    parts = [key.resource.strip("/").rsplit("/", 1)[-1]]
    if key.namespace:
        parts.append(key.namespace)
    return "-".join(parts)


def _merge_indexers(informer: SharedIndexInformer, indexers: Indexers) -> None:
    existing = informer.indexer.get_indexers()
    new = {}
    for name, func in indexers.items():
        if name in existing:
            if existing[name] is not func:
                raise IndexConflictError(name)
        else:
            new[name] = func
    if new:
        informer.add_indexers(new)
