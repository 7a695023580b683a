"""ChunkedBody: decodes HTTP/1.1 chunked framing the same wherever the raw reads split it,
returns every complete chunk of one read at once, and rejects malformed framing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urllib3.exceptions import ProtocolError

from kinrun.kube.chunked import MAX_HEADER, ChunkedBody


def scripted(*pieces: bytes) -> Callable[[int], bytes]:
    """A ``read1`` returning ``pieces`` one per call (b"" is EOF); reading past them fails the test."""
    queue = list(pieces)

    def read1(n: int) -> bytes:
        assert queue, "read past the scripted pieces: ChunkedBody waited for data it did not need"
        return queue.pop(0)
    return read1


def encode(*chunks: bytes, ext: bytes = b"", trailers: bytes = b"") -> bytes:
    """A chunked body of ``chunks`` (each with extension ``ext``), then the zero chunk."""
    framed = b"".join(b"%x%s\r\n%s\r\n" % (len(c), ext, c) for c in chunks)
    return framed + b"0" + ext + b"\r\n" + trailers + b"\r\n"


def split(data: bytes, *cuts: int) -> list[bytes]:
    """``data`` cut at the given offsets."""
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if a < b]


def read_all(body: ChunkedBody) -> bytes:
    """Every payload byte until read() returns b""."""
    out = []
    while payload := body.read():
        out.append(payload)
    return b"".join(out)


BODY = encode(b"0123456789abcdefghijklmnopq", b"hello", b"world!")
"""First chunk size "1b": a two-digit size line, so a read can split inside it."""


@pytest.mark.parametrize("cuts", [
    pytest.param((1,), id="inside-the-hex-size"),
    pytest.param((3,), id="inside-the-size-line-crlf"),
    pytest.param((4,), id="after-the-size-line"),
    pytest.param((10,), id="inside-the-data"),
    pytest.param((31,), id="between-data-and-its-crlf"),
    pytest.param((32,), id="inside-the-data-crlf"),
    pytest.param((33,), id="after-the-data-crlf"),
    pytest.param((len(BODY) - 4,), id="inside-the-zero-chunk"),
    pytest.param(tuple(range(1, len(BODY))), id="one-byte-per-read"),
])
def test_payload_is_the_same_wherever_reads_split_the_framing(cuts: tuple[int, ...]) -> None:
    """The payloads concatenate to the original body for any split of the raw bytes."""
    body = ChunkedBody(scripted(*split(BODY, *cuts)))
    assert read_all(body) == b"0123456789abcdefghijklmnopqhello" + b"world!"
    assert body.done


def test_several_chunks_in_one_read_come_back_from_one_call() -> None:
    """One raw read holding three whole chunks yields all three payloads in one read()."""
    first = encode(b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n')[:-5]  # without the zero chunk
    body = ChunkedBody(scripted(first, b"0\r\n\r\n"))
    assert body.read() == b'{"a":1}\n{"b":2}\n{"c":3}\n'
    assert not body.done


def test_a_complete_chunk_is_returned_without_waiting_for_more() -> None:
    """A read() that got one whole chunk returns it without another raw read."""
    body = ChunkedBody(scripted(b"5\r\nhello\r\n"))
    assert body.read() == b"hello"


def test_a_read_holding_only_a_size_line_does_not_return_empty() -> None:
    """read() keeps reading until it has a payload byte: b"" only ever means the end."""
    body = ChunkedBody(scripted(b"5\r\n", b"hel", b"lo\r\n0\r\n\r\n"))
    assert body.read() == b"hel"
    assert body.read() == b"lo"


def test_read_returns_empty_once_the_last_chunk_arrived() -> None:
    """After the zero chunk, done is True and read() returns b"" without reading again."""
    body = ChunkedBody(scripted(encode(b"hello")))
    assert body.read() == b"hello"
    assert body.done
    assert body.read() == b""
    assert body.read() == b""


def test_an_empty_body_is_done_at_once() -> None:
    """A body that is only the zero chunk reads as b"" and is done."""
    body = ChunkedBody(scripted(b"0\r\n\r\n"))
    assert body.read() == b""
    assert body.done


def test_chunk_extensions_are_ignored() -> None:
    """``;name=value`` after the size changes neither the size nor the payload."""
    body = ChunkedBody(scripted(*split(encode(b"abc", b"defgh", ext=b";x=y;q=\"z\""), 6, 20)))
    assert read_all(body) == b"abcdefgh"


def test_trailers_after_the_zero_chunk_are_ignored() -> None:
    """Trailer lines after the zero chunk are not payload."""
    body = ChunkedBody(scripted(encode(b"abc", trailers=b"Checksum: 1\r\nX-Other: 2\r\n")))
    assert read_all(body) == b"abc"
    assert body.done


def test_upper_case_hex_sizes_are_read() -> None:
    """Chunk sizes are hex in either case."""
    data = b"A" * 26
    body = ChunkedBody(scripted(b"1A\r\n" + data + b"\r\n0\r\n\r\n"))
    assert read_all(body) == data


def test_each_raw_read_asks_for_read_size_bytes() -> None:
    """read1 is called with the configured read_size."""
    sizes = []
    pieces = [b"3\r\nabc\r\n", b"0\r\n\r\n"]

    def read1(n: int) -> bytes:
        sizes.append(n)
        return pieces.pop(0)
    read_all(ChunkedBody(read1, read_size=1234))
    assert sizes == [1234, 1234]


@pytest.mark.parametrize("pieces", [
    pytest.param((b"",), id="nothing-at-all"),
    pytest.param((b"5\r\nhel", b""), id="inside-a-chunk"),
    pytest.param((b"5\r\nhello\r\n", b""), id="between-chunks"),
    pytest.param((b"5\r\nhello\r\n0", b""), id="inside-the-zero-chunk-line"),
])
def test_eof_before_the_last_chunk_raises(pieces: tuple[bytes, ...]) -> None:
    """A connection that ends before the zero chunk raises ProtocolError, not b""."""
    body = ChunkedBody(scripted(*pieces))
    with pytest.raises(ProtocolError):
        read_all(body)
    assert not body.done


@pytest.mark.parametrize("line", [b"zz", b"", b"-5", b"5 5", b";x=y"])
def test_a_size_that_is_not_hex_raises(line: bytes) -> None:
    """A chunk-size line that is not a hex number raises ProtocolError."""
    body = ChunkedBody(scripted(line + b"\r\nhello\r\n0\r\n\r\n"))
    with pytest.raises(ProtocolError):
        body.read()


@pytest.mark.parametrize("pieces", [
    pytest.param((b"5\r\nhelloXY0\r\n\r\n",), id="other-bytes"),
    pytest.param((b"5\r\nhello", b"\n\r0\r\n\r\n"), id="swapped-in-the-next-read"),
    pytest.param((b"3\r\nhello\r\n0\r\n\r\n",), id="size-shorter-than-data"),
])
def test_data_not_followed_by_crlf_raises(pieces: tuple[bytes, ...]) -> None:
    """Bytes other than CRLF right after a chunk's data raise ProtocolError."""
    body = ChunkedBody(scripted(*pieces))
    with pytest.raises(ProtocolError):
        read_all(body)


def test_a_size_line_longer_than_max_header_raises() -> None:
    """A size line still without CRLF after MAX_HEADER bytes raises ProtocolError."""
    long_line = b"5;" + b"x" * MAX_HEADER
    body = ChunkedBody(scripted(long_line[:100], long_line[100:]))
    with pytest.raises(ProtocolError):
        body.read()


def test_a_size_line_longer_than_max_header_raises_when_it_arrives_whole() -> None:
    """The size-line limit does not depend on how reads split the line."""
    body = ChunkedBody(scripted(b"5;" + b"x" * MAX_HEADER + b"\r\nhello\r\n0\r\n\r\n"))
    with pytest.raises(ProtocolError):
        body.read()


@settings(deadline=None)
@given(chunks=st.lists(st.binary(min_size=1, max_size=40), max_size=6),
       ext=st.sampled_from([b"", b";a=b", b"; name=\"v;v\""]),
       trailers=st.sampled_from([b"", b"X-Trailer: 1\r\n"]),
       data=st.data())
def test_any_split_of_any_body_decodes_to_its_payload(chunks: list[bytes], ext: bytes,
                                                      trailers: bytes, data: st.DataObject) -> None:
    """Property: for random chunks and random read boundaries, the payload is the chunks joined."""
    raw = encode(*chunks, ext=ext, trailers=trailers)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(raw) - 1), max_size=12), label="cuts"))
    body = ChunkedBody(scripted(*split(raw, *cuts)))
    assert read_all(body) == b"".join(chunks)
    assert body.done


def test_reads_grow_while_they_come_back_full_and_shrink_once_caught_up() -> None:
    """A backlog (every read filled) doubles the read size up to the maximum; reads that come
    back under a quarter full halve it back down to the first size."""
    event = b"x" * 1000
    backlog = b"".join(b"%x\r\n%s\r\n" % (len(event), event) for _ in range(300))
    sizes: list[int] = []
    state = {"data": backlog, "trickle": 5}

    def read1(n: int) -> bytes:
        sizes.append(n)
        if state["data"]:  # the backlog: as much as asked for
            piece, state["data"] = state["data"][:n], state["data"][n:]
            return piece
        if state["trickle"]:  # caught up: one small event per read
            state["trickle"] -= 1
            return b"1\r\nz\r\n"
        return b"0\r\n\r\n"
    body = ChunkedBody(read1, read_size=1024, max_read_size=16384)
    assert read_all(body) == event * 300 + b"zzzzz"
    assert sizes[:6] == [1024, 2048, 4096, 8192, 16384, 16384]
    assert sizes[-4:] == [4096, 2048, 1024, 1024]
