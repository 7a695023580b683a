"""FaultProxy: an HTTP proxy on 127.0.0.1 between kinrun and a real kube-apiserver that injects
faults on demand, for the soak tier (docs/architecture.md, "Test tiers").

kinrun talks plain HTTP to the proxy (its kubeconfig: ``write_kubeconfig``); the proxy
terminates TLS towards the API server (which serves a self-signed certificate: not verified),
forwards the bearer token (the client's ``Authorization`` header, or ``token`` when given),
relays every other request whole, and relays watches **line by line** (one chunk per event), so
that it can act inside an open watch. Modelled on the embedded server's fault switches
(``kinrun.testing.apiserver.faults``), but against the real server's own semantics.

Faults (every method thread-safe; each returns how many open streams or requests it reached):

    drop_watches()        abort every open watch: the connection closes mid-body (a reset)
    close_watches()       end every open watch cleanly (as the server's timeoutSeconds does)
    expire_watches()      send an ERROR event 410 Expired into every open watch, then end it
                          (what kube-apiserver sends when a watch falls out of its window)
    stall_watches(s)      forward nothing more (events and bookmarks held back) until the client
                          gives up (its inactivity watchdog closes the connection) or ``s``
                          seconds pass (then the proxy aborts the stream)
    bookmark_watches()    send a BOOKMARK carrying only kind, apiVersion and
                          metadata.resourceVersion (the stream's last one)
    garbage_watches()     send a line that is not JSON
    truncate_watches()    cut the next event of every open watch in half (the rest is lost)
    fail_requests(n, status, retry_after, within)
                          a bounded burst: the next ``n`` requests matching ``match`` answer
                          ``status`` (429, 500, 503, ...) with ``Retry-After``, but only for
                          ``within`` seconds, so a burst always ends

Counting: ``counts()`` gives, per fault kind, ``requested`` (calls x streams or requests asked
for) and ``reached`` (the fault was actually written to an open stream, or answered to a
request); a fault posted to a stream that ended first is not reached. ``stall_gave_up`` counts
stalls the client ended itself (its watchdog fired), ``stall_timed_out`` those the proxy ended.
``stats()`` counts requests by kind (``list``, ``watch``, ``other``, ``upstream_down``) per path.

While the upstream is down (a restart), requests answer 503 ServiceUnavailable with
``Retry-After: 1``; a watch relayed when the upstream goes away ends as the upstream ended.

Concurrency: one thread per client connection (``ThreadingHTTPServer``) plus one upstream
reader thread per open watch; ``_lock`` guards the stream registry, the bursts and the counters.
Loopback only: the proxy binds 127.0.0.1.
"""

from __future__ import annotations

import http.client
import json
import queue
import select
import socket
import ssl
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from kinrun.clock import REAL_CLOCK
from kinrun.threads import SupervisedThread

STREAM_FAULTS = ("drop", "close", "expire", "stall", "bookmark", "garbage", "truncate")
"""Fault kinds that act on open watch streams."""

DEFAULT_KINDS: Mapping[str, tuple[str, str]] = {
    "configmaps": ("v1", "ConfigMap"), "secrets": ("v1", "Secret"), "pods": ("v1", "Pod"),
    "services": ("v1", "Service"), "events": ("v1", "Event"), "namespaces": ("v1", "Namespace"),
}
"""Resource (plural) -> (apiVersion, kind), for the bookmarks the proxy writes itself."""

UPSTREAM_TIMEOUT = 30.0
"""Seconds to wait for the upstream's answer to a non-watch request."""

_POLL = 0.1  # seconds between checks of a stalled or idle stream's client connection
_HOP_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding", "content-length",
                          "accept-encoding", "host", "proxy-connection", "te", "upgrade"})


def _insecure_tls() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def status_body(code: int, reason: str, message: str, **details: Any) -> bytes:
    """A metav1.Status as kube-apiserver encodes it (JSON bytes)."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": message, "reason": reason,
                            "code": code}
    if details:
        body["details"] = details
    return orjson.dumps(body)


def expired_event(resource_version: str) -> bytes:
    """The ERROR event kube-apiserver's watch cache sends for a watch it cannot serve (410)."""
    status = orjson.loads(status_body(410, "Expired",
                                      f"too old resource version: {resource_version or 1} (0)"))
    return orjson.dumps({"type": "ERROR", "object": status}) + b"\n"


_REASONS = {429: "TooManyRequests", 500: "InternalError", 502: "BadGateway",
            503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class _Burst:
    """A bounded burst of failed requests: at most ``left`` more, none after ``until``."""

    status: int
    retry_after: float | None
    left: int
    until: float
    match: Callable[[str, str], bool] | None


@dataclass
class _Control:
    """A fault posted to one stream; ``done`` is set once it was applied or the stream ended."""

    kind: str
    arg: float = 0.0
    done: threading.Event = field(default_factory=threading.Event)
    reached: bool = False


@dataclass
class _Stream:
    """One relayed watch. ``inbox`` gets ("line", bytes), ("end", clean) from the upstream
    reader and ("fault", _Control) from the fault methods; only the handler thread writes to
    the client."""

    path: str
    query: dict[str, str]
    api_version: str
    kind: str
    inbox: queue.Queue = field(default_factory=queue.Queue)
    last_rv: str = ""
    ended: bool = False  # unregistered (guarded by FaultProxy._lock)
    active: bool = True  # no ending fault applied yet: only active streams get faults


class FaultProxy:
    """A fault-injecting proxy for ``upstream`` ("https://127.0.0.1:PORT").

    Args:
        upstream: the API server's URL (https, loopback).
        token: bearer token to send upstream instead of the client's (None: forward the
            client's ``Authorization`` header as is).
        port: port to listen on (0: a free one); always on 127.0.0.1.
        kinds: resource plural -> (apiVersion, kind) for injected bookmarks.

    Attributes after ``start()``: ``url`` ("http://127.0.0.1:PORT"). Use as a context manager
    or ``start()``/``stop()``. Errors: ``start`` raises OSError when the port is taken.
    """

    def __init__(self, upstream: str, *, token: str | None = None, port: int = 0,
                 kinds: Mapping[str, tuple[str, str]] | None = None) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        if parsed.scheme != "https" or not parsed.hostname:
            raise ValueError(f"upstream must be https://HOST:PORT, got {upstream!r}")
        self.upstream = upstream
        self._up_host, self._up_port = parsed.hostname, parsed.port or 443
        self.token = token
        self.kinds = dict(DEFAULT_KINDS if kinds is None else kinds)
        self._port = port
        self._tls = _insecure_tls()
        self._lock = threading.Condition()
        self._streams: list[_Stream] = []       # open watches, in opening order
        self._bursts: list[_Burst] = []         # pending request failures, oldest first
        self._requested: Counter[str] = Counter()
        self._reached: Counter[str] = Counter()
        self._stats: Counter[tuple[str, str]] = Counter()  # (what, path) -> requests
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> FaultProxy:
        """Listen on 127.0.0.1 and serve in a daemon thread."""
        proxy = self

        class Handler(_Handler):
            owner = proxy
        self._server = ThreadingHTTPServer(("127.0.0.1", self._port), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = SupervisedThread(target=self._server.serve_forever, name="fault-proxy",
                                        kwargs={"poll_interval": 0.2}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening and abort every open watch. Idempotent."""
        if self._server is None:
            return
        self._post_all("drop", 0.0, count=False)
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(10)
        self._server = None

    def write_kubeconfig(self, path: str | Path, *, token: str, namespace: str = "default") -> str:
        """Write a kubeconfig for clients of the proxy (plain HTTP, bearer ``token``); returns
        the path as str."""
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "proxy",
            "clusters": [{"name": "proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "admin", "user": {"token": token}}],
            "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "admin",
                                                       "namespace": namespace}}],
        }
        Path(path).write_text(json.dumps(config, indent=2))
        return str(path)

    # -- faults on open watches --------------------------------------------------------------

    def drop_watches(self, wait: float = 5.0) -> int:
        """Abort every open watch (connection closed mid-body). Returns how many were reached."""
        return self._post_all("drop", 0.0, wait=wait)

    def close_watches(self, wait: float = 5.0) -> int:
        """End every open watch cleanly (terminating chunk). Returns how many were reached."""
        return self._post_all("close", 0.0, wait=wait)

    def expire_watches(self, wait: float = 5.0) -> int:
        """Send ERROR 410 Expired into every open watch, then end it. Returns the reached count."""
        return self._post_all("expire", 0.0, wait=wait)

    def stall_watches(self, max_seconds: float, wait: float = 5.0) -> int:
        """Hold back everything on every open watch until the client closes it or
        ``max_seconds`` pass (then abort it). Returns how many stalls began."""
        return self._post_all("stall", max_seconds, wait=wait)

    def bookmark_watches(self, wait: float = 5.0) -> int:
        """Write a minimal BOOKMARK (kind, apiVersion, metadata.resourceVersion = the stream's
        last resourceVersion) into every open watch. Returns the reached count."""
        return self._post_all("bookmark", 0.0, wait=wait)

    def garbage_watches(self, wait: float = 5.0) -> int:
        """Write a non-JSON line into every open watch. Returns the reached count."""
        return self._post_all("garbage", 0.0, wait=wait)

    def truncate_watches(self) -> int:
        """Cut the next upstream event of every open watch in half. Returns how many streams
        it was posted to; it counts as reached when an event arrives to cut (not waited for)."""
        return self._post_all("truncate", 0.0, wait=0.0)

    def _post_all(self, kind: str, arg: float, *, wait: float = 0.0, count: bool = True) -> int:
        with self._lock:
            streams = [s for s in self._streams if s.active and not s.ended]
            if count:
                self._requested[kind] += max(1, len(streams))
        controls = []
        for stream in streams:
            control = _Control(kind, arg)
            stream.inbox.put(("fault", control))
            controls.append(control)
        deadline = REAL_CLOCK.now() + wait
        for control in controls:
            control.done.wait(max(0.0, deadline - REAL_CLOCK.now()))
        return sum(c.reached for c in controls)

    # -- faults on requests ------------------------------------------------------------------

    def fail_requests(self, n: int, status: int = 429, *, retry_after: float | None = 1.0,
                      within: float = 5.0,
                      match: Callable[[str, str], bool] | None = None) -> None:
        """The next ``n`` requests (``match(method, path_with_query)`` true, default all)
        answer ``status`` with a metav1.Status body and ``Retry-After: retry_after`` seconds
        (omitted when None), for at most ``within`` seconds from now: the burst then ends even
        if fewer requests came. Raises ValueError for n < 1 or a status below 400."""
        if n < 1 or status < 400:
            raise ValueError(f"need n >= 1 and an error status, got n={n}, status={status}")
        with self._lock:
            self._requested[str(status)] += n
            self._bursts.append(_Burst(status, retry_after, n, REAL_CLOCK.now() + within, match))

    def _take_failure(self, method: str, target: str) -> _Burst | None:
        now = REAL_CLOCK.now()
        with self._lock:
            self._bursts = [b for b in self._bursts if b.left > 0 and b.until > now]
            for burst in self._bursts:
                if burst.match is None or burst.match(method, target):
                    burst.left -= 1
                    self._reached[str(burst.status)] += 1
                    return burst
        return None

    # -- observation -------------------------------------------------------------------------

    def counts(self) -> dict[str, dict[str, int]]:
        """Fault kind -> {"requested": n, "reached": n} (plus ``stall_gave_up`` and
        ``stall_timed_out`` as {"reached": n})."""
        with self._lock:
            kinds = set(self._requested) | set(self._reached)
            return {k: {"requested": self._requested[k], "reached": self._reached[k]}
                    for k in sorted(kinds)}

    def stats(self) -> dict[str, int]:
        """Requests seen, as "what path" -> count; what is list, watch, other, upstream_down."""
        with self._lock:
            return {f"{what} {path}": n for (what, path), n in sorted(self._stats.items())}

    def count(self, what: str, path_suffix: str = "") -> int:
        """Requests of kind ``what`` whose path ends with ``path_suffix``."""
        with self._lock:
            return sum(n for (w, p), n in self._stats.items() if w == what and p.endswith(path_suffix))

    def open_watches(self, path_suffix: str = "") -> int:
        """How many watches are open now (on paths ending with ``path_suffix``)."""
        with self._lock:
            return sum(1 for s in self._streams
                       if s.active and not s.ended and s.path.endswith(path_suffix))

    def wait_for(self, predicate: Callable[[FaultProxy], bool], timeout: float) -> bool:
        """Wait (at most ``timeout`` s) until ``predicate(self)``; re-checked on every stream
        opening or ending and every 0.1 s."""
        deadline = REAL_CLOCK.now() + timeout
        with self._lock:
            while not predicate(self):
                left = deadline - REAL_CLOCK.now()
                if left <= 0:
                    return False
                self._lock.wait(min(left, _POLL))
        return True

    # -- internals used by the handler ---------------------------------------------------------

    def _count_locked(self, what: str, path: str) -> None:
        self._stats[(what, path)] += 1

    def _note(self, what: str, path: str) -> None:
        with self._lock:
            self._count_locked(what, path)

    def _reach(self, kind: str) -> None:
        with self._lock:
            self._reached[kind] += 1

    def _register(self, stream: _Stream) -> None:
        with self._lock:
            self._streams.append(stream)
            self._lock.notify_all()

    def _unregister(self, stream: _Stream) -> None:
        with self._lock:
            stream.ended = True
            if stream in self._streams:
                self._streams.remove(stream)
            self._lock.notify_all()
        while True:  # faults posted meanwhile are done, unreached
            try:
                item = stream.inbox.get_nowait()
            except queue.Empty:
                return
            if item[0] == "fault":
                item[1].done.set()

    def _connect(self, timeout: float | None) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self._up_host, self._up_port, timeout=timeout,
                                           context=self._tls)

    def _kind_of(self, path: str) -> tuple[str, str]:
        resource = path.rstrip("/").rsplit("/", 1)[-1]
        return self.kinds.get(resource, ("v1", "Unknown"))


class _Handler(BaseHTTPRequestHandler):
    """One client connection (HTTP/1.1, keep-alive). Relays a request, or a watch line by line."""

    owner: FaultProxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        return  # quiet: the soak has its own figures

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        self._relay()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_GET

    def _relay(self) -> None:
        proxy = self.owner
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        is_watch = query.get("watch") in ("true", "1")
        body = self._read_body()
        burst = proxy._take_failure(self.command, self.path)
        if burst is not None:
            self._send_failure(burst.status, burst.retry_after)
            return
        what = "watch" if is_watch else ("list" if self.command == "GET" and _is_collection(parsed.path)
                                         else "other")
        headers = self._upstream_headers()
        try:
            conn = proxy._connect(None if is_watch else UPSTREAM_TIMEOUT)
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
        except OSError:
            proxy._note("upstream_down", parsed.path)
            self._send_failure(503, 1.0, message="upstream unavailable (fault proxy)")
            return
        proxy._note(what, parsed.path)
        try:
            if is_watch and resp.status == 200:
                self._relay_watch(conn, resp, parsed.path, query)
            else:
                self._relay_whole(resp)
        finally:
            conn.close()

    def _read_body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _upstream_headers(self) -> dict[str, str]:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
        if self.owner.token is not None:
            headers["Authorization"] = f"Bearer {self.owner.token}"
        return headers

    def _send_failure(self, status: int, retry_after: float | None, message: str = "") -> None:
        reason = _REASONS.get(status, "InternalError")
        details = {"retryAfterSeconds": int(retry_after)} if retry_after else {}
        data = status_body(status, reason, message or f"{reason} (fault proxy)", **details)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if retry_after is not None:
            self.send_header("Retry-After", str(max(1, round(retry_after))))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _relay_whole(self, resp: http.client.HTTPResponse) -> None:
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException):
            self.close_connection = True
            return
        self.send_response(resp.status)
        for key, value in resp.getheaders():
            if key.lower() not in _HOP_HEADERS:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # -- watches -----------------------------------------------------------------------------

    def _relay_watch(self, conn: http.client.HTTPSConnection, resp: http.client.HTTPResponse,
                     path: str, query: dict[str, str]) -> None:
        proxy = self.owner
        api_version, kind = proxy._kind_of(path)
        stream = _Stream(path, query, api_version, kind, last_rv=query.get("resourceVersion", ""))
        self.close_connection = True  # a relayed watch never goes back to keep-alive
        self.send_response(200)
        self.send_header("Content-Type", resp.getheader("Content-Type", "application/json"))
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        reader = SupervisedThread(target=_read_upstream, args=(resp, stream.inbox),
                                  name="fault-proxy-upstream", daemon=True)
        proxy._register(stream)
        reader.start()
        try:
            _StreamWriter(self, stream).run()
        finally:
            proxy._unregister(stream)
            _abort_upstream(conn)
            reader.join(5)


def _is_collection(path: str) -> bool:
    """/api/v1/namespaces/NS/configmaps -> True; .../configmaps/NAME -> False (roughly: the
    segment count of a collection path is even under /api/v1 and odd under /apis/G/V)."""
    parts = [p for p in path.split("/") if p]
    if not parts or parts[0] not in ("api", "apis"):
        return False
    rest = parts[2:] if parts[0] == "api" else parts[3:]
    return len(rest) % 2 == 1


def _read_upstream(resp: http.client.HTTPResponse, inbox: queue.Queue) -> None:
    """Upstream reader thread: every line into ``inbox``, then ("end", clean)."""
    clean = False
    try:
        while True:
            line = resp.readline()
            if not line:
                clean = True
                break
            if line.strip():
                inbox.put(("line", line if line.endswith(b"\n") else line + b"\n"))
    except Exception:  # noqa: BLE001 - any failure ends the stream (the writer closes the connection under it)
        pass
    inbox.put(("end", clean))


def _abort_upstream(conn: http.client.HTTPSConnection) -> None:
    sock = conn.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    conn.close()


class _ClientGone(Exception):
    """The client closed its end of a relayed watch."""


class _StreamWriter:
    """Writes one relayed watch to the client and applies the faults posted to it."""

    def __init__(self, handler: _Handler, stream: _Stream) -> None:
        self.h, self.stream, self.proxy = handler, stream, handler.owner
        self.truncate: list[_Control] = []

    def run(self) -> None:
        try:
            for item in self._items():
                if item[0] == "line":
                    self._forward(item[1])
                elif item[0] == "end":
                    if item[1]:
                        self._finish()
                    return
                elif self._apply(item[1]):
                    return
        except _ClientGone:
            return

    def _items(self) -> Iterator[tuple[str, Any]]:
        while True:
            try:
                yield self.stream.inbox.get(timeout=_POLL)
            except queue.Empty:
                self._check_client()

    def _check_client(self) -> None:
        sock = self.h.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable and not sock.recv(1, socket.MSG_PEEK):
                raise _ClientGone
        except (OSError, ValueError) as err:
            raise _ClientGone from err

    def _write(self, data: bytes) -> None:
        try:
            self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.h.wfile.flush()
        except OSError as err:
            raise _ClientGone from err

    def _finish(self) -> None:
        try:
            self.h.wfile.write(b"0\r\n\r\n")
            self.h.wfile.flush()
        except OSError:
            pass

    def _abort(self) -> None:
        try:
            self.h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _forward(self, line: bytes) -> None:
        if self.truncate:
            control = self.truncate.pop(0)
            self._write(line[: max(1, len(line) // 2)] + b"\n")
            self._done(control)
            return
        self._write(line)
        rv = _resource_version(line)
        if rv:
            self.stream.last_rv = rv

    def _done(self, control: _Control) -> None:
        control.reached = True
        self.proxy._reach(control.kind)
        control.done.set()

    def _apply(self, control: _Control) -> bool:
        """Apply one fault; True when the stream is over."""
        kind = control.kind
        if kind in ("drop", "close", "expire", "stall"):
            with self.proxy._lock:
                self.stream.active = False
        if kind == "truncate":
            self.truncate.append(control)
            return False
        if kind == "drop":
            self._done(control)
            self._abort()
            return True
        if kind == "close":
            self._done(control)
            self._finish()
            return True
        if kind == "expire":
            self._write(expired_event(self.stream.last_rv))
            self._done(control)
            self._finish()
            return True
        if kind == "bookmark":
            event = {"type": "BOOKMARK", "object": {
                "kind": self.stream.kind, "apiVersion": self.stream.api_version,
                "metadata": {"resourceVersion": self.stream.last_rv}}}
            self._write(orjson.dumps(event) + b"\n")
            self._done(control)
            return False
        if kind == "garbage":
            self._write(b"<html>502 Bad Gateway</html> this is not JSON\n")
            self._done(control)
            return False
        if kind == "stall":
            self._done(control)
            self._stall(control.arg)
            return True
        control.done.set()
        return False

    def _stall(self, max_seconds: float) -> None:
        """Forward nothing; end when the client closes (counted stall_gave_up) or after
        ``max_seconds`` (abort; counted stall_timed_out)."""
        deadline = REAL_CLOCK.now() + max_seconds
        while REAL_CLOCK.now() < deadline:
            try:
                item = self.stream.inbox.get(timeout=_POLL)
                if item[0] == "fault":
                    item[1].done.set()  # the stream is stalled: nothing else reaches it
            except queue.Empty:
                pass
            try:
                self._check_client()
            except _ClientGone:
                self.proxy._reach("stall_gave_up")
                return
        self.proxy._reach("stall_timed_out")
        self._abort()


def _resource_version(line: bytes) -> str:
    """metadata.resourceVersion of a watch event line ("" when absent or undecodable)."""
    try:
        event = orjson.loads(line)
        return str(((event.get("object") or {}).get("metadata") or {}).get("resourceVersion") or "")
    except (orjson.JSONDecodeError, AttributeError):
        return ""
