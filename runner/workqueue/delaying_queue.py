"""The delaying queue (as client-go ``util/workqueue/delaying_queue.go``): ``add_after``."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from typing import Protocol, runtime_checkable

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.durations import MAX_DURATION, MAX_DURATION_TEXT, clamp_delay
from kinrun.threads import SupervisedThread
from kinrun.workqueue.metrics import MetricsProvider, RetryMetrics, metered
from kinrun.workqueue.queue import Item, Queue, QueueInterface

_log = logging.getLogger("kinrun.workqueue")


@runtime_checkable
class DelayingInterface(QueueInterface, Protocol):
    """The second queue level (client-go DelayingInterface)."""

    def add_after(self, item: Item, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds passed (<= 0: now). A waiting item keeps the
        earliest ready time it was given. A delay beyond ``kinrun.durations.MAX_DURATION``
        (infinity included) or NaN waits MAX_DURATION (logged as a warning): no value can
        overflow the waiting thread's timer."""
        ...


class DelayingQueue:
    """Wraps a ``QueueInterface`` and adds ``add_after``.

    One waiting thread (a ``kinrun.threads.SupervisedThread``: its death fails ``/healthz``)
    moves items to the wrapped queue when due (on ``clock`` time).
    ``metrics_provider`` (with a ``name``): count every ``add_after`` as a retry (client-go
    ``workqueue_retries_total``) and, when no ``queue`` is given, meter the Queue it builds.
    Thread-safety: every method is thread-safe; ``_lock`` guards the waiting heap and map.
    Invariants: ``_ready_at[item]`` is the earliest pending ready time of ``item``; the heap may
    hold stale entries (ready time different from ``_ready_at``), skipped when popped.
    """

    def __init__(self, queue: QueueInterface | None = None, *, clock: Clock | None = None,
                 name: str = "", metrics_provider: MetricsProvider | None = None) -> None:
        self.name = name
        self._clock = clock or REAL_CLOCK
        self._queue = queue if queue is not None else Queue(
            name, metrics_provider=metrics_provider, clock=self._clock)
        self._retries = RetryMetrics(metrics_provider, name) \
            if metered(metrics_provider, name) else None  # type: ignore[arg-type]
        self._lock = threading.Lock()
        self._heap: list[tuple[float, int, Item]] = []
        self._ready_at: dict[Item, float] = {}
        self._seq = itertools.count()
        self._wakeup = threading.Event()
        self._stopped = False
        # the wrapped level's methods, bound directly (saves a call per item on the hot path)
        self.add = self._queue.add  # type: ignore[method-assign]
        self.get = self._queue.get  # type: ignore[method-assign]
        self.done = self._queue.done  # type: ignore[method-assign]
        self._thread = SupervisedThread(target=self._waiting_loop, name=f"workqueue-delay-{name}",
                                         daemon=True)
        self._thread.start()

    # the wrapped level
    def add(self, item: Item) -> None:
        """See QueueInterface.add."""
        self._queue.add(item)

    def get(self, timeout: float | None = None) -> tuple[Item | None, bool]:
        """See QueueInterface.get."""
        return self._queue.get(timeout)

    def done(self, item: Item) -> None:
        """See QueueInterface.done."""
        self._queue.done(item)

    def __len__(self) -> int:
        return len(self._queue)

    def idle(self) -> bool:
        """The wrapped queue's ``idle()`` (items waiting for their ready time do not count)."""
        return self._queue.idle()  # type: ignore[attr-defined]

    def shutting_down(self) -> bool:
        """See QueueInterface.shutting_down."""
        return self._queue.shutting_down()

    def shut_down(self) -> None:
        """Stop the waiting thread (pending delayed items are dropped) and shut the queue."""
        self._stop_waiting()
        self._queue.shut_down()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """As ``shut_down``, waiting for items being processed."""
        self._stop_waiting()
        return self._queue.shut_down_with_drain(timeout)

    def _stop_waiting(self) -> None:
        with self._lock:
            self._stopped = True
            self._heap.clear()
            self._ready_at.clear()
        self._wakeup.set()
        if self._thread is not threading.current_thread():
            self._thread.join(5.0)

    # this level
    def add_after(self, item: Item, delay: float) -> None:
        """See DelayingInterface.add_after."""
        if self._retries is not None and not self._stopped:
            self._retries.retry()  # client-go counts every AddAfter, zero delays included
        if delay <= 0:
            self._queue.add(item)
            return
        if not delay <= MAX_DURATION:  # NaN too
            _log.warning("workqueue %s: delay %r for %s is beyond %s: waiting %s", self.name,
                         delay, item, MAX_DURATION_TEXT, MAX_DURATION_TEXT)
            delay = clamp_delay(delay)
        with self._lock:
            if self._stopped:
                return
            ready = self._clock.now() + delay
            current = self._ready_at.get(item)
            if current is not None and current <= ready:
                return
            self._ready_at[item] = ready
            heapq.heappush(self._heap, (ready, next(self._seq), item))
            earliest = self._heap[0][2] == item and self._heap[0][0] == ready
        if earliest:
            self._wakeup.set()

    def waiting(self) -> int:
        """Items waiting for their ready time (informational)."""
        with self._lock:
            return len(self._ready_at)

    def _waiting_loop(self) -> None:
        while True:
            self._wakeup.clear()
            with self._lock:
                if self._stopped:
                    return
                due, next_ready = self._pop_due_locked(self._clock.now())
            for item in due:
                self._queue.add(item)
            self._clock.wait_until(self._wakeup, next_ready)  # absolute: time may move meanwhile

    def _pop_due_locked(self, now: float) -> tuple[list[Item], float | None]:
        due = []
        heap, ready_at = self._heap, self._ready_at
        while heap and heap[0][0] <= now:
            ready, _, item = heapq.heappop(heap)
            if ready_at.get(item) == ready:
                del ready_at[item]
                due.append(item)
        return due, (heap[0][0] if heap else None)
