"""Controller workers: get a key, read the object, reconcile, forget or retry, done (as
client-go's sample-controller loop and controller-runtime's reconcile handling).

Also the event-handler helpers that map informer events to queue keys (step 7 of the pipeline):
``enqueue_own_key``, ``enqueue_owner_key`` and ``enqueue_mapped``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from kinrun.cache.handler import ResourceEventHandler
from kinrun.cache.listwatch import Obj
from kinrun.cache.store import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import PermanentError, TemporaryError
from kinrun.workqueue import RateLimitingInterface

Reconcile = Callable[[str, Obj | None], float | None]
"""(key, object or None when absent) -> None, or seconds after which to reconcile again."""

GetObject = Callable[[str], Obj | None]


class Controller:
    """Runs ``workers`` threads over ``queue``.

    Each loop: ``key = queue.get()``; ``obj = get_object(key)`` (None: deleted);
    ``reconcile(key, obj)``; then
      * success: ``forget``; a positive return value re-adds the key after that many seconds;
      * ``TemporaryError(delay)``: re-added after ``delay`` s (not counted as a failure); with
        ``delay=None`` it counts as a failure like any other error;
      * ``PermanentError``: ``forget``, logged; the key waits for its next change;
      * any other error: ``add_rate_limited`` while ``num_requeues < max_retries``, then
        ``forget`` and a logged error (the key is dropped until it changes);
    and ``done(key)`` always, even when ``get_object`` or ``reconcile`` raises.

    Thread-safety: ``enqueue``/``start``/``stop`` are thread-safe; ``reconcile`` runs on worker
    threads, never for the same key on two threads at once (the queue guarantees it).
    """

    def __init__(self, name: str, queue: RateLimitingInterface, get_object: GetObject,
                 reconcile: Reconcile, *, workers: int = 1, max_retries: int = 15,
                 clock: Clock | None = None, logger: logging.Logger | None = None) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.name, self.queue = name, queue
        self._get_object, self._reconcile = get_object, reconcile
        self.workers, self.max_retries = workers, max_retries
        self._clock = clock or REAL_CLOCK
        self.log = logger or logging.getLogger(f"kinrun.controller.{name}")
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()  # workers exit after their current key

    def enqueue(self, key: str) -> None:
        """Ask for ``key`` to be reconciled (deduplicated by the queue)."""
        self.queue.add(key)

    def start(self) -> None:
        """Start the worker threads (once)."""
        if self._threads:
            return
        for i in range(self.workers):
            thread = threading.Thread(target=self._worker, name=f"{self.name}-worker-{i}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self, drain_timeout: float = 10.0) -> bool:
        """Refuse new keys, let workers finish queued and running keys, make them exit after
        their current key and join them: all within ``drain_timeout`` s in total (a reconcile
        still running then is left to finish on its daemon thread). Returns whether everything
        drained and every thread ended. Never started: the queue is shut down at once (queued
        keys are dropped)."""
        if not self._threads:
            self.queue.shut_down()
            return True
        deadline = time.monotonic() + drain_timeout
        drained = self.queue.shut_down_with_drain(drain_timeout)
        self._stopping.set()
        self.queue.shut_down()
        joined = True
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
            joined = joined and not thread.is_alive()
        if not (drained and joined):
            self.log.error("%s: stopped without draining (reconciles still running)", self.name)
        return drained and joined

    def _worker(self) -> None:
        while not self._stopping.is_set():
            if not self.process_next_item():
                return

    def process_next_item(self) -> bool:
        """Handle one key; False once the queue is shut down and empty."""
        key, shutdown = self.queue.get()
        if shutdown:
            return False
        if key is None:
            return True
        try:
            self._reconcile_key(key)
        finally:
            self.queue.done(key)
        return True

    def _reconcile_key(self, key: Any) -> None:
        try:
            requeue_after = self._reconcile(key, self._get_object(key))
        except PermanentError as err:
            self.queue.forget(key)
            self.log.error("%s: reconcile %s failed permanently: %s", self.name, key, err)
        except TemporaryError as err:
            if err.delay is None:
                self._retry(key, err)
            else:
                self.log.info("%s: reconcile %s: retry in %.3fs: %s", self.name, key, err.delay, err)
                self.queue.add_after(key, err.delay)
        except Exception as err:  # noqa: BLE001 - reconcile errors are retried, never fatal
            self._retry(key, err)
        else:
            self.queue.forget(key)
            if requeue_after is not None and requeue_after > 0:
                self.queue.add_after(key, float(requeue_after))

    def _retry(self, key: Any, err: BaseException) -> None:
        if self.queue.num_requeues(key) < self.max_retries:
            self.log.warning("%s: reconcile %s failed (will retry): %s: %s", self.name, key,
                             type(err).__name__, err)
            self.queue.add_rate_limited(key)
            return
        self.queue.forget(key)
        self.log.error("%s: dropping %s after %d retries: %s", self.name, key, self.max_retries,
                       err, exc_info=err)


# -- event handlers that map informer events to keys -------------------------------------------


class _MappingHandler:
    """A ResourceEventHandler that enqueues the keys ``map_func`` gives for an object; for an
    update, the keys of the old and the new object (so a changed owner reaches both)."""

    __slots__ = ("enqueue", "map_func", "log")

    def __init__(self, enqueue: Callable[[str], None], map_func: Callable[[Obj], Iterable[str]]) -> None:
        self.enqueue, self.map_func = enqueue, map_func
        self.log = logging.getLogger("kinrun.controller")

    def _emit(self, obj: Obj | None) -> set[str]:
        if obj is None:
            return set()
        try:
            return {k for k in self.map_func(obj) if k}
        except Exception:  # noqa: BLE001 - a bad object must not stop the handler
            self.log.exception("mapping %r to keys failed", self.map_func)
            return set()

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Enqueue the object's keys."""
        for key in self._emit(obj):
            self.enqueue(key)

    def on_update(self, old: Obj, new: Obj) -> None:
        """Enqueue the keys of both versions."""
        for key in self._emit(old) | self._emit(new):
            self.enqueue(key)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Enqueue the keys of the object (a tombstone's last known state)."""
        for key in self._emit(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj):
            self.enqueue(key)


class _OwnKeyHandler:
    """Enqueues the object's own key (tombstones: their key). The hot path: no allocation."""

    __slots__ = ("enqueue",)

    def __init__(self, enqueue: Callable[[str], None]) -> None:
        self.enqueue = enqueue

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Enqueue the object's key."""
        self.enqueue(deletion_handling_meta_namespace_key(obj))

    def on_update(self, old: Obj, new: Obj) -> None:
        """Enqueue the new object's key."""
        self.enqueue(deletion_handling_meta_namespace_key(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Enqueue the key (of the tombstone, if it is one)."""
        self.enqueue(deletion_handling_meta_namespace_key(obj))


def enqueue_own_key(enqueue: Callable[[str], None]) -> ResourceEventHandler:
    """A handler that enqueues each object's own key ("ns/name" or "name")."""
    return _OwnKeyHandler(enqueue)


def owner_keys(obj: Obj, owner_kind: str, owner_group: str | None = None, *,
               only_controller: bool = False) -> list[str]:
    """Keys of ``obj``'s owners of ``owner_kind`` (and API group ``owner_group``, "" = core,
    None = any), in ``obj``'s namespace (owners of a cluster-scoped object: "name").
    ``only_controller``: only the reference with ``controller: true``."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    keys = []
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") != owner_kind or not ref.get("name"):
            continue
        if owner_group is not None and _group(ref.get("apiVersion", "")) != owner_group:
            continue
        if only_controller and not ref.get("controller"):
            continue
        keys.append(f"{namespace}/{ref['name']}" if namespace else ref["name"])
    return keys


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def enqueue_owner_key(enqueue: Callable[[str], None], owner_kind: str,
                      owner_group: str | None = None, *,
                      only_controller: bool = False) -> ResourceEventHandler:
    """A handler that enqueues the keys of each object's owners of ``owner_kind`` (see
    ``owner_keys``); updates enqueue the owners of both the old and the new version."""
    def map_func(obj: Obj) -> list[str]:
        return owner_keys(obj, owner_kind, owner_group, only_controller=only_controller)
    return _MappingHandler(enqueue, map_func)


def enqueue_mapped(enqueue: Callable[[str], None],
                   map_func: Callable[[Obj], Iterable[str]]) -> ResourceEventHandler:
    """A handler that enqueues every key ``map_func(obj)`` returns ("" and errors are skipped,
    errors logged); for updates, the keys of both versions. For template or index mappings."""
    return _MappingHandler(enqueue, map_func)
