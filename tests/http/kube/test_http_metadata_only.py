"""Metadata-only LIST and WATCH (PartialObjectMetadata) through the kube layer and the
embedded API server; the server's answers are pinned against kube-apiserver in
``tests/envtest/test_metadata_only.py``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import urllib3

from kinrun.kube import Client
from kinrun.kube.transport import PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST
from kinrun.testing.apiserver import EmbeddedAPIServer

NS = "default"


def configmap(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:03d}", "namespace": NS, "labels": {"i": str(i)},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p",
                                              "uid": "u-1"}]},
            "data": {"payload": "x" * 500}}


def raw_get(server: EmbeddedAPIServer, path: str, accept: str) -> urllib3.BaseHTTPResponse:
    return urllib3.PoolManager().request("GET", server.url + path, headers={"Accept": accept},
                                         retries=False)


def test_server_answers_partial_object_metadata_for_get_and_list(
        embedded_server: EmbeddedAPIServer) -> None:
    """GET and LIST with client-go's metadata Accept headers give PartialObjectMetadata (the
    metadata only, managedFields included); the wrong form for the verb is 406."""
    embedded_server.load([configmap(1), configmap(2)])
    base = f"/api/v1/namespaces/{NS}/configmaps"
    got = orjson.loads(raw_get(embedded_server, base + "/cm-001", PARTIAL_OBJECT_METADATA).data)
    assert set(got) == {"kind", "apiVersion", "metadata"}
    assert (got["kind"], got["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
    assert got["metadata"]["labels"] == {"i": "1"}
    listed = orjson.loads(raw_get(embedded_server, base, PARTIAL_OBJECT_METADATA_LIST).data)
    assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert [set(item) for item in listed["items"]] == [{"kind", "apiVersion", "metadata"}] * 2
    assert {item["kind"] for item in listed["items"]} == {"PartialObjectMetadata"}
    wrong = raw_get(embedded_server, base, PARTIAL_OBJECT_METADATA)
    assert wrong.status == 406 and orjson.loads(wrong.data)["reason"] == "NotAcceptable"
    assert raw_get(embedded_server, base + "/cm-001", PARTIAL_OBJECT_METADATA_LIST).status == 406
    plain = orjson.loads(raw_get(embedded_server, base + "/cm-001", "application/json").data)
    assert plain["data"]["payload"] == "x" * 500


def test_metadata_only_list_and_watch_cache_metadata_with_the_real_kind(
        embedded_server: EmbeddedAPIServer, kube_client: Client) -> None:
    """The lister-watcher's objects hold apiVersion, kind (the watched resource's, not
    PartialObjectMetadata) and metadata, without managedFields; watch events likewise."""
    embedded_server.load([configmap(i) for i in range(3)])
    lw = kube_client.lister_watcher(kube_client.resolve("v1", "ConfigMap"), namespace=NS,
                                    metadata_only=True, drop_managed_fields=True)
    sent: list[str] = []
    pool = lw.transport.pool
    real = pool.request

    def recording(method: str, url: str, **kw: Any) -> Any:
        sent.append(kw["headers"]["Accept"])
        return real(method, url, **kw)
    pool.request = recording  # type: ignore[method-assign]
    listed = lw.list()
    assert [set(o) for o in listed.items] == [{"apiVersion", "kind", "metadata"}] * 3
    assert {(o["apiVersion"], o["kind"]) for o in listed.items} == {("v1", "ConfigMap")}
    assert all("managedFields" not in o["metadata"] for o in listed.items)
    assert listed.items[0]["metadata"]["ownerReferences"][0]["uid"] == "u-1"
    watch = lw.watch(resource_version=listed.resource_version, timeout_seconds=30)
    kube_client.patch("v1", "ConfigMap", "cm-001", {"data": {"payload": "y"}}, namespace=NS)
    kube_client.delete("v1", "ConfigMap", "cm-002", NS)
    events = []
    for event in watch:
        events.append(event)
        if len(events) == 2:
            break
    watch.close()
    assert sent[0] == PARTIAL_OBJECT_METADATA_LIST and sent[1] == PARTIAL_OBJECT_METADATA
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    for event in events:
        assert set(event.object) == {"apiVersion", "kind", "metadata"}
        assert (event.object["apiVersion"], event.object["kind"]) == ("v1", "ConfigMap")
        assert "managedFields" not in event.object["metadata"]


def test_metadata_only_watch_bookmarks_keep_their_resource_version(
        embedded_server: EmbeddedAPIServer, kube_client: Client) -> None:
    """A metadata-only watch's BOOKMARK carries the resourceVersion (the reflector resumes
    from it)."""
    embedded_server.bookmark_interval = 0.05
    lw = kube_client.lister_watcher(kube_client.resolve("v1", "ConfigMap"), namespace=NS,
                                    metadata_only=True)
    watch = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=30)
    event = next(iter(watch))
    watch.close()
    assert event.type == "BOOKMARK" and event.object["metadata"]["resourceVersion"]


@pytest.mark.parametrize("verb", ["list", "watch"])
def test_whole_objects_from_a_server_ignoring_accept_are_cut_to_metadata(
        embedded_server: EmbeddedAPIServer, kube_client: Client, verb: str) -> None:
    """A server (or proxy) that ignores the metadata Accept header and sends whole objects:
    the cache holds the same metadata-only objects as with one that honours it."""
    embedded_server.load([configmap(1)])
    lw = kube_client.lister_watcher(kube_client.resolve("v1", "ConfigMap"), namespace=NS,
                                    metadata_only=True)
    transport = lw.transport
    real_pieces, real_stream = transport.request_pieces, transport.open_stream
    # the Accept header dropped, as by a server or proxy that ignores it
    transport.request_pieces = lambda *a, accept="", **kw: real_pieces(*a, **kw)  # type: ignore
    transport.open_stream = lambda *a, accept="", **kw: real_stream(*a, **kw)  # type: ignore
    if verb == "list":
        obj = lw.list().items[0]
    else:
        watch = lw.watch(resource_version="0", timeout_seconds=30)
        obj = next(iter(watch)).object
        watch.close()
    assert set(obj) == {"apiVersion", "kind", "metadata"}
    assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap")
