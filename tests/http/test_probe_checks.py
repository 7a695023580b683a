"""/healthz?verbose and /readyz?verbose list each check, /healthz/NAME and /readyz/NAME answer
one check, as kube-apiserver's and controller-runtime's health endpoints do."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from kinrun.probes import Probes


class Informer:
    def __init__(self, name: str, synced: bool) -> None:
        self.name, self.synced = name, synced

    def has_synced(self) -> bool:
        return self.synced

    def liveness(self):
        class Live:
            wedged = False
        return Live()


@pytest.fixture
def probes() -> Iterator[tuple[Probes, int]]:
    p = Probes(stuck_reconcile_after=60)
    informers = [Informer("pods", True)]
    p.watch_informers(lambda: informers)
    p.broken: list[str] = []  # type: ignore[attr-defined]
    p.add_health_check(lambda: list(p.broken), "threads")  # type: ignore[attr-defined]
    port = p.serve(0, "127.0.0.1")
    yield p, port
    p.close()


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_verbose_lists_every_passing_check(probes) -> None:
    """?verbose: a [+] line per check and "check passed"; without it, "ok"."""
    _, port = probes
    assert get(port, "/healthz") == (200, "ok\n")
    assert get(port, "/healthz?verbose") == (
        200, "[+]reflectors ok\n[+]reconciles ok\n[+]threads ok\nhealthz check passed\n")
    assert get(port, "/readyz?verbose") == (
        200, "[+]informers ok\n[+]kinds ok\nreadyz check passed\n")


def test_each_check_has_its_own_path(probes) -> None:
    """/healthz/threads fails with its line while /healthz/reflectors passes; an unknown
    check is 404."""
    p, port = probes
    p.broken.append("thread kinrun-x died: TypeError (see the log)")
    assert get(port, "/healthz/threads") == (
        500, "healthz check failed\n[-]thread kinrun-x died: TypeError (see the log)\n")
    assert get(port, "/healthz/reflectors") == (200, "ok\n")
    assert get(port, "/healthz?verbose")[1].startswith("healthz check failed\n[+]reflectors ok")
    assert get(port, "/healthz/nope")[0] == 404


def test_an_added_ready_check_fails_readyz_and_has_a_path(probes) -> None:
    """add_ready_check: /readyz fails naming it; /readyz/NAME answers it alone."""
    p, port = probes
    p.add_ready_check(lambda: ["webhook server: not listening"], "webhooks")
    assert get(port, "/readyz") == (500, "readyz check failed\n[-]webhook server: not listening\n")
    assert get(port, "/readyz/webhooks")[0] == 500
    assert get(port, "/readyz/informers") == (200, "ok\n")
