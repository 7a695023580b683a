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
    anything else  404 (HEAD is answered as GET, without a body)

Liveness is what a restart can fix: a thread stuck in a handler, a deadlock, a request that
never returns. A failing API server is not: a reflector that keeps failing and backing off is
making progress (each attempt comes back), so it stays alive and logs its failures.

:class:`Probes` holds the state both checks read: the informers (``watch_informers``, a
callable returning them, so informers created later count), the reconciles running now (the
``wrap(controller, reconcile)`` observer seam of ``kinrun.bound``: ``Probes.wrap``) and the
standby Lease. :class:`Endpoint` is the small HTTP server (standard library
``ThreadingHTTPServer`` on a daemon thread) that both the probes and ``kinrun.metrics`` use, so
that only their own paths answer 200.

Thread-safety: ``Probes`` methods are thread-safe: the checks run on the HTTP server's threads,
``wrap``'s reconcile on worker threads, the rest on the main job's thread. ``_running`` is one
dict written by worker threads (one set and one pop per reconcile, keyed by the thread: atomic
under the GIL) and copied whole by the checks.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import KinrunError

_log = logging.getLogger("kinrun.probes")

Response = tuple[int, str, bytes]
"""(HTTP status, Content-Type, body)."""

Route = Callable[[Mapping[str, str]], Response]
"""The request's headers -> the response; called on a server thread."""

TEXT = "text/plain; charset=utf-8"


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
    Route; the query string is ignored), 404 for every other path, 405 for other methods.

    ``serve(port, address)`` binds and starts a daemon thread, returns the bound port (0 picks
    a free one) and raises OSError when the socket cannot be bound; ``close()`` stops it.
    Thread-safety: ``serve``/``close`` from one thread; requests run on the server's threads.
    """

    def __init__(self, routes: Mapping[str, Route], name: str = "http") -> None:
        self.routes, self.name = dict(routes), name
        self._server: ThreadingHTTPServer | None = None

    def serve(self, port: int, address: str) -> int:
        """Start serving; see the class docstring."""
        server = ThreadingHTTPServer((address, port), _handler_for(self.routes))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, name=f"kinrun-{self.name}",
                         daemon=True).start()
        self._server = server
        return int(server.server_address[1])

    def close(self) -> None:
        """Stop serving (idempotent)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()


def _handler_for(routes: Mapping[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._answer(body=True)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(body=False)

        def _answer(self, *, body: bool) -> None:
            route = routes.get(self.path.split("?", 1)[0])
            if route is None:
                status, ctype, data = 404, TEXT, b"404 page not found\n"
            else:
                try:
                    status, ctype, data = route(self.headers)
                except Exception as exc:  # noqa: BLE001 - a broken check answers 500
                    _log.exception("%s failed", self.path)
                    status, ctype, data = 500, TEXT, f"internal error: {exc}\n".encode()
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            _log.debug("%s %s", self.address_string(), format % args)

    return Handler


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
        self._checks: list[Callable[[], list[str]]] = []  # more /healthz checks (add_health_check)
        self._ready_checks: list[Callable[[], list[str]]] = []  # add_readiness_check
        self._endpoint = Endpoint({"/healthz": self._healthz_route,
                                   "/readyz": self._readyz_route}, "probes")

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

    def add_health_check(self, check: Callable[[], list[str]]) -> None:
        """Fail ``/healthz`` while ``check()`` returns failure lines (each shown as ``[-]LINE``;
        [] when healthy), such as ``kinrun.threads.health_check()``: a thread that died."""
        self._checks.append(check)

    def add_readiness_check(self, check: Callable[[], list[str]]) -> None:
        """Fail ``/readyz`` while ``check()`` returns failure lines (as ``add_health_check``),
        a standby replica included: what it serves without the Lease (admission webhooks,
        ``kinrun.admission.server``) must be up before the Service sends it requests."""
        self._ready_checks.append(check)

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

    def healthz(self) -> tuple[bool, str]:
        """(healthy, body): ``ok``, or one ``[-]`` line per failed check."""
        failures = [f"[-]reflector {live.name}: no progress for {live.idle:.0f}s "
                    f"(limit {live.limit:.0f}s)"
                    for live in (inf.liveness() for inf in self._informer_list()) if live.wedged]
        now = self._clock.now()
        for controller, key, started in list(dict(self._running).values()):
            if now - started > self.stuck_reconcile_after:
                failures.append(f"[-]reconcile {controller} {key}: running for "
                                f"{now - started:.0f}s (limit {self.stuck_reconcile_after:.0f}s)")
        failures += [f"[-]{line}" for check in list(self._checks) for line in check()]
        if failures:
            return False, "healthz check failed\n" + "\n".join(failures) + "\n"
        return True, "ok\n"

    def readyz(self) -> tuple[bool, str]:
        """(ready, body): ``ok``; ``ok (standby: ...)``; or the informers not synced yet."""
        lease = self._standby
        failed = [f"[-]{line}" for check in list(self._ready_checks) for line in check()]
        if failed:
            return False, "readyz check failed\n" + "\n".join(failed) + "\n"
        if lease is not None:
            return True, f"ok (standby: waiting for the Lease {lease})\n"
        if self._informers is None:
            return False, "readyz check failed\n[-]informers: not started\n"
        waiting = [f"[-]informer {inf.name}: not synced"
                   for inf in self._informer_list() if not inf.has_synced()]
        waiting += [f"[-]informer {name}: waiting: {why}"
                    for name, why in self._waiting().items()]
        if waiting:
            return False, "readyz check failed\n" + "\n".join(waiting) + "\n"
        return True, "ok\n"

    def _informer_list(self) -> list[Any]:
        return list(self._informers()) if self._informers is not None else []

    def _healthz_route(self, headers: Mapping[str, str]) -> Response:
        ok, body = self.healthz()
        return (200 if ok else 500), TEXT, body.encode()

    def _readyz_route(self, headers: Mapping[str, str]) -> Response:
        ok, body = self.readyz()
        return (200 if ok else 500), TEXT, body.encode()

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
