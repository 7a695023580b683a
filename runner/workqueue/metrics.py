"""Workqueue metrics: the provider pattern of client-go ``util/workqueue/metrics.go``.

A queue is given a :class:`MetricsProvider` (and a name); the provider makes one metric of
each kind for that name, and the queue updates them from its hooks:

    add (an item becomes dirty)    adds += 1, depth += 1, the item's add time kept (first add)
    get (an item is handed out)    depth -= 1, queue latency observed, processing start kept
    done (processing finished)     work duration observed
    every ``update_period`` s      unfinished work (sum of running ages), longest running age
    add_after (delaying level)     retries += 1 (client-go counts every AddAfter)

Times are seconds on the queue's clock (``kinrun.clock``), so tests step a FakeClock. A queue
without a provider (or without a name) gets none of this: its methods are the plain ones and
cost nothing more (``Queue`` installs the metered methods only when a provider is given).

This package imports no Prometheus: ``kinrun.metrics`` implements the provider over
prometheus-client (``workqueue_depth``, ``workqueue_adds_total``, ...); the metric objects
prometheus-client makes (``Gauge``, ``Counter``, ``Histogram`` children) satisfy the small
protocols below as they are.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, runtime_checkable

from kinrun.clock import Clock

Item = Hashable

UNFINISHED_WORK_UPDATE_PERIOD = 0.5
"""Seconds between updates of the unfinished-work gauges (client-go
``defaultUnfinishedWorkUpdatePeriod``, 500 ms)."""


class GaugeMetric(Protocol):
    """A value that goes up and down (client-go GaugeMetric)."""

    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    """A value set as a whole (client-go SettableGaugeMetric)."""

    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    """A value that only goes up (client-go CounterMetric)."""

    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    """Observations of a value, in seconds here (client-go HistogramMetric)."""

    def observe(self, value: float) -> None: ...


@runtime_checkable
class MetricsProvider(Protocol):
    """Makes the metrics of the queue called ``name`` (client-go MetricsProvider). Called once
    per metric when a metered queue is built; the metrics returned must be thread-safe."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        """Items waiting to be handed out (``workqueue_depth``)."""
        ...

    def new_adds_metric(self, name: str) -> CounterMetric:
        """Adds the queue handled (``workqueue_adds_total``)."""
        ...

    def new_latency_metric(self, name: str) -> HistogramMetric:
        """Seconds an item waited between add and get (``workqueue_queue_duration_seconds``)."""
        ...

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        """Seconds between get and done (``workqueue_work_duration_seconds``)."""
        ...

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """Sum of the ages of the items being processed (``workqueue_unfinished_work_seconds``)."""
        ...

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """Age of the oldest item being processed
        (``workqueue_longest_running_processor_seconds``)."""
        ...

    def new_retries_metric(self, name: str) -> CounterMetric:
        """``add_after`` calls (``workqueue_retries_total``)."""
        ...


class _NoopMetric:
    """Every metric method, doing nothing."""

    __slots__ = ()

    def inc(self) -> None:
        """Nothing."""

    def dec(self) -> None:
        """Nothing."""

    def set(self, value: float) -> None:
        """Nothing."""

    def observe(self, value: float) -> None:
        """Nothing."""


_NOOP_METRIC = _NoopMetric()


class NoopMetricsProvider:
    """The default provider: metrics that do nothing (client-go noopMetricsProvider). A queue
    given this provider (or None) is not metered at all."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        """A no-op."""
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        """A no-op."""
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        """A no-op."""
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        """A no-op."""
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """A no-op."""
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """A no-op."""
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        """A no-op."""
        return _NOOP_METRIC


NOOP_PROVIDER = NoopMetricsProvider()


def metered(provider: MetricsProvider | None, name: str) -> bool:
    """Whether a queue called ``name`` with ``provider`` records metrics: a provider other
    than the no-op one, and a name (client-go: an unnamed queue registers no metrics)."""
    return bool(name) and provider is not None and not isinstance(provider, NoopMetricsProvider)


class QueueMetrics:
    """The metrics of one queue (client-go defaultQueueMetrics).

    Concurrency contract: every ``*_locked`` method is called with the queue's lock held (the
    queue's hooks), which also guards ``_add_times`` and ``_processing_starts``.
    Invariants: ``_add_times`` holds the first add time of every item waiting to be handed out
    (queued, or re-added while processing); ``_processing_starts`` holds the get time of every
    item being processed.
    """

    def __init__(self, provider: MetricsProvider, name: str, clock: Clock) -> None:
        self._clock = clock
        self.depth = provider.new_depth_metric(name)
        self.adds = provider.new_adds_metric(name)
        self.latency = provider.new_latency_metric(name)
        self.work_duration = provider.new_work_duration_metric(name)
        self.unfinished_work_seconds = provider.new_unfinished_work_seconds_metric(name)
        self.longest_running_processor = (
            provider.new_longest_running_processor_seconds_metric(name))
        self._add_times: dict[Item, float] = {}  # item -> clock time of its first add
        self._processing_starts: dict[Item, float] = {}  # item -> clock time of its get

    def add_locked(self, item: Item) -> None:
        """``item`` became dirty (client-go ``add``)."""
        self.adds.inc()
        self.depth.inc()
        if item not in self._add_times:
            self._add_times[item] = self._clock.now()

    def get_locked(self, item: Item) -> None:
        """``item`` was handed out (client-go ``get``)."""
        now = self._clock.now()
        self.depth.dec()
        self._processing_starts[item] = now
        added = self._add_times.pop(item, None)
        if added is not None:
            self.latency.observe(now - added)

    def done_locked(self, item: Item) -> None:
        """``item`` is done (client-go ``done``)."""
        started = self._processing_starts.pop(item, None)
        if started is not None:
            self.work_duration.observe(self._clock.now() - started)

    def update_unfinished_work_locked(self) -> None:
        """Set the unfinished-work gauges from the items being processed now (client-go
        ``updateUnfinishedWork``): their total age and the oldest one's, in seconds."""
        now = self._clock.now()
        ages = [now - started for started in self._processing_starts.values()]
        self.unfinished_work_seconds.set(sum(ages))
        self.longest_running_processor.set(max(ages, default=0.0))


class RetryMetrics:
    """The retries counter of one delaying queue (client-go defaultRetryMetrics). Thread-safe
    (the counter is)."""

    def __init__(self, provider: MetricsProvider, name: str) -> None:
        self.retries = provider.new_retries_metric(name)

    def retry(self) -> None:
        """One ``add_after``."""
        self.retries.inc()
