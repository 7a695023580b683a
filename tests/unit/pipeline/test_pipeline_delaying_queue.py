"""DelayingQueue.add_after and RateLimitingQueue (client-go delaying_queue.go, rate_limiting_queue.go)."""

from __future__ import annotations

import pytest
from pipeline_fakes import WAIT

from kinrun.clock import FakeClock
from kinrun.workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    Queue,
    RateLimitingQueue,
)


@pytest.fixture
def delaying(clock: FakeClock):
    q = DelayingQueue(Queue(), clock=clock)
    yield q
    q.shut_down()


def parked(clock: FakeClock) -> None:
    assert clock.wait_for_waiters(1, WAIT, timed=True)


def test_add_after_makes_the_item_ready_only_when_due(delaying, clock):
    """An item added with a delay appears once the clock reaches its ready time."""
    delaying.add_after("a", 10.0)
    parked(clock)
    clock.step(9.0)
    assert len(delaying) == 0
    clock.step(1.0)
    assert delaying.get(timeout=WAIT) == ("a", False)


def test_add_after_keeps_the_earliest_ready_time(delaying, clock):
    """A later, longer add_after does not postpone; a shorter one brings the item forward."""
    delaying.add_after("a", 10.0)
    delaying.add_after("a", 20.0)
    delaying.add_after("a", 5.0)
    assert delaying.waiting() == 1
    parked(clock)
    clock.step(5.0)
    assert delaying.get(timeout=WAIT) == ("a", False)
    delaying.done("a")
    clock.step(20.0)
    assert delaying.get(timeout=0.02) == (None, False)


def test_non_positive_delay_adds_at_once(delaying):
    """add_after with delay <= 0 is a plain add."""
    delaying.add_after("a", 0)
    assert len(delaying) == 1


def test_items_become_ready_in_ready_time_order(delaying, clock):
    """Several delayed items come out ordered by their ready time."""
    delaying.add_after("late", 3.0)
    delaying.add_after("early", 1.0)
    parked(clock)
    clock.step(5.0)
    assert delaying.get(timeout=WAIT)[0] == "early"
    assert delaying.get(timeout=WAIT)[0] == "late"


def test_shutdown_drops_waiting_items(delaying, clock):
    """Items still waiting at shutdown are never added."""
    delaying.add_after("a", 1.0)
    delaying.shut_down()
    clock.step(2.0)
    assert delaying.get() == (None, True)


def test_add_rate_limited_waits_the_limiters_delay_and_counts(clock):
    """add_rate_limited delays by the limiter; num_requeues counts; forget resets."""
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), DelayingQueue(clock=clock))
    try:
        q.add_rate_limited("a")
        q.add_rate_limited("a")  # second failure: 2 s, but the earlier 1 s ready time wins
        assert q.num_requeues("a") == 2
        parked(clock)
        clock.step(1.0)
        assert q.get(timeout=WAIT) == ("a", False)
        q.forget("a")
        assert q.num_requeues("a") == 0
    finally:
        q.shut_down()


def test_forget_of_unknown_item_changes_nothing(clock):
    """forget for an item never seen neither raises nor queues anything."""
    q = RateLimitingQueue(queue=DelayingQueue(clock=clock), clock=clock)
    try:
        q.forget("ghost")
        assert len(q) == 0 and q.num_requeues("ghost") == 0
    finally:
        q.shut_down()


class _StepsBeforeParking(FakeClock):
    """A fake clock that is stepped by ``jump`` seconds just as the next waiter parks: the
    interleaving where a test steps time after the queue's waiting thread read ``now()``
    and before it waits."""

    def __init__(self) -> None:
        super().__init__()
        self.jump = 0.0

    def _maybe_jump(self, bounded: bool) -> None:
        if self.jump and bounded:
            jump, self.jump = self.jump, 0.0
            self.step(jump)

    def wait(self, wakeup, timeout):  # noqa: ANN001, ANN201 - the Clock protocol
        self._maybe_jump(timeout is not None)
        return super().wait(wakeup, timeout)

    def wait_until(self, wakeup, deadline):  # noqa: ANN001, ANN201 - the Clock protocol
        self._maybe_jump(deadline is not None)
        return super().wait_until(wakeup, deadline)


def test_a_step_between_reading_now_and_parking_is_not_lost():
    """Time stepped past an item's ready time while the waiting thread was about to park still
    delivers the item (the wait is until an absolute deadline, not a relative timeout)."""
    clock = _StepsBeforeParking()
    queue = DelayingQueue(Queue(), clock=clock)
    try:
        assert clock.wait_for_waiters(1, WAIT)  # idle, no deadline
        clock.jump = 60.0
        queue.add_after("a", 30.0)  # wakes the thread, which reads now, then parks: +60 s
        assert queue.get(WAIT) == ("a", False)
    finally:
        queue.shut_down()
