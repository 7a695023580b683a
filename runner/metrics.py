"""Prometheus metrics of a running kinrun (prometheus-client).

Names follow controller-runtime's where one exists (``controller_runtime_reconcile_total`` ->
``kinrun_reconcile_total``; ``workqueue_depth`` -> ``kinrun_workqueue_depth``). Each Metrics
object has its own registry, so several managers (tests) never collide.

Thread-safety: every method is thread-safe (prometheus-client's metrics are).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from kinrun.errors import KinrunError


class MetricsServeError(KinrunError):
    """The metrics endpoint could not bind ``address:port`` (``port``, ``address``, and
    ``error``, the OSError). ``str()`` is one line naming the config keys to change; the CLI
    prints it as ``kinrun: ...`` and exits 1."""

    def __init__(self, port: int, address: str, error: OSError) -> None:
        self.port, self.address, self.error = port, address, error
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.error.errno == errno.EADDRINUSE:
            return f"metrics port {self.port} on {self.address} is in use (metrics.port)"
        reason = self.error.strerror or str(self.error)
        return (f"cannot serve metrics on {self.address} port {self.port}: {reason} "
                f"(metrics.address, metrics.port)")


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

    def timed(self, controller: str, reconcile: Callable[..., Any]) -> Callable[..., Any]:
        """``reconcile`` wrapped to observe each call's duration and result: a
        ``kinrun.reconcile.Result``'s outcome (``done`` -> success, ``requeue``, ``retry`` and
        ``permanent`` -> error), or for plain callables a delay (requeue), None (success) or an
        exception (error). Extra arguments (the cause) are passed through."""
        def wrapper(key: str, obj: Any, *args: Any) -> Any:
            start = time.perf_counter()
            try:
                outcome = reconcile(key, obj, *args)
            except Exception:
                self.observe_reconcile(controller, time.perf_counter() - start, "error")
                raise
            kind = getattr(outcome, "outcome", None)
            if kind is not None:
                result = _RESULTS[kind]
            else:
                result = "requeue" if outcome else "success"
            self.observe_reconcile(controller, time.perf_counter() - start, result)
            return outcome
        return wrapper

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serve ``/metrics`` on ``address:port`` (0 = a free port); returns the bound port.
        Raises MetricsServeError when the socket cannot be bound (port in use, no permission,
        address not local)."""
        try:
            self._server, _thread = start_http_server(port, addr=address, registry=self.registry)
        except OSError as exc:
            raise MetricsServeError(port, address, exc) from exc
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop the HTTP endpoint, if serving."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


_RESULTS = {"done": "success", "requeue": "requeue", "retry": "error", "permanent": "error"}
"""A Result's outcome -> the ``result`` label of ``kinrun_reconcile_total``."""
