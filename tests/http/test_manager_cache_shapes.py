"""What a config's informers cache: metadata-only informers (``metadataOnly``) and pruning
transforms (``transform.drop``), through the Manager and the real client on the embedded API
server."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.manager import Manager
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

WAIT = 30.0


class Recorder:
    """A hook plugin putting (controller, key, obj) of every reconcile on a queue."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[str, str, Any]] = queue.Queue()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.put((controller, key, obj))

    def until(self, controller: str, key: str) -> Any:
        while True:
            got = self.calls.get(timeout=WAIT)
            if got[:2] == (controller, key):
                return got[2]


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


def start(text: str, client: Client) -> tuple[Manager, Recorder]:
    recorder = Recorder()
    pm = new_plugin_manager()
    pm.register(recorder, name="recorder")
    manager = plan(load_text(text), plugin_manager=pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    return manager, recorder


def pod(name: str, owner_uid: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"app": "web"},
                            "annotations": {"note": "kept", "big": "x" * 100}}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                                    "uid": owner_uid, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "env": [{"name": "A", "value": "1"}]}],
                     "volumes": [{"name": "v", "emptyDir": {}}]}}


def test_metadata_only_primary_reconciles_metadata_with_the_real_kind(client: Client) -> None:
    """A metadataOnly primary hands the reconcile apiVersion/kind/metadata only (no spec, no
    managedFields), kind Pod rather than PartialObjectMetadata; an update reaches it."""
    client.create(pod("p1"))
    manager, rec = start("""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {apiVersion: v1, kind: Pod, namespaces: [default], metadataOnly: true}
controllers:
  - {name: c, for: pods, reconcile: {hooks: true}}
""", client)
    try:
        obj = rec.until("c", "default/p1")
        assert set(obj) == {"apiVersion", "kind", "metadata"}
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "Pod")
        assert obj["metadata"]["labels"] == {"app": "web"}
        assert "managedFields" not in obj["metadata"]
        client.patch("v1", "Pod", "p1", {"metadata": {"labels": {"app": "db"}}},
                     namespace="default")
        while rec.until("c", "default/p1")["metadata"]["labels"] != {"app": "db"}:
            pass
    finally:
        manager.stop()


def test_metadata_only_secondary_maps_to_its_owner(client: Client) -> None:
    """A metadataOnly secondary watched with mapTo owner enqueues its controller owner; the
    primary, the same resource kind without metadataOnly, keeps whole objects."""
    owner = client.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "owner", "namespace": "default"},
                           "data": {"k": "v"}})
    manager, rec = start("""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
  pods: {apiVersion: v1, kind: Pod, namespaces: [default], metadataOnly: true}
controllers:
  - name: c
    for: cms
    reconcile: {hooks: true}
    watches: [{informer: pods, mapTo: owner}]
""", client)
    try:
        assert rec.until("c", "default/owner")["data"] == {"k": "v"}
        client.create(pod("child", owner_uid=owner["metadata"]["uid"]))
        assert rec.until("c", "default/owner")["data"] == {"k": "v"}
    finally:
        manager.stop()


def test_transform_drop_prunes_listed_fields_before_caching(client: Client) -> None:
    """transform.drop removes the listed paths (through lists too: every container's env) and
    keeps the rest; an escaped dot names an annotation key."""
    client.create(pod("p1"))
    manager, rec = start(r"""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods:
    apiVersion: v1
    kind: Pod
    namespaces: [default]
    transform:
      drop: [spec.volumes, spec.containers.env, metadata.annotations.big, status]
controllers:
  - {name: c, for: pods, reconcile: {hooks: true}}
""", client)
    try:
        obj = rec.until("c", "default/p1")
        assert "volumes" not in obj["spec"] and "status" not in obj
        assert [{k: c[k] for k in ("name", "image")} for c in obj["spec"]["containers"]] == [
            {"name": "c", "image": "nginx"}]
        assert "env" not in obj["spec"]["containers"][0]
        assert obj["metadata"]["annotations"] == {"note": "kept"}
        assert "managedFields" not in obj["metadata"]
    finally:
        manager.stop()
