"""KubeListerWatcher over a fake pool: paging, continue-expiry fallback, stream decoding."""

from __future__ import annotations

import io
import threading
from typing import Any

import orjson
import pytest
import urllib3

from kinrun.cache.listwatch import WatchEvent
from kinrun.errors import ApiConnectionError, ApiError, ExpiredError, ServerError
from kinrun.kube.listwatch import StreamWatch, item_kind
from kinrun.kube.resources import ResourceRef
from kube_fakes import Call, FakePool, make_client, response, status_body

PODS = ResourceRef("", "v1", "pods", "Pod", namespaced=True)


def pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"p{i}", "namespace": "ns", "resourceVersion": str(i)}}


class PagedServer:
    """Answers LISTs of `total` pods in pages; can expire continue tokens."""

    def __init__(self, total: int, *, expire_continue: bool = False) -> None:
        self.total = total
        self.expire_continue = expire_continue

    def __call__(self, call: Call) -> urllib3.HTTPResponse:
        q = call.query
        if "continue" in q and self.expire_continue:
            return response(410, status_body(410, "Expired", "continue token expired"))
        start = int(q.get("continue", "0"))
        limit = int(q.get("limit", "0")) or self.total
        end = min(start + limit, self.total)
        meta = {"resourceVersion": "77"}
        if end < self.total:
            meta["continue"] = str(end)
        return response(200, {"kind": "PodList", "apiVersion": "v1", "metadata": meta,
                              "items": [pod(i) for i in range(start, end)]})


def test_list_pages_only_first_page_carries_resource_version() -> None:
    """Pages chain by continue; resourceVersion goes on the first page only."""
    pool = FakePool(PagedServer(5))
    lw = make_client(pool).lister_watcher(PODS, namespace="ns", label_selector="app=x",
                                          page_size=2)
    result = lw.list(resource_version="0")
    assert [o["metadata"]["name"] for o in result.items] == [f"p{i}" for i in range(5)]
    assert result.resource_version == "77"
    assert [c.query.get("resourceVersion") for c in pool.calls] == ["0", None, None]
    assert [c.query.get("continue") for c in pool.calls] == [None, "2", "4"]
    assert all(c.query["labelSelector"] == "app=x" and c.query["limit"] == "2"
               for c in pool.calls)
    assert all(c.path == "/api/v1/namespaces/ns/pods" for c in pool.calls)


def test_list_items_get_api_version_and_kind_from_the_list() -> None:
    """Items carry apiVersion and kind = list kind minus List."""
    result = make_client(FakePool(PagedServer(2))).lister_watcher(PODS).list()
    assert {(o["apiVersion"], o["kind"]) for o in result.items} == {("v1", "Pod")}
    assert result.kind == "Pod"


def test_expired_continue_token_falls_back_to_one_unpaged_list() -> None:
    """A 410 on a continue page drops the partial pages and LISTs once without paging."""
    pool = FakePool(PagedServer(5, expire_continue=True))
    result = make_client(pool).lister_watcher(PODS, page_size=2).list(resource_version="0")
    assert len(result.items) == 5
    assert result.extra["unpaged_after_expired"] is True
    last = pool.calls[-1]
    assert len(pool.calls) == 3
    assert "limit" not in last.query and "continue" not in last.query
    assert last.query["resourceVersion"] == "0"


def test_list_at_a_specific_resource_version_is_not_paged() -> None:
    """A relist at a known resourceVersion goes unpaged (watch cache, not an exact etcd read)."""
    pool = FakePool(PagedServer(5))
    result = make_client(pool).lister_watcher(PODS, page_size=2).list(resource_version="9")
    assert len(result.items) == 5
    assert len(pool.calls) == 1
    assert "limit" not in pool.calls[0].query
    assert pool.calls[0].query["resourceVersion"] == "9"


def test_expired_first_page_raises_expired() -> None:
    """A 410 on the first page (resourceVersion too old) is ExpiredError for the reflector."""
    pool = FakePool(lambda call: response(410, status_body(410, "Expired", "too old")))
    with pytest.raises(ExpiredError):
        make_client(pool).lister_watcher(PODS).list(resource_version="1")
    assert len(pool.calls) == 1


def test_unpaged_list_when_page_size_zero() -> None:
    """page_size=0 sends no limit."""
    pool = FakePool(PagedServer(3))
    make_client(pool).lister_watcher(PODS, page_size=0).list()
    assert "limit" not in pool.calls[0].query


def big_pod(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"p{i}", "namespace": "ns"}, "spec": {"blob": "x" * 2000}}


def test_a_list_body_that_fails_the_item_wise_check_late_is_read_again_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A body whose 46th of 61 items has too many nested candidates, read in pieces of 8 KB:
    items before it were decoded and dropped, so the page is requested again (same query,
    after the first answer, read part-way, was closed) and decoded whole; the result is every
    object, nothing twice."""
    from kinrun.kube import listwatch
    monkeypatch.setattr(listwatch, "PIECE_BYTES", 8192)
    nested = [{"metadata": {}}] * 40
    odd = {"metadata": {"name": "odd", "namespace": "ns"}, "spec": {"t": nested}}
    items = [big_pod(i) for i in range(45)] + [odd] + [big_pod(i) for i in range(45, 60)]
    body = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "9"},
            "items": items}
    sent: list[urllib3.HTTPResponse] = []
    first_closed_at_second_call: list[bool] = []

    def answer(call: Call) -> urllib3.HTTPResponse:
        if sent:
            first_closed_at_second_call.append(sent[0].closed)
        sent.append(response(200, body))
        return sent[-1]
    pool = FakePool(answer)
    result = make_client(pool).lister_watcher(PODS, namespace="ns", page_size=0).list()
    assert [o["metadata"]["name"] for o in result.items] == \
        [f"p{i}" for i in range(45)] + ["odd"] + [f"p{i}" for i in range(45, 60)]
    assert result.resource_version == "9"
    assert len(pool.calls) == 2 and pool.calls[0].query == pool.calls[1].query
    assert [c.preload_content for c in pool.calls] == [False, True]
    assert first_closed_at_second_call == [True]  # one connection at a time


def test_a_list_body_read_in_pieces_that_is_not_json_raises_api_error() -> None:
    pool = FakePool(lambda call: response(200, raw=b"<html>" + b"x" * 100_000))
    with pytest.raises(ApiError, match="the answer is not JSON: <html>xxx"):
        make_client(pool).lister_watcher(PODS, namespace="ns").list()
    assert len(pool.calls) == 1


def test_item_kind_strips_list_suffix() -> None:
    """PodList -> Pod; odd list kinds fall back."""
    assert item_kind("PodList", "X") == "Pod"
    assert item_kind("List", "X") == "X" and item_kind("", "X") == "X"


# -- watch --------------------------------------------------------------------------------

class PiecesFP(io.RawIOBase):
    """A response body that arrives in the given pieces, one per read1."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = list(pieces)

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""

    def read(self, n: int = -1) -> bytes:
        return self.read1(n)


def stream(pieces: list[bytes]) -> StreamWatch:
    resp = urllib3.HTTPResponse(body=PiecesFP(pieces), status=200, preload_content=False)
    return StreamWatch(resp, api_version="v1", kind="Pod")


def line(etype: str, obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": etype, "object": obj}) + b"\n"


def test_events_split_across_chunks_are_reassembled() -> None:
    """Lines cut at arbitrary byte boundaries decode to whole events, in order."""
    data = b"".join(line("ADDED", pod(i)) for i in range(4))
    pieces = [data[i:i + 7] for i in range(0, len(data), 7)]
    events = list(stream(pieces))
    assert [e.type for e in events] == ["ADDED"] * 4
    assert [e.object["metadata"]["name"] for e in events] == ["p0", "p1", "p2", "p3"]


def test_many_events_in_one_chunk_and_blank_lines() -> None:
    """Several events per chunk and empty lines are handled."""
    data = line("ADDED", pod(1)) + b"\n" + line("MODIFIED", pod(1)) + line("DELETED", pod(1))
    assert [e.type for e in stream([data])] == ["ADDED", "MODIFIED", "DELETED"]


def test_final_line_without_newline_is_decoded() -> None:
    """A last event not ended by a newline still counts."""
    data = line("ADDED", pod(1)).rstrip(b"\n")
    assert [e.type for e in stream([data])] == ["ADDED"]


def test_under_the_gc_policy_each_read_collects_once_and_what_it_decodes_is_frozen() -> None:
    """kinrun's GC policy on (``gc_tuning.manage``): the events of one read are frozen as they
    are decoded, no collection walks them; a reconcile that ran before the next read (its
    cycle dead) is collected by that read, once, not frozen."""
    import gc
    import weakref

    from kinrun.gc import policy as gc_tuning

    class Node:
        pass

    watch = stream([line("ADDED", pod(0)) + line("ADDED", pod(1)), line("ADDED", pod(2))])
    before = gc_tuning.manage()
    try:
        with gc_tuning.GCPauseRecorder() as pauses:
            events = iter(watch)
            first = next(events)
            frozen = gc.get_freeze_count()
            assert frozen > 0 and first.object["metadata"]["name"] == "p0"
            collections = len(pauses.pauses)  # the first read's (if a reconcile ran before)
            second = next(events)  # same read: frozen at once, no collection
            assert gc.get_freeze_count() > frozen and len(pauses.pauses) == collections
            gc_tuning.epoch += 1  # a reconcile ran (a worker), leaving a dead cycle
            cycle = Node()
            cycle.self = cycle
            ref = weakref.ref(cycle)
            del cycle
            third = next(events)  # the next read collects first
            assert len(pauses.pauses) == collections + 1 and ref() is None
        assert [e.object["metadata"]["name"] for e in (second, third)] == ["p1", "p2"]
    finally:
        gc_tuning.unfreeze(before)
    assert gc.get_freeze_count() == 0


def test_watch_objects_get_kind_when_missing_but_bookmarks_do_not() -> None:
    """ADDED objects without kind get it; BOOKMARK objects are left as sent."""
    bookmark = {"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "9"}}
    events = list(stream([line("ADDED", pod(1)), line("BOOKMARK", bookmark)]))
    assert events[0].object["kind"] == "Pod" and events[0].object["apiVersion"] == "v1"
    assert events[1] == WatchEvent("BOOKMARK", bookmark)


def test_error_event_410_raises_expired_with_message() -> None:
    """An ERROR event with 410 ends the iteration with ExpiredError."""
    w = stream([line("ADDED", pod(1)), line("ERROR", status_body(410, "Expired", "too old rv"))])
    it = iter(w)
    assert next(it).type == "ADDED"
    with pytest.raises(ExpiredError, match="too old rv"):
        next(it)


def test_error_event_500_raises_server_error() -> None:
    """Other ERROR events raise their mapped class."""
    with pytest.raises(ServerError):
        list(stream([line("ERROR", status_body(500, "InternalError"))]))


def test_garbage_line_raises_api_error() -> None:
    """An undecodable line ends the watch with an ApiError quoting it."""
    with pytest.raises(ApiError, match="undecodable watch event"):
        list(stream([b"{not json\n"]))


def test_stream_iterates_once() -> None:
    """A second iteration of the same stream is refused."""
    w = stream([])
    list(w)
    with pytest.raises(RuntimeError):
        iter(w)


class BlockingFP(io.RawIOBase):
    """A body whose read blocks until shut down, then reports the socket error."""

    def __init__(self) -> None:
        self.unblock = threading.Event()
        self.reading = threading.Event()

    def readable(self) -> bool:
        return True

    def read1(self, n: int = -1) -> bytes:
        self.reading.set()
        self.unblock.wait(timeout=10)
        raise OSError("socket shut down")

    def read(self, n: int = -1) -> bytes:
        return self.read1(n)


class FakeConnection:
    """Stands in for the pooled connection a streaming response holds."""

    closed = False

    def close(self) -> None:
        self.closed = True


def test_close_from_another_thread_ends_a_blocked_read_quietly() -> None:
    """close() shuts the socket down; the blocked iteration ends without an error."""
    fp = BlockingFP()
    resp = urllib3.HTTPResponse(body=fp, status=200, preload_content=False)
    resp._sock_shutdown = lambda how: fp.unblock.set()  # what urllib3 binds to the socket
    resp._connection = FakeConnection()  # type: ignore[assignment]  # still holds one
    w = StreamWatch(resp, api_version="v1", kind="Pod")
    out: list[Any] = []
    done = threading.Event()

    def consume() -> None:
        try:
            out.extend(w)
        except Exception as exc:  # noqa: BLE001
            out.append(exc)
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    assert fp.reading.wait(timeout=5)
    w.close()
    assert done.wait(timeout=5)
    assert out == [] and w.closed


def test_broken_read_without_close_is_connection_error() -> None:
    """A read failing on its own (not closed by us) raises ApiConnectionError."""
    fp = BlockingFP()
    fp.unblock.set()
    resp = urllib3.HTTPResponse(body=fp, status=200, preload_content=False)
    with pytest.raises(ApiConnectionError):
        list(StreamWatch(resp, api_version="v1", kind="Pod"))


def test_close_before_iterating_yields_nothing() -> None:
    """A watch closed before use iterates to nothing."""
    w = stream([line("ADDED", pod(1))])
    w.close()
    w.close()
    assert list(w) == []


def test_watch_request_parameters() -> None:
    """WATCH sends watch, resourceVersion, bookmarks, timeoutSeconds and a longer read timeout."""
    pool = FakePool(lambda call: response(200, raw=b"", preload=False))
    lw = make_client(pool).lister_watcher(PODS, namespace="ns", field_selector="a=b")
    list(lw.watch(resource_version="12", timeout_seconds=60))
    call = pool.calls[0]
    assert call.query == {"watch": "true", "resourceVersion": "12", "allowWatchBookmarks": "true",
                          "timeoutSeconds": "60", "fieldSelector": "a=b"}
    assert call.preload_content is False
    assert call.timeout.read_timeout == pytest.approx(90.0)


def test_watch_read_timeout_override() -> None:
    """An explicit watch_read_timeout replaces the computed one."""
    pool = FakePool(lambda call: response(200, raw=b"", preload=False))
    lw = make_client(pool).lister_watcher(PODS, watch_read_timeout=1.5)
    list(lw.watch(resource_version="1", allow_bookmarks=False))
    assert pool.calls[0].timeout.read_timeout == pytest.approx(1.5)
    assert "allowWatchBookmarks" not in pool.calls[0].query
    assert pool.calls[0].query["timeoutSeconds"] == "300"


def test_watch_http_410_raises_expired_at_open() -> None:
    """A WATCH answered with HTTP 410 raises ExpiredError from watch()."""
    pool = FakePool(lambda call: response(410, status_body(410, "Expired", "gone")))
    with pytest.raises(ExpiredError):
        make_client(pool).lister_watcher(PODS).watch(resource_version="1")


class ReturnedConnections:
    """Stands in for the urllib3 connection pool: records connections given back."""

    def __init__(self) -> None:
        self.returned: list[Any] = []

    def _put_conn(self, conn: Any) -> None:
        self.returned.append(conn)


def test_close_after_iter_before_first_event_releases_the_connection() -> None:
    """iter() then close() before any next(): the response is still closed and released."""
    fp = PiecesFP([line("ADDED", pod(1))])
    resp = urllib3.HTTPResponse(body=fp, status=200, preload_content=False)
    conn, pool = FakeConnection(), ReturnedConnections()
    resp._connection, resp._pool = conn, pool  # type: ignore[assignment]
    w = StreamWatch(resp, api_version="v1", kind="Pod")
    it = iter(w)
    w.close()
    assert list(it) == []
    assert conn.closed and pool.returned == [conn]


def test_close_after_consumer_stopped_pulling_releases_the_connection() -> None:
    """A consumer that took one event then closed: the suspended stream is finished at once."""
    fp = PiecesFP([line("ADDED", pod(1)), line("ADDED", pod(2))])
    resp = urllib3.HTTPResponse(body=fp, status=200, preload_content=False)
    conn, pool = FakeConnection(), ReturnedConnections()
    resp._connection, resp._pool = conn, pool  # type: ignore[assignment]
    w = StreamWatch(resp, api_version="v1", kind="Pod")
    it = iter(w)
    assert next(it).object["metadata"]["name"] == "p1"
    w.close()
    assert conn.closed and pool.returned == [conn]
    assert list(it) == []
