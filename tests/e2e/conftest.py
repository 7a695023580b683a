"""End-to-end fixtures: ``cluster`` runs each test against kinrun's ``--embedded`` server and
against a real kube-apiserver (envtest; skipped with a reason when its assets are absent).

``cluster.run(config, seeds=...)`` starts ``kinrun CONFIG`` as a subprocess:
  * embedded: ``kinrun CONFIG --embedded --seed FILE``; the test's client uses the kubeconfig
    kinrun prints (``export KUBECONFIG=...``); namespace ``default``;
  * envtest: seeds are created first, then ``kinrun CONFIG --kubeconfig K --namespace NS`` with
    a namespace of the test's own (the shared server never finishes deleting namespaces).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from kinrun.errors import ConflictError
from kinrun.kube import Client

from .harness import KinrunProcess, wait_for_object

BACKENDS = ["embedded", "envtest"]


class Cluster:
    """One test's API server and the kinrun processes started against it."""

    def __init__(self, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
        self.backend, self.tmp_path = backend, tmp_path
        self.processes: list[KinrunProcess] = []
        self.client: Client | None = None
        self.server: Any = None
        self.namespace = "default"
        if backend == "envtest":
            self.server = request.getfixturevalue("envtest_server")
            self.namespace = request.getfixturevalue("envtest_namespace")
            self.client = Client.from_config(kubeconfig=self.server.kubeconfig_path)

    def name(self, base: str) -> str:
        """A cluster-scoped name unique to this test (envtest shares one server)."""
        return base if self.backend == "embedded" else f"{base}-{self.namespace}"[:63]

    def obj(self, obj: dict[str, Any]) -> dict[str, Any]:
        """``obj`` with this test's namespace set (namespaced kinds only: not Node, Namespace
        or CustomResourceDefinition)."""
        obj = orjson.loads(orjson.dumps(obj))
        if obj["kind"] not in ("Node", "Namespace", "CustomResourceDefinition"):
            obj["metadata"]["namespace"] = self.namespace
        return obj

    def shared(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """The seeds for a cluster-scoped ``obj`` every test may share (a Namespace, a CRD):
        ``[obj]`` on embedded; on envtest ``obj`` is created once per server (a conflict means
        an earlier test made it), a CRD is waited for until Established, and ``[]`` returned."""
        if self.backend == "embedded":
            return [obj]
        assert self.client is not None
        try:
            self.client.create(obj)
        except ConflictError:
            pass
        if obj["kind"] == "CustomResourceDefinition":
            wait_for_object(self.client, obj["apiVersion"], obj["kind"], obj["metadata"]["name"],
                            None, lambda o: o is not None and any(
                                c["type"] == "Established" and c["status"] == "True"
                                for c in (o.get("status") or {}).get("conditions") or []))
        return []

    def run(self, config: str, *, seeds: Sequence[dict[str, Any]] = (),
            args: Sequence[str] = ()) -> KinrunProcess:
        """Start kinrun on ``config`` (path relative to the repo) with ``seeds`` existing."""
        seeds = [self.obj(s) for s in seeds]
        if self.backend == "embedded":
            cmd = [config, "--embedded", *args]
            if seeds:
                seed_file = self.tmp_path / f"seeds-{len(self.processes)}.json"
                seed_file.write_bytes(b"\n---\n".join(orjson.dumps(s) for s in seeds))
                cmd += ["--seed", str(seed_file)]
            proc = KinrunProcess(cmd)
            self.processes.append(proc)
            self.client = Client.from_config(kubeconfig=proc.kubeconfig())
            return proc
        assert self.client is not None
        for obj in seeds:
            self.client.create(obj)
        proc = KinrunProcess([config, "--kubeconfig", self.server.kubeconfig_path,
                              "--namespace", self.namespace, *args])
        self.processes.append(proc)
        return proc

    def close(self) -> None:
        """Kill every kinrun process and print its log (pytest shows it when the test failed:
        a wait for an object says what it last saw, not what kinrun did meanwhile)."""
        for number, proc in enumerate(self.processes):
            proc.kill()
            print(f"--- kinrun process {number} ({self.backend}) log:\n{proc.log()}")
        if self.client is not None:
            self.client.close()


@pytest.fixture(params=BACKENDS)
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """An API server to run kinrun against: the embedded one, then a real one (envtest)."""
    cluster = Cluster(request.param, tmp_path, request)
    try:
        yield cluster
    finally:
        cluster.close()
