"""The plain work queue (as client-go ``util/workqueue/queue.go``): add, get, done, shut down.

Metrics (``kinrun.workqueue.metrics``) hook into add, get and done as client-go's do; a queue
built without a metrics provider pays one ``is None`` test per call for them."""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.threads import SupervisedThread
from kinrun.workqueue.metrics import (UNFINISHED_WORK_UPDATE_PERIOD, MetricsProvider,
                                      QueueMetrics, metered)

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

    ``metrics_provider`` (with a ``name``): record the workqueue metrics (see
    ``kinrun.workqueue.metrics``) on ``clock`` time (default the real one); the unfinished-work
    gauges are updated every ``unfinished_work_update_period`` seconds by a daemon thread that
    ends at shutdown (None or 0: no thread; call ``update_unfinished_work`` instead).

    Thread-safety: every method is thread-safe (one lock, one condition); the metrics' hooks
    run under that lock. The lock is entered directly (``with self._lock``, a C-level context
    manager), not through the Condition, whose Python ``__exit__`` lets the interpreter switch
    threads while the lock is still held: with a reflector adding and a worker taking on two
    cores, every acquire then met a lock handed to a thread waiting for the GIL, a lock
    convoy (239,000 context switches instead of 11,000 in ``benchmarks/replay.py``'s
    templated variant, twice the CPU per event; benchmarks/HISTORY.md "Round 4").

    Invariants (lock free):
      * an item is in ``_queue`` iff it is in ``_dirty`` and not in ``_processing``;
      * ``_queue`` holds no duplicates;
      * an item in both ``_dirty`` and ``_processing`` goes back to ``_queue`` on ``done``;
      * ``_getters`` holds one locked lock per ``get`` call waiting for an item and not yet
        woken (as ``threading.Condition`` keeps its waiters): an item made ready releases
        the oldest, and only while one waits (a busy worker takes the next item without
        waiting). Woken getters are removed at once, so the events of one socket read wake
        a waiting worker once, not once per event as ``Condition.notify`` on a count of
        waiters that only the woken thread decrements did; and no Python frame runs under
        the lock to wake it. ``_cond`` (the same lock) is only for ``shut_down_with_drain``.
    """

    def __init__(self, name: str = "", *, metrics_provider: MetricsProvider | None = None,
                 clock: Clock | None = None,
                 unfinished_work_update_period: float | None = UNFINISHED_WORK_UPDATE_PERIOD,
                 ) -> None:
        self.name = name
        self._lock = threading.Lock()  # entered directly: a C-level with, no Python frame
        self._cond = threading.Condition(self._lock)
        self._queue: deque[Item] = deque()  # items ready to hand out, FIFO
        self._dirty: set[Item] = set()  # items needing processing (queued or re-added while processing)
        self._processing: set[Item] = set()  # items handed out and not yet done
        self._shutting_down = False
        self._drain = False
        self._getters: deque[threading.Lock] = deque()  # waiting get calls; guarded by the lock
        self._metrics: QueueMetrics | None = None  # None: not metered (the hot path's test)
        self._clock = clock or REAL_CLOCK
        self._metrics_tick = threading.Event()  # wakes the metrics thread: shutdown, or a FakeClock step
        if metered(metrics_provider, name):
            self._metrics = QueueMetrics(metrics_provider, name, self._clock)  # type: ignore[arg-type]
            if unfinished_work_update_period:
                SupervisedThread(target=self._update_unfinished_work_loop,
                                 args=(unfinished_work_update_period,),
                                 name=f"workqueue-metrics-{name}", daemon=True).start()

    def add(self, item: Item) -> None:
        """See QueueInterface.add."""
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            if self._metrics is not None:
                self._metrics.add_locked(item)
            self._dirty.add(item)
            if item in self._processing:
                return
            self._queue.append(item)
            if self._getters:
                self._getters.popleft().release()

    def get(self, timeout: float | None = None) -> tuple[Item | None, bool]:
        """See QueueInterface.get."""
        with self._lock:
            while not self._queue and not self._shutting_down:
                if not self._wait_locked(timeout) and not self._queue \
                        and not self._shutting_down:
                    return None, False
            if not self._queue:
                return None, True
            item = self._queue.popleft()
            if self._metrics is not None:
                self._metrics.get_locked(item)
            self._processing.add(item)
            self._dirty.discard(item)
            if not self._dirty and sys.getsizeof(self._dirty) > _SHRINK_ABOVE:
                self._dirty = set()  # a set never shrinks: give a drained burst's table back
            return item, False

    def _wait_locked(self, timeout: float | None) -> bool:
        """Wait, the lock released meanwhile, until an ``add``/``done``/shutdown wakes this
        call or ``timeout`` (real seconds; None: no limit) passes; the lock is held again on
        return, also on an exception. Returns whether it was woken (as
        ``threading.Condition.wait``, whose waiter handling this is)."""
        waiter = threading.Lock()
        waiter.acquire()
        self._getters.append(waiter)
        self._lock.release()
        woken = False
        try:
            if timeout is None:
                woken = waiter.acquire()
            elif timeout > 0:
                woken = waiter.acquire(True, timeout)
            return woken
        finally:
            self._lock.acquire()
            if not woken:
                try:
                    self._getters.remove(waiter)
                except ValueError:  # woken just after the timeout: its wake-up was taken
                    pass

    def _wake_getters_locked(self) -> None:
        while self._getters:
            self._getters.popleft().release()

    def done(self, item: Item) -> None:
        """See QueueInterface.done. ``done`` for an item not being processed is ignored."""
        with self._lock:
            if item not in self._processing:
                return
            if self._metrics is not None:
                self._metrics.done_locked(item)
            self._processing.discard(item)
            if item in self._dirty:
                self._queue.append(item)
                if self._getters:
                    self._getters.popleft().release()
            elif not self._processing and self._drain:
                self._cond.notify_all()

    def __len__(self) -> int:
        """Items ready to hand out (informational only)."""
        return len(self._queue)

    def idle(self) -> bool:
        """No item ready to hand out and none being processed, read at one instant under the
        lock (a snapshot: an ``add`` may follow at once). Delayed items of a wrapping level do
        not count. For test harnesses that wait for a quiet pipeline (``kinrun test``)."""
        with self._lock:
            return self._drained_locked()

    def update_unfinished_work(self) -> None:
        """Set the unfinished-work gauges now (client-go ``updateUnfinishedWork``; a metered
        queue's thread calls it every period; no-op unmetered or once shutting down)."""
        with self._lock:
            if self._metrics is not None and not self._shutting_down:
                self._metrics.update_unfinished_work_locked()

    def _update_unfinished_work_loop(self, period: float) -> None:
        tick = self._metrics_tick  # set by shut_down, or by a FakeClock's step when due
        while True:
            tick.clear()
            self._clock.wait(tick, period)
            with self._lock:
                if self._shutting_down:
                    return
            self.update_unfinished_work()

    def shut_down(self) -> None:
        """See QueueInterface.shut_down."""
        with self._lock:
            self._shutting_down = True
            self._drain = False
            self._cond.notify_all()  # a shut_down_with_drain waiting
            self._wake_getters_locked()
        self._metrics_tick.set()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """See QueueInterface.shut_down_with_drain."""
        self._metrics_tick.set()
        with self._lock:
            self._shutting_down = True
            self._drain = True
            self._cond.notify_all()  # another shut_down_with_drain waiting
            self._wake_getters_locked()
            self._cond.wait_for(lambda: self._drained_locked() or not self._drain, timeout)
            self._drain = False
            return self._drained_locked()

    def _drained_locked(self) -> bool:
        return not self._processing and not self._queue

    def shutting_down(self) -> bool:
        """Whether a shutdown was requested."""
        with self._lock:
            return self._shutting_down
