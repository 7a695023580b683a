"""SharedIndexInformer: one reflector, one DeltaFIFO, one indexer and many handlers (as client-go
``tools/cache/shared_informer.go``).

Flow: reflector -> DeltaFIFO -> process (applies all deltas of one key to the indexer under
the store lock once) -> shared processor -> each listener's buffer and thread -> handler, or,
for a synchronous listener, the handler at once. A transform runs inside the DeltaFIFO, before
anything is queued or stored.

Where client-go runs the process loop in a goroutine of its own that pops the DeltaFIFO, kinrun
pops it on the thread that queued the change (the reflector's, or the resync timer's) right
after queuing it: under CPython's GIL a second thread cannot process in parallel anyway, and
each hand-off between threads costs a wake-up and a GIL switch per event (~15 us measured,
``benchmarks/``). The DeltaFIFO keeps its role and semantics (per-key delta lists, Replace and
tombstones, resync, has_synced); processing stays serial, since ``DeltaFIFO.pop`` runs the
process callback under the FIFO lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kinrun.cache.delta_fifo import Delta, DeltaFIFO, DeltaType, PopProcess
from kinrun.gc.pause import gc_paused
from kinrun.cache.handler import ResourceEventHandler
from kinrun.cache.index import Indexers
from kinrun.cache.lister import Lister
from kinrun.cache.listwatch import ListerWatcher, Obj
from kinrun.cache.processor import (
    ADD,
    DELETE,
    UPDATE,
    ProcessorListener,
    SharedProcessor,
    determine_resync_period,
)
from kinrun.cache.reflector import Liveness, Reflector
from kinrun.cache.store import deletion_handling_meta_namespace_key, resource_version
from kinrun.cache.thread_safe_store import IndexFuncError, KeyedIndexer
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.threads import SupervisedThread

log = logging.getLogger("kinrun.informer")

MINIMUM_RESYNC_PERIOD = 1.0
"""Seconds; shorter handler resync periods are raised to this (client-go minimumResyncPeriod)."""

Transform = Callable[[Obj], Obj]


class InformerStoppedError(RuntimeError):
    """A handler was added to an informer that has stopped."""


@dataclass(frozen=True, eq=False)
class ListenerRegistration:
    """What ``add_event_handler`` returns: pass it to ``remove_event_handler``."""

    informer: SharedIndexInformer
    listener: ProcessorListener

    def has_synced(self) -> bool:
        """True once the informer synced and this handler has handled every initial-list add."""
        return self.informer.has_synced() and self.listener.initial_list_handled()


class SharedIndexInformer:
    """Keeps an indexed cache of one collection and notifies handlers of every change.

    ``lister_watcher``: the collection; ``kind``: expected object kind (others skipped);
    ``resync_period`` (s, 0 = never): default for handlers added without one; ``indexers``:
    extra indexes (the ``namespace`` index is built in); ``transform``: applied to every object
    before it is queued or stored (e.g. strip managedFields), must return a dict and not
    modify shared state; ``reflector_options``: extra keyword arguments for ``Reflector``.

    Thread-safety: every public method is thread-safe. ``_block_deltas`` is held while one key's
    deltas are applied and distributed, and while a late handler receives the store content, so
    a late handler sees each object exactly once as an add and then every later change.
    """

    def __init__(self, lister_watcher: ListerWatcher, *, kind: str | None = None,
                 resync_period: float = 0.0, indexers: Indexers | None = None,
                 transform: Transform | None = None, clock: Clock | None = None,
                 name: str = "", reflector_options: dict[str, Any] | None = None) -> None:
        self.name = name or kind or "informer"
        self._clock = clock or REAL_CLOCK
        self.indexer = KeyedIndexer(indexers=indexers)
        self.lister = Lister(self.indexer, self.name)
        self._store = self.indexer.store
        self._synced = threading.Event()
        self._fifo = DeltaFIFO(self.indexer, transform=transform, on_synced=self._synced.set)
        self._processor = SharedProcessor(self._clock, self.name)
        self._default_resync = resync_period
        self._resync_check_period = resync_period
        self._block_deltas = threading.Lock()
        self._start_lock = threading.Lock()  # guards _started/_stopped and resync settings
        self._started = False
        self._stopped = False
        self._stop_event = threading.Event()
        self._threads: list[threading.Thread] = []
        self.reflector = Reflector(lister_watcher, _DrainingFIFO(self._fifo, self._handle_deltas,
                                                                 self.name),
                                   kind=kind, name=self.name,
                                   resync_period=resync_period,
                                   should_resync=self._processor.should_resync, clock=self._clock,
                                   **(reflector_options or {}))

    def shared_informers(self) -> list[SharedIndexInformer]:
        """Itself (``InformerInterface``: the shared informers behind a configured one)."""
        return [self]

    def index_reader(self) -> KeyedIndexer:
        """Its Indexer (``InformerInterface``)."""
        return self.indexer

    # -- handlers ----------------------------------------------------------------------------

    def add_event_handler(self, handler: ResourceEventHandler,
                          resync_period: float | None = None, *,
                          synchronous: bool = False) -> ListenerRegistration:
        """Register a handler, before or after start. After start, it first receives every
        cached object as ``on_add(obj, True)``. ``resync_period`` (s; None = the informer's
        default; 0 = none) is raised to 1 s, and to the informer's check period once started.
        ``synchronous``: call the handler on the informer's processing thread instead of a
        listener thread of its own (for quick, non-blocking handlers such as a workqueue add;
        see ``ProcessorListener``). Raises InformerStoppedError after ``stop``."""
        period = self._default_resync if resync_period is None else resync_period
        with self._start_lock:
            if self._stopped:
                raise InformerStoppedError(f"informer {self.name} has stopped")
            period = self._adjust_resync_locked(period)
            listener = ProcessorListener(
                handler, period, determine_resync_period(period, self._resync_check_period),
                self._clock, self.name, synchronous=synchronous)
            if not self._started:
                self._processor.add_listener(listener)
                return ListenerRegistration(self, listener)
            with self._block_deltas:
                self._processor.add_listener(listener)
                for obj in self.indexer.list():
                    listener.add((ADD, obj, True))
        return ListenerRegistration(self, listener)

    def _adjust_resync_locked(self, period: float) -> float:
        if period <= 0:
            return 0.0
        if period < MINIMUM_RESYNC_PERIOD:
            log.warning("%s: resync period %.3fs too small; using %.0fs", self.name, period,
                        MINIMUM_RESYNC_PERIOD)
            period = MINIMUM_RESYNC_PERIOD
        if period < self._resync_check_period or self._resync_check_period == 0:
            if self._started:
                log.warning("%s: informer started; resync period %.3fs raised to %.3fs",
                            self.name, period, self._resync_check_period)
                return max(period, self._resync_check_period)
            self._resync_check_period = period
            self.reflector.resync_period = period
            self._processor.resync_check_period_changed(period)
        return period

    def remove_event_handler(self, registration: ListenerRegistration) -> bool:
        """Unregister a handler (client-go ``RemoveEventHandler``, 1.26+); its buffered
        notifications are dropped. False if unknown."""
        return self._processor.remove_listener(registration.listener)

    def add_indexers(self, indexers: Indexers) -> None:
        """Add indexes, before or after start; existing objects are indexed at once.
        Raises IndexConflictError / IndexFuncError (then nothing is added)."""
        with self._block_deltas:
            self.indexer.add_indexers(indexers)

    def update_indexers(self, indexers: Indexers, remove: Iterable[str] = ()) -> None:
        """Hot reload: set ``indexers`` (a name present is replaced) and drop the ``remove``
        names, each set index built from the cache at once (no relist). Raises IndexFuncError
        (then nothing changes)."""
        with self._block_deltas:
            self.indexer.store.update_indexers(indexers, remove)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start the reflector and the buffered listeners in daemon threads."""
        with self._start_lock:
            if self._started or self._stopped:
                return
            self._started = True
        self._processor.run()
        thread = SupervisedThread(target=self.reflector.run, name=f"informer-{self.name}-reflector",
                                  daemon=True)
        self._threads.append(thread)
        thread.start()

    def run(self) -> None:
        """Start, then block until ``stop``."""
        self.start()
        self._stop_event.wait()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every thread and join them (each at most ``timeout`` s). Idempotent."""
        with self._start_lock:
            if self._stopped:
                return
            self._stopped = True
        self.reflector.stop()
        self._fifo.close()
        self._processor.stop()
        for thread in self._threads:
            thread.join(timeout)
        self._stop_event.set()

    def handlers_idle(self) -> bool:
        """True when every handler has handled every notification given to it so far: the
        buffered listeners (their own threads) have caught up; synchronous ones always have.
        ``kinrun test`` checks it to know a change's key mappings are done."""
        return self._processor.idle()

    def has_synced(self) -> bool:
        """True once the first list has been fully stored and handed to the handlers."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Block (real time) until synced or stopped; returns ``has_synced()``."""
        deadline = None if timeout is None else REAL_CLOCK.now() + timeout
        while not self._synced.is_set() and not self._stop_event.is_set():
            left = 0.05 if deadline is None else min(0.05, deadline - REAL_CLOCK.now())
            if left <= 0:
                break
            self._synced.wait(left)
        return self._synced.is_set()

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion the reflector resumes from."""
        return self.reflector.last_sync_resource_version

    def liveness(self) -> Liveness:
        """The reflector's liveness now (``Reflector.liveness``: wedged when running without
        progress past its inactivity limit). Thread-safe; for liveness probes."""
        return self.reflector.liveness()

    # -- processing --------------------------------------------------------------------------

    def _handle_deltas(self, deltas: list[Delta], is_in_initial_list: bool) -> None:
        """Apply every delta of one key under the store lock once, then distribute."""
        key = deletion_handling_meta_namespace_key(deltas[0].object)
        store = self._store
        out: list[tuple[tuple[int, Any, Any], bool]] = []
        with self._block_deltas:
            with store.lock:
                for delta in deltas:
                    self._apply_locked(store, key, delta, is_in_initial_list, out)
            distribute = self._processor.distribute
            for notification, sync in out:
                distribute(notification, sync)

    def _apply_locked(self, store: Any, key: str, delta: Delta, initial: bool,
                      out: list[tuple[tuple[int, Any, Any], bool]]) -> None:
        obj = delta.object
        if delta.type is DeltaType.DELETED:
            store.delete_locked(key)
            out.append(((DELETE, obj, None), False))
            return
        try:
            old = store.update_locked(key, obj)
        except IndexFuncError as err:
            log.error("%s: %s; object not cached", self.name, err)
            return
        if old is None:
            out.append(((ADD, obj, initial), False))
        else:
            out.append(((UPDATE, old, obj), resource_version(old) == resource_version(obj)))


class _DrainingFIFO:
    """The DeltaFIFO as the reflector sees it (a ``ReflectorStore``): every change is queued,
    then every queued key is popped and processed on the calling thread (see the module
    docstring). Stateless; thread-safe as the DeltaFIFO is: two threads draining at once (the
    reflector and the resync timer) process one key at a time, under the FIFO lock. ``process``
    must not raise ``RequeueError`` (the key would be popped again at once, forever)."""

    __slots__ = ("_fifo", "_process", "_name")

    def __init__(self, fifo: DeltaFIFO, process: PopProcess, name: str) -> None:
        self._fifo, self._process, self._name = fifo, process, name

    def add(self, obj: Obj) -> None:
        self._fifo.add(obj)
        self._drain()

    def update(self, obj: Obj) -> None:
        self._fifo.update(obj)
        self._drain()

    def delete(self, obj: Any) -> None:
        self._fifo.delete(obj)
        self._drain()

    def replace(self, objects: list[Obj], resource_version: str) -> None:
        # Replace makes a Delta and a one-item list per key: with 100,000 objects that crossed
        # the young threshold twice, two collections of 150-180 ms walking them alive. They
        # are acyclic: frozen with the LIST's objects, freed as the drain pops them.
        with gc_paused(freeze=True):
            self._fifo.replace(objects, resource_version)
        self._drain()

    def resync(self) -> None:
        self._fifo.resync()
        self._drain()

    def _drain(self) -> None:
        # every key queued by this change (one for a watch event, all of a relist) under one
        # hold of the FIFO lock (DeltaFIFO.drain); one bad object must not stop the informer
        self._fifo.drain(self._process, self._failed)

    def _failed(self, err: BaseException) -> None:
        log.error("%s: processing deltas failed", self._name, exc_info=err)


def wait_for_cache_sync(*informers: SharedIndexInformer, timeout: float | None = None) -> bool:
    """Block (real time, ``timeout`` s overall, None = no limit) until every informer synced.
    Returns False on timeout or when an informer stopped first (client-go WaitForCacheSync)."""
    deadline = None if timeout is None else REAL_CLOCK.now() + timeout
    for informer in informers:
        left = None if deadline is None else max(0.0, deadline - REAL_CLOCK.now())
        if not informer.wait_for_sync(left):
            return False
    return True
