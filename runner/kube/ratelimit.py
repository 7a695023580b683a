"""Client-side request rate limit: a token bucket shared by every request of one Client.

As client-go ``util/flowcontrol.NewTokenBucketRateLimiter`` (the ``QPS``/``Burst`` of a
``rest.Config``): the bucket starts full with ``burst`` tokens and refills at ``qps`` tokens per
second; every request takes one token, waiting when none is left. Waiting callers are served in
the order they asked (each reserves its token under the lock, then sleeps outside it), so a
flood of requests from many informers and workers is spread out instead of starving one thread.
"""

from __future__ import annotations

import threading

from kinrun.clock import REAL_CLOCK, Clock


class TokenBucket:
    """A token bucket of ``burst`` tokens refilled at ``qps`` tokens/s; ``qps <= 0`` disables it.

    Thread-safe: ``accept`` and ``try_accept`` may be called from any thread at once. Time is
    ``clock.now()`` (monotonic seconds) and a wait for a token is ``clock.sleep`` (a FakeClock
    in tests). Raises ValueError when ``qps > 0`` and ``burst < 1``.
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = REAL_CLOCK) -> None:
        if burst < 1 and qps > 0:
            raise ValueError(f"burst must be >= 1 when qps > 0, got {burst}")
        self.qps = float(qps)
        self.burst = int(burst)
        self._clock = clock.now
        self._sleep = clock.sleep
        self._lock = threading.Lock()
        # Invariant: _tokens <= burst. It goes negative when callers have reserved tokens that
        # have not been refilled yet: -_tokens / qps is how long the next caller must wait.
        self._tokens = float(burst)
        self._last = clock.now()

    @property
    def enabled(self) -> bool:
        """False when ``qps <= 0`` (no limit)."""
        return self.qps > 0

    def accept(self) -> float:
        """Take one token, blocking until it is available; returns the seconds waited."""
        if not self.enabled:
            return 0.0
        with self._lock:
            self._refill_locked()
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait

    def try_accept(self) -> bool:
        """Take one token only if one is available now; never blocks."""
        if not self.enabled:
            return True
        with self._lock:
            self._refill_locked()
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def _refill_locked(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
