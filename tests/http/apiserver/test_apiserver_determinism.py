"""A seeded embedded server with an injected clock gives byte-identical objects for the same
writes (what ``kinrun test`` needs); without a seed uids stay random."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import kubernetes
import orjson
import pytest

from kinrun.testing.apiserver import EmbeddedAPIServer

from apiserver_http import call, configmap

START = 1_700_000_000.0
CM = "/api/v1/namespaces/default/configmaps"


class SteppedClock:
    """Wall-clock epoch seconds that move only when ``step`` is called."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now

    def step(self, seconds: float) -> None:
        self.now += seconds


def replay(server: EmbeddedAPIServer, clock: SteppedClock) -> list[bytes]:
    """The same writes on ``server`` (clock stepped between them); returns every answer's body
    and the final lists, as JSON bytes."""
    client = kubernetes.config.new_client_from_config(config_file=server.kubeconfig_path)
    client.user_agent = "determinism-test/1.0"
    out = []
    try:
        def send(method: str, path: str, **kw: Any) -> None:
            out.append(orjson.dumps(call(client, method, path, **kw).body))
            clock.step(1.5)

        send("POST", CM, body=configmap("a", data={"k": "1"}))
        send("POST", CM, body={**configmap(""), "metadata": {"generateName": "gen-"}})
        send("PATCH", f"{CM}/a", body={"data": {"k": "2"}}, query={"fieldManager": "patcher"},
             content_type="application/merge-patch+json")
        apply_body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: '3'}\n"
        send("PATCH", f"{CM}/a", body=apply_body, query={"fieldManager": "ctrl"},
             content_type="application/apply-patch+yaml")
        send("PATCH", f"{CM}/a", body=apply_body, query={"fieldManager": "ctrl", "force": "true"},
             content_type="application/apply-patch+yaml")
        send("POST", "/api/v1/namespaces/default/events",
             body={"apiVersion": "v1", "kind": "Event", "metadata": {"generateName": "ev-"},
                   "involvedObject": {"kind": "ConfigMap", "name": "a", "namespace": "default"},
                   "reason": "Tested", "message": "m", "type": "Normal"})
        send("POST", CM, body={**configmap("fin"),
                               "metadata": {"name": "fin", "finalizers": ["x/y"]}})
        send("DELETE", f"{CM}/fin")
        for path in (CM, "/api/v1/namespaces/default/events", "/api/v1/namespaces"):
            send("GET", path)
    finally:
        client.close()
    return out


@pytest.fixture
def servers() -> Iterator[Any]:
    """A factory of started embedded servers, all stopped at the end."""
    with ExitStack() as stack:
        def make(**kw: Any) -> EmbeddedAPIServer:
            return stack.enter_context(EmbeddedAPIServer(**kw))
        yield make


def test_same_seed_and_clock_give_identical_objects(servers: Any) -> None:
    """Two servers with the same seed and clock readings answer the same writes with the same
    bytes: uids, generateName suffixes, creation/deletion/managedFields times, Events."""
    clocks = SteppedClock(), SteppedClock()
    first, second = (replay(servers(seed=7, clock=c), c) for c in clocks)
    assert first == second
    listed = orjson.loads(first[-3])["items"]
    stamps = {i["metadata"]["name"]: i["metadata"]["creationTimestamp"] for i in listed}
    assert stamps["a"] == "2023-11-14T22:13:20Z"       # START, from the clock
    assert any(name.startswith("gen-") and len(name) == 9 for name in stamps)


def test_different_seeds_or_no_seed_give_different_uids(servers: Any) -> None:
    """The seed drives uids and generated names; without one (the default) they are random."""
    def uids_and_names(**kw: Any) -> tuple[list[str], list[str]]:
        clock = SteppedClock()
        items = orjson.loads(replay(servers(clock=clock, **kw), clock)[-3])["items"]
        return [i["metadata"]["uid"] for i in items], [i["metadata"]["name"] for i in items]

    seeded = uids_and_names(seed=7)
    assert uids_and_names(seed=7) == seeded
    assert uids_and_names(seed=8)[0] != seeded[0]
    assert uids_and_names()[0] != uids_and_names()[0]
