"""TokenBucket: burst, refill at qps, waits computed on a fake clock."""

from __future__ import annotations

import threading

import pytest

from kinrun.clock import RecordingClock
from kinrun.kube.ratelimit import TokenBucket


def test_burst_is_available_at_once() -> None:
    """A fresh bucket hands out `burst` tokens without waiting."""
    t = RecordingClock(start=100.0)
    bucket = TokenBucket(qps=2, burst=3, clock=t)
    assert [bucket.accept() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert t.slept == []


def test_after_burst_each_token_waits_one_over_qps_more() -> None:
    """Past the burst, callers queue up: waits of 1/qps, 2/qps, ..."""
    t = RecordingClock(start=100.0)
    bucket = TokenBucket(qps=4, burst=1, clock=t)
    bucket.accept()
    assert bucket.accept() == pytest.approx(0.25)
    assert bucket.accept() == pytest.approx(0.5)


def test_tokens_refill_with_time_up_to_burst() -> None:
    """Idle time refills tokens, never beyond burst."""
    t = RecordingClock(start=100.0)
    bucket = TokenBucket(qps=10, burst=2, clock=t)
    bucket.accept(), bucket.accept()
    assert not bucket.try_accept()
    t.step(100.0)
    assert bucket.try_accept() and bucket.try_accept()
    assert not bucket.try_accept()


def test_zero_qps_disables_the_limit() -> None:
    """qps <= 0 never waits."""
    bucket = TokenBucket(qps=0, burst=0)
    assert not bucket.enabled
    assert all(bucket.accept() == 0.0 for _ in range(1000))


def test_bucket_rejects_zero_burst_with_a_rate() -> None:
    """burst must be at least one token when limiting."""
    with pytest.raises(ValueError):
        TokenBucket(qps=5, burst=0)


def test_concurrent_callers_each_reserve_a_distinct_slot() -> None:
    """Threads sharing one bucket get distinct waits: 0 for the burst, then k/qps each."""
    t = RecordingClock(start=100.0)
    bucket = TokenBucket(qps=10, burst=2, clock=t)
    waits: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        w = bucket.accept()
        with lock:
            waits.append(w)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=5)
    assert sorted(round(w, 6) for w in waits) == [0.0, 0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
