"""The ``children`` action end to end on a real kube-apiserver 1.20 (envtest tier), the same
scenario as the embedded-server test tests/http/test_children_graph.py: it runs
examples/configs/web-application.yaml as written (its informers watch every namespace; the
test's objects go into a namespace of their own) with real worker threads and proves that

- the ConfigMap, then the Deployment are applied, and the Service waits (the parent's Ready
  condition is False, ChildNotReady, naming the Deployment) until the test makes the
  Deployment available by writing its status (no controller-manager runs here); then the
  Service, which gets a cluster IP the real server allocates, and the Ingress follow: the
  controller's applies go ConfigMap < Deployment < Service < Ingress;
- a hand edit of a field the config sets (the Deployment's ``spec.replicas``, by another field
  manager) is reverted by one apply of the Deployment and nothing else, and Ready then names
  the generation not observed yet;
- a label added to the ConfigMap (a field the config does not set) causes no write at all;
- a deleted Service is recreated with Service applies only;
- disabling the ingress deletes the Ingress (one delete, nothing else);
- deleting the parent deletes the Service, the Deployment and the ConfigMap in that order
  before the finalizer goes (no garbage collector runs here: kinrun's teardown does it).

The order and the count of writes are read from the writes the controller sends (its client
records them), restricted to the test's namespace."""

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

from polling import wait_until

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "configs" / "web-application.yaml"
CRD = ROOT / "examples" / "crds" / "webapplication.yaml"
APP, KIND = "example.com/v1alpha1", "WebApplication"
WAIT = 60.0
CHILD_KINDS = ("ConfigMap", "Deployment", "Service", "Ingress")
CHILD_INFORMERS = (("configmap", "v1"), ("deployment", "apps/v1"), ("service", "v1"),
                   ("ingress", "networking.k8s.io/v1"))


class Recording:
    """The real Client, recording each write it sends as ``(verb, kind, name, namespace)``
    (thread-safe)."""

    def __init__(self, client: Client, namespace: str) -> None:
        self._client, self._ns, self._lock = client, namespace, threading.Lock()
        self.writes: list[tuple[str, str, str, str | None]] = []

    def execute(self, req: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.writes.append((req.verb, req.kind, req.name, req.namespace))
        return self._client.execute(req, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def since(self, mark: int) -> list[tuple[str, str, str]]:
        """The writes of child kinds in the test's namespace sent after the first ``mark``."""
        with self._lock:
            return [(verb, kind, name) for verb, kind, name, ns in self.writes[mark:]
                    if kind in CHILD_KINDS and ns == self._ns]


def _served(server: EnvtestServer) -> bool:
    """Whether a new client's discovery finds the WebApplication kind."""
    with Client.from_config(kubeconfig=server.kubeconfig_path) as client:
        try:
            client.resolve(APP, KIND)
        except Exception:  # noqa: BLE001 - UnknownKindError until the CRD is served
            return False
        return True


@pytest.fixture
def running(envtest_server: EnvtestServer, envtest_namespace: str) -> Iterator[Any]:
    """(namespace, recording client, manager, a client for the test's own writes)."""
    ns = envtest_namespace
    mine = Client.from_config(kubeconfig=envtest_server.kubeconfig_path)
    try:
        mine.create(yaml.safe_load(CRD.read_text()))
    except ConflictError:
        pass  # installed by an earlier test of this session
    wait_until(lambda: _served(envtest_server), "the WebApplication CRD served")
    recording = Recording(Client.from_config(kubeconfig=envtest_server.kubeconfig_path), ns)
    manager = plan(load(str(CONFIG))).bind(recording).manager()
    assert manager.start(threading.Event(), WAIT)
    try:
        yield ns, recording, manager, mine
    finally:
        manager.stop(5.0)
        mine.close()


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
    """What the Deployment controller would write: the latest generation seen, all available."""
    generation = client.get("apps/v1", "Deployment", "shop", ns)["metadata"]["generation"]
    client.patch_status("apps/v1", "Deployment", "shop", {"status": {
        "observedGeneration": generation, "replicas": 2, "readyReplicas": 2,
        "updatedReplicas": 2, "availableReplicas": 2,
        "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                        "message": "up", "lastUpdateTime": "2026-12-04T00:00:00Z",
                        "lastTransitionTime": "2026-12-04T00:00:00Z"}]}}, namespace=ns)


def _quiet(client: Client, manager: Any, ns: str) -> None:
    """Every child in the namespace is in the controller's cache at the server's latest
    resourceVersion, and its queue is idle (none queued, none being reconciled)."""
    def caught_up() -> bool:
        for short, api_version in CHILD_INFORMERS:
            for cached in manager.informers[f"webapp-children-{short}"].lister.list(ns):
                live = _get(client, api_version, cached["kind"], cached["metadata"]["name"], ns)
                if (live or {}).get("metadata", {}).get("resourceVersion") != \
                        cached["metadata"]["resourceVersion"]:
                    return False
        return manager.controllers["webapp"].queue.idle()
    wait_until(caught_up, "the caches caught up and an idle queue")


def test_children_graph_on_kube_apiserver(running: Any) -> None:
    ns, recording, manager, mine = running
    mine.create({"apiVersion": APP, "kind": KIND, "metadata": {"name": "shop", "namespace": ns},
                 "spec": {"image": "nginx", "replicas": 2, "config": {"MODE": "prod"},
                          "ingress": {"enabled": True, "host": "shop.example.com"}}}, namespace=ns)
    wait_until(lambda: _ready(mine, ns).get("message", "").startswith("deployment:"),
          "Ready False, naming the Deployment")
    assert mine.get("v1", "ConfigMap", "shop-config", ns)["data"] == {"MODE": "prod"}
    assert _get(mine, "apps/v1", "Deployment", "shop", ns) is not None
    assert _get(mine, "v1", "Service", "shop", ns) is None
    assert (_ready(mine, ns)["status"], _ready(mine, ns)["reason"]) == ("False", "ChildNotReady")

    # Available: the Service (with a real cluster IP), then the Ingress that reads it.
    _make_available(mine, ns)
    wait_until(lambda: _ready(mine, ns).get("status") == "True", "Ready True")
    service = mine.get("v1", "Service", "shop", ns)
    assert service["spec"]["clusterIP"].count(".") == 3  # allocated by kube-apiserver
    ingress = mine.get("networking.k8s.io/v1", "Ingress", "shop", ns)
    assert ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"] == "shop"
    applies = [w[1] for w in recording.since(0) if w[0] == "apply"]
    assert [applies.index(k) for k in CHILD_KINDS] == sorted(applies.index(k) for k in CHILD_KINDS)
    assert mine.get(APP, KIND, "shop", ns)["status"]["availableReplicas"] == 2

    # A hand edit of a field the config sets: one apply of the Deployment only.
    _quiet(mine, manager, ns)
    mark = len(recording.writes)
    mine.patch("apps/v1", "Deployment", "shop", {"spec": {"replicas": 5}}, namespace=ns)
    wait_until(lambda: mine.get("apps/v1", "Deployment", "shop", ns)["spec"]["replicas"] == 2,
          "the hand edit reverted")
    _quiet(mine, manager, ns)
    assert recording.since(mark) == [("apply", "Deployment", "shop")]
    assert _ready(mine, ns)["message"] == "deployment: generation 3 not observed yet"
    _make_available(mine, ns)
    wait_until(lambda: _ready(mine, ns).get("status") == "True", "Ready True again")

    # A field the config does not set: nothing to correct, no write.
    _quiet(mine, manager, ns)
    mark = len(recording.writes)
    mine.patch("v1", "ConfigMap", "shop-config", {"metadata": {"labels": {"team": "x"}}},
               namespace=ns)
    _quiet(mine, manager, ns)
    assert recording.since(mark) == []

    # A deleted Service is recreated (a new uid), with Service applies only.
    uid = mine.get("v1", "Service", "shop", ns)["metadata"]["uid"]
    mark = len(recording.writes)
    mine.delete("v1", "Service", "shop", ns)
    wait_until(lambda: ((_get(mine, "v1", "Service", "shop", ns) or {}).get("metadata") or {}).get(
        "uid", uid) != uid, "the deleted Service recreated")
    _quiet(mine, manager, ns)
    assert set(recording.since(mark)) == {("apply", "Service", "shop")}  # see docs/children.md

    # A child no longer wanted is deleted.
    mark = len(recording.writes)
    mine.patch(APP, KIND, "shop", {"spec": {"ingress": {"enabled": False}}}, namespace=ns)
    wait_until(lambda: _get(mine, "networking.k8s.io/v1", "Ingress", "shop", ns) is None,
          "the Ingress no longer wanted deleted")
    _quiet(mine, manager, ns)
    assert recording.since(mark) == [("delete", "Ingress", "shop")]

    # Deleting the parent: its children in reverse order, then the finalizer goes.
    mark = len(recording.writes)
    mine.delete(APP, KIND, "shop", ns)
    wait_until(lambda: _get(mine, APP, KIND, "shop", ns) is None, "the WebApplication gone")
    assert recording.since(mark) == [("delete", "Service", "shop"),
                                     ("delete", "Deployment", "shop"),
                                     ("delete", "ConfigMap", "shop-config")]
    for api_version, kind, name in (("v1", "Service", "shop"), ("apps/v1", "Deployment", "shop"),
                                    ("v1", "ConfigMap", "shop-config")):
        assert _get(mine, api_version, kind, name, ns) is None, f"{kind} {name} left behind"
