"""Metadata-only (PartialObjectMetadata) answers: kube-apiserver 1.20's pinned, the embedded
server's compared with them, and kinrun's metadata-only lister-watcher on the real server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.kube import Client
from kinrun.kube.transport import PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST
from kinrun.testing.envtest import EnvtestServer

from .conftest import Pair, Target
from .normalize import cm_path, configmap, create, status_view
from .test_differential import check


def _shape(obj: dict[str, Any]) -> dict[str, Any]:
    """What a client relies on of a PartialObjectMetadata: its keys, type and metadata keys
    (uids, timestamps and resourceVersions differ between servers)."""
    meta = obj.get("metadata") or {}
    return {"keys": sorted(obj), "kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
            "metadata": sorted(meta), "labels": meta.get("labels"), "name": meta.get("name")}


def test_get_and_list_answer_partial_object_metadata(both: Pair) -> None:
    """GET with as=PartialObjectMetadata, LIST with as=PartialObjectMetadataList: the metadata
    (managedFields included) under meta.k8s.io/v1; the other form for each verb is 406."""
    def scenario(t: Target) -> Any:
        create(t.kube, cm_path(t.ns), configmap("a", labels={"x": "y"}, k="v"))
        got = t.kube.request("GET", cm_path(t.ns, "a"), accept=PARTIAL_OBJECT_METADATA)
        listed = t.kube.request("GET", cm_path(t.ns), accept=PARTIAL_OBJECT_METADATA_LIST,
                                query={"limit": 500})
        wrong_list = t.kube.request("GET", cm_path(t.ns), accept=PARTIAL_OBJECT_METADATA)
        wrong_get = t.kube.request("GET", cm_path(t.ns, "a"), accept=PARTIAL_OBJECT_METADATA_LIST)
        return {"get": (got.status, _shape(got.body)),
                "list": (listed.status, listed.body["kind"], listed.body["apiVersion"],
                         [_shape(i) for i in listed.body["items"]]),
                "wrong_list": status_view(wrong_list)["reason"],
                "wrong_get": status_view(wrong_get)["reason"],
                "wrong_get_message": status_view(wrong_get)["message"].split(" (")[0]}

    real = check(both, scenario)
    assert real["get"][1]["kind"] == "PartialObjectMetadata"
    assert "managedFields" in real["get"][1]["metadata"]
    assert real["list"][1:3] == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert real["wrong_list"] == real["wrong_get"] == "NotAcceptable"


def test_watch_events_and_bookmarks_are_partial_object_metadata(both: Pair) -> None:
    """A WATCH with as=PartialObjectMetadata converts every event's object, bookmarks too."""
    def scenario(t: Target) -> Any:
        create(t.kube, cm_path(t.ns), configmap("a", k="v"))
        watch = t.kube.open_watch(cm_path(t.ns), {"resourceVersion": "0", "timeoutSeconds": 5},
                                  accept=PARTIAL_OBJECT_METADATA)
        t.kube.request("DELETE", cm_path(t.ns, "a"))
        events = watch.read(max_events=2).events
        return [(e["type"], _shape(e["object"])) for e in events]

    real = check(both, scenario)
    assert [t for t, _ in real] == ["ADDED", "DELETED"]
    assert {s["kind"] for _, s in real} == {"PartialObjectMetadata"}


@pytest.fixture(scope="module")
def client(envtest_server: EnvtestServer) -> Iterator[Client]:
    with Client.from_config(kubeconfig=envtest_server.kubeconfig_path) as c:
        yield c


def test_metadata_only_lister_watcher_on_kube_apiserver(client: Client,
                                                         envtest_namespace: str) -> None:
    """kinrun's metadata-only LIST and WATCH on the real server: metadata only, the real
    kind, managedFields cut; a bookmark's resourceVersion kept."""
    ns = envtest_namespace
    client.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "a", "namespace": ns, "labels": {"x": "y"}},
                   "data": {"k": "v" * 1000}})
    lw = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns,
                               metadata_only=True, drop_managed_fields=True)
    listed = lw.list()
    (obj,) = listed.items
    assert set(obj) == {"apiVersion", "kind", "metadata"}
    assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap")
    assert obj["metadata"]["labels"] == {"x": "y"} and "managedFields" not in obj["metadata"]
    watch = lw.watch(resource_version=listed.resource_version, timeout_seconds=30)
    client.patch("v1", "ConfigMap", "a", {"metadata": {"labels": {"x": "z"}}}, namespace=ns)
    try:
        event = next(e for e in watch if e.type != "BOOKMARK")
    finally:
        watch.close()
    assert event.type == "MODIFIED"
    assert set(event.object) == {"apiVersion", "kind", "metadata"}
    assert event.object["kind"] == "ConfigMap"
    assert event.object["metadata"]["labels"] == {"x": "z"}
    assert "managedFields" not in event.object["metadata"]
