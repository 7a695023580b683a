"""Workqueue metrics (client-go's provider pattern) on a fake clock: what add, get, done,
add_after and the unfinished-work update record, and that an unmetered queue records nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.clock import FakeClock
from kinrun.workqueue import NOOP_PROVIDER, DelayingQueue, MetricsProvider, Queue, RateLimitingQueue


class Recorded:
    """One fake metric: its value (gauges, counters) and observations (histograms)."""

    def __init__(self) -> None:
        self.value = 0.0
        self.observed: list[float] = []

    def inc(self) -> None:
        self.value += 1

    def dec(self) -> None:
        self.value -= 1

    def set(self, value: float) -> None:
        self.value = value

    def observe(self, value: float) -> None:
        self.observed.append(value)


class RecordingProvider:
    """A MetricsProvider keeping every metric it made, by (kind, queue name)."""

    def __init__(self) -> None:
        self.made: dict[tuple[str, str], Recorded] = {}

    def _new(self, kind: str, name: str) -> Recorded:
        return self.made.setdefault((kind, name), Recorded())

    def new_depth_metric(self, name: str) -> Any:
        return self._new("depth", name)

    def new_adds_metric(self, name: str) -> Any:
        return self._new("adds", name)

    def new_latency_metric(self, name: str) -> Any:
        return self._new("latency", name)

    def new_work_duration_metric(self, name: str) -> Any:
        return self._new("work", name)

    def new_unfinished_work_seconds_metric(self, name: str) -> Any:
        return self._new("unfinished", name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> Any:
        return self._new("longest", name)

    def new_retries_metric(self, name: str) -> Any:
        return self._new("retries", name)

    def __getitem__(self, kind: str) -> Recorded:
        return self.made[(kind, "q")]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def provider() -> RecordingProvider:
    return RecordingProvider()


def metered_queue(provider: RecordingProvider, clock: FakeClock) -> Queue:
    return Queue("q", metrics_provider=provider, clock=clock, unfinished_work_update_period=None)


def test_recording_provider_is_a_metrics_provider(provider: RecordingProvider) -> None:
    """The fake (and so any object with the seven factory methods) satisfies the protocol."""
    assert isinstance(provider, MetricsProvider)
    assert isinstance(NOOP_PROVIDER, MetricsProvider)


def test_add_counts_adds_and_depth_once_per_pending_item(provider: RecordingProvider,
                                                        clock: FakeClock) -> None:
    """A second add of a queued item is no add (stingy): adds and depth count it once."""
    queue = metered_queue(provider, clock)
    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert provider["adds"].value == 2
    assert provider["depth"].value == 2


def test_get_observes_queue_latency_from_the_first_add(provider: RecordingProvider,
                                                       clock: FakeClock) -> None:
    """Latency is from the first add to the get, in clock seconds; depth goes down."""
    queue = metered_queue(provider, clock)
    queue.add("a")
    clock.step(3.0)
    queue.add("a")  # already queued: keeps the first add time
    clock.step(2.0)
    assert queue.get() == ("a", False)
    assert provider["latency"].observed == [5.0]
    assert provider["depth"].value == 0


def test_done_observes_work_duration(provider: RecordingProvider, clock: FakeClock) -> None:
    """Work duration is from get to done; a done for an unknown item observes nothing."""
    queue = metered_queue(provider, clock)
    queue.add("a")
    queue.get()
    clock.step(1.5)
    queue.done("a")
    queue.done("never-got")
    assert provider["work"].observed == [1.5]


def test_item_added_while_processing_is_counted_and_measured_again(
        provider: RecordingProvider, clock: FakeClock) -> None:
    """Re-added during processing: one more add and depth; its latency runs from that add."""
    queue = metered_queue(provider, clock)
    queue.add("a")
    queue.get()
    clock.step(1.0)
    queue.add("a")
    assert (provider["adds"].value, provider["depth"].value) == (2, 1)
    clock.step(4.0)
    queue.done("a")
    assert queue.get() == ("a", False)
    assert provider["latency"].observed == [0.0, 4.0]
    assert provider["depth"].value == 0


def test_unfinished_work_sums_and_maxes_running_ages(provider: RecordingProvider,
                                                     clock: FakeClock) -> None:
    """update_unfinished_work: total age of the items being processed and the oldest one's."""
    queue = metered_queue(provider, clock)
    queue.add("a")
    queue.add("b")
    queue.get()
    clock.step(10.0)
    queue.get()
    clock.step(5.0)
    queue.update_unfinished_work()
    assert provider["unfinished"].value == 20.0  # 15 + 5
    assert provider["longest"].value == 15.0
    queue.done("a")
    queue.done("b")
    queue.update_unfinished_work()
    assert (provider["unfinished"].value, provider["longest"].value) == (0.0, 0.0)


def test_unfinished_work_thread_updates_on_each_period(provider: RecordingProvider,
                                                       clock: FakeClock) -> None:
    """With an update period, a thread sets the gauges every period of clock time."""
    queue = Queue("q", metrics_provider=provider, clock=clock, unfinished_work_update_period=0.5)
    queue.add("a")
    queue.get()
    assert clock.wait_for_waiters(1, timed=True)
    clock.step(2.0)
    assert clock.wait_for_waiters(1, timed=True)  # it updated, then parked again
    assert provider["longest"].value == 2.0
    queue.shut_down()


def test_add_after_counts_retries(provider: RecordingProvider, clock: FakeClock) -> None:
    """Every add_after is a retry (client-go), rate-limited ones and zero delays included."""
    queue = RateLimitingQueue(clock=clock, name="q", metrics_provider=provider)
    queue.add_after("a", 0)
    queue.add_after("b", 5.0)
    queue.add_rate_limited("c")
    assert provider["retries"].value == 3
    assert provider["adds"].value == 1  # only "a" is in the queue yet
    queue.shut_down()


@pytest.mark.parametrize("name, given", [
    pytest.param("q", None, id="no-provider"),
    pytest.param("q", NOOP_PROVIDER, id="noop-provider"),
    pytest.param("", "recording", id="unnamed"),
])
def test_unmetered_queue_records_nothing(name: str, given: Any, provider: RecordingProvider,
                                         clock: FakeClock) -> None:
    """No provider, the no-op one, or no name: no metrics made and no metrics thread."""
    queue = DelayingQueue(clock=clock, name=name,
                          metrics_provider=provider if given == "recording" else given)
    queue.add("a")
    queue.add_after("b", 1.0)
    queue.get()
    queue.done("a")
    assert provider.made == {}
    assert queue._queue._metrics is None  # type: ignore[attr-defined]
    queue.shut_down()
