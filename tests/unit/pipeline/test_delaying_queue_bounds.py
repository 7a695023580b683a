"""A delay no timer can take (infinity, 1e30, NaN, from a hook or TemporaryError) never kills the
delaying queue's thread: it waits kinrun.durations.MAX_DURATION, and later items still fire."""

from __future__ import annotations

import math
import threading

import pytest
from pipeline_fakes import WAIT

from kinrun.clock import REAL_CLOCK, FakeClock
from kinrun.durations import MAX_DURATION
from kinrun.workqueue import DelayingQueue, Queue


class RecordingClock:
    """The real clock (real waits: the ones that overflow), recording each ``wait_until``."""

    def __init__(self) -> None:
        self.deadlines: list[float | None] = []
        self.waited = threading.Event()

    def now(self) -> float:
        return REAL_CLOCK.now()

    def wait(self, wakeup: threading.Event, timeout: float | None) -> bool:
        return REAL_CLOCK.wait(wakeup, timeout)

    def wait_until(self, wakeup: threading.Event, deadline: float | None) -> bool:
        self.deadlines.append(deadline)
        self.waited.set()
        return REAL_CLOCK.wait_until(wakeup, deadline)


@pytest.mark.parametrize("delay", [math.inf, 1e30, 99999999999999 * 3600.0, math.nan])
def test_an_unwaitable_delay_waits_max_duration_and_the_thread_lives(delay: float) -> None:
    """The waiting thread takes a finite deadline <= now + MAX_DURATION and keeps running."""
    clock = RecordingClock()
    queue = DelayingQueue(Queue(), clock=clock)  # type: ignore[arg-type]
    try:
        assert clock.waited.wait(WAIT)
        clock.waited.clear()
        queue.add_after("far", delay)
        assert clock.waited.wait(WAIT)
        deadline = clock.deadlines[-1]
        assert deadline is not None and math.isfinite(deadline)
        assert deadline <= REAL_CLOCK.now() + MAX_DURATION
        assert queue._thread.is_alive()
        assert queue.waiting() == 1
    finally:
        queue.shut_down()


def test_after_a_huge_delay_a_short_one_still_fires(clock: FakeClock) -> None:
    """A key asked for in 1e30 s does not hold back a key due in 1 s (fake clock)."""
    queue = DelayingQueue(Queue(), clock=clock)
    try:
        queue.add_after("far", 1e30)
        queue.add_after("near", 1.0)
        assert clock.wait_for_waiters(1, WAIT, timed=True)
        clock.step(1.0)
        assert queue.get(timeout=WAIT) == ("near", False)
        clock.step(MAX_DURATION)
        assert queue.get(timeout=WAIT) == ("far", False)
    finally:
        queue.shut_down()
