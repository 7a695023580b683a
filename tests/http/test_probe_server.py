"""The HTTP server under the probe and metrics ports (kinrun.probes.Endpoint): idle connections
cannot starve it, idle ones are closed, a client that leaves is not a traceback, IPv6 binds,
and methods other than GET/HEAD answer 405 with Allow."""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.clock import FakeClock
from kinrun.metrics import Metrics
from kinrun.probes import HEADER_TIMEOUT, MAX_CONNECTIONS, Probes, parse_bind_address

WAIT = 10.0  # real seconds for anything to happen (never reached when it works)
IDLE = 300   # idle connections a test opens (more than MAX_CONNECTIONS)


def request(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """(status, headers, body) of one request to ``url``."""
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=WAIT) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def probes(clock: FakeClock) -> Iterator[tuple[Probes, int]]:
    """Probes (fake clock) serving on a free port of 127.0.0.1."""
    probes = Probes(stuck_reconcile_after=60.0, clock=clock)
    port = probes.serve(0, "127.0.0.1")
    try:
        yield probes, port
    finally:
        probes.close()


class _FileLimit:
    """RLIMIT_NOFILE lowered to ``room`` more descriptors than are open now (a process's usual
    1,024 reached with fewer sockets), restored on exit."""

    def __init__(self, room: int) -> None:
        import resource
        self._resource = resource
        self._saved = resource.getrlimit(resource.RLIMIT_NOFILE)
        self._soft = len(os.listdir("/proc/self/fd")) + room

    def __enter__(self) -> None:
        self._resource.setrlimit(self._resource.RLIMIT_NOFILE, (self._soft, self._saved[1]))

    def __exit__(self, *exc: Any) -> None:
        self._resource.setrlimit(self._resource.RLIMIT_NOFILE, self._saved)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_idle_connections_do_not_starve_healthz(probes: tuple[Probes, int]) -> None:
    """With 300 idle connections open and file descriptors nearly exhausted, /healthz still
    answers at once: idle connections hold no thread and at most MAX_CONNECTIONS are kept."""
    assert IDLE > MAX_CONNECTIONS
    idle: list[socket.socket] = []
    try:
        with _FileLimit(IDLE + MAX_CONNECTIONS + 30):
            for _ in range(IDLE):
                idle.append(socket.create_connection(("127.0.0.1", probes[1]), timeout=WAIT))
            status, _, body = request(f"http://127.0.0.1:{probes[1]}/healthz")
    finally:
        for sock in idle:
            sock.close()
    assert (status, body) == (200, b"ok\n")


def test_idle_connection_is_closed_after_the_header_timeout(probes: tuple[Probes, int],
                                                             clock: FakeClock) -> None:
    """A connection that sends no whole request is closed once HEADER_TIMEOUT (on the
    endpoint's clock) has passed since it was accepted."""
    with socket.create_connection(("127.0.0.1", probes[1]), timeout=WAIT) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")  # never finished
        sock.settimeout(0.05)
        closed = False
        for _ in range(int(WAIT / 0.05)):
            clock.step(HEADER_TIMEOUT + 1)  # (again, in case the server accepted it late)
            try:
                closed = sock.recv(1) == b""
                break
            except ConnectionResetError:  # closed with the unread request: a reset, not a FIN
                closed = True
                break
            except TimeoutError:
                continue
    assert closed


def test_client_leaving_mid_request_logs_no_traceback(probes: tuple[Probes, int],
                                                       caplog: pytest.LogCaptureFixture,
                                                       capfd: pytest.CaptureFixture[str]) -> None:
    """A client that resets its connection in the middle of its request is one DEBUG line,
    no traceback (on stderr or in the log)."""
    left = threading.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "left before sending a whole request" in record.getMessage():
                left.set()

    watch = Watch(logging.DEBUG)
    logging.getLogger("kinrun.probes").addHandler(watch)
    try:
        with caplog.at_level(logging.DEBUG, logger="kinrun.probes"):
            sock = socket.create_connection(("127.0.0.1", probes[1]), timeout=WAIT)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # RST: connection reset by peer on the server's side
            assert left.wait(WAIT)
            assert request(f"http://127.0.0.1:{probes[1]}/healthz")[0] == 200
    finally:
        logging.getLogger("kinrun.probes").removeHandler(watch)
    assert "Traceback" not in capfd.readouterr().err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback on this machine")
def test_ipv6_bind_address_is_served(clock: FakeClock) -> None:
    """``--health-probe-bind-address [::1]:0`` binds the IPv6 loopback and answers there."""
    address, port = parse_bind_address("[::1]:0") or ("", 0)
    probes = Probes(stuck_reconcile_after=60.0, clock=clock)
    port = probes.serve(port, address)
    try:
        assert request(f"http://[::1]:{port}/readyz")[0] == 500  # not started: but answered
        assert request(f"http://[::1]:{port}/healthz")[:3:2] == (200, b"ok\n")
    finally:
        probes.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_methods_get_405_with_allow(probes: tuple[Probes, int], method: str) -> None:
    """Methods other than GET and HEAD answer 405 with ``Allow: GET, HEAD`` in plain text,
    not 501 HTML; HEAD answers as GET without a body."""
    status, headers, body = request(f"http://127.0.0.1:{probes[1]}/healthz", method)
    assert (status, headers["Allow"], body) == (405, "GET, HEAD", b"405 method not allowed\n")
    assert headers["Content-Type"].startswith("text/plain")
    assert request(f"http://127.0.0.1:{probes[1]}/healthz", "HEAD")[::2] == (200, b"")


def test_metrics_port_answers_405_and_serves_ipv4() -> None:
    """The metrics endpoint shares the server: POST /metrics is 405, GET answers."""
    metrics = Metrics()
    port = metrics.serve(0, "127.0.0.1")
    try:
        assert request(f"http://127.0.0.1:{port}/metrics", "POST")[0] == 405
        status, _, body = request(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and b"controller_runtime_reconcile_total" in body
    finally:
        metrics.close()
