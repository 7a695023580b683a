"""The rate-limiting queue (as client-go ``util/workqueue/rate_limiting_queue.go``)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from kinrun.clock import Clock
from kinrun.workqueue.delaying_queue import DelayingInterface, DelayingQueue
from kinrun.workqueue.metrics import MetricsProvider
from kinrun.workqueue.queue import Item
from kinrun.workqueue.rate_limiters import RateLimiter, default_controller_rate_limiter


@runtime_checkable
class RateLimitingInterface(DelayingInterface, Protocol):
    """The third queue level (client-go RateLimitingInterface)."""

    def add_rate_limited(self, item: Item) -> None:
        """Add ``item`` after the rate limiter's delay for it (one more failure)."""
        ...

    def forget(self, item: Item) -> None:
        """The item succeeded: reset its failure count (it is not removed from the queue)."""
        ...

    def num_requeues(self, item: Item) -> int:
        """Failures counted for ``item`` since it was last forgotten."""
        ...


class RateLimitingQueue:
    """Wraps a ``DelayingInterface`` and a ``RateLimiter``. Thread-safe (as its parts).
    ``metrics_provider``: meter the queues it builds when no ``queue`` is given (see
    ``kinrun.workqueue.metrics``; needs a ``name``)."""

    def __init__(self, rate_limiter: RateLimiter | None = None,
                 queue: DelayingInterface | None = None, *, clock: Clock | None = None,
                 name: str = "", metrics_provider: MetricsProvider | None = None) -> None:
        self.name = name
        self.rate_limiter = rate_limiter or default_controller_rate_limiter(clock=clock)
        self._queue = queue if queue is not None else DelayingQueue(
            clock=clock, name=name, metrics_provider=metrics_provider)
        self.add = self._queue.add
        self.get = self._queue.get
        self.done = self._queue.done
        self.add_after = self._queue.add_after

    def __len__(self) -> int:
        return len(self._queue)

    def idle(self) -> bool:
        """The wrapped queue's ``idle()`` (items waiting for their ready time do not count)."""
        return self._queue.idle()  # type: ignore[attr-defined]

    def shutting_down(self) -> bool:
        """See QueueInterface.shutting_down."""
        return self._queue.shutting_down()

    def shut_down(self) -> None:
        """See QueueInterface.shut_down."""
        self._queue.shut_down()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """See QueueInterface.shut_down_with_drain."""
        return self._queue.shut_down_with_drain(timeout)

    def add_rate_limited(self, item: Item) -> None:
        """See RateLimitingInterface.add_rate_limited."""
        self._queue.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: Item) -> None:
        """See RateLimitingInterface.forget."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: Item) -> int:
        """See RateLimitingInterface.num_requeues."""
        return self.rate_limiter.num_requeues(item)
