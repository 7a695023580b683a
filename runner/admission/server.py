"""The HTTPS server the API server calls with AdmissionReviews, as controller-runtime's webhook
server (``pkg/webhook/server.go``, ``admission/http.go``).

    POST /validate/NAME, /mutate/NAME   an AdmissionReview (admission.k8s.io/v1) in, the
                                        webhook's AdmissionReview out (200), whatever the
                                        rules decided (a denial is an answer, not an error)
    other paths                         404; other methods on a webhook path: 405
    a body that is not an AdmissionReview v1 with a request (not JSON, another kind or
    version, no ``request.uid``, a Content-Type other than application/json, over
    :data:`MAX_BODY` bytes)              400, as controller-runtime answers

Bounded, so that a flood of connections cannot take more than a fixed share of the process:
:data:`WORKERS` threads each accept a connection, do its TLS handshake and answer its one
request (the answer says ``Connection: close``); every socket operation of a connection has
``timeout`` seconds (:data:`IO_TIMEOUT`). Connections beyond the workers wait in the
listening socket's backlog. Departure from controller-runtime (Go's ``net/http``: a goroutine
per connection, keep-alive): one request per connection keeps a worker from being held by an
idle keep-alive connection; the price is a TLS handshake per request (measured in
docs/admission.md).

Certificates come from a ``kinrun.tls.ServerTLS``: each handshake takes the newest pair, so a
renewal or a cert-manager rotation drops no request. Metrics (controller-runtime's
``pkg/webhook/internal/metrics``), label ``webhook`` = the path:
``controller_runtime_webhook_requests_total{webhook, code}``,
``controller_runtime_webhook_latency_seconds{webhook}`` (histogram, Prometheus' default
buckets), ``controller_runtime_webhook_requests_in_flight{webhook}``.

Thread-safety: ``start``/``stop`` from one thread; ``ready`` and ``program`` (an attribute a
reload may replace whole) from any; requests run on the worker threads.
"""

from __future__ import annotations

import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson

from kinrun.admission.certs import SYNC_INTERVAL, CABundleSync, service_hosts, shared_ca
from kinrun.admission.program import REVIEW_API, AdmissionProgram
from kinrun.config.naming import default_name
from kinrun.errors import KinrunError
from kinrun.threads import SupervisedThread
from kinrun.tls import DirectoryCerts, SelfSignedCerts, ServerTLS

_log = logging.getLogger("kinrun.admission")

WORKERS = 8
"""Threads answering webhook requests (each holds one connection at a time)."""
IO_TIMEOUT = 10.0
"""Seconds each socket operation of a connection may take (the handshake, reading the
request, writing the answer); the API server's own default webhook ``timeoutSeconds``."""
MAX_BODY = 7 * 1024 * 1024
"""Bytes of the largest AdmissionReview read (controller-runtime's ``maxRequestSize``; the API
server's own request limit is 3 MiB of object, which the review carries twice at most)."""
ACCEPT_POLL = 0.5
"""Real seconds a worker waits in ``accept`` before looking whether it should stop."""
LISTEN_BACKLOG = 128
JSON = "application/json"


class WebhookServeError(KinrunError):
    """The webhook server could not bind ``address:port`` (``error``: the OSError); the message
    names the config keys to change."""

    def __init__(self, port: int, address: str, error: OSError) -> None:
        reason = error.strerror or str(error)
        super().__init__(f"cannot serve admission webhooks on {address} port {port}: {reason} "
                         "(admission.port, admission.address)")
        self.port, self.address, self.error = port, address, error


class WebhookServer:
    """Serves ``program``'s webhooks over HTTPS with ``tls`` (see the module docstring).

    ``listers``: informer name -> Lister for the rules' lookups; ``metrics``: a
    ``kinrun.metrics.Metrics`` whose registry gets the webhook metrics, or None;
    ``port`` (0: a free one; :attr:`port` is the bound one after :meth:`start`), ``address``,
    ``workers``, ``timeout`` (seconds per socket operation); ``ca_sync``: a
    ``kinrun.admission.certs.CABundleSync`` run at start and every ``sync_interval`` seconds
    while serving (None: the caBundle is someone else's, cert-manager's or a test's);
    ``synced``: whether the caches the lookups read have synced (:meth:`ready` waits for it).
    """

    def __init__(self, program: AdmissionProgram, tls: ServerTLS, *,
                 listers: Mapping[str, Any] | None = None, metrics: Any = None,
                 port: int = 0, address: str = "127.0.0.1", workers: int = WORKERS,
                 timeout: float = IO_TIMEOUT, ca_sync: CABundleSync | None = None,
                 sync_interval: float = SYNC_INTERVAL,
                 synced: Callable[[], bool] | None = None) -> None:
        self.program, self.tls, self._synced = program, tls, synced
        self.ca_sync, self.sync_interval = ca_sync, sync_interval
        self.listers = listers if listers is not None else {}
        self.address, self.port, self.workers, self.timeout = address, port, workers, timeout
        self._metrics = WebhookMetrics(metrics.registry) if metrics is not None else None
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> int:
        """Bind and start the workers; returns the bound port. Raises WebhookServeError."""
        try:
            listener = socket.create_server((self.address, self.port), backlog=LISTEN_BACKLOG)
        except OSError as exc:
            raise WebhookServeError(self.port, self.address, exc) from exc
        listener.settimeout(ACCEPT_POLL)
        self._listener, self.port = listener, int(listener.getsockname()[1])
        self._stopping.clear()
        self._threads = [SupervisedThread(target=self._work, name=f"kinrun-webhook-{i}")
                         for i in range(self.workers)]
        if self.ca_sync is not None:
            self._threads.append(SupervisedThread(target=self._sync_ca, name="kinrun-cabundle"))
        for thread in self._threads:
            thread.start()
        _log.info("admission webhooks on https://%s:%d (%s)", self.address, self.port,
                  ", ".join(sorted(self.program.webhooks)))
        return self.port

    def stop(self, timeout: float = IO_TIMEOUT) -> None:
        """Stop accepting, let requests under way finish (at most ``timeout`` seconds),
        close the socket. Idempotent."""
        self._stopping.set()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        listener, self._listener, self._threads = self._listener, None, []
        if listener is not None:
            listener.close()

    def ready(self) -> list[str]:
        """Readiness lines (``kinrun.probes``' check form): [] when listening with a
        certificate and the caches synced, else why not. A standby replica without caches
        (leader election without warm standby) is not ready: its lookups would read
        nothing, so the Service sends it no request."""
        if self._listener is None or self._stopping.is_set():
            return ["webhook server: not listening"]
        try:
            self.tls.source.current()
        except KinrunError as exc:
            return [f"webhook server: no certificate: {exc}"]
        if self._synced is not None and not self._synced():
            return ["webhook server: the caches its rules read have not synced"]
        return []

    def _sync_ca(self) -> None:
        while not self._stopping.is_set():
            self.ca_sync.sync()  # type: ignore[union-attr]
            self._stopping.wait(self.sync_interval)

    def _work(self) -> None:
        listener = self._listener
        while listener is not None and not self._stopping.is_set():
            try:
                raw, peer = listener.accept()
            except (TimeoutError, socket.timeout, BlockingIOError):
                continue
            except OSError:
                if self._stopping.is_set():
                    return
                raise
            self._serve_connection(raw, peer)

    def _serve_connection(self, raw: socket.socket, peer: Any) -> None:
        raw.settimeout(self.timeout)
        try:
            with self.tls.context.wrap_socket(raw, server_side=True) as conn:
                _Handler(conn, peer, self)
        except (OSError, ssl.SSLError) as exc:  # a client that left, a failed handshake
            _log.debug("webhook connection from %s: %s: %s", peer, type(exc).__name__, exc)
        finally:
            raw.close()

    # -- one request -----------------------------------------------------------------------------

    def answer(self, path: str, content_type: str, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, body) for a POST of ``body`` to ``path``; see the module docstring."""
        webhook = self.program.webhook(path)
        if webhook is None:
            return 404, b"404 page not found\n"
        started = time.monotonic()
        if self._metrics is not None:
            self._metrics.in_flight.labels(path).inc()
        status, data = 500, b""
        try:
            status, data = self._review(webhook, content_type, body)
        finally:
            if self._metrics is not None:
                self._metrics.observe(path, status, time.monotonic() - started)
        return status, data

    def _review(self, webhook: Any, content_type: str, body: bytes) -> tuple[int, bytes]:
        if content_type.split(";", 1)[0].strip().lower() != JSON:
            return 400, f"contentType={content_type}, expected {JSON}\n".encode()
        try:
            review = orjson.loads(body)
            if not (isinstance(review, dict) and review.get("kind") == "AdmissionReview"
                    and review.get("apiVersion") == REVIEW_API):
                raise ValueError(f"not an AdmissionReview {REVIEW_API}")
            answer = webhook.review(review, self.listers)
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            return 400, f"{exc}\n".encode()
        return 200, orjson.dumps(answer)


class WebhookMetrics:
    """controller-runtime's webhook metrics in ``registry`` (see the module docstring)."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        self.requests = Counter("controller_runtime_webhook_requests_total",
                                "Total number of admission requests by HTTP status code.",
                                ["webhook", "code"], registry=registry)
        self.latency = Histogram("controller_runtime_webhook_latency_seconds",
                                 "Histogram of the latency of processing admission requests",
                                 ["webhook"], registry=registry)
        self.in_flight = Gauge("controller_runtime_webhook_requests_in_flight",
                               "Current number of admission requests being served.",
                               ["webhook"], registry=registry)

    def observe(self, webhook: str, code: int, seconds: float) -> None:
        """One request to ``webhook`` ended with HTTP ``code`` after ``seconds``."""
        self.in_flight.labels(webhook).dec()
        self.requests.labels(webhook, str(code)).inc()
        self.latency.labels(webhook).observe(seconds)


class _Handler(BaseHTTPRequestHandler):
    """``http.server``'s request parsing for one request on an open TLS connection."""

    protocol_version = "HTTP/1.1"
    server: WebhookServer  # type: ignore[assignment]

    def __init__(self, conn: Any, peer: Any, server: WebhookServer) -> None:
        super().__init__(conn, peer, server)  # type: ignore[arg-type]

    def setup(self) -> None:
        super().setup()
        self.close_connection = True  # one request per connection (module docstring)

    def handle(self) -> None:
        self.handle_one_request()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            return self._send(411 if not length else 400, b"a Content-Length is required\n")
        if int(length) > MAX_BODY:
            return self._send(400, f"request entity is larger than {MAX_BODY} bytes\n".encode())
        body = self.rfile.read(int(length))
        status, data = self.server.answer(self.path.split("?", 1)[0],
                                          self.headers.get("Content-Type", ""), body)
        self._send(status, data, JSON if status == 200 else "text/plain; charset=utf-8")

    def do_GET(self) -> None:  # noqa: N802
        known = self.server.program.webhook(self.path.split("?", 1)[0]) is not None
        self._send(405 if known else 404, b"405 method not allowed\n" if known
                   else b"404 page not found\n")

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET  # noqa: N815

    def _send(self, status: int, data: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        if status == 405:
            self.send_header("Allow", "POST")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        _log.debug("webhook %s %s", self.address_string(), format % args)


# -- building it for the main job --------------------------------------------------------------


SERVICE_ENV = "KINRUN_WEBHOOK_SERVICE"
"""The environment variable ``kinrun manifests`` sets in the Deployment to the webhook
Service's name (so a ``--name`` given to manifests reaches the run)."""
_ANY_ADDRESS = ("0.0.0.0", "::", "")
NAMESPACE_FILE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""Where a pod finds its namespace (controller-runtime's ``getInClusterNamespace``)."""


@dataclass(frozen=True)
class WebhookOptions:
    """What the run adds to ``admission:``: ``namespace`` of kinrun (the Secret's, the
    Service's; None: the pod's, else ``default``), ``service`` (None: ``$KINRUN_WEBHOOK_SERVICE``,
    else ``admission.serviceName``, else ``<kinrun manifests' default name>-webhook``),
    ``hosts`` added to the serving certificate (tests: ``127.0.0.1``), ``port``/``address``
    (None: the config's; an address that is one IP, not ``0.0.0.0``/``::``, is added to the
    certificate: a test's ``https://127.0.0.1:PORT``), ``workers``, ``synced``: whether the
    caches the rules read have synced (readiness waits for it; None: no wait)."""

    namespace: str | None = None
    service: str | None = None
    hosts: tuple[str, ...] = ()
    port: int | None = None
    address: str | None = None
    workers: int = WORKERS
    synced: Callable[[], bool] | None = None


def build_webhook_server(plan: Any, client: Any, listers: Mapping[str, Any], metrics: Any,
                         probes: Any, options: WebhookOptions | None = None
                         ) -> WebhookServer | None:
    """The webhook server of ``plan.admission`` (None without ``admission:``), not started:
    certificates from the mounted folder, or a CA shared through a Secret (``client``; see
    ``kinrun.admission.certs``) with the caBundle kept in sync; its readiness registered on
    ``probes`` (a ``kinrun.probes.Probes``, or None), its metrics on ``metrics``.
    Raises TLSError (a folder without a usable pair) and ApiError (the Secret)."""
    if plan.admission is None:
        return None
    options = options or WebhookOptions()
    spec = plan.admission.spec
    namespace = options.namespace or _pod_namespace()
    service = service_name(plan.config, options.service)
    sync: CABundleSync | None = None
    if spec.cert_dir is not None:
        source: Any = DirectoryCerts(spec.cert_dir)
    else:
        address = options.address or spec.address
        hosts = [*service_hosts(service, namespace), *options.hosts,
                 *([address] if address not in _ANY_ADDRESS else [])]
        ca = shared_ca(client, namespace, spec.cert_secret or f"{service}-certs") \
            if client is not None else None
        source = SelfSignedCerts(hosts, ca=ca)
        if client is not None:
            sync = CABundleSync(client, service, spec.webhooks, source.ca_pem)
    server = WebhookServer(plan.admission, ServerTLS(source), listers=listers, metrics=metrics,
                           port=spec.port if options.port is None else options.port,
                           address=options.address or spec.address, workers=options.workers,
                           ca_sync=sync, synced=options.synced)
    if probes is not None:
        probes.add_readiness_check(server.ready)
    return server


def service_name(config: Any, default: str | None = None) -> str:
    """The webhook Service's name: ``$KINRUN_WEBHOOK_SERVICE`` (``kinrun manifests`` sets
    it), else ``default``, else ``admission.serviceName``, else ``kinrun manifests``'
    default (``kinrun.admission.manifests.webhook_service_name``)."""
    from kinrun.admission.manifests import webhook_service_name

    return os.environ.get(SERVICE_ENV) or default or \
        webhook_service_name(config, default_name(Path(config.file)))


def _pod_namespace() -> str:
    """``$POD_NAMESPACE`` (the downward API's, as kubebuilder's scaffolds set it), else the
    ServiceAccount's namespace file, else ``default``."""
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    try:
        return Path(NAMESPACE_FILE).read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


class LiveListers(Mapping[str, Any]):
    """informer name -> Lister, read from ``informers()`` (name -> informer with ``lister``)
    at every lookup: a reload's new informers are seen without rebuilding the server."""

    def __init__(self, informers: Callable[[], Mapping[str, Any]]) -> None:
        self._informers = informers

    def __getitem__(self, name: str) -> Any:
        return self._informers()[name].lister

    def __iter__(self) -> Iterator[str]:
        return iter(dict(self._informers()))

    def __len__(self) -> int:
        return len(self._informers())
