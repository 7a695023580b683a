"""Fault injection: every switch of ``srv.faults`` seen through the kubernetes client."""

from __future__ import annotations

import threading

import kubernetes
import pytest
from apiserver_http import WatchStream, call, configmap

CM = "/api/v1/namespaces/default/configmaps"


def test_fail_next_answers_429_with_retry_after(embedded_server, embedded_api_client):
    """fail_next(n, 429, retry_after) fails exactly the next n requests with Retry-After."""
    embedded_server.faults.fail_next(2, status=429, retry_after=1.5)
    # POST: urllib3 itself retries idempotent requests that carry Retry-After
    first = call(embedded_api_client, "POST", CM, body=configmap("a"))
    second = call(embedded_api_client, "POST", CM, body=configmap("a"))
    third = call(embedded_api_client, "POST", CM, body=configmap("a"))
    assert (first.status, second.status, third.status) == (429, 429, 201)
    assert first.headers.get("Retry-After") == "2"
    assert first.body["reason"] == "TooManyRequests" and first.body["details"]["retryAfterSeconds"] == 2


def test_fail_next_server_error(embedded_server, embedded_api_client):
    """fail_next with 500 answers an InternalError Status; the typed client raises ApiException."""
    embedded_server.faults.fail_next(1, status=500)
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    with pytest.raises(kubernetes.client.ApiException) as info:
        v1.list_namespaced_config_map("default")
    assert info.value.status == 500
    assert v1.list_namespaced_config_map("default").items == []


def test_expire_next_list_applies_to_lists_with_resource_version(embedded_server, embedded_api_client):
    """expire_next_list answers 410 to the next LIST carrying a resourceVersion only."""
    embedded_server.faults.expire_next_list()
    assert call(embedded_api_client, "GET", CM).status == 200
    expired = call(embedded_api_client, "GET", CM, query={"resourceVersion": "0"})
    assert expired.status == 410 and expired.body["reason"] == "Expired"
    assert call(embedded_api_client, "GET", CM, query={"resourceVersion": "0"}).status == 200


def test_expire_next_watch_is_http_410(embedded_server, embedded_api_client):
    """expire_next_watch answers the next WATCH with HTTP 410."""
    embedded_server.faults.expire_next_watch()
    r = call(embedded_api_client, "GET", CM, query={"watch": "true", "resourceVersion": "1"})
    assert r.status == 410 and r.body["reason"] == "Expired"


def test_expire_next_watch_event_is_error_event(embedded_server, embedded_api_client):
    """expire_next_watch_event answers 200 then one ERROR event 410, then ends."""
    embedded_server.faults.expire_next_watch_event()
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": "1"})
    event = w.next()
    assert w.status == 200
    assert event["type"] == "ERROR"
    assert {k: event["object"][k] for k in ("kind", "apiVersion", "status", "reason", "code")} == {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410}
    assert w.wait_end()


def test_kubernetes_watch_raises_on_error_event(embedded_server, embedded_api_client):
    """The kubernetes client's Watch turns the ERROR 410 event into ApiException(410)."""
    embedded_server.faults.expire_next_watch_event(2)
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    with pytest.raises(kubernetes.client.ApiException) as info:
        for _ in kubernetes.watch.Watch().stream(v1.list_namespaced_config_map, "default",
                                                 resource_version="1"):
            pass
    assert info.value.status == 410


def test_close_watches_ends_every_stream(embedded_server, embedded_api_client):
    """close_watches ends open watches cleanly; new watches work afterwards."""
    streams = [WatchStream(embedded_api_client, CM, {"resourceVersion": "1"}) for _ in range(2)]
    embedded_server.store.create(configmap("a"))
    for w in streams:
        w.next()
    embedded_server.faults.close_watches()
    assert all(w.wait_end() for w in streams)
    fresh = WatchStream(embedded_api_client, CM, {"resourceVersion": str(embedded_server.store.resource_version)})
    embedded_server.store.create(configmap("b"))
    assert fresh.next()["object"]["metadata"]["name"] == "b"
    fresh.close()


def test_stall_next_watch_sends_headers_then_nothing(embedded_server, embedded_api_client):
    """A stalled watch sends its 200 headers but no event until watches are closed."""
    embedded_server.faults.stall_next_watch()
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": "1"})
    assert w.status == 200 and embedded_server.faults.stalled.wait(5)
    embedded_server.store.create(configmap("a"))
    assert not w.ended.wait(0.2) and w.events.empty()
    embedded_server.faults.close_watches()
    assert w.wait_end() and w.events.empty()


def test_expire_continue_tokens(embedded_server, embedded_api_client):
    """Continue tokens issued before expire_continue_tokens answer 410; new ones work."""
    embedded_server.load([configmap(f"c{i}") for i in range(4)])
    token = call(embedded_api_client, "GET", CM, query={"limit": 2}).body["metadata"]["continue"]
    embedded_server.faults.expire_continue_tokens()
    r = call(embedded_api_client, "GET", CM, query={"limit": 2, "continue": token})
    assert r.status == 410 and r.body["reason"] == "Expired"
    rest = call(embedded_api_client, "GET", CM, query={"continue": r.body["metadata"]["continue"]})
    assert [i["metadata"]["name"] for i in rest.body["items"]] == ["c2", "c3"]   # inconsistent token
    fresh = call(embedded_api_client, "GET", CM, query={"limit": 2}).body["metadata"]["continue"]
    assert call(embedded_api_client, "GET", CM, query={"continue": fresh}).status == 200


def test_expire_history_makes_old_watches_expire(embedded_server, embedded_api_client):
    """After expire_history a watch from any earlier resourceVersion answers 410."""
    embedded_server.load([configmap("a")])
    rv = str(embedded_server.store.resource_version)
    embedded_server.faults.expire_history()
    w = WatchStream(embedded_api_client, CM, {"resourceVersion": str(int(rv) - 1)})
    event = w.next()
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert w.wait_end()


def test_latency_delays_but_answers(embedded_server, embedded_api_client):
    """latency is added to requests, which still succeed (no timing assertion)."""
    embedded_server.faults.latency = 0.01
    assert call(embedded_api_client, "GET", CM).status == 200
    embedded_server.faults.reset()
    assert embedded_server.faults.latency == 0.0


def test_faults_are_thread_safe_counters(embedded_server, embedded_api_client):
    """n injected failures are consumed exactly once across concurrent requests."""
    embedded_server.faults.fail_next(10, status=503)
    codes: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(5):
            status = call(embedded_api_client, "GET", CM).status
            with lock:
                codes.append(status)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(codes).count(503) == 10 and codes.count(200) == 10
