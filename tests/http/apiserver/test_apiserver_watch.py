"""WATCH: resume from a resourceVersion, initial events, 410, bookmarks, timeouts, selector
transitions, and the kubernetes client's own Watch."""

from __future__ import annotations

import kubernetes
import orjson
import pytest
from apiserver_http import WatchStream, call, configmap, pod

from kinrun.testing.apiserver import EmbeddedAPIServer

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"


def kinds(events) -> list[tuple[str, str]]:
    return [(e["type"], e["object"]["metadata"].get("name", "")) for e in events]


def test_watch_from_resource_version_streams_later_events(embedded_server, embedded_api_client):
    """A watch from a list's resourceVersion gets exactly the writes after it, in order."""
    embedded_server.load([configmap("old")])
    rv = call(embedded_api_client, "GET", CM).body["metadata"]["resourceVersion"]
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": rv})
    store = embedded_server.store
    store.create(configmap("a"))
    store.update(configmap("a", data={"k": "v"}))
    store.delete("v1", "ConfigMap", "a", "default")
    events = w.take(3)
    assert kinds(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and rvs[0] > int(rv)
    w.close()


def test_watch_replays_history_after_resource_version(embedded_server, embedded_api_client):
    """Writes made before the watch but after its resourceVersion are replayed."""
    rv = str(embedded_server.store.resource_version)
    embedded_server.load([configmap("a"), configmap("b")])
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": rv})
    assert kinds(w.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
    w.close()


def test_each_watch_event_is_one_http_chunk(embedded_server, embedded_api_client):
    """As kube-apiserver (whose watch encoder flushes per event): a replayed backlog arrives as
    one chunk per event, never as one chunk holding many (the official client's line
    splitter is quadratic in the chunk size)."""
    rv = str(embedded_server.store.resource_version)
    embedded_server.load([configmap(f"c{i}") for i in range(5)])
    m, url, hdrs, _, _ = embedded_api_client.param_serialize(
        "GET", CM, query_params=[("watch", "true"), ("resourceVersion", rv),
                                 ("timeoutSeconds", "1")],
        header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    resp = embedded_api_client.call_api(m, url, hdrs, None, _request_timeout=10)
    chunks = list(resp.response.read_chunked(decode_content=False))
    assert all(chunk.count(b"\n") == 1 and chunk.endswith(b"\n") for chunk in chunks)
    names = [orjson.loads(c)["object"]["metadata"]["name"] for c in chunks]
    assert names == [f"c{i}" for i in range(5)]


@pytest.mark.parametrize("rv", ["", "0"])
def test_watch_without_resource_version_starts_with_current_objects(embedded_server, embedded_api_client, rv):
    """resourceVersion "" or "0" starts with synthetic ADDED events for existing objects."""
    embedded_server.load([configmap("a"), configmap("b")])
    query = {"resourceVersion": rv} if rv else {}
    w = WatchStream(embedded_api_client, CM, query)
    assert kinds(w.take(2)) == [("ADDED", "a"), ("ADDED", "b")]
    embedded_server.store.create(configmap("c"))
    assert kinds([w.next()]) == [("ADDED", "c")]
    w.close()


def test_watch_too_old_resource_version_is_error_event_410(embedded_api_client):
    """A watch from before the retained history is accepted (200), then one ERROR event with a
    410 Expired Status ends it, as the real cacher does."""
    with EmbeddedAPIServer(history_size=2) as srv:
        client = kubernetes.config.new_client_from_config(config_file=srv.kubeconfig_path)
        srv.load([configmap("a")])
        old = str(srv.store.resource_version - 1)
        srv.load([configmap(f"x{i}") for i in range(5)])
        w = WatchStream(client, CM, {"resourceVersion": old})
        event = w.next()
        assert w.status == 200 and event["type"] == "ERROR"
        assert event["object"]["reason"] == "Expired" and event["object"]["code"] == 410
        assert event["object"]["message"].startswith("too old resource version")
        assert w.wait_end()
        client.close()


def test_lagging_watcher_gets_error_event_410(embedded_api_client):
    """A watcher that falls behind the history gets an ERROR event 410 and the stream ends."""
    with EmbeddedAPIServer(history_size=4) as srv:
        client = kubernetes.config.new_client_from_config(config_file=srv.kubeconfig_path)
        w = WatchStream(client, CM, {"resourceVersion": str(srv.store.resource_version)})
        with srv.store.lock:   # writers run while the watcher cannot read
            for i in range(20):
                srv.store.create(configmap(f"x{i}"))
        event = w.next()
        assert event["type"] == "ERROR"
        assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
        assert event["object"]["kind"] == "Status" and event["object"]["status"] == "Failure"
        assert w.wait_end()
        client.close()


def test_bookmarks_when_allowed(embedded_server, embedded_api_client):
    """allowWatchBookmarks brings BOOKMARK events with only metadata.resourceVersion."""
    embedded_server.bookmark_interval = 0.05
    embedded_server.load([configmap("a")])
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(embedded_server.store.resource_version),
                                              "allowWatchBookmarks": "true"})
    event = w.next()
    assert event["type"] == "BOOKMARK"
    assert event["object"] == {"kind": "ConfigMap", "apiVersion": "v1",
                               "metadata": {"resourceVersion": str(embedded_server.store.resource_version)}}
    w.close()


def test_no_bookmarks_unless_allowed(embedded_server, embedded_api_client):
    """Without allowWatchBookmarks only object events arrive."""
    embedded_server.bookmark_interval = 0.01
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(embedded_server.store.resource_version),
                                              "timeoutSeconds": "0.3"})
    embedded_server.store.create(configmap("a"))
    assert w.wait_end()
    types = []
    while not w.events.empty():
        types.append(w.events.get()["type"])
    assert types == ["ADDED"]


def test_timeout_seconds_ends_stream_cleanly(embedded_server, embedded_api_client):
    """timeoutSeconds closes the stream with a clean chunked end."""
    w = WatchStream(embedded_api_client, CM, {"timeoutSeconds": "1"})
    assert w.wait_end(5)
    assert w.status == 200 and w.headers.get("Transfer-Encoding") == "chunked"


def test_send_initial_events_ends_with_annotated_bookmark(embedded_server, embedded_api_client):
    """sendInitialEvents streams current objects then a bookmark marking their end."""
    embedded_server.load([configmap("a")])
    w = WatchStream(embedded_api_client, CM, {"sendInitialEvents": "true", "allowWatchBookmarks": "true",
                                              "resourceVersionMatch": "NotOlderThan"})
    added, mark = w.take(2)
    assert added["type"] == "ADDED" and mark["type"] == "BOOKMARK"
    assert mark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    w.close()


def test_label_selector_transitions(embedded_server, embedded_api_client):
    """An object that starts matching arrives as ADDED; one that stops matching as DELETED."""
    embedded_server.load([configmap("a", labels={"app": "other"})])
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(embedded_server.store.resource_version),
                                              "labelSelector": "app=web"})
    store = embedded_server.store
    store.update(configmap("a", labels={"app": "web"}))
    store.update(configmap("a", labels={"app": "web"}, data={"k": "v"}))
    store.update(configmap("a", labels={"app": "gone"}))
    store.create(configmap("b", labels={"app": "web"}))
    events = w.take(4)
    assert kinds(events) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a"), ("ADDED", "b")]
    deleted = events[2]["object"]
    assert deleted["metadata"]["labels"] == {"app": "web"}          # the previous state...
    assert int(deleted["metadata"]["resourceVersion"]) > int(events[1]["object"]["metadata"]["resourceVersion"])
    w.close()


def test_field_selector_watch_on_pod_phase(embedded_server, embedded_api_client):
    """status.phase field selector filters a pod watch, including transitions."""
    embedded_server.load([pod("p")])
    w = WatchStream(embedded_api_client, PODS, {"resourceVersion": str(embedded_server.store.resource_version),
                                                "fieldSelector": "status.phase=Running"})
    running = pod("p")
    running["status"] = {"phase": "Running"}
    embedded_server.store.update(running)
    assert kinds([w.next()]) == [("ADDED", "p")]
    w.close()


def test_watch_in_namespace_ignores_other_namespaces(embedded_server, embedded_api_client):
    """A namespaced watch sees only its namespace."""
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(embedded_server.store.resource_version)})
    embedded_server.load([configmap("x", namespace="kube-system"), configmap("a")])
    assert kinds([w.next()]) == [("ADDED", "a")]
    w.close()


def test_watch_single_object_by_name(embedded_server, embedded_api_client):
    """A metadata.name field selector watches one object."""
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(embedded_server.store.resource_version),
                                              "fieldSelector": "metadata.name=b"})
    embedded_server.load([configmap("a"), configmap("b")])
    assert kinds([w.next()]) == [("ADDED", "b")]
    w.close()


def test_kubernetes_watch_stream(embedded_server, embedded_api_client):
    """kubernetes.watch.Watch decodes the stream into typed events and stops on timeout."""
    embedded_server.load([configmap("a")])
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    seen = []
    for event in kubernetes.watch.Watch().stream(v1.list_namespaced_config_map, "default",
                                                 timeout_seconds=1):
        seen.append((event["type"], event["object"].metadata.name))
    assert seen == [("ADDED", "a")]


def test_many_events_arrive_complete_and_in_order(embedded_server, embedded_api_client):
    """5,000 writes stream to a watcher with none lost or reordered."""
    w = WatchStream(embedded_api_client, PODS, {"resourceVersion": str(embedded_server.store.resource_version)})
    embedded_server.store.create_many(pod(f"p-{i:05d}") for i in range(5000))
    events = w.take(5000)
    assert [e["object"]["metadata"]["name"] for e in events] == [f"p-{i:05d}" for i in range(5000)]
    w.close()


def test_watch_rejects_unsupported_field_selector(embedded_api_client):
    """A watch with an unsupported field selector answers 400 before streaming."""
    r = call(embedded_api_client, "GET", CM, query={"watch": "true", "fieldSelector": "data.x=1"})
    assert r.status == 400


def test_legacy_watch_path(embedded_server, embedded_api_client):
    """The /watch/ path prefix streams like ?watch=true."""
    embedded_server.load([configmap("a")])
    w = WatchStream(embedded_api_client, "/api/v1/watch/namespaces/default/configmaps", {"watch": "false"})
    assert kinds([w.next()]) == [("ADDED", "a")]
    w.close()


def test_rewatch_from_last_seen_resource_version_loses_nothing(embedded_server, embedded_api_client):
    """After close_watches, a watch from the last delivered resourceVersion resumes exactly."""
    store = embedded_server.store
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(store.resource_version)})
    store.create(configmap("a"))
    last = w.next()["object"]["metadata"]["resourceVersion"]
    embedded_server.faults.close_watches()
    assert w.wait_end()
    store.create(configmap("b"))
    store.update(configmap("a", data={"k": "v"}))
    again = WatchStream(embedded_api_client, CM, {"resourceVersion": last})
    assert kinds(again.take(2)) == [("ADDED", "b"), ("MODIFIED", "a")]
    again.close()


def test_deleted_event_carries_final_state_with_new_resource_version(embedded_server, embedded_api_client):
    """A DELETED event holds the object's last state stamped with the deletion's resourceVersion."""
    embedded_server.load([configmap("a", data={"k": "v"})])
    before = embedded_server.store.resource_version
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(before)})
    embedded_server.store.delete("v1", "ConfigMap", "a", "default")
    event = w.next()
    assert event["type"] == "DELETED" and event["object"]["data"] == {"k": "v"}
    assert int(event["object"]["metadata"]["resourceVersion"]) == before + 1
    w.close()


def test_send_initial_events_with_no_objects_still_sends_the_end_bookmark(embedded_server, embedded_api_client):
    """An empty initial state is announced by the initial-events-end bookmark alone."""
    w = WatchStream(embedded_api_client, CM, {"sendInitialEvents": "true", "allowWatchBookmarks": "true",
                                              "resourceVersionMatch": "NotOlderThan"})
    mark = w.next()
    assert mark["type"] == "BOOKMARK"
    assert mark["object"]["metadata"]["resourceVersion"] == str(embedded_server.store.resource_version)
    w.close()
