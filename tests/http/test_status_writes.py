"""The status action never starts a write loop: on the embedded API server, the sample-controller
example writes a Foo's status once per change of what it reports, and reconciles of a settled
Foo (resyncs, repeated queueing) send no status write at all."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import yaml

from kinrun.config import load
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.testing.apiserver import EmbeddedAPIServer

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "configs" / "sample-controller.yaml"
CRD = ROOT / "examples" / "crds" / "foo.yaml"
WAIT = 30.0
KEY = "default/example-foo"


class CountingClient:
    """The real Client, counting each status write it executes (thread-safe)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.status_writes: list[Any] = []

    def execute(self, req: Any, **kwargs: Any) -> Any:
        if req.subresource == "status":
            with self._lock:
                self.status_writes.append(req.body)
        return self._client.execute(req, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


class Reconciles:
    """The ``wrap`` observer: counts finished reconciles and lets a test wait for a count."""

    def __init__(self) -> None:
        self.done = 0
        self._cond = threading.Condition()

    def wrap(self, controller: str, reconcile: Any) -> Any:
        def observed(key: str, obj: Any, cause: Any = None) -> Any:
            try:
                return reconcile(key, obj, cause)
            finally:
                with self._cond:
                    self.done += 1
                    self._cond.notify_all()
        return observed

    def wait(self, count: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.done >= count, WAIT)


def foo_status(server: EmbeddedAPIServer) -> dict[str, Any]:
    return (server.store.get("samplecontroller.k8s.io/v1alpha1", "Foo", "example-foo",
                             "default") or {}).get("status") or {}


def wait_until(condition: Any, what: str) -> None:
    event = threading.Event()
    for _ in range(int(WAIT / 0.05)):
        if condition():
            return
        event.wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_settled_status_is_not_written_again(embedded_server: EmbeddedAPIServer) -> None:
    """Two status writes (0, then 2 available), then 20 reconciles of the settled Foo: none."""
    embedded_server.load([yaml.safe_load(CRD.read_text())])
    embedded_server.load([{"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                           "metadata": {"name": "example-foo", "namespace": "default"},
                           "spec": {"deploymentName": "example-foo", "replicas": 2}}])
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path, qps=0)
    counting, reconciles = CountingClient(client), Reconciles()
    manager = plan(load(str(CONFIG))).bind(counting).manager(wrap=reconciles.wrap)
    try:
        assert manager.start(threading.Event(), WAIT)
        wait_until(lambda: foo_status(embedded_server) == {"availableReplicas": 0},
                   "status.availableReplicas 0")
        deploy = embedded_server.store.get("apps/v1", "Deployment", "example-foo", "default")
        client.patch_status("apps/v1", "Deployment", "example-foo",  # as its controller would
                            {"status": {"replicas": 2, "availableReplicas": 2}},
                            namespace="default")
        wait_until(lambda: foo_status(embedded_server) == {"availableReplicas": 2},
                   "status.availableReplicas 2")
        assert deploy is not None
        assert [w["status"] for w in counting.status_writes] == [
            {"availableReplicas": 0}, {"availableReplicas": 2}]
        controller = manager.controllers["sample-controller"]
        for _ in range(20):  # as resyncs would: the same Foo, again and again
            settled = reconciles.done
            controller.enqueue(KEY)
            assert reconciles.wait(settled + 1)
        assert len(counting.status_writes) == 2
    finally:
        manager.stop(5.0)
        client.close()
