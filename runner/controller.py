"""Controller workers: get a key, read the object, reconcile, forget or retry, done (as
client-go's sample-controller loop and controller-runtime's reconcile handling).

Also the event-handler helpers that map informer events to queue keys (step 7 of the pipeline):
``enqueue_own_key``, ``enqueue_owner_key`` and ``enqueue_mapped``.
"""

from __future__ import annotations

import logging
import os
import sysconfig
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from kinrun.cache.handler import ResourceEventHandler
from kinrun.cache.listwatch import Obj
from kinrun.cache.store import (DeletedFinalStateUnknown, deletion_handling_meta_namespace_key,
                                resource_version)
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import KinrunError
from kinrun.fencing import FENCED_RETRY, Fence, fenced
from kinrun.gc import observer as gc_observer
from kinrun.reconcile import (ADDED, DELETION, MAPPED, REQUEUED, RESYNC, RETRIED, UPDATED, Cause,
                              Result)
from kinrun.threads import SupervisedThread
from kinrun.workqueue import RateLimitingInterface

Reconcile = Callable[..., "Result | float | None"]
"""(key, object or None when absent[, cause]) -> a Result, or None / seconds after which to
reconcile again (raising on failure)."""

GetObject = Callable[[str], Obj | None]

IsStale = Callable[[Any, "Obj | None"], bool]
"""(key, cached object or None) -> whether the cache is older than the controller's own last
write of that object (``kinrun.reconcile.Reconciler.stale``)."""

STALE_RETRY = 0.1
"""Seconds after which a key skipped on a stale cache is added again (the watch event of the
write usually queues it first; this one catches an event that predicates filter out)."""



class Controller:
    """Runs ``workers`` threads over ``queue``.

    Each loop: ``key = queue.get()``; ``obj = get_object(key)`` (None: absent);
    ``reconcile(key, obj)`` (``reconcile(key, obj, cause)`` with ``causes=True``), which
    returns a :class:`kinrun.reconcile.Result`, or (for plain callables) a delay in seconds or
    None and raises on failure; then, by outcome:
      * ``done``: ``forget``; ``requeue``: ``forget``, then add again after ``delay`` seconds;
      * ``retry`` with a ``delay`` (``TemporaryError(delay)``): re-added after ``delay`` s, not
        counted as a failure; without one: ``add_rate_limited`` while ``num_requeues <
        max_retries``, then ``forget``, ``on_drop(key)`` and a logged error (the key is dropped
        until it changes);
      * ``permanent`` (``PermanentError``): ``forget``, logged; the key waits for its next change;
    and ``done(key)`` always, even when ``get_object`` or ``reconcile`` raises.

    ``stale`` (None: no check) is asked before every reconcile with the cached object: when
    the cache is older than the controller's own last write of it (KEP-5647's staleness
    mitigation, ``kinrun.reconcile`` "Read-your-writes"), the key is not reconciled now but
    added again after ``STALE_RETRY`` seconds, its cause kept, logged at debug and counted
    (``on_stale()``: ``kinrun_reconcile_stale_skips_total``).

    ``fence`` (``kinrun.fencing``; set by the Manager; None: none) is asked before every
    reconcile starts: when it says no (the replica's Lease was not renewed within
    renewDeadline), the key is not reconciled but added again after ``FENCED_RETRY`` seconds
    (its cause kept), as a client-go leader that stopped leading starts nothing more; a
    reconcile runs with it as its thread's fence, so each write it sends asks it again.

    With ``causes=True`` the controller records why each key was queued (``enqueue(key,
    cause)``; the first cause since the key was last taken) and hands it to ``reconcile``; a
    key queued by the controller's own requeue or retry gets ``requeued`` / ``retried``.

    Thread-safety: ``enqueue``/``start``/``stop`` are thread-safe; ``reconcile`` runs on worker
    threads, never for the same key on two threads at once (the queue guarantees it). ``_why``
    is written by enqueueing threads (one dict operation each, atomic under the GIL) and popped
    by the worker that takes the key.

    Hot reload (``kinrun.reload``) swaps the definition under the same workqueue:
    :meth:`pause` waits until no reconcile runs and holds every worker before its next one;
    :meth:`resume` (optionally with a ``successor``, a Controller built for the new definition
    and never started) takes over the successor's object getter, reconcile, workers,
    ``max_retries`` and ``on_drop``, then lets the workers go on; :meth:`retire` ends the
    workers after the reconcile under way and drops the queued keys. So each reconcile runs
    entirely under one definition, and none starts under a definition that was replaced
    before it started. ``_gate`` guards the changes of ``_paused``, ``_retired`` and the
    definition's fields. ``_busy``: worker thread -> whether it is between taking a key and
    finishing it, written only by that thread without a lock (the hot path takes no lock): a
    worker sets its flag, then reads ``_paused``/``_retired``; a pause sets ``_paused``, then
    reads the flags (under the GIL one of the two sees the other's write), and a worker that
    sees a pause clears its flag and waits on ``_gate``.
    """

    def __init__(self, name: str, queue: RateLimitingInterface, get_object: GetObject,
                 reconcile: Reconcile, *, workers: int = 1, max_retries: int = 15,
                 clock: Clock | None = None, logger: logging.Logger | None = None,
                 causes: bool = False, on_drop: Callable[[Any], None] | None = None,
                 stale: IsStale | None = None,
                 on_stale: Callable[[], None] | None = None) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.name, self.queue = name, queue
        self._get_object, self._reconcile = get_object, reconcile
        self.workers, self.max_retries = workers, max_retries
        self._clock = clock or REAL_CLOCK
        self.log = logger or logging.getLogger(f"kinrun.controller.{name}")
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()  # workers exit after their current key
        self._causes = causes
        self._why: dict[Any, Cause] = {}  # key -> first cause since the key was last taken
        self._on_drop = on_drop
        self._stale, self._on_stale = stale, on_stale
        self._gate = threading.Condition(threading.Lock())  # see "Hot reload" above
        self._paused = False
        self._retired = False
        self._busy: dict[int, bool] = {}
        self.fence: Fence | None = None  # see the class docstring
        self._fenced = False  # the fence said no last time (logged once per closing)

    def enqueue(self, key: str, cause: Cause | None = None) -> None:
        """Ask for ``key`` to be reconciled (deduplicated by the queue); ``cause``: why (kept
        when it is the first since the key was last taken, and the controller records causes)."""
        if cause is not None and self._causes and key not in self._why:
            self._why[key] = cause
        self.queue.add(key)

    def start(self) -> None:
        """Start the worker threads (once)."""
        if self._threads:
            return
        for i in range(self.workers):
            thread = SupervisedThread(target=self._worker, name=f"{self.name}-worker-{i}", daemon=True)
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
        deadline = REAL_CLOCK.now() + drain_timeout
        drained = self.queue.shut_down_with_drain(drain_timeout)
        self._stopping.set()
        self.queue.shut_down()
        joined = True
        for thread in self._threads:
            thread.join(max(0.0, deadline - REAL_CLOCK.now()))
            joined = joined and not thread.is_alive()
        if not (drained and joined):
            self.log.error("%s: stopped without draining (reconciles still running)", self.name)
        return drained and joined

    def _worker(self) -> None:
        try:
            self._work()
        finally:
            gc_observer.installed().worker_ended(threading.get_ident())

    def _work(self) -> None:
        me = threading.current_thread()
        while not self._stopping.is_set():
            if not self.process_next_item():
                return
            gc_observer.installed().between_reconciles()  # none of ours is alive (kinrun.gc)
            if len(self._threads) > self.workers:  # fewer workers since a reload
                with self._gate:
                    if len(self._threads) > self.workers and me in self._threads:
                        self._threads.remove(me)
                        return

    def process_next_item(self) -> bool:
        """Handle one key; False once the queue is shut down and empty, or the controller
        was retired (the key taken is then dropped)."""
        key, shutdown = self.queue.get()
        if shutdown:
            return False
        if key is None:
            return True
        me, busy = threading.get_ident(), self._busy
        busy[me] = True
        if (self._paused or self._retired) and not self._hold(me):
            self.queue.done(key)  # retired: the key is dropped
            return False
        gc = gc_observer.installed()  # no young collection on the decoding thread now
        try:
            if self.fence is not None and not self._fence_open(key):
                return True  # held back: added again later (the finally still runs)
            gc.reconcile_started(me)
            if self.fence is None:
                self._reconcile_key(key)
            else:
                with fenced(self.fence):  # every write asks it again (kinrun.fencing)
                    self._reconcile_key(key)
        finally:
            gc.reconcile_finished(me)
            self.queue.done(key)
            busy[me] = False
            if self._paused or self._retired:
                with self._gate:
                    self._gate.notify_all()
        return True

    def _fence_open(self, key: Any) -> bool:
        """Ask the fence; when closed, put ``key`` back (after FENCED_RETRY s) and log once."""
        if self.fence():  # type: ignore[misc]
            self._fenced = False
            return True
        if not self._fenced:
            self._fenced = True
            self.log.error("%s: this replica's Lease was not renewed within renewDeadline: "
                           "no reconcile starts (keys are held back)", self.name)
        self.queue.add_after(key, FENCED_RETRY)
        return False

    def _hold(self, me: int) -> bool:
        """A reload is under way: wait while paused; False once retired (not busy then)."""
        gate, busy = self._gate, self._busy
        with gate:
            while True:
                if self._retired:
                    busy[me] = False
                    gate.notify_all()
                    return False
                if not self._paused:
                    busy[me] = True
                    return True
                busy[me] = False
                gate.notify_all()
                gate.wait()

    def _idle(self) -> bool:
        return not any(list(self._busy.values()))

    # -- hot reload (kinrun.reload) ------------------------------------------------------------

    def pause(self, timeout: float | None = None) -> bool:
        """Hold every worker before its next reconcile and wait (at most ``timeout`` s, None =
        no limit) until none runs. True when paused; False on timeout (then not paused).
        Keys keep being queued meanwhile. Call :meth:`resume` after a True."""
        with self._gate:
            self._paused = True
            if self._gate.wait_for(self._idle, timeout):
                return True
            self._paused = False
            self._gate.notify_all()
            return False

    def running_keys(self) -> int:
        """Reconciles running now (for a pause that takes long: the log says how many)."""
        return sum(list(self._busy.values()))

    def resume(self, successor: Controller | None = None) -> None:
        """Let the workers go on (after :meth:`pause`); with ``successor`` (same name, built
        for the new definition over this queue, never started), every later reconcile runs
        its definition: object getter, reconcile, ``max_retries``, ``on_drop``, causes and
        ``workers`` (more start at once when running; fewer: the extra ones end after their
        next key)."""
        with self._gate:
            if successor is not None:
                self._get_object, self._reconcile = successor._get_object, successor._reconcile
                self.max_retries, self._on_drop = successor.max_retries, successor._on_drop
                self._stale, self._on_stale = successor._stale, successor._on_stale
                self._causes, self.log = successor._causes, successor.log
                more = successor.workers - self.workers
                self.workers = successor.workers
                if self._threads and more > 0:
                    for i in range(more):
                        thread = SupervisedThread(
                            target=self._worker, daemon=True,
                            name=f"{self.name}-worker-{len(self._threads) + i}")
                        self._threads.append(thread)
                        thread.start()
            self._paused = False
            self._gate.notify_all()

    def retire(self, timeout: float | None = None) -> bool:
        """The controller was removed from the config: let the reconciles under way finish
        (at most ``timeout`` s), start no other (queued keys are dropped) and end the workers.
        Returns whether every running reconcile finished in time."""
        with self._gate:
            self._retired = True
            self._paused = False
            self._gate.notify_all()
            done = self._gate.wait_for(self._idle, timeout)
        self._stopping.set()
        self.queue.shut_down()
        for thread in list(self._threads):
            thread.join(5.0 if timeout is None else max(0.0, timeout))
        return done

    def _cause_of(self, key: Any) -> Cause:
        cause = self._why.pop(key, None) if self._why else None
        if cause is not None:
            return cause
        return _RETRIED if self.queue.num_requeues(key) > 0 else _REQUEUED

    def _reconcile_key(self, key: Any) -> None:
        try:
            obj = self._get_object(key)
            if self._stale is not None and self._stale(key, obj):
                self._skip_stale(key)
                return
            if self._causes:
                outcome = self._reconcile(key, obj, self._cause_of(key))
            else:
                outcome = self._reconcile(key, obj)
        except Exception as err:  # noqa: BLE001 - reconcile errors are retried, never fatal
            outcome = Result.failed(err)
        if not isinstance(outcome, Result):
            outcome = Result.after(outcome)
        self._act(key, outcome)

    def _skip_stale(self, key: Any) -> None:
        """The cache is older than our own last write of ``key``: no reconcile now; added
        again after STALE_RETRY s (its recorded cause stays), logged at debug, counted."""
        self.log.debug("%s: %s: the cache is older than this controller's last write of it; "
                       "reconciled once it catches up", self.name, key)
        if self._on_stale is not None:
            self._on_stale()
        self.queue.add_after(key, STALE_RETRY)

    def _act(self, key: Any, result: Result) -> None:
        kind = result.outcome
        if kind == "done":
            self.queue.forget(key)
        elif kind == "requeue":
            self.queue.forget(key)
            self.queue.add_after(key, float(result.delay or 0.0))
        elif kind == "permanent":
            self.queue.forget(key)
            self.log.error("%s: reconcile %s failed permanently: %s", self.name, key, result.error,
                           extra={"_reconciler_error": result.error})
        elif result.delay is not None:
            self.log.info("%s: reconcile %s: retry in %.3fs: %s", self.name, key, result.delay,
                          result.error, extra={"_reconciler_error": result.error})
            self.queue.add_after(key, result.delay)
        else:
            self._retry(key, result.error)

    def _retry(self, key: Any, err: BaseException | None) -> None:
        if self.queue.num_requeues(key) < self.max_retries:
            self.log.warning("%s: reconcile %s failed (will retry): %s", self.name, key,
                             _one_line(err), extra={"_reconciler_error": _one_line(err)})
            self.queue.add_rate_limited(key)
            return
        self.queue.forget(key)
        if self._on_drop is not None:
            self._on_drop(key)
        self.log.error("%s: dropping %s after %d retries: %s", self.name, key, self.max_retries,
                       _one_line(err), exc_info=_traceback_worthy(err),
                       extra={"_reconciler_error": _one_line(err)})


_REQUEUED, _RETRIED = Cause(REQUEUED), Cause(RETRIED)
CAUSE_ADDED, CAUSE_UPDATED, CAUSE_RESYNC = Cause(ADDED), Cause(UPDATED), Cause(RESYNC)
CAUSE_ADDED_INITIAL = Cause(ADDED, initial_list=True)
CAUSE_DELETION = Cause(DELETION)


def _one_line(err: BaseException | None) -> str:
    """``Type: message (at FILE:LINE in FUNCTION)`` for unexpected errors (a hook's bug:
    ``KeyError: 'spec' (at plug.py:6 in kinrun_reconcile)``, see :func:`_origin`); kinrun's
    own errors (API, render, reconcile) already say what happened in their message."""
    if err is None:
        return "unknown error"
    if isinstance(err, KinrunError):
        return str(err)
    origin = _origin(err)
    return f"{type(err).__name__}: {err}" + (f" (at {origin})" if origin else "")


_PATHS = sysconfig.get_paths()
_LIBRARY_DIRS = tuple({os.path.dirname(os.path.abspath(__file__)),
                       *(_PATHS[name] for name in ("stdlib", "purelib", "platlib"))})
"""Where kinrun, the standard library and installed packages live: not a hook's own code."""


def _origin(err: BaseException) -> str:
    """``FILE:LINE in FUNCTION`` of the innermost frame of ``err``'s traceback outside
    kinrun, the standard library and installed packages (a plugin's own line; FILE relative
    to the working directory when under it), or "" when every frame is theirs."""
    found = ""
    for frame, line in traceback.walk_tb(err.__traceback__):
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_LIBRARY_DIRS):
            shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
            found = f"{shown}:{line} in {frame.f_code.co_name}"
    return found


def _traceback_worthy(err: BaseException | None) -> BaseException | None:
    """The error to log with a traceback when a key is dropped: only unexpected errors (a bug
    in a hook or in kinrun), not kinrun's own errors whose message is the whole story."""
    return None if err is None or isinstance(err, KinrunError) else err


# -- event handlers that map informer events to keys -------------------------------------------


class _MappingHandler:
    """A ResourceEventHandler that enqueues the keys ``map_func`` gives for an object; for an
    update, the keys of the old and the new object (so a changed owner reaches both). Each
    key is enqueued with ``cause`` (``mapped`` from the watched informer). ``flagged``: call
    ``map_func(obj, initial_list)`` (True only for an add of the informer's initial list)
    instead of ``map_func(obj)``."""

    __slots__ = ("enqueue", "map_func", "log", "cause", "flagged")

    def __init__(self, enqueue: Callable[..., None], map_func: Callable[..., Iterable[str]],
                 cause: Cause | None = None, flagged: bool = False) -> None:
        self.enqueue, self.map_func, self.cause = enqueue, map_func, cause
        self.flagged = flagged
        self.log = logging.getLogger("kinrun.controller")

    def _emit(self, obj: Obj | None, initial_list: bool = False) -> set[str]:
        if obj is None:
            return set()
        try:
            keys = self.map_func(obj, initial_list) if self.flagged else self.map_func(obj)
            return {k for k in keys if k}
        except Exception:  # noqa: BLE001 - a bad object must not stop the handler
            self.log.exception("mapping %r to keys failed", self.map_func)
            return set()

    def _enqueue(self, keys: set[str]) -> None:
        if self.cause is None:
            for key in keys:
                self.enqueue(key)
            return
        for key in keys:
            self.enqueue(key, self.cause)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Enqueue the object's keys."""
        self._enqueue(self._emit(obj, is_in_initial_list))

    def on_update(self, old: Obj, new: Obj) -> None:
        """Enqueue the keys of both versions."""
        self._enqueue(self._emit(old) | self._emit(new))

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Enqueue the keys of the object (a tombstone's last known state)."""
        self._enqueue(self._emit(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj))


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


class _OwnKeyCauseHandler(_OwnKeyHandler):
    """As _OwnKeyHandler, calling ``enqueue(key, cause)`` with the cause: added, updated,
    resync (the resourceVersion did not change), deletion."""

    __slots__ = ()

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Enqueue the object's key (cause ``added``, its ``initial_list`` flag as given)."""
        self.enqueue(deletion_handling_meta_namespace_key(obj),
                     CAUSE_ADDED_INITIAL if is_in_initial_list else CAUSE_ADDED)

    def on_update(self, old: Obj, new: Obj) -> None:
        """Enqueue the new object's key (``resync`` when the resourceVersion is the same)."""
        cause = CAUSE_RESYNC if old is new or resource_version(old) == resource_version(new) \
            else CAUSE_UPDATED
        self.enqueue(deletion_handling_meta_namespace_key(new), cause)

    def on_delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Enqueue the key (cause ``deletion``)."""
        self.enqueue(deletion_handling_meta_namespace_key(obj), CAUSE_DELETION)


def enqueue_own_key(enqueue: Callable[..., None], *, causes: bool = False) -> ResourceEventHandler:
    """A handler that enqueues each object's own key ("ns/name" or "name"): ``enqueue(key)``,
    or ``enqueue(key, cause)`` with ``causes`` (a ``kinrun.reconcile.Cause``)."""
    return _OwnKeyCauseHandler(enqueue) if causes else _OwnKeyHandler(enqueue)


def owner_keys(obj: Obj, owner_kind: str, owner_group: str | None = None, *,
               only_controller: bool = False, owner_namespaced: bool = True) -> list[str]:
    """Keys of ``obj``'s owners of ``owner_kind`` (and API group ``owner_group``, "" = core,
    None = any). A namespaced owner lives in ``obj``'s namespace (Kubernetes allows no
    cross-namespace owner): "ns/name"; a cluster-scoped owner (``owner_namespaced`` False) is
    keyed "name". A cluster-scoped ``obj`` cannot have a namespaced owner (the garbage
    collector treats such a reference as unresolvable): no keys.
    ``only_controller``: only the reference with ``controller: true``."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    if owner_namespaced and not namespace:
        return []
    keys = []
    for ref in meta.get("ownerReferences") or ():
        if ref.get("kind") != owner_kind or not ref.get("name"):
            continue
        if owner_group is not None and _group(ref.get("apiVersion", "")) != owner_group:
            continue
        if only_controller and not ref.get("controller"):
            continue
        keys.append(f"{namespace}/{ref['name']}" if owner_namespaced else ref["name"])
    return keys


def _group(api_version: str) -> str:
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def enqueue_owner_key(enqueue: Callable[..., None], owner_kind: str,
                      owner_group: str | None = None, *, only_controller: bool = False,
                      owner_namespaced: bool = True, informer: str = "") -> ResourceEventHandler:
    """A handler that enqueues the keys of each object's owners of ``owner_kind`` (see
    ``owner_keys``); updates enqueue the owners of both the old and the new version.
    ``informer``: the watched informer's name, recorded as the cause (``mapped``)."""
    def map_func(obj: Obj) -> list[str]:
        return owner_keys(obj, owner_kind, owner_group, only_controller=only_controller,
                          owner_namespaced=owner_namespaced)
    return _MappingHandler(enqueue, map_func, Cause(MAPPED, informer) if informer else None)


def enqueue_mapped(enqueue: Callable[..., None], map_func: Callable[..., Iterable[str]], *,
                   informer: str = "", initial_list: bool = False) -> ResourceEventHandler:
    """A handler that enqueues every key ``map_func(obj)`` returns ("" and errors are skipped,
    errors logged); for updates, the keys of both versions. For template or index mappings.
    ``informer``: the watched informer's name, recorded as the cause (``mapped``).
    ``initial_list``: ``map_func`` takes ``(obj, initial_list)``: True for the adds of the
    informer's initial list (client-go ``isInInitialList``), False otherwise (a
    ``kinrun.templating.KeyMapper``). The handler runs where its informer calls it: wire a
    mapper that may take long (lookups, a template) on a listener thread of its own
    (``add_event_handler(..., synchronous=False)``), so it stalls only itself."""
    return _MappingHandler(enqueue, map_func, Cause(MAPPED, informer) if informer else None,
                           initial_list)
