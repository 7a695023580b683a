"""The workqueue contract, run against every queue level (client-go util/workqueue)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable

import pytest
from pipeline_fakes import WAIT

from kinrun.clock import FakeClock
from kinrun.workqueue import (
    DelayingInterface,
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    Queue,
    QueueInterface,
    RateLimitingInterface,
    RateLimitingQueue,
)

LEVELS: dict[str, Callable[[], QueueInterface]] = {
    "queue": lambda: Queue(),
    "delaying": lambda: DelayingQueue(Queue(), clock=FakeClock()),
    "rate_limiting": lambda: RateLimitingQueue(
        ItemExponentialFailureRateLimiter(), DelayingQueue(Queue(), clock=FakeClock())),
}


@pytest.fixture(params=list(LEVELS), ids=list(LEVELS))
def queue(request):
    q = LEVELS[request.param]()
    yield q
    q.shut_down()


def test_every_level_satisfies_its_protocol():
    """Queue, DelayingQueue and RateLimitingQueue implement their Protocols, each wrapping the one below."""
    assert isinstance(LEVELS["queue"](), QueueInterface)
    delaying = LEVELS["delaying"]()
    rate_limiting = LEVELS["rate_limiting"]()
    assert isinstance(delaying, DelayingInterface)
    assert isinstance(rate_limiting, RateLimitingInterface)
    delaying.shut_down()
    rate_limiting.shut_down()


def test_items_come_out_in_the_order_they_were_added(queue):
    """Fair: FIFO order."""
    for item in ["a", "b", "c"]:
        queue.add(item)
    assert [queue.get()[0] for _ in range(3)] == ["a", "b", "c"]


def test_a_waiting_item_is_queued_once_however_often_added(queue):
    """Stingy: repeated adds of a waiting item leave one copy."""
    for _ in range(3):
        queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert [queue.get()[0] for _ in range(2)] == ["a", "b"]


def test_an_item_being_processed_is_not_handed_out_again(queue):
    """Adding an item that is being processed does not queue it while processing."""
    queue.add("a")
    item, _ = queue.get()
    queue.add("a")
    assert len(queue) == 0
    queue.done(item)
    assert len(queue) == 1


def test_an_item_added_while_processing_is_processed_once_more_after_done(queue):
    """After done, an item re-added during processing comes back exactly once."""
    queue.add("a")
    queue.get()
    queue.add("a")
    queue.add("a")
    queue.done("a")
    assert queue.get() == ("a", False)
    queue.done("a")
    assert len(queue) == 0


def test_done_without_get_neither_duplicates_nor_loses(queue):
    """done for an item never handed out changes nothing."""
    queue.add("a")
    queue.done("a")
    assert len(queue) == 1
    assert queue.get() == ("a", False)
    queue.done("a")
    queue.done("a")
    assert len(queue) == 0


def test_get_with_timeout_returns_nothing_when_empty(queue):
    """A bounded get on an empty queue returns (None, False)."""
    assert queue.get(timeout=0.01) == (None, False)


def test_shut_down_refuses_new_items_but_hands_out_queued_ones(queue):
    """After shut_down: adds are ignored, queued items still come out, then shutdown."""
    queue.add("a")
    queue.shut_down()
    queue.add("b")
    assert queue.shutting_down()
    assert queue.get() == ("a", False)
    assert queue.get() == (None, True)


def test_shut_down_wakes_blocked_getters(queue):
    """A get blocked on an empty queue returns shutdown when the queue shuts down."""
    results = []
    thread = threading.Thread(target=lambda: results.append(queue.get()))
    thread.start()
    queue.shut_down()
    thread.join(WAIT)
    assert results == [(None, True)]


def test_shut_down_with_drain_waits_for_items_being_processed(queue):
    """Drain does not finish while an item is processing, and finishes once it is done."""
    queue.add("a")
    queue.get()
    assert queue.shut_down_with_drain(timeout=0.02) is False
    drained = []
    thread = threading.Thread(target=lambda: drained.append(queue.shut_down_with_drain(WAIT)))
    thread.start()
    queue.done("a")
    thread.join(WAIT)
    assert drained == [True]


def test_concurrent_workers_never_hold_the_same_item(queue):
    """Under concurrent adds and gets no item is processed by two workers at once, none is lost."""
    active: set[str] = set()
    overlap = []
    processed = set()
    lock = threading.Lock()
    items = [f"k{i % 20}" for i in range(2000)]

    def worker():
        while True:
            item, shutdown = queue.get()
            if shutdown:
                return
            with lock:
                if item in active:
                    overlap.append(item)
                active.add(item)
                processed.add(item)
            with lock:
                active.discard(item)
            queue.done(item)

    workers = [threading.Thread(target=worker) for _ in range(4)]
    for w in workers:
        w.start()
    rng = random.Random(1)
    for item in items:
        queue.add(item)
        if rng.random() < 0.01:
            threading.Event().wait(0)  # yield
    assert queue.shut_down_with_drain(WAIT)
    for w in workers:
        w.join(WAIT)
    assert overlap == [] and processed == set(items)


def test_a_drained_burst_gives_its_memory_back() -> None:
    """After 20,000 keys were added and handed out, the empty queue holds no burst-sized table."""
    import tracemalloc

    from kinrun.workqueue import Queue

    keys = [f"ns/pod-{i}" for i in range(20_000)]
    q = Queue()
    tracemalloc.start()
    try:
        for key in keys:
            q.add(key)
        for _ in keys:
            item, _ = q.get()
            q.done(item)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(q) == 0
    assert held < 64 * 1024


def test_no_python_frame_runs_while_the_queue_lock_is_held():
    """``add``, ``get`` and ``done`` hold the queue's lock only across C-level code (the lock
    entered directly, not through the Condition's Python ``__enter__``/``__exit__``): a
    Python frame started under the lock is a point where the interpreter may hand the GIL to
    another thread, which then blocks on that lock (a lock convoy between a reflector and a
    worker on two cores; benchmarks/HISTORY.md "Round 4")."""
    import sys

    q = Queue()
    held_calls: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and q._lock.locked():
            held_calls.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        q.add("a")
        q.add("a")  # already queued: the early return
        item, _ = q.get()
        q.add("a")  # re-added while processing
        q.done(item)
        q.get()
    finally:
        sys.setprofile(None)
    assert held_calls == []


def test_each_add_wakes_one_waiting_get_and_a_get_that_gave_up_takes_no_wake_up():
    """Two workers wait: each item made ready wakes one of them (and is taken by it); a get
    that returned empty-handed (timeout 0) leaves nothing behind that would swallow the
    wake-up meant for a waiting worker; shutdown wakes every waiter."""
    q = Queue()
    assert q.get(timeout=0) == (None, False)
    got: list[tuple] = []
    arrived = threading.Semaphore(0)

    def worker() -> None:
        while True:
            item, shutdown = q.get()
            got.append((item, shutdown))
            arrived.release()
            if shutdown:
                return
            q.done(item)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    for name in ("a", "b", "c"):
        q.add(name)
        assert arrived.acquire(timeout=WAIT)
    assert sorted(item for item, _ in got) == ["a", "b", "c"]
    q.shut_down()
    for t in threads:
        t.join(WAIT)
        assert not t.is_alive()
    assert [shutdown for _, shutdown in got].count(True) == 2
