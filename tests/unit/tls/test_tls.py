"""kinrun.tls: self-signed and mounted key pairs, served so that every handshake uses the
newest one (rotation without a restart, as controller-runtime's certwatcher)."""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinrun.clock import REAL_CLOCK, FakeClock, WallOverride
from kinrun.tls import (CHECK_INTERVAL, DEFAULT_VALIDITY, RENEW_AT, DirectoryCerts,
                        SelfSignedCerts, ServerTLS, TLSError)


class Server:
    """A TLS server on 127.0.0.1 that answers each connection with b"ok" and closes it."""

    def __init__(self, tls: ServerTLS) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.tls = tls
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                with self.tls.context.wrap_socket(conn, server_side=True) as tls_conn:
                    tls_conn.sendall(b"ok")
            except (ssl.SSLError, OSError):
                conn.close()

    def peer(self, ca: bytes, host: str = "localhost") -> bytes:
        """The certificate (DER) a client that trusts ``ca`` sees, checking ``host``."""
        ctx = ssl.create_default_context(cadata=ca.decode())
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as raw:
            with ctx.wrap_socket(raw, server_hostname=host) as conn:
                assert conn.recv(2) == b"ok"
                return conn.getpeercert(binary_form=True)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def serve() -> Iterator:
    servers: list[Server] = []

    def make(tls: ServerTLS) -> Server:
        servers.append(Server(tls))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def test_a_self_signed_pair_is_trusted_through_its_ca_for_each_host(serve) -> None:
    """A client trusting ca_pem verifies the certificate for a DNS name and for an IP."""
    certs = SelfSignedCerts(["localhost", "127.0.0.1"])
    server = serve(ServerTLS(certs))
    assert server.peer(certs.ca_pem, "localhost") == server.peer(certs.ca_pem, "127.0.0.1")
    with pytest.raises(ssl.SSLCertVerificationError):
        server.peer(certs.ca_pem, "other.example")


def test_renewal_after_two_thirds_is_served_at_the_next_handshake(serve) -> None:
    """Past RENEW_AT of the validity a new certificate is issued by the same CA; once
    CHECK_INTERVAL has passed on the monotonic clock, the next handshake gets it."""
    # issued in the past so that both certificates are valid at the real time clients check
    wall = [time.time() - RENEW_AT * DEFAULT_VALIDITY - 10 * 86400]
    certs = SelfSignedCerts(["localhost"], clock=WallOverride(REAL_CLOCK, lambda: wall[0]))
    clock = FakeClock()
    server = serve(ServerTLS(certs, clock=clock))
    first = server.peer(certs.ca_pem)
    wall[0] += RENEW_AT * DEFAULT_VALIDITY - 1
    clock.step(CHECK_INTERVAL)
    assert server.peer(certs.ca_pem) == first  # not due yet
    wall[0] += 2
    assert server.peer(certs.ca_pem) == first  # due, but checked less than a second ago
    clock.step(CHECK_INTERVAL)
    second = server.peer(certs.ca_pem)
    assert second != first and certs.current().version == 2


def write_pair(folder: Path, certs: SelfSignedCerts) -> None:
    pair = certs.current()
    (folder / "tls.key").write_bytes(pair.key)
    (folder / "tls.crt").write_bytes(pair.cert)
    (folder / "ca.crt").write_bytes(pair.ca)


def test_a_mounted_pair_is_reloaded_when_its_files_change(serve, tmp_path: Path) -> None:
    """A new pair written into the folder is served from the next handshake; a garbage
    write (a Secret update in flight) keeps the last good pair."""
    one, two = SelfSignedCerts(["localhost"]), SelfSignedCerts(["localhost"])
    write_pair(tmp_path, one)
    clock = FakeClock()
    source = DirectoryCerts(tmp_path)
    assert source.current().ca == one.ca_pem
    server = serve(ServerTLS(source, clock=clock))
    first = server.peer(one.ca_pem)
    (tmp_path / "tls.crt").write_bytes(b"-----BEGIN CERTIFICATE-----\ngarbage")
    clock.step(CHECK_INTERVAL)
    assert server.peer(one.ca_pem) == first
    write_pair(tmp_path, two)
    clock.step(CHECK_INTERVAL)
    assert server.peer(two.ca_pem) != first


def test_a_folder_without_a_matching_pair_is_refused(tmp_path: Path) -> None:
    """No files, or a key of another certificate: TLSError naming the folder."""
    with pytest.raises(TLSError, match="cannot read"):
        DirectoryCerts(tmp_path)
    write_pair(tmp_path, SelfSignedCerts(["localhost"]))
    (tmp_path / "tls.key").write_bytes(SelfSignedCerts(["localhost"]).current().key)
    with pytest.raises(TLSError, match=r"tls.key is not the key of tls.crt") as err:
        DirectoryCerts(tmp_path)
    assert str(tmp_path) in str(err.value)
