"""Prometheus metrics of a running kinrun (prometheus-client).

Names follow controller-runtime's where one exists (``controller_runtime_reconcile_total`` ->
``kinrun_reconcile_total``; ``workqueue_depth`` -> ``kinrun_workqueue_depth``). Each Metrics
object has its own registry, so several managers (tests) never collide.

Thread-safety: every method is thread-safe (prometheus-client's metrics are).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class Metrics:
    """Reconcile counters and durations, workqueue depth and cached object counts.

    ``observe_reconcile(controller, seconds, result)`` with result ``success``/``error``/
    ``requeue``; ``track_queue(controller, len_func)`` and ``track_informer(name, len_func)``
    register gauges read at scrape time; ``serve(port, address)`` starts the HTTP endpoint
    (``/metrics``) in a daemon thread and returns the bound port; ``close()`` stops it.
    """

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.reconcile_total = Counter(
            "kinrun_reconcile_total", "Reconciles by controller and result.",
            ["controller", "result"], registry=self.registry)
        self.reconcile_seconds = Histogram(
            "kinrun_reconcile_duration_seconds", "Time per reconcile (seconds).",
            ["controller"], registry=self.registry)
        self.queue_depth = Gauge(
            "kinrun_workqueue_depth", "Keys waiting in a controller's workqueue.",
            ["controller"], registry=self.registry)
        self.informer_objects = Gauge(
            "kinrun_informer_objects", "Objects in an informer's cache.",
            ["informer"], registry=self.registry)
        self._server: Any = None

    def observe_reconcile(self, controller: str, seconds: float, result: str) -> None:
        """Count one reconcile of ``controller`` that took ``seconds`` and ended in ``result``."""
        self.reconcile_total.labels(controller, result).inc()
        self.reconcile_seconds.labels(controller).observe(seconds)

    def track_queue(self, controller: str, depth: Callable[[], int]) -> None:
        """Report ``depth()`` as the workqueue depth of ``controller`` at each scrape."""
        self.queue_depth.labels(controller).set_function(depth)

    def track_informer(self, name: str, count: Callable[[], int]) -> None:
        """Report ``count()`` as the cached object count of informer ``name`` at each scrape."""
        self.informer_objects.labels(name).set_function(count)

    def timed(self, controller: str, reconcile: Callable[[str, Any], float | None]
              ) -> Callable[[str, Any], float | None]:
        """``reconcile`` wrapped to observe each call's duration and result."""
        def wrapper(key: str, obj: Any) -> float | None:
            start = time.perf_counter()
            try:
                delay = reconcile(key, obj)
            except Exception:
                self.observe_reconcile(controller, time.perf_counter() - start, "error")
                raise
            result = "requeue" if delay else "success"
            self.observe_reconcile(controller, time.perf_counter() - start, result)
            return delay
        return wrapper

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serve ``/metrics`` on ``address:port`` (0 = a free port); returns the bound port."""
        self._server, _thread = start_http_server(port, addr=address, registry=self.registry)
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop the HTTP endpoint, if serving."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
