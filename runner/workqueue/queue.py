"""The plain work queue (as client-go ``util/workqueue/queue.go``): add, get, done, shut down."""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

Item = Hashable


@runtime_checkable
class QueueInterface(Protocol):
    """The first queue level (client-go workqueue.Interface). See the package docstring for
    the guarantees every implementation keeps."""

    def add(self, item: Item) -> None:
        """Mark ``item`` as needing processing (no-op while shutting down)."""
        ...

    def get(self, timeout: float | None = None) -> tuple[Item | None, bool]:
        """Block until an item is ready; returns ``(item, False)``, or ``(None, True)`` once
        shut down and empty, or ``(None, False)`` when ``timeout`` (real seconds) passed."""
        ...

    def done(self, item: Item) -> None:
        """Finish processing ``item`` (re-queues it if it was added meanwhile)."""
        ...

    def __len__(self) -> int: ...

    def shut_down(self) -> None:
        """Refuse new items; ``get`` still hands out queued ones, then reports shutdown."""
        ...

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """As ``shut_down``, then wait (real seconds) until every queued item was handed out
        and every item being processed is done. Returns whether that happened."""
        ...

    def shutting_down(self) -> bool: ...


_SHRINK_ABOVE = 1 << 14
"""Bytes; an empty set or dict that grew beyond this during a burst (an initial list of
thousands of keys) is replaced by a new one, returning its table's memory."""


class Queue:
    """A fair, stingy work queue (client-go workqueue.Type).

    Thread-safety: every method is thread-safe (one lock, one condition).

    Invariants (lock free):
      * an item is in ``_queue`` iff it is in ``_dirty`` and not in ``_processing``;
      * ``_queue`` holds no duplicates;
      * an item in both ``_dirty`` and ``_processing`` goes back to ``_queue`` on ``done``.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[Item] = deque()  # items ready to hand out, FIFO
        self._dirty: set[Item] = set()  # items needing processing (queued or re-added while processing)
        self._processing: set[Item] = set()  # items handed out and not yet done
        self._shutting_down = False
        self._drain = False

    def add(self, item: Item) -> None:
        """See QueueInterface.add."""
        with self._cond:
            if self._shutting_down or item in self._dirty:
                return
            self._dirty.add(item)
            if item in self._processing:
                return
            self._queue.append(item)
            self._cond.notify()

    def get(self, timeout: float | None = None) -> tuple[Item | None, bool]:
        """See QueueInterface.get."""
        with self._cond:
            while not self._queue and not self._shutting_down:
                if not self._cond.wait(timeout) and not self._queue and not self._shutting_down:
                    return None, False
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            self._processing.add(item)
            self._dirty.discard(item)
            if not self._dirty and sys.getsizeof(self._dirty) > _SHRINK_ABOVE:
                self._dirty = set()  # a set never shrinks: give a drained burst's table back
            return item, False

    def done(self, item: Item) -> None:
        """See QueueInterface.done. ``done`` for an item not being processed is ignored."""
        with self._cond:
            if item not in self._processing:
                return
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                self._cond.notify()
            elif not self._processing and self._drain:
                self._cond.notify_all()

    def __len__(self) -> int:
        """Items ready to hand out (informational only)."""
        return len(self._queue)

    def idle(self) -> bool:
        """No item ready to hand out and none being processed, read at one instant under the
        lock (a snapshot: an ``add`` may follow at once). Delayed items of a wrapping level do
        not count. For test harnesses that wait for a quiet pipeline (``kinrun test``)."""
        with self._cond:
            return self._drained_locked()

    def shut_down(self) -> None:
        """See QueueInterface.shut_down."""
        with self._cond:
            self._shutting_down = True
            self._drain = False
            self._cond.notify_all()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """See QueueInterface.shut_down_with_drain."""
        with self._cond:
            self._shutting_down = True
            self._drain = True
            self._cond.notify_all()
            self._cond.wait_for(lambda: self._drained_locked() or not self._drain, timeout)
            self._drain = False
            return self._drained_locked()

    def _drained_locked(self) -> bool:
        return not self._processing and not self._queue

    def shutting_down(self) -> bool:
        """Whether a shutdown was requested."""
        with self._cond:
            return self._shutting_down
