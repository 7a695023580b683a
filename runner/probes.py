"""Health probes on their own port, as controller-runtime's ``--health-probe-bind-address``.

    GET /healthz   200 ``ok``; 500 when a reflector is wedged (``kinrun.cache.Liveness``: no
                   progress past its watch inactivity limit) or a reconcile has run longer than
                   ``stuck_reconcile_after`` seconds; the body names each failed check:
                   ``[-]reflector pods: no progress for 250s (limit 210s)``
    GET /readyz    200 ``ok`` once every informer's cache has synced; 500 before, naming the
                   informers not synced yet, and while an informer waits for its kind to be
                   served (a CRD not installed: ``[-]informer foos: waiting: ...``; hot reload
                   never makes a ready kinrun unready by itself, a rejected config
                   included); a standby replica waiting for the Lease is ready
                   (``ok (standby: waiting for the Lease ns/name)``): it serves its purpose by
                   waiting, and a rollout must not stall on it
    anything else  404 (HEAD is answered as GET, without a body; other methods: 405)

Liveness is what a restart can fix: a thread stuck in a handler, a deadlock, a request that
never returns. A failing API server is not: a reflector that keeps failing and backing off is
making progress (each attempt comes back), so it stays alive and logs its failures.

:class:`Probes` holds the state both checks read: the informers (``watch_informers``, a
callable returning them, so informers created later count), the reconciles running now (the
``wrap(controller, reconcile)`` observer seam of ``kinrun.bound``: ``Probes.wrap``) and the
standby Lease. :class:`Endpoint` is the small HTTP server that both the probes and
``kinrun.metrics`` use, so that only their own paths answer 200: bounded and timeout-guarded
(``http.server``'s request parsing behind a selector thread and a few workers), so that a
flood of idle connections cannot make the probes time out (see ``Endpoint``).

Thread-safety: ``Probes`` methods are thread-safe: the checks run on the HTTP server's threads,
``wrap``'s reconcile on worker threads, the rest on the main job's thread. ``_running`` is one
dict written by worker threads (one set and one pop per reconcile, keyed by the thread: atomic
under the GIL) and copied whole by the checks.
"""

from __future__ import annotations

import errno
import io
import logging
import queue
import select
import selectors
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.threads import SupervisedThread
from kinrun.errors import KinrunError

_log = logging.getLogger("kinrun.probes")

Response = tuple[int, str, bytes]
"""(HTTP status, Content-Type, body)."""

Route = Callable[[Mapping[str, str]], Response]
"""The request's headers -> the response; called on a server thread."""


@dataclass(frozen=True)
class QueryRoute:
    """A route that also reads the query string: ``func(headers, query)``, ``query`` as
    ``urllib.parse.parse_qs`` gives it (name -> values; a bare ``?verbose`` is
    ``{"verbose": [""]}``)."""

    func: Callable[[Mapping[str, str], Mapping[str, list[str]]], Response]

TEXT = "text/plain; charset=utf-8"

ALLOWED_METHODS = ("GET", "HEAD")
"""What the endpoints answer; any other method gets 405 with ``Allow: GET, HEAD``."""

HEADER_TIMEOUT = 5.0
"""Seconds a connection has to send its request line and headers, in all (Go's
``http.Server.ReadHeaderTimeout``), and per socket write of the answer. A probe or a scrape
sends its request at once; kubelet's default probe ``timeoutSeconds`` is 1."""

MAX_CONNECTIONS = 128
"""Connections an endpoint holds open at once: far below a process's usual 1,024 file
descriptors, far above what a kubelet and a few Prometheus servers open."""

WORKERS = 4
"""Threads per endpoint answering complete requests (a check or a scrape takes milliseconds)."""

MAX_HEAD_BYTES = 64 * 1024
"""A request head longer than this is answered 414/431/400, as ``http.server`` does."""

LISTEN_BACKLOG = 128
READ_BYTES = 8192
POLL_INTERVAL = 0.5
"""Real seconds between two looks at the deadlines when no socket is ready."""


class ProbeServeError(KinrunError):
    """The probe endpoint could not bind ``address:port`` (``port``, ``address``, ``error``: the
    OSError). ``str()`` is one line naming the settings to change; the CLI prints it as
    ``kinrun: ...`` and exits 1."""

    def __init__(self, port: int, address: str, error: OSError) -> None:
        self.port, self.address, self.error = port, address, error
        super().__init__(str(self))

    def __str__(self) -> str:
        where = "(probes.port, probes.address or --health-probe-bind-address)"
        if self.error.errno == errno.EADDRINUSE:
            return f"health probe port {self.port} on {self.address} is in use {where}"
        reason = self.error.strerror or str(self.error)
        return f"cannot serve health probes on {self.address} port {self.port}: {reason} {where}"


class Endpoint:
    """An HTTP server answering GET and HEAD for a fixed set of paths (``routes``: path ->
    Route; the query string is ignored), 404 for every other path, 405 with ``Allow: GET,
    HEAD`` for other methods; one request per connection (HTTP/1.0 answers).

    Bounded, so that no client can starve the kubelet or Prometheus (see :class:`_Server`):
    ``max_connections`` connections are open at once (a new one beyond closes the oldest that
    has not sent its whole request yet); each has ``header_timeout`` seconds, measured on
    ``clock``, to send its request line and headers, and as long per socket write of the
    answer; ``workers`` threads answer complete requests. A client that leaves early is
    logged at DEBUG, never as a traceback.

    ``serve(port, address)`` binds ``address`` (an IPv4 or IPv6 address, or a host name) and
    starts daemon threads, returns the bound port (0 picks a free one) and raises OSError when
    the socket cannot be bound; ``close()`` stops it. Thread-safety: ``serve``/``close`` from
    one thread; routes run on the worker threads.

    ``tls`` (a ``kinrun.tls.ServerTLS``): serve HTTPS. The TLS handshake runs on the selector
    thread without blocking, within the same ``header_timeout``, and every handshake takes the
    newest certificate (rotation without a restart).
    """

    def __init__(self, routes: Mapping[str, Route | QueryRoute], name: str = "http", *,
                 header_timeout: float = HEADER_TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 workers: int = WORKERS, clock: Clock | None = None,
                 tls: Any = None) -> None:
        self.routes, self.name, self.tls = dict(routes), name, tls
        self._limits = _Limits(header_timeout, max_connections, workers)
        self._clock = clock or REAL_CLOCK
        self._server: _Server | None = None

    def serve(self, port: int, address: str) -> int:
        """Start serving; see the class docstring."""
        listener = _listen(address, port)
        server = _Server(listener, _handler_for(self.routes), self.name, self._limits,
                         self._clock, None if self.tls is None else self.tls.context)
        server.start()
        self._server = server
        return int(listener.getsockname()[1])

    def close(self) -> None:
        """Stop serving (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()


def _listen(address: str, port: int) -> socket.socket:
    """A listening TCP socket on ``address`` (IPv4, IPv6 or a name, resolved as
    ``getaddrinfo`` does: its first answer; ``::`` also takes IPv4 where the system can, as
    Go's listeners do) and ``port``. Raises OSError."""
    family, _, _, _, sockaddr = socket.getaddrinfo(
        address or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    dualstack = sockaddr[0] == "::" and socket.has_dualstack_ipv6()  # "[::]:P": v4 too, as Go
    return socket.create_server(sockaddr, family=family, backlog=LISTEN_BACKLOG,
                                dualstack_ipv6=dualstack)


@dataclass(frozen=True)
class _Limits:
    header_timeout: float  # seconds to send the request head; per socket write of the answer
    max_connections: int   # connections open at once (waiting for their head, or answered)
    workers: int           # threads answering complete requests


@dataclass
class _Pending:
    address: Any          # the client's (host, port)
    deadline: float       # clock.now() by which the whole head must have arrived
    head: bytes = b""     # what it sent so far
    secured: bool = False  # the TLS handshake is done (always False without TLS)


class _Server:
    """The connections of one Endpoint: a selector thread accepts them and reads each one's
    request head without blocking; a complete head goes to ``workers`` threads that parse
    it with ``http.server.BaseHTTPRequestHandler`` and answer.

    An idle or slow connection costs a socket and no thread, so a flood of them never delays
    another client: past ``max_connections`` the oldest pending one is closed, and each is
    closed at its deadline (``header_timeout`` after it was accepted: a total, not per read, so
    a byte at a time does not keep it open; as Go's ``http.Server.ReadHeaderTimeout``).

    Thread-safety: ``_pending`` belongs to the selector thread; ``_busy`` (connections handed
    to workers and not closed yet) is guarded by ``_lock``; ``start``/``stop`` from one thread.
    Invariant: ``len(_pending) + _busy <= max_connections`` whenever the selector thread is
    between two events.
    """

    def __init__(self, listener: socket.socket, handler: type[BaseHTTPRequestHandler],
                 name: str, limits: _Limits, clock: Clock,
                 tls: ssl.SSLContext | None = None) -> None:
        self._listener, self._handler, self.name, self._tls = listener, handler, name, tls
        self._limits, self._clock = limits, clock
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._pending: dict[socket.socket, _Pending] = {}  # accept order = deadline order
        self._lock = threading.Lock()
        self._busy = 0
        self._jobs: queue.SimpleQueue[tuple[socket.socket, _Pending] | None] = \
            queue.SimpleQueue()
        self._stopping = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start the selector thread and the workers (daemon threads)."""
        self._listener.setblocking(False)
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._threads = [SupervisedThread(target=self._loop, name=f"kinrun-{self.name}")]
        self._threads += [SupervisedThread(target=self._work, name=f"kinrun-{self.name}-{i}")
                          for i in range(self._limits.workers)]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection, end the threads (``timeout`` seconds each
        at most: a route that hangs keeps its daemon thread)."""
        self._stopping = True
        self._wake_w.send(b"x")
        for _ in range(self._limits.workers):
            self._jobs.put(None)
        for thread in self._threads:
            thread.join(timeout)
        self._wake_w.close()

    # -- the selector thread ---------------------------------------------------------------------

    def _loop(self) -> None:
        try:
            while not self._stopping:
                for key, _ in self._selector.select(self._select_timeout()):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is not self._wake_r:
                        self._read(key.fileobj)  # type: ignore[arg-type]
                self._expire()
        finally:
            for conn in list(self._pending):
                self._drop(conn, "server stopping")
            self._selector.close()
            self._listener.close()
            self._wake_r.close()

    def _select_timeout(self) -> float:
        """Real seconds until the oldest deadline, at most POLL_INTERVAL (a fake clock is
        looked at again that often)."""
        if not self._pending:
            return POLL_INTERVAL
        oldest = next(iter(self._pending.values()))
        return max(0.0, min(POLL_INTERVAL, oldest.deadline - self._clock.now()))

    def _accept(self) -> None:
        while True:
            try:
                conn, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:  # EMFILE and the like: make room, or pause, then again
                _log.warning("%s: cannot accept a connection: %s", self.name, exc)
                if self._pending:
                    self._drop(next(iter(self._pending)), "making room")
                else:  # every connection is with a worker: wait for one (or for stop)
                    select.select([self._wake_r], [], [], POLL_INTERVAL)
                return
            if not self._room():
                _log.debug("%s: %s closed: %d connections open", self.name, address,
                           self._limits.max_connections)
                conn.close()
                continue
            conn.setblocking(False)
            if self._tls is not None:  # the handshake happens in _read, without blocking
                conn = self._tls.wrap_socket(conn, server_side=True,
                                             do_handshake_on_connect=False)
            deadline = self._clock.now() + self._limits.header_timeout
            self._pending[conn] = _Pending(address, deadline)
            self._selector.register(conn, selectors.EVENT_READ)

    def _room(self) -> bool:
        """Whether one more connection fits, closing the oldest pending one if needed."""
        with self._lock:
            busy = self._busy
        if len(self._pending) + busy < self._limits.max_connections:
            return True
        if not self._pending:
            return False
        self._drop(next(iter(self._pending)), "too many connections open")
        return True

    def _read(self, conn: socket.socket) -> None:
        pending = self._pending.get(conn)
        if pending is None:  # closed earlier in this round (room made for a newer one)
            return
        try:
            if isinstance(conn, ssl.SSLSocket) and not pending.secured:
                conn.do_handshake()
                pending.secured = True
            data = conn.recv(READ_BYTES)
            while data and isinstance(conn, ssl.SSLSocket) and conn.pending():
                data += conn.recv(conn.pending())  # decrypted already: no read event comes
        except (BlockingIOError, ssl.SSLWantReadError):
            return
        except ssl.SSLWantWriteError:  # rare for a server: the next read event retries
            return
        except OSError as exc:  # reset by the client, or a failed handshake
            self._drop(conn, f"left before sending a whole request ({exc})")
            return
        if not data:
            self._drop(conn, "left before sending a whole request")
            return
        pending.head += data
        if b"\r\n\r\n" in pending.head or b"\n\n" in pending.head \
                or len(pending.head) > MAX_HEAD_BYTES:
            self._selector.unregister(conn)
            del self._pending[conn]
            with self._lock:
                self._busy += 1
            self._jobs.put((conn, pending))

    def _expire(self) -> None:
        now = self._clock.now()
        while self._pending:
            conn, pending = next(iter(self._pending.items()))
            if pending.deadline > now:
                return
            self._drop(conn, f"sent no whole request within {self._limits.header_timeout:g}s")

    def _drop(self, conn: socket.socket, why: str) -> None:
        pending = self._pending.pop(conn)
        _log.debug("%s: %s closed: %s", self.name, pending.address, why)
        self._selector.unregister(conn)
        conn.close()

    # -- the workers -----------------------------------------------------------------------------

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            conn, pending = job
            try:
                conn.settimeout(self._limits.header_timeout)
                self._handler((conn, pending.head), pending.address, self)  # type: ignore[arg-type]
            except OSError as exc:  # the client left, or did not read the answer in time
                _log.debug("%s: %s left before reading the answer: %s", self.name,
                           pending.address, exc)
            except Exception:  # noqa: BLE001 - a bug here must not end the worker
                _log.exception("%s: answering %s failed", self.name, pending.address)
            finally:
                conn.close()
                with self._lock:
                    self._busy -= 1


class _Handler(BaseHTTPRequestHandler):
    """One request whose head ``_Server`` read already (``request``: (socket, head)),
    answered from ``routes`` (set by :func:`_handler_for` on a subclass)."""

    routes: Mapping[str, Route | QueryRoute] = {}

    error_content_type = TEXT
    error_message_format = "%(code)d %(message)s\n"

    def setup(self) -> None:
        self.connection, head = self.request
        self.rfile = io.BytesIO(head)
        self.wfile = self.connection.makefile("wb")

    def handle(self) -> None:
        self.close_connection = True
        self.raw_requestline = self.rfile.readline(MAX_HEAD_BYTES + 1)
        if len(self.raw_requestline) > MAX_HEAD_BYTES:
            self.send_error(414)
        elif self.parse_request():
            if self.command in ALLOWED_METHODS:
                self._answer(body=self.command == "GET")
            else:
                self._send(405, TEXT, b"405 method not allowed\n", True,
                           Allow=", ".join(ALLOWED_METHODS))

    def finish(self) -> None:
        try:
            self.wfile.flush()
        finally:
            self.wfile.close()

    def _answer(self, *, body: bool) -> None:
        path, _, query = self.path.partition("?")
        route = self.routes.get(path)
        if route is None:
            status, ctype, data = 404, TEXT, b"404 page not found\n"
        else:
            try:
                if isinstance(route, QueryRoute):
                    status, ctype, data = route.func(
                        self.headers, parse_qs(query, keep_blank_values=True))
                else:
                    status, ctype, data = route(self.headers)
            except Exception as exc:  # noqa: BLE001 - a broken check answers 500
                _log.exception("%s failed", self.path)
                status, ctype, data = 500, TEXT, f"internal error: {exc}\n".encode()
        self._send(status, ctype, data, body)

    def _send(self, status: int, ctype: str, data: bytes, body: bool,
              **headers: str) -> None:
        self.send_response(status)
        for name, value in (("Content-Type", ctype), ("Content-Length", str(len(data))),
                            *headers.items()):
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        _log.debug("%s %s", self.address_string(), format % args)


def _handler_for(routes: Mapping[str, Route | QueryRoute]) -> type[BaseHTTPRequestHandler]:
    """A handler class answering from ``routes`` (the dict itself: routes added later
    count)."""
    return type("Handler", (_Handler,), {"routes": routes})


class Probes:
    """What ``/healthz`` and ``/readyz`` report (see the module docstring).

    ``stuck_reconcile_after``: seconds a reconcile may run before ``/healthz`` fails (> 0);
    ``clock``: measures reconciles (default the real one; tests step a FakeClock).
    Raises ValueError for a bound <= 0.
    """

    def __init__(self, *, stuck_reconcile_after: float, clock: Clock | None = None) -> None:
        if stuck_reconcile_after <= 0:
            raise ValueError(f"stuck_reconcile_after must be > 0 seconds, "
                             f"got {stuck_reconcile_after!r}")
        self.stuck_reconcile_after = float(stuck_reconcile_after)
        self._clock = clock or REAL_CLOCK
        self._informers: Callable[[], Iterable[Any]] | None = None  # None: nothing built yet
        self._running: dict[int, tuple[str, Any, float]] = {}  # thread -> (controller, key, start)
        self._standby: str | None = None  # "ns/name" of the Lease waited for, or None
        self._waiting: Callable[[], Mapping[str, str]] = dict  # informer -> why it waits
        self._checks: dict[str, Callable[[], list[str]]] = {}  # more /healthz checks, by name
        self._ready_checks: dict[str, Callable[[], list[str]]] = {}  # more /readyz checks
        self._endpoint = Endpoint({"/healthz": QueryRoute(self._healthz_route),
                                   "/readyz": QueryRoute(self._readyz_route)}, "probes",
                                  clock=self._clock)
        self._route_checks()

    # -- what the main job tells it ------------------------------------------------------------

    def watch_informers(self, informers: Callable[[], Iterable[Any]]) -> None:
        """Check the informers ``informers()`` returns at each probe: objects with
        ``name``, ``has_synced()`` and ``liveness()`` (``SharedIndexInformer``; for a Manager,
        ``manager.factory.informers().values``)."""
        self._informers = informers

    def watch_waiting(self, waiting: Callable[[], Mapping[str, str]]) -> None:
        """Report the informers ``waiting()`` names (informer -> why: its kind is not served
        yet) as not ready (a Manager's ``waiting_informers``)."""
        self._waiting = waiting

    def add_health_check(self, check: Callable[[], list[str]], name: str | None = None) -> None:
        """Fail ``/healthz`` while ``check()`` returns failure lines (each shown as ``[-]LINE``;
        [] when healthy), such as ``kinrun.threads.health_check()``: a thread that died.
        ``name``: the check's name in ``?verbose`` and its path ``/healthz/NAME`` (default
        ``check-N``)."""
        self._checks[name or f"check-{len(self._checks) + 1}"] = check
        self._route_checks()

    def add_ready_check(self, check: Callable[[], list[str]], name: str) -> None:
        """Fail ``/readyz`` while ``check()`` returns failure lines (an admission webhook
        server not listening yet, an initial list a handler has not finished); served at
        ``/readyz/NAME`` too."""
        self._ready_checks[name] = check
        self._route_checks()

    def add_readiness_check(self, check: Callable[[], list[str]], name: str = "webhooks") -> None:
        """:meth:`add_ready_check` under ``name``: what a replica serves without the Lease
        (admission webhooks, ``kinrun.admission.server``) must be up before the Service sends
        it requests, so added checks count on a standby replica too."""
        self.add_ready_check(check, name)

    def standby(self, lease: str | None) -> None:
        """Waiting for the Lease ``lease`` ("ns/name"): ready, and says so; None: leading (or
        no leader election), ready once synced."""
        self._standby = lease

    def wrap(self, controller: str, reconcile: Callable[..., Any]) -> Callable[..., Any]:
        """``reconcile`` tracked while it runs, for the stuck-reconcile check (the
        ``kinrun.bound`` wrap seam: ``(controller, reconcile) -> reconcile``)."""
        running, now, ident = self._running, self._clock.now, threading.get_ident

        def tracked(key: Any, obj: Any, *args: Any) -> Any:
            me = ident()
            running[me] = (controller, key, now())
            try:
                return reconcile(key, obj, *args)
            finally:
                running.pop(me, None)
        return tracked

    # -- the checks ------------------------------------------------------------------------------

    def health_checks(self) -> dict[str, Callable[[], list[str]]]:
        """The ``/healthz`` checks by name: ``reflectors``, ``reconciles``, then the added
        ones; each returns its failure lines ([] when it passes)."""
        return {"reflectors": self._wedged, "reconciles": self._stuck, **self._checks}

    def ready_checks(self) -> dict[str, Callable[[], list[str]]]:
        """The ``/readyz`` checks by name: ``informers`` (synced), ``kinds`` (not waiting for
        a kind to be served), then the added ones; all pass while on standby."""
        return {"informers": self._unsynced, "kinds": self._kinds_waiting, **self._ready_checks}

    def healthz(self, *, verbose: bool = False, only: str | None = None) -> tuple[bool, str]:
        """(healthy, body): ``ok``, or one ``[-]`` line per failed check; ``verbose``: a
        ``[+]NAME ok`` line per passing check too (kube-apiserver's ``?verbose``); ``only``:
        that check alone (``/healthz/NAME``; KeyError when unknown)."""
        return _report("healthz", self.health_checks(), verbose, only)

    def readyz(self, *, verbose: bool = False, only: str | None = None) -> tuple[bool, str]:
        """(ready, body): ``ok``; ``ok (standby: ...)``; or the checks that fail (informers
        not synced yet, kinds not served); ``verbose`` and ``only`` as :meth:`healthz`."""
        lease = self._standby
        if lease is not None:  # the added checks (webhooks) count on a standby too
            ok, body = _report("readyz", dict(self._ready_checks), verbose, only) \
                if only is None or only in self._ready_checks else (True, "")
            if not ok:
                return ok, body
            return True, f"ok (standby: waiting for the Lease {lease})\n"
        if self._informers is None and only in (None, "informers"):
            return False, "readyz check failed\n[-]informers: not started\n"
        return _report("readyz", self.ready_checks(), verbose, only)

    def _wedged(self) -> list[str]:
        return [f"reflector {live.name}: no progress for {live.idle:.0f}s "
                f"(limit {live.limit:.0f}s)"
                for live in (inf.liveness() for inf in self._informer_list()) if live.wedged]

    def _stuck(self) -> list[str]:
        now = self._clock.now()
        return [f"reconcile {controller} {key}: running for {now - started:.0f}s "
                f"(limit {self.stuck_reconcile_after:.0f}s)"
                for controller, key, started in list(dict(self._running).values())
                if now - started > self.stuck_reconcile_after]

    def _unsynced(self) -> list[str]:
        return [f"informer {inf.name}: not synced"
                for inf in self._informer_list() if not inf.has_synced()]

    def _kinds_waiting(self) -> list[str]:
        return [f"informer {name}: waiting: {why}" for name, why in self._waiting().items()]

    def _informer_list(self) -> list[Any]:
        return list(self._informers()) if self._informers is not None else []

    def _healthz_route(self, headers: Mapping[str, str],
                       query: Mapping[str, list[str]]) -> Response:
        ok, body = self.healthz(verbose="verbose" in query)
        return (200 if ok else 500), TEXT, body.encode()

    def _readyz_route(self, headers: Mapping[str, str],
                      query: Mapping[str, list[str]]) -> Response:
        ok, body = self.readyz(verbose="verbose" in query)
        return (200 if ok else 500), TEXT, body.encode()

    def _check_route(self, probe: str, name: str) -> QueryRoute:
        def route(headers: Mapping[str, str], query: Mapping[str, list[str]]) -> Response:
            check = self.healthz if probe == "healthz" else self.readyz
            ok, body = check(verbose="verbose" in query, only=name)
            return (200 if ok else 500), TEXT, body.encode()
        return QueryRoute(route)

    def _route_checks(self) -> None:
        """``/healthz/NAME`` and ``/readyz/NAME`` for every check known now."""
        for probe, checks in (("healthz", self.health_checks()), ("readyz", self.ready_checks())):
            for name in checks:
                self._endpoint.routes.setdefault(f"/{probe}/{name}",
                                                 self._check_route(probe, name))

    # -- serving ---------------------------------------------------------------------------------

    def serve(self, port: int, address: str = "0.0.0.0") -> int:
        """Serve ``/healthz`` and ``/readyz`` on ``address:port`` (0 = a free port) in daemon
        threads; returns the bound port. Raises ProbeServeError when the socket cannot be
        bound (port in use, no permission, address not local)."""
        try:
            return self._endpoint.serve(port, address)
        except OSError as exc:
            raise ProbeServeError(port, address, exc) from exc

    def close(self) -> None:
        """Stop serving, if serving."""
        self._endpoint.close()


def _report(probe: str, checks: Mapping[str, Callable[[], list[str]]], verbose: bool,
            only: str | None) -> tuple[bool, str]:
    """(passed, body) of ``checks`` (or the one named ``only``; KeyError when unknown):
    ``ok``, or ``PROBE check failed`` and a ``[-]`` line per failure; ``verbose`` adds a
    ``[+]NAME ok`` line per passing check and ends a success with ``PROBE check passed``, as
    kube-apiserver's ``/healthz?verbose`` does."""
    selected = {only: checks[only]} if only is not None else checks
    lines, failed = [], False
    for name, check in selected.items():
        failures = check()
        failed = failed or bool(failures)
        lines += [f"[-]{line}" for line in failures] or ([f"[+]{name} ok"] if verbose else [])
    if failed:
        return False, f"{probe} check failed\n" + "\n".join(lines) + "\n"
    if verbose:
        return True, "\n".join(lines) + f"\n{probe} check passed\n"
    return True, "ok\n"


def parse_bind_address(text: str) -> tuple[str, int] | None:
    """``--health-probe-bind-address`` as controller-runtime reads it: ``HOST:PORT``,
    ``:PORT`` (all addresses, 0.0.0.0), ``[v6]:PORT``; ``0`` (or empty) disables the probes:
    None. Raises ValueError for anything else (no port, a port outside 0-65535)."""
    if text in ("", "0"):
        return None
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, :PORT or 0, got {text!r}")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    return host or "0.0.0.0", int(port)
