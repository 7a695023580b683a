"""The ``children`` action on a real kube-apiserver 1.20 (issue "children as a graph"), running
examples/configs/web-application.yaml restricted to the test's namespace, with real worker
threads: the ConfigMap, then the Deployment; the Service once the test makes the Deployment
available (no controller-manager runs: the test writes its status), with a cluster IP the real
server allocates; then the Ingress; the Ready condition. A hand edit of a field the config
sets (`spec.replicas`, as `kubectl scale` would, another field manager) is reverted by one
apply of that child alone; deleting the parent deletes the Ingress, Service, Deployment and
ConfigMap in that order (no garbage collector runs here: kinrun's teardown does it) before
the finalizer goes. The order is read from the writes the controller sends."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kinrun.config import load
from kinrun.errors import ConflictError, NotFoundError
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.testing.envtest import EnvtestServer

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "configs" / "web-application.yaml"
CRD = ROOT / "examples" / "crds" / "webapplication.yaml"
APP, KIND = "example.com/v1alpha1", "WebApplication"
WAIT = 60.0
CHILD_KINDS = ("ConfigMap", "Deployment", "Service", "Ingress")


class Recording:
    """The real Client, recording each write it sends as ``(verb, kind, name)``."""

    def __init__(self, client: Client) -> None:
        self._client, self._lock = client, threading.Lock()
        self.writes: list[tuple[str, str, str]] = []

    def execute(self, req: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.writes.append((req.verb, req.kind, req.name))
        return self._client.execute(req, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def since(self, mark: int) -> list[tuple[str, str, str]]:
        with self._lock:
            return [w for w in self.writes[mark:] if w[1] in CHILD_KINDS]


def _wait(condition: Any, what: str) -> None:
    event = threading.Event()
    for _ in range(int(WAIT / 0.05)):
        if condition():
            return
        event.wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def running(envtest_server: EnvtestServer, envtest_namespace: str) -> Iterator[Any]:
    """(namespace, recording client, manager, a client for the test's own writes)."""
    ns = envtest_namespace
    mine = Client.from_config(kubeconfig=envtest_server.kubeconfig_path)
    try:
        mine.create(yaml.safe_load(CRD.read_text()))
    except ConflictError:
        pass  # made by an earlier test of this session
    _wait(lambda: _fresh_served(envtest_server), "the WebApplication CRD served")
    recording = Recording(Client.from_config(kubeconfig=envtest_server.kubeconfig_path))
    manager = plan(load(str(CONFIG)).with_namespace(ns)).bind(recording).manager()
    assert manager.start(threading.Event(), WAIT)
    try:
        yield ns, recording, manager, mine
    finally:
        manager.stop(5.0)
        mine.close()


def _fresh_served(server: EnvtestServer) -> bool:
    """Whether a new client's discovery finds the WebApplication kind."""
    with Client.from_config(kubeconfig=server.kubeconfig_path) as client:
        try:
            client.resolve(APP, KIND)
        except Exception:  # noqa: BLE001 - UnknownKindError until the CRD is served
            return False
        return True


def _get(client: Client, api_version: str, kind: str, name: str, ns: str) -> Any:
    try:
        return client.get(api_version, kind, name, ns)
    except NotFoundError:
        return None


def _ready(client: Client, ns: str) -> dict[str, Any]:
    app = _get(client, APP, KIND, "shop", ns) or {}
    return next((c for c in (app.get("status") or {}).get("conditions") or ()
                 if c.get("type") == "Ready"), {})


def _make_available(client: Client, ns: str) -> None:
    generation = client.get("apps/v1", "Deployment", "shop", ns)["metadata"]["generation"]
    client.patch_status("apps/v1", "Deployment", "shop", {"status": {
        "observedGeneration": generation, "replicas": 2, "readyReplicas": 2,
        "updatedReplicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                        "message": "up", "lastUpdateTime": "2026-12-04T00:00:00Z",
                        "lastTransitionTime": "2026-12-04T00:00:00Z"}]}}, namespace=ns)


def _quiet(client: Client, manager: Any, ns: str) -> None:
    """Every child's latest version is in the controller's cache and its queue is idle."""
    def caught_up() -> bool:
        for short, api_version in (("configmap", "v1"), ("deployment", "apps/v1"),
                                   ("service", "v1"), ("ingress", "networking.k8s.io/v1")):
            for cached in manager.informers[f"webapp-children-{short}"].lister.list(ns):
                live = _get(client, api_version, cached["kind"], cached["metadata"]["name"], ns)
                if (live or {}).get("metadata", {}).get("resourceVersion") != \
                        cached["metadata"]["resourceVersion"]:
                    return False
        return manager.controllers["webapp"].queue.idle()
    _wait(caught_up, "the caches caught up and an idle queue")


def test_children_on_kube_apiserver(running: Any) -> None:
    ns, recording, manager, mine = running
    mine.create({"apiVersion": APP, "kind": KIND, "metadata": {"name": "shop", "namespace": ns},
                 "spec": {"image": "nginx", "replicas": 2, "config": {"MODE": "prod"},
                          "ingress": {"enabled": True, "host": "shop.example.com"}}}, namespace=ns)
    _wait(lambda: _ready(mine, ns).get("message", "").startswith("deployment:"),
          "Ready False, naming the Deployment")
    assert _get(mine, "v1", "Service", "shop", ns) is None

    _make_available(mine, ns)
    _wait(lambda: _ready(mine, ns).get("status") == "True", "Ready True")
    service = mine.get("v1", "Service", "shop", ns)
    assert service["spec"]["clusterIP"].count(".") == 3  # allocated by kube-apiserver
    applies = [w[1] for w in recording.since(0) if w[0] == "apply"]
    assert [applies.index(k) for k in CHILD_KINDS] == sorted(applies.index(k) for k in CHILD_KINDS)

    _quiet(mine, manager, ns)
    mark = len(recording.writes)
    mine.patch("apps/v1", "Deployment", "shop", {"spec": {"replicas": 5}}, namespace=ns)
    _wait(lambda: mine.get("apps/v1", "Deployment", "shop", ns)["spec"]["replicas"] == 2,
          "the hand edit reverted")
    _quiet(mine, manager, ns)
    assert recording.since(mark) == [("apply", "Deployment", "shop")]

    mark = len(recording.writes)
    mine.delete(APP, KIND, "shop", ns)
    _wait(lambda: _get(mine, APP, KIND, "shop", ns) is None, "the WebApplication gone")
    assert recording.since(mark) == [("delete", "Ingress", "shop"), ("delete", "Service", "shop"),
                                     ("delete", "Deployment", "shop"),
                                     ("delete", "ConfigMap", "shop-config")]
