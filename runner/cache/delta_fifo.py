"""DeltaFIFO: the queue between a reflector and an informer (as client-go
``tools/cache/delta_fifo.go``).

Each key has a list of deltas (what happened to it, oldest first); the queue holds each key at
most once, in the order its first pending delta arrived. ``pop`` hands every pending delta of
one key to a callback at once, so the consumer sees a key's history in order and never two
entries for one key. Deletions the watch missed are found by ``replace`` (a relist) and
delivered as ``DeletedFinalStateUnknown`` tombstones.
"""

from __future__ import annotations

import enum
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from kinrun.cache.listwatch import Obj
from kinrun.cache.store import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key


_SHRINK_ABOVE = 1 << 14
"""Bytes; ``_items`` is replaced by a new dict once empty if it grew beyond this (a relist of
thousands of keys), returning its table's memory."""


class DeltaType(enum.Enum):
    """What happened to an object (client-go DeltaType)."""

    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"
    REPLACED = "Replaced"  # seen in a relist (the object may or may not have changed)
    SYNC = "Sync"  # periodic resync replay of the cached object


class Delta(NamedTuple):
    """One change: ``type`` and the object after it (a tombstone for missed deletions).
    A NamedTuple: immutable and cheap to build on the hot path."""

    type: DeltaType
    object: Any  # Obj | DeletedFinalStateUnknown


class FIFOClosedError(Exception):
    """``pop`` on a closed, empty DeltaFIFO (client-go ErrFIFOClosed)."""


class RequeueError(Exception):
    """Raised by a ``pop`` callback to put the deltas back (client-go ErrRequeue).

    ``cause`` is the error that made processing fail, or None."""

    def __init__(self, cause: BaseException | None = None) -> None:
        super().__init__(str(cause) if cause else "requeue")
        self.cause = cause


class KnownObjects(Protocol):
    """What DeltaFIFO needs from the informer's indexer: the keys and objects it holds."""

    def list_keys(self) -> list[str]: ...

    def get_by_key(self, key: str) -> Obj | None: ...


Transform = Callable[[Obj], Obj]
PopProcess = Callable[[list[Delta], bool], None]
"""Callback for ``pop``: (deltas of one key, oldest first; is_in_initial_list)."""


class DeltaFIFO:
    """A producer/consumer queue of per-key delta lists.

    ``known_objects`` is the consumer's indexer (used by ``replace`` to find missed deletions,
    by ``delete`` to ignore unknown objects and by ``resync``). ``transform`` runs on every
    object (not tombstones) before it is queued, so only transformed objects are held.

    Thread-safety: all public methods are thread-safe. ``pop`` runs its callback with the FIFO
    lock held (as client-go does), so the callback must not call back into this FIFO; lock
    order is FIFO lock, then the indexer's lock.

    Invariants (lock free): a key is in ``_queue`` iff it is in ``_items``; every ``_items``
    list is non-empty; ``_queue`` has no duplicates; ``_waiting`` counts the ``pop`` calls
    blocked in ``_cond.wait`` (a producer notifies only then: an informer that drains on the
    producing thread, ``drain``, never waits, and a ``Condition.notify`` costs ~1 us even with
    no one to wake).
    """

    def __init__(self, known_objects: KnownObjects | None = None, *,
                 key_func: Callable[[Any], str] = deletion_handling_meta_namespace_key,
                 transform: Transform | None = None,
                 on_synced: Callable[[], None] | None = None) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._items: dict[str, list[Delta]] = {}
        self._queue: deque[str] = deque()
        self._known = known_objects
        self._key_func = key_func
        self._transform = transform
        self._populated = False  # set by the first replace() or any add
        self._initial_population_count = 0  # keys of the first replace not yet popped
        self._closed = False
        self._waiting = 0  # pop calls blocked in _cond.wait; guarded by _lock
        self._on_synced = on_synced  # called once, lock held, when has_synced() turns true

    # -- producers ---------------------------------------------------------------------------

    def add(self, obj: Obj) -> None:
        """Queue an Added delta."""
        with self._lock:
            self._populate_locked()
            self._queue_action_locked(DeltaType.ADDED, obj)

    def update(self, obj: Obj) -> None:
        """Queue an Updated delta."""
        with self._lock:
            self._populate_locked()
            self._queue_action_locked(DeltaType.UPDATED, obj)

    def delete(self, obj: Obj | DeletedFinalStateUnknown) -> None:
        """Queue a Deleted delta, unless neither the indexer nor the queue knows the key."""
        key = self._key_func(obj)
        with self._lock:
            self._populate_locked()
            known = key in self._items
            if self._known is not None and not known:
                known = self._known.get_by_key(key) is not None
            if known:
                self._queue_action_locked(DeltaType.DELETED, obj)

    def replace(self, objects: list[Obj], resource_version: str = "") -> None:
        """A full list: Replaced for each object, and a Deleted tombstone for every key the
        queue or the indexer holds that the list lacks (client-go DeltaFIFO.Replace)."""
        with self._lock:
            keys = set()
            for obj in objects:
                keys.add(self._queue_action_locked(DeltaType.REPLACED, obj))
            deletions = self._queued_deletions_locked(keys) + self._known_deletions_locked(keys)
            if not self._populated:
                self._populated = True
                self._initial_population_count = len(keys) + deletions
                self._notify_if_synced_locked()

    def _populate_locked(self) -> None:
        if not self._populated:
            self._populated = True
            self._notify_if_synced_locked()

    def _queued_deletions_locked(self, keys: set[str]) -> int:
        count = 0
        for key in [k for k in self._items if k not in keys]:
            last = self._items[key][-1].object
            if isinstance(last, DeletedFinalStateUnknown):
                last = last.obj
            self._queue_action_locked(DeltaType.DELETED, DeletedFinalStateUnknown(key, last))
            count += 1
        return count

    def _known_deletions_locked(self, keys: set[str]) -> int:
        if self._known is None:
            return 0
        count = 0
        for key in self._known.list_keys():
            if key in keys or key in self._items:
                continue
            last = self._known.get_by_key(key)
            self._queue_action_locked(DeltaType.DELETED, DeletedFinalStateUnknown(key, last))
            count += 1
        return count

    def resync(self) -> None:
        """Queue a Sync delta for every indexer object whose key has no pending deltas."""
        if self._known is None:
            return
        with self._lock:
            for key in self._known.list_keys():
                if key in self._items:
                    continue
                obj = self._known.get_by_key(key)
                if obj is not None:
                    self._queue_action_locked(DeltaType.SYNC, obj, transform=False)

    def _queue_action_locked(self, kind: DeltaType, obj: Any, *, transform: bool = True) -> str:
        if transform and self._transform is not None and not isinstance(obj, DeletedFinalStateUnknown):
            obj = self._transform(obj)
        key = self._key_func(obj)
        deltas = self._items.get(key)
        delta = Delta(kind, obj)
        if deltas is None:
            self._items[key] = [delta]
            self._queue.append(key)
            if self._waiting:
                self._cond.notify()
        elif kind is DeltaType.DELETED and deltas[-1].type is DeltaType.DELETED:
            deltas[-1] = _dedup_deletion(deltas[-1], delta)
        else:
            deltas.append(delta)
        return key

    # -- consumer ----------------------------------------------------------------------------

    def pop(self, process: PopProcess, timeout: float | None = None) -> list[Delta] | None:
        """Wait for a key, remove it, and call ``process(deltas, is_in_initial_list)``.
        ``on_synced`` (constructor) is called once, from here or ``replace``, lock held, when
        ``has_synced()`` first turns true.

        If ``process`` raises RequeueError the deltas go back to the end of the queue (unless
        new deltas arrived for the key meanwhile, which cannot happen here since the lock is
        held) and the error's cause is re-raised, or None returned if it had none. Returns the
        deltas; None when ``timeout`` (real seconds; 0 = do not wait) passed with nothing to pop.
        Raises FIFOClosedError once closed and empty."""
        with self._lock:
            while not self._queue:
                if self._closed:
                    raise FIFOClosedError("DeltaFIFO is closed")
                if timeout is not None and timeout <= 0:
                    return None
                self._waiting += 1
                try:
                    woken = self._cond.wait(timeout)
                finally:
                    self._waiting -= 1
                if not woken and not self._queue:
                    return None
            return self._pop_one_locked(process)

    def _pop_one_locked(self, process: PopProcess) -> list[Delta]:
        """Pop the first queued key (there is one) and process it; as ``pop``."""
        key = self._queue.popleft()
        deltas = self._items.pop(key)
        if not self._items and sys.getsizeof(self._items) > _SHRINK_ABOVE:
            self._items = {}  # a dict never shrinks: give a drained relist's table back
        initial = self._initial_population_count > 0 or not self._populated
        try:
            process(deltas, initial)
        except RequeueError as err:
            self._add_if_not_present_locked(key, deltas)
            if err.cause is not None:
                raise err.cause from err
        finally:
            if self._initial_population_count > 0 and initial:
                self._initial_population_count -= 1
                self._notify_if_synced_locked()
        return deltas

    def drain(self, process: PopProcess,
              on_error: Callable[[BaseException], None] | None = None) -> int:
        """Pop and process every queued key, oldest first, under one hold of the lock (as
        repeated ``pop(process, 0)`` calls, without a lock round trip and an empty pop per
        key: the batched pop of client-go's RealFIFO, kubernetes#132240). Keys queued by
        ``process`` itself cannot appear (it must not call back into this FIFO). Returns how
        many keys were processed; 0 when nothing was queued (also once closed).

        An exception from ``process`` goes to ``on_error`` and the drain goes on with the next
        key; without ``on_error`` it is raised, the keys after it staying queued. A
        RequeueError puts the key's deltas back at the end: a drain pops at most as many keys
        as were queued when it started, so a key that keeps asking to be requeued is left
        queued for the next drain instead of spinning this one."""
        count = 0
        with self._lock:
            for _ in range(len(self._queue)):
                if not self._queue:
                    break
                count += 1
                try:
                    self._pop_one_locked(process)
                except Exception as err:  # noqa: BLE001 - handed to on_error
                    if on_error is None:
                        raise
                    on_error(err)
        return count

    def _notify_if_synced_locked(self) -> None:
        if self._on_synced is not None and self._has_synced_locked():
            callback, self._on_synced = self._on_synced, None
            callback()

    def _add_if_not_present_locked(self, key: str, deltas: list[Delta]) -> None:
        if key in self._items:
            return
        self._items[key] = deltas
        self._queue.append(key)
        if self._waiting:
            self._cond.notify()

    def has_synced(self) -> bool:
        """True once the first ``replace`` (or any add) happened and every key it queued has
        been popped (client-go HasSynced)."""
        with self._lock:
            return self._has_synced_locked()

    def _has_synced_locked(self) -> bool:
        return self._populated and self._initial_population_count == 0

    def close(self) -> None:
        """Wake every ``pop``; once the queue is empty they raise FIFOClosedError."""
        with self._lock:
            self._closed = True
            self._cond.notify_all()

    def is_closed(self) -> bool:
        """Whether ``close`` was called."""
        with self._lock:
            return self._closed

    def list_keys(self) -> list[str]:
        """Keys with pending deltas, in queue order (informational)."""
        with self._lock:
            return list(self._queue)

    def get_by_key(self, key: str) -> list[Delta] | None:
        """A copy of ``key``'s pending deltas, or None."""
        with self._lock:
            deltas = self._items.get(key)
            return list(deltas) if deltas is not None else None

    def __len__(self) -> int:
        """Keys pending (informational only)."""
        return len(self._queue)


def _dedup_deletion(a: Delta, b: Delta) -> Delta:
    """Two consecutive deletions collapse to one; a real final state beats a tombstone."""
    if isinstance(b.object, DeletedFinalStateUnknown):
        return a
    return b
