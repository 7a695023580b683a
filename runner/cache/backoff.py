"""Exponential backoff with jitter for the reflector (as client-go's reflector backoff manager:
800 ms growing x2 up to 30 s, jitter 1.0, reset after 2 minutes without failures)."""

from __future__ import annotations

import random

from kinrun.clock import Clock


class Backoff:
    """Delays for consecutive failures: ``initial * factor**n`` capped at ``cap``, each plus up
    to ``jitter`` times itself at random; the sequence restarts once ``reset_after`` seconds
    passed since the previous failure. Not thread-safe (used by one reflector thread)."""

    def __init__(self, clock: Clock, *, initial: float = 0.8, cap: float = 30.0,
                 factor: float = 2.0, jitter: float = 1.0, reset_after: float = 120.0,
                 rand: random.Random | None = None) -> None:
        self._clock = clock
        self.initial, self.cap, self.factor = initial, cap, factor
        self.jitter, self.reset_after = jitter, reset_after
        self._rand = rand or random.Random()
        self._current = 0.0  # 0: no failure in the current sequence
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        """Seconds to wait after a failure now."""
        now = self._clock.now()
        if self._last_failure is not None and now - self._last_failure > self.reset_after:
            self._current = 0.0
        self._last_failure = now
        self._current = self.initial if self._current == 0 else min(self._current * self.factor, self.cap)
        return self._current + self._rand.random() * self.jitter * self._current

    def reset(self) -> None:
        """Forget past failures."""
        self._current = 0.0
        self._last_failure = None
