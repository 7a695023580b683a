"""The HTTP side: a stdlib ``ThreadingHTTPServer`` speaking HTTP/1.1 (keep-alive, one thread per
connection) that hands each request to ``rest.Api`` and writes its answer.

Plain answers are written in one ``send`` (status line, headers and body together, with
``TCP_NODELAY``) so keep-alive clients never wait on delayed ACKs. Watches are streamed with
chunked transfer encoding: every batch of ready events goes out as one chunk of
newline-delimited JSON events and is flushed at once; the terminating chunk ends the stream
cleanly (timeoutSeconds, ``close_watches``, server stop). A client that goes away is noticed at
the next write or within ``POLL`` seconds while idle.
"""

from __future__ import annotations

import select
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from .rest import Answer, Api, Request, WatchAnswer

POLL = 0.5           # seconds between liveness checks of an idle watch connection
IOV_BATCH = 512      # buffers per sendmsg call (below IOV_MAX)
MAX_BODY = 64 << 20  # bytes accepted in one request body


class APIHTTPServer(ThreadingHTTPServer):
    """The listening server; ``api`` answers requests. Threads are daemons; ``block_on_close``
    is off so shutdown never waits for open watches (they end via the store)."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], api: Api) -> None:
        self.api = api
        self._connections: set[socket.socket] = set()   # open client sockets (guarded by _lock)
        self._lock = threading.Lock()
        super().__init__(address, APIRequestHandler)

    def track(self, sock: socket.socket, open_: bool) -> None:
        """Remember (or forget) an open client connection, so ``close_connections`` can end it."""
        with self._lock:
            (self._connections.add if open_ else self._connections.discard)(sock)

    def close_connections(self) -> None:
        """Shut down every open client connection (their threads then end)."""
        with self._lock:
            socks = list(self._connections)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: object, client_address: object) -> None:
        """Ignore clients that went away; report anything else as the stdlib does."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


def _sendmsg_all(sock: socket.socket, buffers: list[bytes]) -> None:
    """Send every byte of ``buffers`` in order with ``sendmsg`` (handles partial sends)."""
    views = [memoryview(b) for b in buffers if b]
    first = 0
    while first < len(views):
        sent = sock.sendmsg(views[first:])
        while sent and first < len(views):
            if sent >= len(views[first]):
                sent -= len(views[first])
                first += 1
            else:
                views[first] = views[first][sent:]
                sent = 0


def _reason(code: int) -> str:
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return "Unknown"


class APIRequestHandler(BaseHTTPRequestHandler):
    """One connection: parse each request, call ``server.api.handle``, write the answer."""

    protocol_version = "HTTP/1.1"
    server_version = "kinrun-embedded-apiserver"
    server: APIHTTPServer

    def setup(self) -> None:
        """Disable Nagle (answers go out in one send) and register the connection."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.track(self.connection, True)

    def finish(self) -> None:
        """Forget the connection; a peer that already left is not an error."""
        self.server.track(self.connection, False)
        try:
            super().finish()
        except OSError:
            pass

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Silence the stdlib's per-request stderr log."""

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        """Every method (GET, HEAD, POST, PUT, PATCH, DELETE) is routed by ``rest.Api``."""
        self._serve()

    do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            return self._read_chunked()
        if length > MAX_BODY:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length > 0 else b""

    def _read_chunked(self) -> bytes:
        parts = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _serve(self) -> None:
        try:
            body = self._read_body()
        except ValueError:
            self.close_connection = True
            self._write_answer(Answer(413, b'{"kind":"Status","status":"Failure","code":413}'))
            return
        url = urlsplit(self.path)
        req = Request(self.command, url.path, dict(parse_qsl(url.query, keep_blank_values=True)),
                      self.headers, body)
        answer = self.server.api.handle(req)
        try:
            if isinstance(answer, WatchAnswer):
                self._stream(answer)
            else:
                self._write_answer(answer)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, socket.timeout):
            self.close_connection = True

    def _write_answer(self, answer: Answer) -> None:
        lines = [f"HTTP/1.1 {answer.code} {_reason(answer.code)}",
                 f"Content-Type: {answer.content_type}",
                 f"Content-Length: {len(answer.body)}",
                 "Cache-Control: no-cache, private"]
        lines += [f"{k}: {v}" for k, v in answer.headers.items()]
        if self.close_connection:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        self.wfile.write(head if self.command == "HEAD" else head + answer.body)

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def _stream(self, answer: WatchAnswer) -> None:
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n")
        self.wfile.write(head)
        if answer.stall:
            self._stall(answer.stall_epoch)
            return
        if answer.first_lines:
            self._chunk_pieces(answer.first_lines)
        watcher = answer.watcher
        if watcher is None or answer.end_after_first:
            self._finish()
            return
        deadline = None if answer.timeout is None else time.monotonic() + answer.timeout
        try:
            self._pump(watcher, deadline)
        finally:
            watcher.stop()

    def _pump(self, watcher, deadline: float | None) -> None:  # noqa: ANN001
        while True:
            wait = POLL if deadline is None else max(0.0, min(POLL, deadline - time.monotonic()))
            pieces, ended = watcher.next_lines(wait)
            if pieces:
                self._chunk_pieces(pieces)
            elif not ended and self._client_gone():
                self.close_connection = True
                return
            if ended or (deadline is not None and time.monotonic() >= deadline):
                self._finish()
                return

    def _stall(self, epoch: int) -> None:
        store = self.server.api.store
        while not store.closed and store.watch_epoch == epoch:
            time.sleep(0.05)
            if self._client_gone():
                break
        self.close_connection = True

    def _chunk_pieces(self, pieces: list[bytes]) -> None:
        """Write the events in ``pieces`` (buffers whose concatenation is newline-terminated
        event lines; an event may span several buffers) as one HTTP chunk per event, as
        kube-apiserver does (its watch encoder flushes after every event), with scatter/gather
        sends (no copy of the objects)."""
        buffers: list[bytes] = []
        event: list[bytes] = []
        size = 0
        for piece in pieces:
            event.append(piece)
            size += len(piece)
            if piece.endswith(b"\n"):
                buffers += (b"%x\r\n" % size, *event, b"\r\n")
                event, size = [], 0
        if event:
            buffers += (b"%x\r\n" % size, *event, b"\r\n")
        sock = self.connection
        for start in range(0, len(buffers), IOV_BATCH):
            _sendmsg_all(sock, buffers[start:start + IOV_BATCH])

    def _finish(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
