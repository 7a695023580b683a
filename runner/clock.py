"""Injected time, so tests step a fake clock instead of sleeping (as client-go's ``clock.Clock``).

Every component that waits takes a ``Clock``. Waiting is always *interruptible*: a component
owns a private wake-up ``threading.Event`` and calls ``clock.wait(wakeup, timeout)``; whoever
wants the waiter to look again (new work, stop) sets that event. A clock may also set the event
itself to end a wait (the fake clock does, when stepped past the deadline), so a wake-up event
must be used for nothing but wake-ups, and its owner clears it before re-checking its state.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time in seconds, and interruptible waits measured on that time."""

    def now(self) -> float:
        """Monotonic seconds (arbitrary origin)."""
        ...

    def wait(self, wakeup: threading.Event, timeout: float | None) -> bool:
        """Block until ``wakeup`` is set or ``timeout`` seconds pass (None: no limit).

        Returns whether ``wakeup`` is set. The clock may set ``wakeup`` itself when the timeout
        passes; the caller clears it."""
        ...

    def wait_until(self, wakeup: threading.Event, deadline: float | None) -> bool:
        """As ``wait``, until ``deadline`` (a ``now()`` value; None: no limit). Use it when
        the deadline was computed from an earlier ``now()``: a relative timeout would count
        from the time the wait starts, so time that passed in between would be counted twice
        (with a fake clock stepped meanwhile, the wake-up would be missed)."""
        ...


class RealClock:
    """The system's monotonic clock. Thread-safe (stateless)."""

    def now(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """``time.sleep(seconds)`` (uninterruptible: prefer ``wait``)."""
        time.sleep(max(0.0, seconds))

    def wait(self, wakeup: threading.Event, timeout: float | None) -> bool:
        """``wakeup.wait(timeout)``; a negative timeout does not block."""
        if timeout is not None and timeout <= 0:
            return wakeup.is_set()
        return wakeup.wait(timeout)

    def wait_until(self, wakeup: threading.Event, deadline: float | None) -> bool:
        """``wait`` for what is left until ``deadline`` (monotonic seconds)."""
        return self.wait(wakeup, None if deadline is None else deadline - time.monotonic())


REAL_CLOCK = RealClock()


class FakeClock:
    """A clock that moves only when a test calls ``step(seconds)``.

    ``wait`` blocks the calling thread (on the real wake-up event) until the event is set by its
    owner or ``step`` moves time to or past the deadline, in which case ``step`` sets the event.
    ``wait_for_waiters(n)`` lets a test block until n threads are parked in ``wait`` before it
    steps time, so no test relies on real-time sleeps; ``settle(deadline)`` blocks until every
    thread a step woke has come back to wait (it has done what was due: ``kinrun test``).

    Thread-safety: all methods are thread-safe. Invariants: every entry of ``_waiters`` is a
    waiter parked in ``wait`` whose deadline has not been reached (entries are removed by
    ``step`` when due, or by ``wait`` when it returns); ``_woken`` holds the threads ``step``
    woke that have not called ``wait`` again.
    """

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._cond = threading.Condition(threading.Lock())
        self._waiters: list[tuple[float, int, threading.Event, int]] = []  # heap by deadline
        self._parked = 0  # threads currently inside wait(), with or without a deadline
        self._woken: set[int] = set()  # thread idents woken by step, not yet waiting again
        self._seq = itertools.count()

    def now(self) -> float:
        """The fake time in seconds."""
        with self._cond:
            return self._now

    def wait(self, wakeup: threading.Event, timeout: float | None) -> bool:
        """Park until ``wakeup`` is set or fake time reaches now + ``timeout``."""
        with self._cond:
            deadline = None if timeout is None else self._now + timeout
        return self.wait_until(wakeup, deadline)

    def wait_until(self, wakeup: threading.Event, deadline: float | None) -> bool:
        """Park until ``wakeup`` is set or fake time reaches ``deadline`` (at once when it
        already has)."""
        me = threading.get_ident()
        with self._cond:
            if me in self._woken:
                self._woken.discard(me)
                self._cond.notify_all()
            if wakeup.is_set():
                return True
            if deadline is not None and deadline <= self._now:
                return False
            entry = None
            if deadline is not None:
                entry = (deadline, next(self._seq), wakeup, me)
                heapq.heappush(self._waiters, entry)
            self._parked += 1
            self._cond.notify_all()
        try:
            wakeup.wait()
        finally:
            with self._cond:
                self._parked -= 1
                if entry is not None and entry in self._waiters:
                    self._waiters.remove(entry)
                    heapq.heapify(self._waiters)
                self._cond.notify_all()
        return True

    def step(self, seconds: float) -> None:
        """Advance fake time by ``seconds`` and wake every waiter whose deadline has passed."""
        with self._cond:
            self._now += seconds
            while self._waiters and self._waiters[0][0] <= self._now:
                _, _, event, ident = heapq.heappop(self._waiters)
                self._woken.add(ident)
                event.set()

    def sleep(self, seconds: float) -> None:
        """Block until fake time has moved by ``seconds`` (a test must step it)."""
        self.wait(threading.Event(), seconds)

    def settled(self) -> bool:
        """Whether every thread woken by a ``step`` has called ``wait`` again."""
        with self._cond:
            return not self._woken

    def settle(self, deadline: float) -> bool:
        """Block (real time, until ``deadline`` on ``time.monotonic``) until ``settled``."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._woken,
                                       max(0.0, deadline - time.monotonic()))

    def waiters(self) -> int:
        """How many threads are parked in ``wait`` right now."""
        with self._cond:
            return self._parked

    def next_deadline(self) -> float | None:
        """The earliest fake deadline any parked waiter has, or None."""
        with self._cond:
            return self._waiters[0][0] if self._waiters else None

    def wait_for_waiters(self, n: int, timeout: float = 5.0, *, timed: bool = False) -> bool:
        """Block (real time, at most ``timeout`` s) until at least ``n`` threads are parked
        (``timed``: parked with a deadline). Returns whether that happened."""
        def enough() -> bool:
            return (len(self._waiters) if timed else self._parked) >= n
        with self._cond:
            return self._cond.wait_for(enough, timeout)
