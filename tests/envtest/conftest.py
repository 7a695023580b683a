"""Fixtures of the envtest tier: raw clients, and the differential pair (embedded vs real).

``both`` gives a ``Pair``: one RawKube per server ("envtest" = the real kube-apiserver,
"embedded" = ``kinrun.testing.apiserver.EmbeddedAPIServer``), each with a fresh namespace made
for the test. ``pair.run(scenario)`` replays the same request sequence against both and returns
the normalized outcomes; tests assert the real one's behaviour, then that the embedded one
matches it.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kinrun.testing.envtest import EnvtestServer, unique_namespace_name

from .normalize import cm_path, configmap, create, event
from .rawkube import RawKube

# The embedded server used for differential tests keeps a short history, so "too old
# resourceVersion" can be provoked by writing more than this many objects.
EMBEDDED_HISTORY = 20
EMBEDDED_BOOKMARK_INTERVAL = 1.0


@pytest.fixture(scope="session")
def envtest_raw(envtest_server: EnvtestServer) -> RawKube:
    """RawKube for the session's real kube-apiserver (admin token)."""
    return RawKube(envtest_server.kubeconfig_path, "envtest")


@pytest.fixture(scope="session")
def embedded_for_diff() -> Iterator[Any]:
    """An EmbeddedAPIServer for differential tests (short history, 1 s bookmarks)."""
    from kinrun.testing.apiserver import EmbeddedAPIServer

    with EmbeddedAPIServer(port=0, bookmark_interval=EMBEDDED_BOOKMARK_INTERVAL,
                           history_size=EMBEDDED_HISTORY) as srv:
        yield srv


@pytest.fixture(scope="session")
def embedded_raw(embedded_for_diff: Any) -> RawKube:
    """RawKube for the differential embedded server."""
    return RawKube(embedded_for_diff.kubeconfig_path, "embedded")


_CHILD = """
import sys
from kinrun.testing.apiserver import EmbeddedAPIServer
with EmbeddedAPIServer(port=0) as srv:
    print(srv.kubeconfig_path, flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def isolated_embedded_raw() -> Iterator[RawKube]:
    """RawKube for an EmbeddedAPIServer in a child process, for requests that may hang or spin
    the server (a stuck handler thread then dies with the child instead of holding the GIL of
    the test process)."""
    child = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        kubeconfig = child.stdout.readline().strip() if child.stdout else ""
        assert kubeconfig, "the embedded server child did not start"
        yield RawKube(kubeconfig, "embedded")
    finally:
        child.kill()
        child.wait(10)


@dataclass
class Target:
    """One server under test: its raw client, the test's namespace, and two hooks.

    ``expire_history()``: make every resourceVersion handed out so far too old, the natural
    way (real: etcd compaction; embedded: more writes than its history holds).
    ``expire_continue_tokens()``: make continue tokens issued so far too old (real: etcd
    compaction; embedded: its fault switch)."""

    name: str
    kube: RawKube
    ns: str
    expire_history: Callable[[], None]
    expire_continue_tokens: Callable[[], None]


Scenario = Callable[[Target], Any]


@dataclass
class Pair:
    """The real and the embedded server, each with its own namespace for this test."""

    envtest: Target
    embedded: Target

    def run(self, scenario: Scenario) -> tuple[Any, Any]:
        """Run ``scenario`` against the real server, then the embedded one: (real, embedded)."""
        return scenario(self.envtest), scenario(self.embedded)


def _create_namespace(kube: RawKube, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    resp = kube.request("POST", "/api/v1/namespaces", body)
    assert resp.status == 201, f"{kube.label}: create namespace {name}: {resp}"


@pytest.fixture
def both(envtest_server: EnvtestServer, envtest_raw: RawKube, embedded_for_diff: Any,
         embedded_raw: RawKube, request: pytest.FixtureRequest) -> Pair:
    """A Pair with a fresh namespace on each server (same name on both)."""
    ns = unique_namespace_name(request.node.name)
    _create_namespace(envtest_raw, ns)
    _create_namespace(embedded_raw, ns)

    def compact() -> None:
        envtest_server.compact_etcd()

    return Pair(
        Target("envtest", envtest_raw, ns, compact, compact),
        Target("embedded", embedded_raw, ns, lambda: _overflow_history(embedded_raw),
               embedded_for_diff.faults.expire_continue_tokens),
    )


SCRATCH_NS = "kinrun-scratch"


def _overflow_history(kube: RawKube) -> None:
    """Write more ConfigMaps and Events than the embedded server's history holds (in a
    scratch namespace), whether its history is global or per resource."""
    if kube.get(f"/api/v1/namespaces/{SCRATCH_NS}").status == 404:
        _create_namespace(kube, SCRATCH_NS)
    for _ in range(2 * EMBEDDED_HISTORY):  # the log keeps capacity + 25% before trimming
        for path, body in ((cm_path(SCRATCH_NS), configmap("")),
                           (f"/api/v1/namespaces/{SCRATCH_NS}/events", event("", SCRATCH_NS))):
            body["metadata"] = {"generateName": "fill-"}
            create(kube, path, body)
