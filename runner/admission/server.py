"""The HTTPS server the API server calls with AdmissionReviews, as controller-runtime's webhook
server (``pkg/webhook/server.go``, ``admission/http.go``).

    POST /validate/NAME, /mutate/NAME   an AdmissionReview (admission.k8s.io/v1) in, the
                                        webhook's AdmissionReview out (200), whatever the
                                        rules decided (a denial is an answer, not an error)
    other paths                         404; other methods on a webhook path: 405
    a body that is not an AdmissionReview v1 with a request (not JSON, another kind or
    version, no ``request.uid``, a Content-Type other than application/json, over
    :data:`MAX_BODY` bytes)              HTTP 400 (controller-runtime wraps these errors in an
                                        AdmissionReview answer; without a request uid there
                                        is no review to answer, so kinrun does not)

Bounded, so that a flood of connections cannot take more than a fixed share of the process:
one selector thread accepts connections and watches the idle ones; a connection with bytes
to read goes to one of :data:`WORKERS` threads, which does its TLS handshake (when new) and
answers one request, then hands it back (HTTP/1.1 keep-alive, as Go's ``net/http`` serves
controller-runtime's webhooks: the API server reuses its connections, so most requests skip
the handshake). A client that connects and sends nothing holds no worker; each socket
operation of a worker has ``timeout`` seconds (:data:`IO_TIMEOUT`); a new connection silent
for as long, or an idle one for :data:`KEEPALIVE_IDLE` seconds, is closed; at most
:data:`MAX_CONNECTIONS` are open (the rest wait in the listening socket's backlog). Departure
from Go's server: no HTTP/2 and no pipelining (a request sent before the previous answer
waits for the connection's next turn, as Go's client never does).

Certificates come from a ``kinrun.tls.ServerTLS``: each handshake takes the newest pair, so a
renewal or a cert-manager rotation drops no request. Metrics (controller-runtime's
``pkg/webhook/internal/metrics``), label ``webhook`` = the path:
``controller_runtime_webhook_requests_total{webhook, code}``,
``controller_runtime_webhook_latency_seconds{webhook}`` (histogram, Prometheus' default
buckets), ``controller_runtime_webhook_requests_in_flight{webhook}``.

Thread-safety: ``start``/``stop`` from one thread; ``ready`` and ``program`` (an attribute a
caller may replace whole) from any; requests run on the worker threads; the connections'
hand-over between the selector thread and the workers is :class:`_Pool`'s.
"""

from __future__ import annotations

import logging
import os
import queue
import selectors
import socket
import ssl
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import orjson

from kinrun.admission.certs import (SERVICE_ENV, SYNC_INTERVAL, CABundleSync, service_hosts,
                                    shared_ca, webhook_service_name)
from kinrun.admission.program import REVIEW_API, AdmissionProgram
from kinrun.clock import REAL_CLOCK, Clock
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
"""Real seconds the selector thread waits before looking at idle connections and stop."""
KEEPALIVE_IDLE = 30.0
"""Seconds an idle keep-alive connection is kept open (no worker holds it meanwhile)."""
MAX_CONNECTIONS = 256
"""Connections open at once (idle, queued, or being answered); beyond, new ones wait in the
listening socket's backlog."""
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
    ``synced``: whether the caches the lookups read have synced (:meth:`ready` waits for it);
    ``clock``: its ``now()`` measures request durations (metrics), idle connections and the
    stop deadline, and the caBundle sync waits on it.
    """

    def __init__(self, program: AdmissionProgram, tls: ServerTLS, *,
                 listers: Mapping[str, Any] | None = None, metrics: Any = None,
                 port: int = 0, address: str = "127.0.0.1", workers: int = WORKERS,
                 timeout: float = IO_TIMEOUT, ca_sync: CABundleSync | None = None,
                 sync_interval: float = SYNC_INTERVAL,
                 synced: Callable[[], bool] | None = None,
                 clock: Clock = REAL_CLOCK) -> None:
        self.program, self.tls, self._synced = program, tls, synced
        self.clock = clock
        self.ca_sync, self.sync_interval = ca_sync, sync_interval
        self.listers = listers if listers is not None else {}
        self.address, self.port, self.workers, self.timeout = address, port, workers, timeout
        self._metrics = WebhookMetrics(metrics.registry) if metrics is not None else None
        self._listener: socket.socket | None = None
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pool: _Pool | None = None

    def start(self) -> int:
        """Bind and start the threads; returns the bound port. Raises WebhookServeError."""
        try:
            listener = socket.create_server((self.address, self.port), backlog=LISTEN_BACKLOG)
        except OSError as exc:
            raise WebhookServeError(self.port, self.address, exc) from exc
        listener.setblocking(False)
        self._listener, self.port = listener, int(listener.getsockname()[1])
        self._stopping.clear()
        self._pool = _Pool(self, listener)
        self._threads = [SupervisedThread(target=self._pool.select, name="kinrun-webhook-select")]
        self._threads += [SupervisedThread(target=self._work, name=f"kinrun-webhook-{i}")
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
        close every connection and the socket. Idempotent."""
        self._stopping.set()
        if self._pool is not None:
            self._pool.shut_down(self.workers)
        deadline = self.clock.now() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - self.clock.now()))
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
        pool = self._pool
        while pool is not None:
            conn = pool.ready.get()
            if conn is None:  # shut down
                return
            keep = self._serve(conn)
            pool.done(conn, keep and not self._stopping.is_set())

    def _serve(self, conn: _Conn) -> bool:
        """One request on ``conn`` (its TLS handshake first, when new); True: keep it open."""
        try:
            if conn.tls is None:
                conn.sock.settimeout(self.timeout)
                conn.tls = self.tls.context.wrap_socket(conn.sock, server_side=True)
                conn.rfile, conn.wfile = conn.tls.makefile("rb"), conn.tls.makefile("wb")
            return not _Handler(conn, self).close_connection
        except (OSError, ssl.SSLError) as exc:  # a client that left, a failed handshake
            _log.debug("webhook connection from %s: %s: %s", conn.peer, type(exc).__name__, exc)
            return False

    # -- one request -----------------------------------------------------------------------------

    def answer(self, path: str, content_type: str, body: bytes) -> tuple[int, bytes]:
        """(HTTP status, body) for a POST of ``body`` to ``path``; see the module docstring."""
        webhook = self.program.webhook(path)
        if webhook is None:
            return 404, b"404 page not found\n"
        started = self.clock.now()
        if self._metrics is not None:
            self._metrics.in_flight.labels(path).inc()
        status, data = 500, b""
        try:
            status, data = self._review(webhook, content_type, body)
        finally:
            if self._metrics is not None:
                self._metrics.observe(path, status, self.clock.now() - started)
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
    """``http.server``'s request parsing for one request on an open TLS connection (its
    buffered reader and writer are the connection's: they outlive the request)."""

    protocol_version = "HTTP/1.1"
    server: WebhookServer  # type: ignore[assignment]

    def __init__(self, conn: _Conn, server: WebhookServer) -> None:
        self._conn = conn
        super().__init__(conn.tls, conn.peer, server)  # type: ignore[arg-type]

    def setup(self) -> None:
        self.connection = self.request
        self.rfile, self.wfile = self._conn.rfile, self._conn.wfile  # type: ignore[assignment]

    def handle(self) -> None:
        self.close_connection = True
        self.handle_one_request()

    def finish(self) -> None:
        if not self.wfile.closed:
            self.wfile.flush()

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        length = self.headers.get("Content-Length", "")
        if not length.isdigit():
            self.close_connection = True
            return self._send(411 if not length else 400, b"a Content-Length is required\n")
        if int(length) > MAX_BODY:
            self.close_connection = True  # the body is not read: the connection is spent
            return self._send(400, f"request entity is larger than {MAX_BODY} bytes\n".encode())
        body = self.rfile.read(int(length))
        status, data = self.server.answer(self.path.split("?", 1)[0],
                                          self.headers.get("Content-Type", ""), body)
        self._send(status, data, JSON if status == 200 else "text/plain; charset=utf-8")

    def do_GET(self) -> None:  # noqa: N802
        known = self.server.program.webhook(self.path.split("?", 1)[0]) is not None
        self.close_connection = True  # a body it may have sent is not read
        self._send(405 if known else 404, b"405 method not allowed\n" if known
                   else b"404 page not found\n")

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET  # noqa: N815

    def _send(self, status: int, data: bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        self.send_response(status)
        if status == 405:
            self.send_header("Allow", "POST")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        _log.debug("webhook %s %s", self.address_string(), format % args)


class _Conn:
    """One client connection: the socket, its TLS wrapper once the handshake is done
    (None before), the buffered reader/writer over it, and since when it is idle."""

    __slots__ = ("sock", "peer", "tls", "rfile", "wfile", "idle_since")

    def __init__(self, sock: socket.socket, peer: Any, now: float) -> None:
        self.sock, self.peer, self.idle_since = sock, peer, now
        self.tls: ssl.SSLSocket | None = None
        self.rfile: Any = None
        self.wfile: Any = None

    def close(self) -> None:
        for part in (self.rfile, self.wfile, self.tls, self.sock):
            try:
                if part is not None:
                    part.close()
            except OSError:
                pass


class _Pool:
    """The connections of a WebhookServer: one selector thread (:meth:`select`) accepts new
    connections and watches idle ones; a connection with something to read goes to
    ``ready`` (a worker takes it, answers one request, hands it back with :meth:`done`).

    Invariants: a connection is in exactly one place: the selector (idle, or new before its
    first bytes), ``ready``, or a worker. At most :data:`MAX_CONNECTIONS` are open: beyond,
    the listener is not watched and new connections wait in its backlog. One idle longer than
    :data:`KEEPALIVE_IDLE` seconds is closed. Thread-safety: ``done`` and ``shut_down`` from
    any thread (they hand over through ``_handed`` under ``_lock`` and wake the selector).
    """

    def __init__(self, server: WebhookServer, listener: socket.socket) -> None:
        self.server, self.listener = server, listener
        self.ready: queue.SimpleQueue[_Conn | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._handed: list[_Conn] = []  # back from workers, to watch again (under _lock)
        self._open = 0  # connections open (under _lock)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)

    def done(self, conn: _Conn, keep: bool) -> None:
        """A worker is through with ``conn``: watch it again (``keep``) or close it."""
        if keep and conn.tls is not None and conn.tls.pending():
            self.ready.put(conn)  # already holds the next request's bytes
            return
        with self._lock:
            if keep:
                conn.idle_since = self.server.clock.now()
                self._handed.append(conn)
            else:
                self._open -= 1
        if not keep:
            conn.close()
        self._wake()

    def shut_down(self, workers: int) -> None:
        """End the selector (it closes what it watches) and ``workers`` workers."""
        self._wake()
        for _ in range(workers):
            self.ready.put(None)

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # the buffer is full: a wake-up is pending anyway
            pass

    def select(self) -> None:
        """The selector thread's loop (see the class docstring)."""
        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        accepting = False
        try:
            while not self.server._stopping.is_set():
                accepting = self._watch_listener(sel, accepting)
                for key, _ in sel.select(ACCEPT_POLL):
                    if key.data == "listener":
                        self._accept(sel)
                    elif key.data == "wake":
                        self._take_handed(sel)
                    else:
                        sel.unregister(key.fileobj)
                        self.ready.put(key.data)
                self._close_idle(sel)
        finally:
            self._close_all(sel)

    def _watch_listener(self, sel: selectors.BaseSelector, accepting: bool) -> bool:
        with self._lock:
            room = self._open < MAX_CONNECTIONS
        if room and not accepting:
            sel.register(self.listener, selectors.EVENT_READ, "listener")
        elif accepting and not room:
            sel.unregister(self.listener)
        return room

    def _accept(self, sel: selectors.BaseSelector) -> None:
        while True:
            with self._lock:
                if self._open >= MAX_CONNECTIONS:
                    return
            try:
                sock, peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            with self._lock:
                self._open += 1
            sock.setblocking(False)
            conn = _Conn(sock, peer, self.server.clock.now())
            sel.register(sock, selectors.EVENT_READ, conn)

    def _take_handed(self, sel: selectors.BaseSelector) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        with self._lock:
            handed, self._handed = self._handed, []
        for conn in handed:
            sel.register(conn.tls or conn.sock, selectors.EVENT_READ, conn)

    def _close_idle(self, sel: selectors.BaseSelector) -> None:
        now = self.server.clock.now()
        for key in list(sel.get_map().values()):
            conn = key.data
            if isinstance(conn, _Conn) and now - conn.idle_since > (
                    KEEPALIVE_IDLE if conn.tls is not None else self.server.timeout):
                sel.unregister(key.fileobj)
                self.done(conn, False)

    def _close_all(self, sel: selectors.BaseSelector) -> None:
        for key in list(sel.get_map().values()):
            if isinstance(key.data, _Conn):
                key.data.close()
        sel.close()
        with self._lock:
            handed, self._handed = self._handed, []
        for conn in handed:
            conn.close()
        self._wake_r.close()
        self._wake_w.close()


# -- building it for the main job --------------------------------------------------------------

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
    caches the rules read have synced (readiness waits for it; None: no wait); ``clock``: the
    run's (certificates' validity, request durations, idle connections)."""

    namespace: str | None = None
    service: str | None = None
    hosts: tuple[str, ...] = ()
    port: int | None = None
    address: str | None = None
    workers: int = WORKERS
    synced: Callable[[], bool] | None = None
    clock: Clock = REAL_CLOCK


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
        ca = shared_ca(client, namespace, spec.cert_secret or f"{service}-certs",
                       clock=options.clock) if client is not None else None
        source = SelfSignedCerts(hosts, ca=ca, clock=options.clock)
        if client is not None:
            sync = CABundleSync(client, service, spec.webhooks, source.ca_pem)
    server = WebhookServer(plan.admission, ServerTLS(source, clock=options.clock),
                           listers=listers, metrics=metrics,
                           port=spec.port if options.port is None else options.port,
                           address=options.address or spec.address, workers=options.workers,
                           ca_sync=sync, synced=options.synced, clock=options.clock)
    if probes is not None:
        probes.add_readiness_check(server.ready)
    return server


def register_locally(plan: Any, client: Any, server: WebhookServer) -> list[str]:
    """Apply (server-side, forced) the webhook configurations of ``plan.admission`` pointing
    at ``server`` on ``https://127.0.0.1:PORT`` with its CA as ``caBundle``: what ``kinrun
    --embedded`` does, so that the embedded API server calls kinrun's webhooks as a cluster
    would (``kinrun.admission.manifests.local_configurations``). Returns the kinds applied.
    Raises ApiError."""
    from kinrun.admission.manifests import local_configurations

    ca = server.tls.source.current().ca
    objects = local_configurations(plan.admission.spec, service_name(plan.config),
                                   f"https://127.0.0.1:{server.port}", ca)
    for obj in objects:
        client.apply(obj, force=True)
    _log.info("admission: %s registered on the embedded API server (https://127.0.0.1:%d)",
              " and ".join(o["kind"] for o in objects), server.port)
    return [o["kind"] for o in objects]


def service_name(config: Any, default: str | None = None) -> str:
    """The webhook Service's name: ``$KINRUN_WEBHOOK_SERVICE`` (``kinrun manifests`` sets
    it), else ``default``, else ``admission.serviceName``, else ``kinrun manifests``'
    default (``kinrun.admission.certs.webhook_service_name``)."""
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
