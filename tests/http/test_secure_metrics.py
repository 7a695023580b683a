"""Secure metrics, as controller-runtime 0.16+: HTTPS with the serving certificate of
kinrun.tls, and delegated authentication and authorization (TokenReview, SubjectAccessReview)
of GET /metrics; silent TLS clients do not block others."""

from __future__ import annotations

import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from kinrun.kube.delegated_auth import DelegatedAuth
from kinrun.metrics import Metrics
from kinrun.tls import SelfSignedCerts, ServerTLS



def review(path: str, body: dict) -> dict:
    """A stand-in API server: token "good" is user prom, allowed GET /metrics; "weak" is
    user nobody, allowed nothing; any other token is not authenticated."""
    spec = body["spec"]
    if body["kind"] == "TokenReview":
        user = {"good": "prom", "weak": "nobody"}.get(spec["token"])
        return {"status": {"authenticated": user is not None,
                           **({"user": {"username": user}} if user else {})}}
    attrs = spec["nonResourceAttributes"]
    return {"status": {"allowed": (spec["user"], attrs["path"], attrs["verb"])
                       == ("prom", "/metrics", "get")}}


@pytest.fixture
def secure() -> Iterator[tuple[int, SelfSignedCerts]]:
    certs = SelfSignedCerts(["localhost", "127.0.0.1"])
    metrics = Metrics()
    port = metrics.serve(0, "127.0.0.1", tls=ServerTLS(certs), auth=DelegatedAuth(review))
    yield port, certs
    metrics.close()


def get(port: int, ca: bytes, token: str | None) -> tuple[int, str]:
    ctx = ssl.create_default_context(cadata=ca.decode())
    req = urllib.request.Request(f"https://127.0.0.1:{port}/metrics",
                                 headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_an_allowed_token_reads_the_metrics_over_https(secure) -> None:
    """A token whose user RBAC allows GET /metrics: 200 and the exposition."""
    port, certs = secure
    status, body = get(port, certs.ca_pem, "good")
    assert status == 200 and "python_info" in body


@pytest.mark.parametrize("token,status", [(None, 401), ("forged", 401), ("weak", 403)])
def test_no_token_a_bad_one_or_no_right_is_refused(secure, token: str | None,
                                                   status: int) -> None:
    """401 without a valid token, 403 for a user without the right; no metrics either way."""
    port, certs = secure
    got, body = get(port, certs.ca_pem, token)
    assert got == status and "python_info" not in body


def test_plain_http_gets_no_answer(secure) -> None:
    """The port speaks TLS only: a plain HTTP request gets no HTTP answer."""
    port, _ = secure
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        raw.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        try:
            answer = raw.recv(100)
        except ConnectionResetError:
            answer = b""
    assert not answer.startswith(b"HTTP/")


def test_silent_tls_clients_do_not_block_a_scrape(secure) -> None:
    """Fifty connections that never start their handshake; a scrape still answers."""
    port, certs = secure
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(50)]
    try:
        assert get(port, certs.ca_pem, "good")[0] == 200
    finally:
        for conn in idle:
            conn.close()
