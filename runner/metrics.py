"""Prometheus metrics of a running kinrun (prometheus-client), under controller-runtime's names.

Names, labels and buckets are those Prometheus users and dashboards already know:

* controller-runtime ``pkg/internal/controller/metrics/metrics.go``:
  ``controller_runtime_reconcile_total{controller, result}`` (result ``success``, ``error``,
  ``requeue``, ``requeue_after``), ``controller_runtime_reconcile_errors_total{controller}``,
  ``controller_runtime_terminal_reconcile_errors_total{controller}`` (kinrun's PermanentError),
  ``controller_runtime_reconcile_panics_total{controller}`` (controller-runtime counts
  recovered panics; kinrun counts a reconcile that failed with an exception that is not a
  kinrun error: a hook's own bug, a ``SystemExit`` a hook raised, or kinrun's),
  ``controller_runtime_reconcile_time_seconds{controller}`` (histogram, its buckets),
  ``controller_runtime_max_concurrent_reconciles{controller}`` (``workers``),
  ``controller_runtime_active_workers{controller}`` (reconciles running now); and the process
  and runtime collectors (here prometheus-client's ``ProcessCollector``, ``PlatformCollector``
  and ``GCCollector``: ``process_*``, ``python_info``, ``python_gc_*``);
* client-go ``util/workqueue/metrics.go`` through controller-runtime's provider
  (``pkg/internal/metrics/workqueue.go``): ``workqueue_depth``, ``workqueue_adds_total``,
  ``workqueue_queue_duration_seconds``, ``workqueue_work_duration_seconds``,
  ``workqueue_unfinished_work_seconds``, ``workqueue_longest_running_processor_seconds``,
  ``workqueue_retries_total``, labels ``name`` and ``controller`` (both the controller's name);
  the queues call :class:`WorkqueueMetricsProvider` (``kinrun.workqueue.metrics``);
* controller-runtime ``pkg/metrics/client_go_adapter.go``:
  ``rest_client_requests_total{code, method, host}``, one per request try
  (``kinrun.kube.transport``);
* controller-runtime ``pkg/metrics/leaderelection.go``: ``leader_election_master_status{name}``
  (1 leading, 0 standby);
* kinrun's own: ``kinrun_informer_objects{informer}``, ``kinrun_informer_relists_total{informer}``
  and ``kinrun_informer_watch_restarts_total{informer, reason}`` (reason ``closed``,
  ``stalled``, ``expired``, ``error``; through ``kinrun.cache.ReflectorObserver``);
  ``kinrun_informer_waiting{informer}`` (a kind not served yet); hot reload
  (``kinrun.reload``), after Prometheus' own ``prometheus_config_last_reload_successful`` and
  ``prometheus_config_last_reload_success_timestamp_seconds``:
  ``kinrun_config_last_reload_successful``,
  ``kinrun_config_last_reload_success_timestamp_seconds``,
  ``kinrun_config_reloads_total{result}`` and ``kinrun_config_info{hash, state}``.

Each Metrics object has its own registry, so several managers (tests) never collide. No
``*_created`` series are exported (prometheus-client writes one per counter and histogram
child by default; Go's client and controller-runtime write none): creating a Metrics calls
``prometheus_client.disable_created_metrics()``, which is process-wide.
``serve`` answers ``/metrics`` only (404 elsewhere, see ``kinrun.probes.Endpoint``).

Thread-safety: every method is thread-safe (prometheus-client's metrics are).
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from prometheus_client import (CollectorRegistry, Counter, GCCollector, Gauge, Histogram,
                               PlatformCollector, ProcessCollector, disable_created_metrics)
from prometheus_client.exposition import choose_encoder

from kinrun.clock import REAL_CLOCK
from kinrun.errors import KinrunError
from kinrun.probes import Endpoint, Response

_log = logging.getLogger("kinrun.metrics")

RECONCILE_TIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45,
                          0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0,
                          4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60)
"""Seconds; controller-runtime's ``controller_runtime_reconcile_time_seconds`` buckets."""

WORKQUEUE_BUCKETS = tuple(10e-9 * 10 ** i for i in range(12))
"""Seconds, 10 ns to 1000 s: controller-runtime's workqueue histograms
(``prometheus.ExponentialBuckets(10e-9, 10, 12)``)."""


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
    """Every metric of the module docstring, in one registry (``registry``).

    Recording: ``timed(controller, reconcile)`` wraps a reconcile;
    ``set_max_concurrent_reconciles``; ``workqueue_provider()`` for the queues;
    ``track_informer(name, count)`` (a gauge read at scrape time); ``track_reflectors``;
    ``instrument_client(client)`` (request counts); ``set_leader(name, leading)``.
    Serving: ``serve(port, address)`` starts ``/metrics`` in daemon threads and returns the
    bound port; ``close()`` stops it.
    """

    def __init__(self) -> None:
        disable_created_metrics()  # as Go's client: no *_created series
        r = self.registry = CollectorRegistry()
        self._reconcile_metrics(r)
        self._workqueue_metrics(r)
        self._client_and_informer_metrics(r)
        self._config_metrics(r)
        self._active_known: set[str] = set()  # controllers whose active_workers exists
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)
        self._endpoint = Endpoint({"/metrics": self._metrics_route}, "metrics")

    def _reconcile_metrics(self, r: CollectorRegistry) -> None:
        """controller-runtime's reconcile metrics (same names and labels)."""
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total", "Total number of reconciliations per controller",
            ["controller", "result"], registry=r)
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller", ["controller"], registry=r)
        self.reconcile_panics = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller (kinrun: failures with an "
            "exception that is not a kinrun error)", ["controller"], registry=r)
        self.terminal_reconcile_errors = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller", ["controller"],
            registry=r)
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller", ["controller"],
            buckets=RECONCILE_TIME_BUCKETS, registry=r)
        self.max_concurrent_reconciles = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller", ["controller"], registry=r)
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller", ["controller"], registry=r)
        self.reconcile_stale_skips = Counter(
            "kinrun_reconcile_stale_skips_total",
            "Reconciles not started because the cached object was older than the controller's "
            "own last write of it (KEP-5647 staleness mitigation)", ["controller"], registry=r)

    def _client_and_informer_metrics(self, r: CollectorRegistry) -> None:
        """client-go's request and leader-election metrics, and kinrun's informer ones."""
        self.rest_client_requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"], registry=r)
        self.leader_election_master_status = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"], registry=r)
        self.informer_objects = Gauge(
            "kinrun_informer_objects", "Objects in an informer's cache.", ["informer"],
            registry=r)
        self.informer_relists = Counter(
            "kinrun_informer_relists_total",
            "LISTs of an informer's reflector after its first (after 410 Gone, or a silent "
            "watch after a failure).", ["informer"], registry=r)
        self.informer_watch_restarts = Counter(
            "kinrun_informer_watch_restarts_total",
            "Watches of an informer's reflector that ended and were re-opened or followed by "
            "a relist, by reason: closed (server timeout), stalled (silent past the "
            "inactivity limit), expired (410), error.", ["informer", "reason"], registry=r)

    def _config_metrics(self, r: CollectorRegistry) -> None:
        """Hot reload (``kinrun.reload``), named after Prometheus' own
        ``prometheus_config_last_reload_successful`` and
        ``prometheus_config_last_reload_success_timestamp_seconds``."""
        self.config_last_reload_successful = Gauge(
            "kinrun_config_last_reload_successful",
            "Whether the last configuration reload attempt was successful (1) or the previous "
            "config stayed in force (0).", registry=r)
        self.config_last_reload_success_timestamp = Gauge(
            "kinrun_config_last_reload_success_timestamp_seconds",
            "Timestamp of the last successful configuration load (start or reload).",
            registry=r)
        self.config_reloads = Counter(
            "kinrun_config_reloads_total", "Configuration reloads by result (success, failure).",
            ["result"], registry=r)
        self.config_info = Gauge(
            "kinrun_config_info", "The configuration files' SHA-256: state active for the one "
            "in force, rejected for the last one that failed to reload (until a reload "
            "succeeds).", ["hash", "state"], registry=r)
        self.informer_waiting = Gauge(
            "kinrun_informer_waiting", "1 while an informer waits for its kind to be served "
            "(a CRD not installed).", ["informer"], registry=r)
        self._config_hashes: dict[str, str] = {}  # state -> hash labelled now

    def _set_config_hash(self, state: str, digest: str | None) -> None:
        previous = self._config_hashes.pop(state, None)
        if previous is not None:
            self.config_info.remove(previous, state)
        if digest is not None:
            self._config_hashes[state] = digest
            self.config_info.labels(digest, state).set(1)

    def config_loaded(self, digest: str) -> None:
        """The config with hash ``digest`` is in force at start."""
        self.config_last_reload_successful.set(1)
        self.config_last_reload_success_timestamp.set(REAL_CLOCK.wall())
        self._set_config_hash("active", digest)

    def reload_succeeded(self, digest: str, when: float) -> None:
        """A reload put the config ``digest`` in force at ``when`` (Unix seconds)."""
        self.config_reloads.labels("success").inc()
        self.config_last_reload_successful.set(1)
        self.config_last_reload_success_timestamp.set(when)
        self._set_config_hash("active", digest)
        self._set_config_hash("rejected", None)

    def reload_failed(self, digest: str) -> None:
        """A reload of the config ``digest`` failed; the previous one stays in force."""
        self.config_reloads.labels("failure").inc()
        self.config_last_reload_successful.set(0)
        self._set_config_hash("rejected", digest)

    def set_waiting(self, informers: Iterable[str], known: Iterable[str] = ()) -> None:
        """``kinrun_informer_waiting``: 1 for ``informers``, 0 for the others of ``known``."""
        waiting = set(informers)
        for name in set(known) | waiting:
            self.informer_waiting.labels(name).set(1 if name in waiting else 0)

    def forget_informer(self, name: str) -> None:
        """Drop the per-informer series of an informer a reload removed."""
        for family in (self.informer_objects, self.informer_waiting):
            try:
                family.remove(name)
            except KeyError:
                pass

    def _workqueue_metrics(self, r: CollectorRegistry) -> None:
        labels = ["name", "controller"]
        self.workqueue_depth = Gauge(
            "workqueue_depth", "Current depth of workqueue", labels, registry=r)
        self.workqueue_adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", labels,
            registry=r)
        self.workqueue_latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested", labels,
            buckets=WORKQUEUE_BUCKETS, registry=r)
        self.workqueue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.", labels,
            buckets=WORKQUEUE_BUCKETS, registry=r)
        self.workqueue_unfinished_work = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            labels, registry=r)
        self.workqueue_longest_running = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels, registry=r)
        self.workqueue_retries = Counter(
            "workqueue_retries_total", "Total number of retries handled by workqueue", labels,
            registry=r)

    # -- reconciles ------------------------------------------------------------------------------

    def observe_reconcile(self, controller: str, seconds: float, result: str) -> None:
        """Count one reconcile of ``controller`` that took ``seconds`` and ended in ``result``
        (``success``/``error``/``requeue``/``requeue_after``; ``error`` also counts in
        ``controller_runtime_reconcile_errors_total``)."""
        self.reconcile_total.labels(controller, result).inc()
        if result == "error":
            self.reconcile_errors.labels(controller).inc()
        self.reconcile_time.labels(controller).observe(seconds)

    def set_max_concurrent_reconciles(self, controller: str, workers: int) -> None:
        """``controller_runtime_max_concurrent_reconciles`` of ``controller``: its workers
        (again after a reload: ``active_workers`` keeps counting the reconciles under way)."""
        self.max_concurrent_reconciles.labels(controller).set(workers)
        if controller not in self._active_known:
            self._active_known.add(controller)
            self.active_workers.labels(controller).set(0)

    def stale_skip_counter(self, controller: str) -> Callable[[], None]:
        """Counts one ``kinrun_reconcile_stale_skips_total`` of ``controller`` per call (a
        reconcile skipped on a stale cache, ``kinrun.controller.Controller``)."""
        return self.reconcile_stale_skips.labels(controller).inc

    def timed(self, controller: str, reconcile: Callable[..., Any]) -> Callable[..., Any]:
        """``reconcile`` wrapped to record each call as controller-runtime's reconcileHandler
        does: active workers while it runs, its duration, and its result: for a
        ``kinrun.reconcile.Result``, ``done`` -> success, ``requeue`` -> requeue_after (a delay
        > 0) or requeue, ``retry`` -> error, ``permanent`` -> error and a terminal error; for
        plain callables a delay > 0 (requeue_after), 0 (requeue), None (success) or an
        exception (error). Extra arguments (the cause) are passed through."""
        total = {result: self.reconcile_total.labels(controller, result)
                 for result in ("success", "error", "requeue", "requeue_after")}
        errors = self.reconcile_errors.labels(controller)
        terminal = self.terminal_reconcile_errors.labels(controller)
        panics = self.reconcile_panics.labels(controller)
        seconds = self.reconcile_time.labels(controller)
        active = self.active_workers.labels(controller)

        def wrapper(key: str, obj: Any, *args: Any) -> Any:
            active.inc()
            start = time.perf_counter()
            try:
                outcome = reconcile(key, obj, *args)
            except Exception:
                seconds.observe(time.perf_counter() - start)
                errors.inc()
                panics.inc()  # escaped the reconcile itself
                total["error"].inc()
                raise
            finally:
                active.dec()
            seconds.observe(time.perf_counter() - start)
            result = _result_label(outcome)
            if result == "error":
                errors.inc()
                if getattr(outcome, "outcome", None) == "permanent":
                    terminal.inc()
                if _is_panic(getattr(outcome, "error", None)):
                    panics.inc()
            total[result].inc()
            return outcome
        return wrapper

    # -- workqueues, informers, requests, leader election ----------------------------------------

    def workqueue_provider(self) -> WorkqueueMetricsProvider:
        """The ``kinrun.workqueue.MetricsProvider`` recording into this registry."""
        return WorkqueueMetricsProvider(self)

    def track_informer(self, name: str, count: Callable[[], int]) -> None:
        """Report ``count()`` as the cached object count of informer ``name`` at each scrape."""
        self.informer_objects.labels(name).set_function(count)

    def track_reflectors(self, informers: Iterable[Any]) -> None:
        """Count relists and watch restarts of each informer's reflector (``informer.reflector
        .set_observer``; before the informers start), labelled with the informer's name."""
        observer = _ReflectorCounters(self)
        for informer in informers:
            informer.reflector.set_observer(observer)

    def count_request(self, code: str, method: str, host: str) -> None:
        """One request try (``kinrun.kube.transport.RequestObserver``)."""
        self.rest_client_requests.labels(code, method, host).inc()

    def instrument_client(self, client: Any) -> None:
        """Count every request ``client`` (a ``kinrun.kube.Client``) sends, from now on."""
        client.transport.request_observer = self.count_request

    def set_leader(self, name: str, leading: bool) -> None:
        """``leader_election_master_status{name}``: 1 leading, 0 standby."""
        self.leader_election_master_status.labels(name).set(1.0 if leading else 0.0)

    # -- serving ---------------------------------------------------------------------------------

    def _metrics_route(self, headers: Mapping[str, str]) -> Response:
        encoder, content_type = choose_encoder(headers.get("Accept", ""))
        return 200, content_type, encoder(self.registry)

    def serve(self, port: int, address: str = "0.0.0.0", *, tls: Any = None,
              auth: Any = None) -> int:
        """Serve ``/metrics`` on ``address:port`` (IPv4 or IPv6; 0 = a free port); returns the
        bound port. Other paths answer 404, other methods 405; the server is the probes'
        bounded, timeout-guarded one (``kinrun.probes.Endpoint``), in prometheus-client's
        exposition format chosen by the Accept header (``choose_encoder``). Raises
        MetricsServeError when the socket cannot be bound (port in use, no permission,
        address not local).

        Secure metrics, as controller-runtime 0.16+ serves them: ``tls`` (a
        ``kinrun.tls.ServerTLS``) serves HTTPS; ``auth`` (a
        ``kinrun.kube.delegated_auth.DelegatedAuth``) answers only a bearer token the API
        server authenticates and whose user RBAC lets ``get`` the non-resource URL
        ``/metrics`` (401 without a valid token, 403 without the right, 500 when the review
        cannot be made)."""
        route = self._metrics_route if auth is None else _authorized(self._metrics_route, auth)
        self._endpoint = Endpoint({"/metrics": route}, "metrics", tls=tls)
        try:
            return self._endpoint.serve(port, address)
        except OSError as exc:
            raise MetricsServeError(port, address, exc) from exc

    def close(self) -> None:
        """Stop the HTTP endpoint, if serving."""
        self._endpoint.close()


def _authorized(route: Callable[[Mapping[str, str]], Response], auth: Any
                ) -> Callable[[Mapping[str, str]], Response]:
    """``route`` behind delegated authentication and authorization of ``GET /metrics``."""
    def guarded(headers: Mapping[str, str]) -> Response:
        decision = auth.check(headers.get("Authorization"), "/metrics", "GET")
        if not decision.allowed:
            _log.debug("metrics: %d %s", decision.status, decision.reason)
            return decision.status, "text/plain; charset=utf-8", (decision.reason + "\n").encode()
        return route(headers)
    return guarded


def _result_label(outcome: Any) -> str:
    """The ``result`` label of one reconcile's outcome (see ``Metrics.timed``)."""
    kind = getattr(outcome, "outcome", None)
    if kind is None:
        if outcome is None:
            return "success"
        return "requeue_after" if outcome > 0 else "requeue"
    if kind == "done":
        return "success"
    if kind == "requeue":
        return "requeue_after" if (outcome.delay or 0) > 0 else "requeue"
    return "error"  # retry, permanent


class WorkqueueMetricsProvider:
    """``kinrun.workqueue.MetricsProvider`` over a Metrics' ``workqueue_*`` families: the
    queue called ``name`` gets the children labelled ``name=name, controller=name`` (as
    controller-runtime, whose queues are named after their controller)."""

    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics

    def new_depth_metric(self, name: str) -> Any:
        """``workqueue_depth``."""
        return self._m.workqueue_depth.labels(name, name)

    def new_adds_metric(self, name: str) -> Any:
        """``workqueue_adds_total``."""
        return self._m.workqueue_adds.labels(name, name)

    def new_latency_metric(self, name: str) -> Any:
        """``workqueue_queue_duration_seconds``."""
        return self._m.workqueue_latency.labels(name, name)

    def new_work_duration_metric(self, name: str) -> Any:
        """``workqueue_work_duration_seconds``."""
        return self._m.workqueue_work_duration.labels(name, name)

    def new_unfinished_work_seconds_metric(self, name: str) -> Any:
        """``workqueue_unfinished_work_seconds``."""
        return self._m.workqueue_unfinished_work.labels(name, name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> Any:
        """``workqueue_longest_running_processor_seconds``."""
        return self._m.workqueue_longest_running.labels(name, name)

    def new_retries_metric(self, name: str) -> Any:
        """``workqueue_retries_total``."""
        return self._m.workqueue_retries.labels(name, name)


class _ReflectorCounters:
    """A ``kinrun.cache.ReflectorObserver`` counting into a Metrics (the reflector's name is
    its informer's)."""

    def __init__(self, metrics: Metrics) -> None:
        self._m = metrics

    def relisted(self, name: str) -> None:
        """``kinrun_informer_relists_total``."""
        self._m.informer_relists.labels(name).inc()

    def watch_restarted(self, name: str, reason: str) -> None:
        """``kinrun_informer_watch_restarts_total``."""
        self._m.informer_watch_restarts.labels(name, reason).inc()


def _is_panic(error: BaseException | None) -> bool:
    """Whether a failed reconcile's ``error`` is what controller-runtime would have seen as a
    panic: not one of kinrun's own errors (an API answer, an action or template error, a
    PermanentError/TemporaryError a hook raised on purpose)."""
    return error is not None and not isinstance(error, KinrunError)
