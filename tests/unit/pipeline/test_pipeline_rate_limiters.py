"""Rate limiters: a contract for every implementation, then each one's curve
(client-go default_rate_limiters.go)."""

from __future__ import annotations

import pytest

from kinrun.clock import FakeClock
from kinrun.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)

LIMITERS = {
    "exponential": lambda: ItemExponentialFailureRateLimiter(),
    "bucket": lambda: BucketRateLimiter(10, 100, clock=FakeClock()),
    "fast_slow": lambda: ItemFastSlowRateLimiter(0.01, 1.0, 3),
    "max_of": lambda: MaxOfRateLimiter(ItemExponentialFailureRateLimiter(),
                                       BucketRateLimiter(10, 100, clock=FakeClock())),
    "default": lambda: default_controller_rate_limiter(clock=FakeClock()),
}


@pytest.fixture(params=list(LIMITERS), ids=list(LIMITERS))
def limiter(request) -> RateLimiter:
    return LIMITERS[request.param]()


def test_limiter_satisfies_the_protocol(limiter):
    """Every limiter implements when/forget/num_requeues."""
    assert isinstance(limiter, RateLimiter)


def test_delays_are_non_negative_and_never_shrink_for_a_failing_item(limiter):
    """Consecutive failures of one item never get a shorter delay."""
    delays = [limiter.when("a") for _ in range(10)]
    assert all(d >= 0 for d in delays)
    assert delays == sorted(delays)


def test_forget_resets_the_item_and_unknown_items_are_harmless(limiter):
    """After forget an item counts zero requeues; forgetting an unknown item is a no-op."""
    limiter.when("a")
    limiter.forget("a")
    limiter.forget("never-seen")
    assert limiter.num_requeues("a") == 0
    assert limiter.num_requeues("never-seen") == 0


def test_exponential_limiter_doubles_from_base_to_cap():
    """5 ms, 10 ms, 20 ms ... capped at max_delay; per item."""
    lim = ItemExponentialFailureRateLimiter(0.005, 0.04)
    assert [lim.when("a") for _ in range(5)] == [0.005, 0.01, 0.02, 0.04, 0.04]
    assert lim.when("b") == 0.005
    assert lim.num_requeues("a") == 5


def test_exponential_limiter_defaults_to_5ms_and_1000s():
    """Defaults are client-go's: 5 ms base, 1000 s cap, without overflow after many failures."""
    lim = ItemExponentialFailureRateLimiter()
    assert lim.when("a") == 0.005
    for _ in range(200):
        last = lim.when("a")
    assert last == 1000.0


def test_fast_slow_limiter_switches_after_max_fast_attempts():
    """fast_delay for the first attempts, slow_delay afterwards."""
    lim = ItemFastSlowRateLimiter(0.01, 1.0, 2)
    assert [lim.when("a") for _ in range(4)] == [0.01, 0.01, 1.0, 1.0]


def test_bucket_limiter_allows_burst_then_spaces_by_qps():
    """burst tokens are free, then each costs 1/qps s more; time refills the bucket."""
    clock = FakeClock()
    lim = BucketRateLimiter(10, 100, clock=clock)
    assert all(lim.when(i) == 0 for i in range(100))
    assert lim.when("x") == pytest.approx(0.1)
    assert lim.when("y") == pytest.approx(0.2)
    clock.step(10.0)
    assert lim.when("z") == 0


def test_max_of_limiter_takes_the_largest_delay_and_forgets_in_all():
    """MaxOf returns the maximum delay and requeue count of its limiters."""
    fast_slow = ItemFastSlowRateLimiter(0.5, 5.0, 1)
    exp = ItemExponentialFailureRateLimiter(0.1, 100)
    lim = MaxOfRateLimiter(fast_slow, exp)
    assert lim.when("a") == 0.5
    assert lim.when("a") == 5.0
    assert lim.num_requeues("a") == 2
    lim.forget("a")
    assert fast_slow.num_requeues("a") == 0 and exp.num_requeues("a") == 0


def test_default_controller_limiter_combines_exponential_and_bucket():
    """The default limiter is max(exponential 5 ms..1000 s, bucket 10 qps burst 100)."""
    lim = default_controller_rate_limiter(clock=FakeClock())
    kinds = {type(x) for x in lim.limiters}
    assert kinds == {ItemExponentialFailureRateLimiter, BucketRateLimiter}
    assert lim.when("a") == 0.005
