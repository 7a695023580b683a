"""The ``children`` action end to end on the embedded API server, with real worker threads,
running examples/configs/web-application.yaml (issue "children as a graph"): children are
applied in dependency order once what they wait for is ready (the test makes the Deployment
available by patching its status: there is no controller-manager); the parent's Ready
condition names the child it waits for; a hand edit or deletion of one child re-applies that
child only; a child no longer wanted is deleted; deleting the parent deletes its children in
reverse order before the finalizer goes. The order is read from the writes the controller
sends (its client records them)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from kinrun.config import load
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.testing.apiserver import EmbeddedAPIServer

from polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "configs" / "web-application.yaml"
CRD = ROOT / "examples" / "crds" / "webapplication.yaml"
NS = "default"
APP = "example.com/v1alpha1"
APP_KIND = "WebApplication"


class Recording:
    """The real Client, recording each write it sends as ``(verb, kind, name)`` (thread-safe)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.writes: list[tuple[str, str, str]] = []

    def execute(self, req: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.writes.append((req.verb, req.kind, req.name))
        return self._client.execute(req, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def since(self, mark: int, kinds: tuple[str, ...] = ("ConfigMap", "Deployment", "Service",
                                                          "Ingress")) -> list[tuple[str, str, str]]:
        """The writes of child kinds sent after the first ``mark`` writes."""
        with self._lock:
            return [w for w in self.writes[mark:] if w[1] in kinds]


@pytest.fixture
def running(embedded_server: EmbeddedAPIServer) -> Any:
    """(server, recording client, manager, a plain client for the test's own writes)."""
    embedded_server.load([yaml.safe_load(CRD.read_text())])
    mine = Client.from_config(kubeconfig=str(embedded_server.kubeconfig_path), qps=0)
    recording = Recording(Client.from_config(kubeconfig=str(embedded_server.kubeconfig_path),
                                             qps=0))
    manager = plan(load(str(CONFIG))).bind(recording).manager()
    assert manager.start(threading.Event(), 30.0)
    try:
        yield embedded_server, recording, manager, mine
    finally:
        manager.stop(5.0)
        mine.close()


def _get(server: EmbeddedAPIServer, api_version: str, kind: str, name: str) -> Any:
    return server.store.get(api_version, kind, name, NS)


def _ready(server: EmbeddedAPIServer) -> dict[str, Any]:
    app = _get(server, APP, APP_KIND, "shop") or {}
    return next((c for c in (app.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "Ready"), {})


def _make_available(client: Client, name: str = "shop") -> None:
    """What the Deployment controller would write: the latest generation seen, all available."""
    generation = client.get("apps/v1", "Deployment", name, NS)["metadata"]["generation"]
    client.patch_status("apps/v1", "Deployment", name, {"status": {
        "observedGeneration": generation, "replicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}},
        namespace=NS)


def _quiet(server: EmbeddedAPIServer, manager: Any) -> None:
    """Every child's latest version is in the controller's cache and its queue is idle (none
    queued, none being reconciled)."""
    def caught_up() -> bool:
        for kind, api_version in (("configmap", "v1"), ("deployment", "apps/v1"),
                                  ("service", "v1"), ("ingress", "networking.k8s.io/v1")):
            lister = manager.informers[f"webapp-children-{kind}"].lister
            for cached in lister.list():
                m = cached["metadata"]
                live = _get(server, api_version, cached["kind"], m["name"]) or {}
                if (live.get("metadata") or {}).get("resourceVersion") != m["resourceVersion"]:
                    return False
        queue = manager.controllers["webapp"].queue
        return queue.idle()
    wait_until(caught_up, "the caches caught up and an empty queue")


def test_children_apply_in_order_correct_drift_and_delete_in_reverse(running: Any) -> None:
    server, recording, manager, mine = running
    mine.create({"apiVersion": APP, "kind": APP_KIND, "metadata": {"name": "shop"},
                 "spec": {"image": "nginx", "replicas": 2, "config": {"MODE": "prod"},
                          "ingress": {"enabled": True, "host": "shop.example.com"}}},
                namespace=NS)
    wait_until(lambda: _ready(server).get("message", "").startswith("deployment:"),
          "Ready False, naming the Deployment")
    assert _get(server, "v1", "ConfigMap", "shop-config")["data"] == {"MODE": "prod"}
    assert _get(server, "apps/v1", "Deployment", "shop") is not None
    assert _get(server, "v1", "Service", "shop") is None
    assert (_ready(server)["status"], _ready(server)["reason"]) == ("False", "ChildNotReady")

    _make_available(mine)
    wait_until(lambda: _ready(server).get("status") == "True", "Ready True")
    ingress = _get(server, "networking.k8s.io/v1", "Ingress", "shop")
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == "shop"
    applies = [w[1] for w in recording.since(0) if w[0] == "apply"]
    assert [applies.index(k) for k in ("ConfigMap", "Deployment", "Service", "Ingress")] \
        == sorted(applies.index(k) for k in ("ConfigMap", "Deployment", "Service", "Ingress"))
    assert _get(server, APP, APP_KIND, "shop")["status"]["availableReplicas"] == 2

    _quiet(server, manager)
    mark = len(recording.writes)
    mine.patch("apps/v1", "Deployment", "shop", {"spec": {"replicas": 5}}, namespace=NS)
    wait_until(lambda: _get(server, "apps/v1", "Deployment", "shop")["spec"]["replicas"] == 2,
          "the hand edit reverted")
    _quiet(server, manager)
    assert recording.since(mark) == [("apply", "Deployment", "shop")]
    assert _ready(server)["message"] == "deployment: generation 3 not observed yet"
    _make_available(mine)
    wait_until(lambda: _ready(server).get("status") == "True", "Ready True again")

    mark = len(recording.writes)
    mine.patch("v1", "ConfigMap", "shop-config", {"metadata": {"labels": {"team": "x"}}},
               namespace=NS)  # a field the config does not set: nothing to correct
    _quiet(server, manager)
    assert recording.since(mark) == []

    uid = _get(server, "v1", "Service", "shop")["metadata"]["uid"]
    mark = len(recording.writes)
    mine.delete("v1", "Service", "shop", NS)
    wait_until(lambda: (_get(server, "v1", "Service", "shop") or {}).get("metadata", {}).get(
        "uid", uid) != uid, "the deleted Service recreated")
    _quiet(server, manager)
    assert set(recording.since(mark)) == {("apply", "Service", "shop")}  # see docs/children.md

    mark = len(recording.writes)
    mine.patch(APP, APP_KIND, "shop", {"spec": {"ingress": {"enabled": False}}}, namespace=NS)
    wait_until(lambda: _get(server, "networking.k8s.io/v1", "Ingress", "shop") is None,
          "the Ingress no longer wanted deleted")
    _quiet(server, manager)
    assert recording.since(mark) == [("delete", "Ingress", "shop")]

    mark = len(recording.writes)
    mine.delete(APP, APP_KIND, "shop", NS)
    wait_until(lambda: _get(server, APP, APP_KIND, "shop") is None, "the WebApplication gone")
    assert recording.since(mark) == [("delete", "Service", "shop"),
                                     ("delete", "Deployment", "shop"),
                                     ("delete", "ConfigMap", "shop-config")]
