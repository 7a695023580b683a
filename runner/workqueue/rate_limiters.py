"""Rate limiters: how long an item waits before it is retried (as client-go
``util/workqueue/default_rate_limiters.go``)."""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from kinrun.clock import REAL_CLOCK, Clock

Item = Hashable


@runtime_checkable
class RateLimiter(Protocol):
    """Three methods (client-go RateLimiter). Implementations are thread-safe."""

    def when(self, item: Item) -> float:
        """Seconds ``item`` should wait now; counts as one more failure/requeue."""
        ...

    def forget(self, item: Item) -> None:
        """Stop tracking ``item`` (it succeeded); unknown items are ignored."""
        ...

    def num_requeues(self, item: Item) -> int:
        """Failures counted for ``item`` since it was last forgotten."""
        ...


class _FailureCounts:
    """Per-item failure counts, the state both per-item limiters keep. Thread-safe: every
    access holds ``_lock``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[Item, int] = {}  # item -> failures since it was last forgotten

    def _count_failure(self, item: Item) -> int:
        """Count one more failure of ``item``; returns the failures counted before this one."""
        with self._lock:
            before = self._failures.get(item, 0)
            self._failures[item] = before + 1
        return before

    def forget(self, item: Item) -> None:
        """See RateLimiter.forget. An item without failures (every successful reconcile's)
        takes no lock: the membership test is one atomic read under the GIL, and a failure
        counted concurrently is ordered after this forget, as it would be with the lock."""
        if item not in self._failures:
            return
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Item) -> int:
        """See RateLimiter.num_requeues."""
        with self._lock:
            return self._failures.get(item, 0)


class ItemExponentialFailureRateLimiter(_FailureCounts):
    """``base_delay * 2**failures`` seconds per item, capped at ``max_delay`` (client-go
    ItemExponentialFailureRateLimiter; defaults 5 ms and 1000 s)."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        super().__init__()
        self.base_delay, self.max_delay = base_delay, max_delay

    def when(self, item: Item) -> float:
        """See RateLimiter.when."""
        exp = self._count_failure(item)
        if exp >= 64:
            return self.max_delay
        return min(self.base_delay * (2 ** exp), self.max_delay)


class ItemFastSlowRateLimiter(_FailureCounts):
    """``fast_delay`` for the first ``max_fast_attempts`` failures of an item, then ``slow_delay``
    (client-go ItemFastSlowRateLimiter)."""

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        super().__init__()
        self.fast_delay, self.slow_delay = fast_delay, slow_delay
        self.max_fast_attempts = max_fast_attempts

    def when(self, item: Item) -> float:
        """See RateLimiter.when."""
        count = self._count_failure(item) + 1
        return self.fast_delay if count <= self.max_fast_attempts else self.slow_delay


class BucketRateLimiter:
    """An overall token bucket: ``qps`` tokens/s, at most ``burst`` stored (client-go
    BucketRateLimiter over golang.org/x/time/rate). Each ``when`` reserves one token and
    returns how long until it is available; per-item tracking is none (num_requeues is 0)."""

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("BucketRateLimiter needs qps > 0 and burst >= 1")
        self.qps, self.burst = qps, burst
        self._clock = clock or REAL_CLOCK
        self._lock = threading.Lock()
        self._tokens = float(burst)  # may go negative: reservations taken in advance
        self._last = self._clock.now()

    def when(self, item: Item) -> float:
        """See RateLimiter.when."""
        with self._lock:
            now = self._clock.now()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Item) -> None:
        """No per-item state."""

    def num_requeues(self, item: Item) -> int:
        """Always 0 (no per-item state)."""
        return 0


class MaxOfRateLimiter:
    """The largest delay and requeue count of several limiters; ``forget`` forgets in all
    (client-go MaxOfRateLimiter)."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: Item) -> float:
        """See RateLimiter.when (every limiter counts the failure)."""
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: Item) -> None:
        """See RateLimiter.forget."""
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Item) -> int:
        """See RateLimiter.num_requeues."""
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(*, base_delay: float = 0.005, max_delay: float = 1000.0,
                                    qps: float = 10.0, burst: int = 100,
                                    clock: Clock | None = None) -> MaxOfRateLimiter:
    """Per-item exponential backoff combined with an overall token bucket (client-go
    DefaultControllerRateLimiter: 5 ms .. 1000 s, 10 qps, burst 100)."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(base_delay, max_delay),
                            BucketRateLimiter(qps, burst, clock=clock))
