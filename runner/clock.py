"""Injected time, so tests step a fake clock instead of sleeping (as client-go's ``clock.Clock``).

Every component that waits takes a ``Clock``. Waiting is always *interruptible*: a component
owns a private wake-up ``threading.Event`` and calls ``clock.wait(wakeup, timeout)``; whoever
wants the waiter to look again (new work, stop) sets that event. A clock may also set the event
itself to end a wait (the fake clock does, when stepped past the deadline), so a wake-up event
must be used for nothing but wake-ups, and its owner clears it before re-checking its state.

Wall time (a Lease's renewTime, an Event's timestamps, certificates' validity, templates'
``now()``) is the same clock's ``wall()``: a fake clock gives a settable one, so one injected
object fixes both.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import warnings
from collections.abc import Callable
from typing import Protocol


class Clock(Protocol):
    """Monotonic time in seconds, and interruptible waits measured on that time."""

    def now(self) -> float:
        """Monotonic seconds (arbitrary origin)."""
        ...

    def wall(self) -> float:
        """Wall-clock seconds since the Unix epoch (what is written into objects and logs;
        never used to measure an interval)."""
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

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds`` of this clock's time, uninterruptibly: only for short waits
        nothing can cut short (a request's retry delay, a rate limiter's token); everything
        else waits with ``wait`` on its own wake-up event."""
        ...


class RealClock:
    """The system's monotonic clock, and ``time.time`` as its wall. Thread-safe (stateless).
    ``now`` and ``wall`` are the ``time`` functions themselves (no call in between: read per
    loop step by the template budget)."""

    now = staticmethod(time.monotonic)
    wall = staticmethod(time.time)

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

FAKE_EPOCH = 1_700_000_000.0
"""A FakeClock's wall time at its start unless told: 2023-11-14T22:13:20Z."""


class WallOverride:
    """``clock`` with another wall: ``wall()`` is ``wall`` (Unix seconds), the rest is
    ``clock``'s. What a deprecated ``wall_clock=`` callable keyword is turned into."""

    def __init__(self, clock: Clock, wall: Callable[[], float]) -> None:
        self.clock = clock
        self.wall = wall
        self.now = clock.now

    def wait(self, wakeup: threading.Event, timeout: float | None) -> bool:
        """``clock.wait``."""
        return self.clock.wait(wakeup, timeout)

    def wait_until(self, wakeup: threading.Event, deadline: float | None) -> bool:
        """``clock.wait_until``."""
        return self.clock.wait_until(wakeup, deadline)

    def sleep(self, seconds: float) -> None:
        """``clock.sleep``."""
        self.clock.sleep(seconds)


def clock_of(clock: Clock | Callable[[], float] | None, *, where: str) -> Clock:
    """What a public ``clock=`` keyword that used to take a wall-time callable takes now: a
    Clock as it is (None: ``REAL_CLOCK``); a bare callable of Unix seconds still works, as the
    wall of ``REAL_CLOCK``, with a DeprecationWarning naming ``where``."""
    if clock is None:
        return REAL_CLOCK
    if hasattr(clock, "wall"):
        return clock  # type: ignore[return-value]
    warnings.warn(f"{where}: clock= a callable is deprecated; pass a kinrun.clock.Clock (its "
                  "wall() gives the time)", DeprecationWarning, stacklevel=3)
    return WallOverride(REAL_CLOCK, clock)  # type: ignore[arg-type]


def with_wall(clock: Clock | None, wall_clock: Callable[[], float] | None, *,
              where: str) -> Clock:
    """``clock`` (default ``REAL_CLOCK``), its wall replaced by the callable ``wall_clock`` when
    one is given, with a DeprecationWarning naming ``where``: for public functions keeping a
    deprecated ``wall_clock`` keyword (pass a Clock instead: its ``wall()``)."""
    clock = clock or REAL_CLOCK
    if wall_clock is None:
        return clock
    warnings.warn(f"{where}: wall_clock= is deprecated; pass clock= a kinrun.clock.Clock "
                  "(its wall() gives the time)", DeprecationWarning, stacklevel=3)
    return WallOverride(clock, wall_clock)


class FakeClock:
    """A clock that moves only when a test calls ``step(seconds)``; its ``wall()`` moves with it
    from ``wall`` (Unix seconds; ``set_wall`` sets it).

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

    def __init__(self, start: float = 1000.0, wall: float = FAKE_EPOCH) -> None:
        self._now = start
        self._wall_offset = wall - start  # wall() - now(); guarded by _cond
        self._cond = threading.Condition(threading.Lock())
        self._waiters: list[tuple[float, int, threading.Event, int]] = []  # heap by deadline
        self._parked = 0  # threads currently inside wait(), with or without a deadline
        self._woken: set[int] = set()  # thread idents woken by step, not yet waiting again
        self._seq = itertools.count()

    def now(self) -> float:
        """The fake time in seconds."""
        with self._cond:
            return self._now

    def wall(self) -> float:
        """The fake wall time: Unix seconds, moved by ``step`` as ``now``."""
        with self._cond:
            return self._now + self._wall_offset

    def set_wall(self, seconds: float) -> None:
        """Make ``wall()`` return ``seconds`` now (later steps move it on); ``now`` is kept."""
        with self._cond:
            self._wall_offset = seconds - self._now

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


class RecordingClock(FakeClock):
    """A FakeClock whose ``sleep`` returns at once: it appends the seconds to ``slept`` and
    leaves fake time where it was (a test steps it itself). For tests of code that sleeps
    between tries (a request's retries, a rate limiter's reservations, which then read as
    concurrent callers' would); ``wait`` is FakeClock's. Thread-safe as FakeClock (``slept``
    is appended to under the GIL)."""

    def __init__(self, start: float = 1000.0, wall: float = FAKE_EPOCH) -> None:
        super().__init__(start, wall)
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        """Record ``seconds``; return at once."""
        self.slept.append(seconds)
