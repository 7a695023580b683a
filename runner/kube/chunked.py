"""HTTP/1.1 chunked transfer decoding over a raw byte stream, everything available per read.

Why not the standard library's: ``http.client`` decodes a chunked body one chunk at a time, and
kube-apiserver sends one chunk per watch event, so each event costs a buffered ``readline`` for
the chunk header and at least one socket read, and each socket read releases the GIL and wakes
the informer's other threads. Under a backlog of events that is a thread switch per event.
``ChunkedBody.read`` takes whatever bytes the socket has (one raw read of up to the current
read size) and returns the payload of every chunk in them at once: one read, one wake-up per
batch of events, and still no wait for more data than has arrived (a single event is returned
as soon as it is complete). The read size adapts: from ``READ_SIZE`` it doubles while reads
come back full, up to ``MAX_READ_SIZE``, and halves again once they come back mostly empty
(``benchmarks/run.py`` events, 100,000 Pod events: fixed 64 KB reads gave 20,600 thread
switches, 1 MB reads 1,700 and 25% less CPU per event; a watch that is caught up blocks with a
64 KB buffer, not 1 MB).

Framing (RFC 9112 section 7.1): ``<hex size>[;extensions]\\r\\n<size bytes>\\r\\n`` repeated,
ended by a chunk of size 0 and optional trailer lines (ignored). Malformed framing raises
``urllib3.exceptions.ProtocolError``, as ``http.client`` would, and so does a connection
that ends before the last chunk.
"""

from __future__ import annotations

from collections.abc import Callable

from urllib3.exceptions import ProtocolError

MAX_HEADER = 4096
"""Bytes a chunk-size line may take (with extensions) before the framing counts as malformed."""

READ_SIZE = 1 << 16
"""Bytes a raw read asks for at first, and whenever the data comes slower than it is read."""
MAX_READ_SIZE = 1 << 20
"""The most a raw read asks for: reads grow to it while each one fills up (a backlog)."""


class ChunkedBody:
    """Decode one chunked body from ``read1(n)`` (returns up to ``n`` bytes, at most one
    blocking raw read, b"" at EOF; e.g. ``io.BufferedReader.read1`` of the socket).
    ``read_size``: the bytes the first raw read asks for, and the least any later one asks
    for; ``max_read_size``: the most (bytes; see ``_adapt``).

    Not thread-safe: one reader thread. State between reads: ``_pending`` holds raw bytes not
    yet decoded (an incomplete chunk header or a chunk's trailing CRLF); ``_left`` counts the
    payload bytes of the current chunk still to come (its CRLF follows them).
    """

    def __init__(self, read1: Callable[[int], bytes], read_size: int = READ_SIZE,
                 max_read_size: int = MAX_READ_SIZE) -> None:
        self._read1 = read1
        self._read_size = self._min_read_size = read_size
        self._max_read_size = max(read_size, max_read_size)
        self._pending = b""
        self._left = 0
        self._crlf_due = False
        self.done = False
        """True once the terminating zero-size chunk was read: the body is complete."""

    def read(self) -> bytes:
        """Payload bytes of every chunk received so far and not yet returned; blocks for at
        most as many raw reads as it takes to get at least one payload byte. Returns b"" at
        the end of the body. Raises ProtocolError for malformed framing or an early EOF, and
        whatever ``read1`` raises (timeouts, resets)."""
        pieces = self.read_pieces()
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def read_pieces(self) -> list[bytes]:
        """As ``read``, as a list of non-empty pieces (each a whole chunk's payload or part of
        one: a watch event, when the server sends one chunk per event), without joining them;
        [] at the end of the body."""
        while not self.done:
            raw = self._read1(self._read_size)
            if not raw:
                raise ProtocolError("connection ended before the last chunk of the body")
            self._adapt(len(raw))
            pieces = self._decode(self._pending + raw if self._pending else raw)
            if pieces:
                return pieces
        return []

    def _adapt(self, got: int) -> None:
        """Double the next read's size (up to ``max_read_size``) after a read that filled it
        (more is waiting: a backlog is taken in fewer reads, each a GIL release and a switch
        to another thread), halve it (down to ``read_size``) after one under a quarter full
        (caught up: a blocked read holds a smaller buffer)."""
        size = self._read_size
        if got >= size:
            self._read_size = min(size * 2, self._max_read_size)
        elif got < size // 4:
            self._read_size = max(size // 2, self._min_read_size)

    def _decode(self, buf: bytes) -> list[bytes]:
        parts: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end:
            if self._left:
                take = min(self._left, end - pos)
                parts.append(buf[pos:pos + take])
                pos += take
                self._left -= take
                if self._left:
                    break
                self._crlf_due = True
            if self._crlf_due:
                if end - pos < 2:
                    break
                if not buf.startswith(b"\r\n", pos):
                    raise ProtocolError("chunk not followed by CRLF")
                pos += 2
                self._crlf_due = False
            eol = buf.find(b"\r\n", pos)
            if (eol if eol >= 0 else end) - pos > MAX_HEADER:
                raise ProtocolError("chunk-size line too long")
            if eol < 0:
                break
            size = self._size(buf[pos:eol])
            pos = eol + 2
            if size == 0:
                self.done = True  # trailers, if any, are not read: the body is complete
                pos = end
                break
            self._left = size
        self._pending = buf[pos:] if pos < end else b""
        return parts

    @staticmethod
    def _size(line: bytes) -> int:
        try:
            size = int(line, 16)  # the common case: hex digits only
        except ValueError:
            text = line.split(b";", 1)[0].strip()  # chunk extensions are ignored
            try:
                size = int(text, 16)
            except ValueError:
                raise ProtocolError(f"invalid chunk-size line {line[:40]!r}") from None
        if size < 0:
            raise ProtocolError(f"invalid chunk-size line {line[:40]!r}")
        return size
