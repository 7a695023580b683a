"""Work queues for controllers (client-go util/workqueue).

Three levels, each wrapping the one below through a Protocol: ``Queue`` (add, get, done, shut
down), ``DelayingQueue`` (+ ``add_after``), ``RateLimitingQueue`` (+ ``add_rate_limited``,
``forget``, ``num_requeues``), plus rate limiters combined by ``MaxOfRateLimiter``.

Guarantees every queue level keeps:
  * fair: items are handed out in the order they were added (FIFO);
  * stingy: an item waiting to be processed is queued once, however often it is added;
  * exclusive: an item being processed (between ``get`` and ``done``) is never handed to a
    second worker; if it is added meanwhile, it is processed once more after ``done``;
  * misuse-safe: ``done`` for an item not being processed and ``forget`` of an unknown item
    change nothing (no item duplicated or lost);
  * shutdown: ``shut_down`` refuses new items while ``get`` still hands out queued ones, then
    reports shutdown; ``shut_down_with_drain`` also waits for items being processed;
  * delayed: ``add_after`` keeps the earliest ready time per item; delayed items are dropped at
    shutdown.
Metrics: a queue given a ``MetricsProvider`` (``kinrun.workqueue.metrics``, client-go's
pattern) records depth, adds, latency, work duration, unfinished work and retries; without
one it records nothing and costs nothing more.
Items must be hashable (controllers use "ns/name" keys). ``len()`` is informational only.
"""

from kinrun.workqueue.delaying_queue import DelayingInterface, DelayingQueue
from kinrun.workqueue.metrics import NOOP_PROVIDER, MetricsProvider, NoopMetricsProvider
from kinrun.workqueue.queue import Queue, QueueInterface
from kinrun.workqueue.rate_limiters import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)
from kinrun.workqueue.rate_limiting_queue import RateLimitingInterface, RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "DelayingInterface",
    "DelayingQueue",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NOOP_PROVIDER",
    "NoopMetricsProvider",
    "Queue",
    "QueueInterface",
    "RateLimiter",
    "RateLimitingInterface",
    "RateLimitingQueue",
    "default_controller_rate_limiter",
]
