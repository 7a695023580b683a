"""Paged LIST and streamed WATCH through the real client against the embedded API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.cache.listwatch import WatchEvent
from kinrun.cache.reflector import too_large_resource_version
from kinrun.errors import ApiConnectionError, ExpiredError, ServerError
from kinrun.kube import Client, KubeListerWatcher
from kinrun.testing.apiserver import EmbeddedAPIServer

NS = "default"


def configmap(i: int, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"cm-{i:03d}", "namespace": NS, "labels": labels},
            "data": {"i": str(i)}}


def cm_lw(client: Client, **kwargs: Any) -> KubeListerWatcher:
    return client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=NS, **kwargs)


def consume(events: Iterator[WatchEvent], out: list[Any], done: threading.Event) -> None:
    """Collect events (or the raised error) into ``out``; set ``done`` at the end."""
    try:
        for event in events:
            out.append(event)
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        out.append(exc)
    finally:
        done.set()


def test_paged_list_returns_every_object_with_kind(embedded_server: EmbeddedAPIServer,
                                                   kube_client: Client) -> None:
    """25 objects in pages of 10: three pages, all items, apiVersion/kind set, list RV."""
    embedded_server.load([configmap(i) for i in range(25)])
    result = cm_lw(kube_client, page_size=10).list()
    assert sorted(o["metadata"]["name"] for o in result.items) == \
        [f"cm-{i:03d}" for i in range(25)]
    assert {(o["apiVersion"], o["kind"]) for o in result.items} == {("v1", "ConfigMap")}
    assert result.extra["pages"] == 3
    assert int(result.resource_version) >= max(
        int(o["metadata"]["resourceVersion"]) for o in result.items)


@pytest.mark.parametrize("drop_managed_fields", [True, False])
def test_a_large_list_is_decoded_item_by_item(embedded_server: EmbeddedAPIServer,
                                              kube_client: Client, monkeypatch: pytest.MonkeyPatch,
                                              drop_managed_fields: bool) -> None:
    """A one-page LIST of 300 KB read in pieces of 16 KB (kinrun.kube.list_body) gives every
    object as it was written, managedFields cut when asked, apiVersion/kind set; the body was
    never held whole: items were decoded and dropped as the pieces came."""
    from kinrun.kube import list_body, listwatch
    monkeypatch.setattr(listwatch, "PIECE_BYTES", 16 * 1024)
    held: list[int] = []
    original = list_body.ListDecoder.feed

    def spy(self: Any, piece: Any) -> None:
        original(self, piece)
        held.append(len(self.buffered))
    monkeypatch.setattr(list_body.ListDecoder, "feed", spy)
    written = []
    for i in range(100):
        cm = configmap(i)
        cm["data"]["blob"] = "x" * 3000
        cm["metadata"]["managedFields"] = [{"manager": "test", "operation": "Update",
                                            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]
        written.append(cm)
    embedded_server.load(written)
    result = cm_lw(kube_client, page_size=0, drop_managed_fields=drop_managed_fields).list()
    assert len(held) > 16  # 300 KB in pieces of at most 16 KB
    assert max(held) < list_body.MIN_BYTES + 16 * 1024 + 4 * 1024  # + a piece and an item
    by_name = {o["metadata"]["name"]: o for o in result.items}
    assert sorted(by_name) == [f"cm-{i:03d}" for i in range(100)]
    for cm in written:
        got = by_name[cm["metadata"]["name"]]
        assert got["data"] == cm["data"]
        assert (got["apiVersion"], got["kind"]) == ("v1", "ConfigMap")
        assert ("managedFields" in got["metadata"]) is not drop_managed_fields


def test_list_from_resource_version_zero_and_exact(embedded_server: EmbeddedAPIServer,
                                                   kube_client: Client) -> None:
    """Paging with a requested resourceVersion sends it on the first page only (the server
    would refuse it next to a continue token)."""
    embedded_server.load([configmap(i) for i in range(7)])
    lw = cm_lw(kube_client, page_size=3)
    rv = lw.list().resource_version
    assert len(lw.list(resource_version=rv).items) == 7
    assert len(lw.list(resource_version="0").items) == 7


def test_label_selector_is_applied_by_the_server(embedded_server: EmbeddedAPIServer,
                                                 kube_client: Client) -> None:
    """Only objects matching the label selector are listed."""
    embedded_server.load([configmap(i, team="a" if i % 2 else "b") for i in range(6)])
    names = [o["metadata"]["name"] for o in cm_lw(kube_client, label_selector="team=a").list().items]
    assert sorted(names) == ["cm-001", "cm-003", "cm-005"]


def test_expired_continue_token_relists_unpaged_once(embedded_server: EmbeddedAPIServer,
                                                     kube_client: Client) -> None:
    """A continue token expiring part-way drops the partial pages and LISTs once, unpaged."""
    embedded_server.load([configmap(i) for i in range(9)])
    lw = cm_lw(kube_client, page_size=3)
    real_request_pieces = lw.transport.request_pieces
    calls: list[dict[str, Any]] = []

    def request_pieces(path: str, **kw: Any) -> Any:
        calls.append(dict(kw.get("query") or {}))
        yield from real_request_pieces(path, **kw)
        if len(calls) == 1:
            embedded_server.faults.expire_continue_tokens()

    fake = type("T", (), {"request_pieces": staticmethod(request_pieces)})()
    lw.transport = fake  # type: ignore[assignment]
    result = lw.list()
    assert len(result.items) == 9
    assert result.extra["unpaged_after_expired"] is True
    assert len(calls) == 3
    assert calls[1].get("continue") and "limit" not in calls[2] and "continue" not in calls[2]


def test_too_old_resource_version_on_list_is_expired(embedded_server: EmbeddedAPIServer,
                                                     kube_client: Client) -> None:
    """A LIST answered 410 raises ExpiredError."""
    embedded_server.faults.expire_next_list()
    with pytest.raises(ExpiredError):
        cm_lw(kube_client).list(resource_version="1")


def test_list_ahead_of_the_server_is_raised_after_one_try(embedded_server: EmbeddedAPIServer,
                                                        kube_client: Any) -> None:
    """A LIST at a resourceVersion the server has not reached (504 Too large resource version)
    is sent once and raised at once, for the reflector to relist from the latest."""
    lw, tries = cm_lw(kube_client), []
    kube_client.transport.request_observer = lambda code, method, host: tries.append(code)
    with pytest.raises(ServerError) as info:
        lw.list(resource_version="999999")
    assert too_large_resource_version(info.value)
    assert tries == ["504"] and kube_client.sleeps == []


def test_watch_streams_added_modified_deleted(embedded_server: EmbeddedAPIServer,
                                             kube_client: Client) -> None:
    """Writes after the list's resourceVersion arrive in order as dict events."""
    lw = cm_lw(kube_client)
    rv = lw.list().resource_version
    w = lw.watch(resource_version=rv, timeout_seconds=30)
    kube_client.create(configmap(1))
    kube_client.patch("v1", "ConfigMap", "cm-001", {"data": {"x": "y"}}, namespace=NS)
    kube_client.delete("v1", "ConfigMap", "cm-001", NS)
    events = []
    for event in w:
        events.append(event)
        if len(events) == 3:
            break
    w.close()
    assert [e.type for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert all(isinstance(e.object, dict) and e.object["kind"] == "ConfigMap" for e in events)
    assert events[1].object["data"] == {"i": "1", "x": "y"}


def test_watch_resumes_from_a_resource_version(embedded_server: EmbeddedAPIServer,
                                               kube_client: Client) -> None:
    """A watch from an older resourceVersion replays the writes after it."""
    lw = cm_lw(kube_client)
    rv = lw.list().resource_version
    embedded_server.load([configmap(i) for i in range(3)])
    w = lw.watch(resource_version=rv, timeout_seconds=30)
    names = []
    for event in w:
        names.append(event.object["metadata"]["name"])
        if len(names) == 3:
            break
    w.close()
    assert names == ["cm-000", "cm-001", "cm-002"]


def test_watch_bookmarks_carry_resource_version(embedded_server: EmbeddedAPIServer,
                                                kube_client: Client) -> None:
    """With allowWatchBookmarks the server's BOOKMARK events come through."""
    embedded_server.bookmark_interval = 0.05
    lw = cm_lw(kube_client)
    w = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=30)
    event = next(iter(w))
    w.close()
    assert event.type == "BOOKMARK" and event.object["metadata"]["resourceVersion"]


def test_watch_ends_cleanly_at_server_timeout(embedded_server: EmbeddedAPIServer,
                                              kube_client: Client) -> None:
    """timeoutSeconds=1: the server ends the stream and iteration stops without error."""
    lw = cm_lw(kube_client)
    w = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=1,
                 allow_bookmarks=False)
    assert list(w) == []


def test_close_watches_ends_iteration_cleanly(embedded_server: EmbeddedAPIServer,
                                              kube_client: Client) -> None:
    """The server closing every watch ends a blocked iteration with no error."""
    lw = cm_lw(kube_client)
    w = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=60)
    out: list[Any] = []
    done = threading.Event()
    threading.Thread(target=consume, args=(iter(w), out, done), daemon=True).start()
    kube_client.create(configmap(1))
    deadline = time.monotonic() + 5
    while not out and time.monotonic() < deadline:
        done.wait(0.01)
    embedded_server.faults.close_watches()
    assert done.wait(timeout=5)
    assert [e.type for e in out] == ["ADDED"]


def test_close_from_another_thread_interrupts_a_blocked_read(
        embedded_server: EmbeddedAPIServer, kube_client: Client) -> None:
    """close() ends an iteration blocked on a silent stream, quietly, and the pool still works."""
    lw = cm_lw(kube_client)
    w = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=60,
                 allow_bookmarks=False)
    out: list[Any] = []
    done = threading.Event()
    threading.Thread(target=consume, args=(iter(w), out, done), daemon=True).start()
    assert not done.wait(timeout=0.2)
    w.close()
    assert done.wait(timeout=5)
    assert out == []
    assert len(lw.list().items) == 0


def test_http_410_on_watch_raises_expired(embedded_server: EmbeddedAPIServer,
                                          kube_client: Client) -> None:
    """A WATCH answered with HTTP 410 raises ExpiredError."""
    embedded_server.faults.expire_next_watch()
    with pytest.raises(ExpiredError):
        list(cm_lw(kube_client).watch(resource_version="1", timeout_seconds=5))


def test_error_event_410_raises_expired_with_message(embedded_server: EmbeddedAPIServer,
                                                     kube_client: Client) -> None:
    """A 200 WATCH whose stream carries an ERROR 410 event raises ExpiredError with text."""
    embedded_server.faults.expire_next_watch_event()
    lw = cm_lw(kube_client)
    with pytest.raises(ExpiredError) as info:
        list(lw.watch(resource_version=lw.list().resource_version, timeout_seconds=5))
    assert info.value.message


def test_too_old_watch_resource_version_is_expired(embedded_server: EmbeddedAPIServer,
                                                   kube_client: Client) -> None:
    """A watch from a resourceVersion the history no longer holds raises ExpiredError."""
    lw = cm_lw(kube_client)
    rv = lw.list().resource_version
    embedded_server.load([configmap(1)])
    embedded_server.faults.expire_history()
    with pytest.raises(ExpiredError):
        list(lw.watch(resource_version=rv, timeout_seconds=5))


def test_stalled_stream_hits_the_read_timeout(embedded_server: EmbeddedAPIServer,
                                              kube_client: Client) -> None:
    """Headers then silence: the socket read timeout fires as ApiConnectionError, no hang."""
    embedded_server.faults.stall_next_watch()
    lw = cm_lw(kube_client, watch_read_timeout=0.3)
    w = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=60)
    out: list[Any] = []
    done = threading.Event()
    threading.Thread(target=consume, args=(iter(w), out, done), daemon=True).start()
    assert done.wait(timeout=10)
    assert len(out) == 1 and isinstance(out[0], ApiConnectionError)
    assert "read timed out" in str(out[0])


def test_watch_open_is_retried_after_server_error(embedded_server: EmbeddedAPIServer,
                                                  kube_client: Any) -> None:
    """A 500 answering the WATCH request itself (before any stream) is retried."""
    lw = cm_lw(kube_client)
    rv = lw.list().resource_version
    embedded_server.faults.fail_next(1, status=500)
    w = lw.watch(resource_version=rv, timeout_seconds=30)
    kube_client.create(configmap(5))
    event = next(iter(w))
    w.close()
    assert event.type == "ADDED" and len(kube_client.sleeps) == 1
