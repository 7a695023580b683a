"""Run-time errors as good as validate's: a 403 points at `kinrun rbac`, a refused
connection says so and (from the CLI) names the kubeconfig and context and suggests
--embedded, every timeout states the timeout that applied."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import urllib3

from kinrun.errors import ForbiddenError
from kinrun.kube.http_errors import error_from_exception, error_from_response

ROOT = Path(__file__).resolve().parents[3]


def test_a_403_names_kinrun_rbac() -> None:
    """The server's message stays; the hint follows it."""
    body = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden",'
            b'"code":403,"message":"configmaps is forbidden: User \\"sa\\" cannot list"}')
    error = error_from_response(403, body)
    assert isinstance(error, ForbiddenError)
    assert str(error).startswith('403 Forbidden: configmaps is forbidden: User "sa" cannot list')
    assert "`kinrun rbac CONFIG`" in str(error)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_named_as_such() -> None:
    """urllib3 2 reports a refused connect as NewConnectionError (a ConnectTimeoutError
    subclass): it is 'connection refused', not a timeout."""
    try:
        urllib3.PoolManager().request("GET", f"http://127.0.0.1:{free_port()}/", retries=False)
    except urllib3.exceptions.HTTPError as exc:
        text = str(error_from_exception(exc, method="GET", url="u", read_timeout=60,
                                        connect_timeout=10))
    assert text == "GET u: Connection refused (nothing listens there)"


def test_each_timeout_states_its_own_length() -> None:
    """A connect timeout says the connect timeout; a read timeout the read timeout."""
    connect = urllib3.exceptions.ConnectTimeoutError(None, "connect timed out")
    read = urllib3.exceptions.ReadTimeoutError(None, "u", "read timed out")
    assert str(error_from_exception(connect, method="GET", url="u", read_timeout=60,
                                    connect_timeout=10)) == \
        "GET u: connect timed out after 10s (the server did not answer)"
    assert str(error_from_exception(read, method="GET", url="u", read_timeout=60,
                                    connect_timeout=10)) == \
        "GET u: read timed out after 60s (no bytes from the server)"


def test_the_cli_names_kubeconfig_and_context_and_suggests_embedded(tmp_path: Path) -> None:
    """kinrun CONFIG against nothing: one line naming the kubeconfig, its context and
    --embedded; exit 1."""
    kubeconfig = tmp_path / "kc.yaml"
    kubeconfig.write_text(f"""\
apiVersion: v1
kind: Config
current-context: dev
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{free_port()}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: dev, context: {{cluster: c, user: u}}}}]
""")
    run = subprocess.run([sys.executable, "-m", "kinrun.cli",
                          str(ROOT / "examples/configs/pod-logger.yaml"), "--kubeconfig",
                          str(kubeconfig)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1
    last = run.stderr.strip().splitlines()[-1]
    assert "Connection refused" in last and f"kubeconfig {kubeconfig}" in last
    assert "context dev" in last and "--embedded" in last
