"""EventCorrelator and EventRecorder: client-go's counting, aggregation and spam filter
(``tools/record/events_cache.go``), stepped on a FakeClock."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.clock import FakeClock
from kinrun.errors import NotFoundError
from kinrun.kube.event_correlator import (
    AGGREGATE_INTERVAL, AGGREGATE_MAX_EVENTS, COMBINED_PREFIX, SPAM_BURST, EventCorrelator,
)
from kinrun.kube.event_recorder import EventRecorder
from kinrun.kube.request import ApiRequest

REF = {"apiVersion": "v1", "kind": "ConfigMap", "name": "web", "namespace": "shop",
       "uid": "u-1"}
EPOCH = 1_700_000_000.0


class Server:
    """A client whose execute answers like the API server for Events: create stores, patch
    merges into the stored one (404 when absent)."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.sent: list[ApiRequest] = []
        self.rv = 0

    def execute(self, req: ApiRequest) -> dict[str, Any]:
        self.sent.append(req)
        self.rv += 1
        if req.verb == "create":
            event = {**req.body, "metadata": {**req.body["metadata"],
                                              "resourceVersion": str(self.rv)}}
        else:
            assert req.verb == "patch" and req.patch_type == "strategic"
            if req.name not in self.events:
                raise NotFoundError(f"events {req.name!r} not found")
            event = {**self.events[req.name], **req.body}
            event["metadata"] = {**event["metadata"], "resourceVersion": str(self.rv)}
        self.events[req.name] = event
        return event


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(EPOCH)


@pytest.fixture
def recorder(clock: FakeClock) -> EventRecorder:
    return EventRecorder("kinrun/web", clock=clock)


def record(recorder: EventRecorder, server: Server, message: str = "synced", *,
           reason: str = "Synced", ref: dict[str, Any] = REF) -> ApiRequest | None:
    sent, answer = recorder.record(server, recorder.event(ref, type="Normal", reason=reason,
                                                          message=message))
    assert (sent is None) == (answer is None)
    return sent


def test_identical_event_patches_the_first_with_count_2(recorder, clock) -> None:
    """The same event twice: one create, then a strategic patch of that Event (count 2, the
    new lastTimestamp), as client-go's eventLogger."""
    server = Server()
    first = record(recorder, server)
    clock.step(90)
    second = record(recorder, server)
    assert [r.verb for r in server.sent] == ["create", "patch"]
    assert second is not None and first is not None and second.name == first.name
    assert second.body == {"count": 2, "lastTimestamp": "2023-11-14T22:14:50Z",
                           "message": "synced"}
    (stored,) = server.events.values()
    assert stored["count"] == 2 and stored["firstTimestamp"] == "2023-11-14T22:13:20Z"


def test_a_different_reason_or_object_is_a_new_event(recorder) -> None:
    """Only identical events are counted: another reason or another object is created."""
    server = Server()
    record(recorder, server)
    record(recorder, server, reason="Other")
    record(recorder, server, ref={**REF, "name": "db", "uid": "u-2"})
    assert [r.verb for r in server.sent] == ["create"] * 3


def test_eleven_similar_events_are_combined(recorder, clock) -> None:
    """Similar events (only the message differs): 9 are created as they are, the 10th becomes
    the combined event, the 11th raises that one's count (client-go EventAggregator, max 10 in
    600 s)."""
    server = Server()
    sent = []
    for i in range(11):
        sent.append(record(recorder, server, f"message {i}"))
        clock.step(1)
    assert AGGREGATE_MAX_EVENTS == 10
    assert [r.verb for r in server.sent] == ["create"] * 10 + ["patch"]
    combined = sent[9]
    assert combined is not None and combined.body["message"] == COMBINED_PREFIX + "message 9"
    assert sent[10] is not None and sent[10].name == combined.name
    assert sent[10].body["count"] == 2
    assert sent[10].body["message"] == COMBINED_PREFIX + "message 10"
    assert len(server.events) == 10


def test_similar_events_further_apart_than_the_interval_are_not_combined(recorder,
                                                                         clock) -> None:
    """A gap longer than 600 s since the previous similar event starts the count over."""
    server = Server()
    for i in range(11):
        record(recorder, server, f"message {i}")
        clock.step(AGGREGATE_INTERVAL + 1)
    assert not any(COMBINED_PREFIX in str(r.body.get("message")) for r in server.sent)


def test_spam_filter_drops_after_25_and_refills_one_per_5_minutes(recorder, clock) -> None:
    """25 events about one object pass (identical ones too), the 26th is dropped; 300 s later
    one more passes, and only one (token bucket, burst 25, 1/300 s). Another object has its
    own bucket."""
    server = Server()
    results = [record(recorder, server, reason=f"R{i}") for i in range(SPAM_BURST + 1)]
    assert all(r is not None for r in results[:SPAM_BURST]) and results[SPAM_BURST] is None
    assert len(server.sent) == SPAM_BURST
    assert record(recorder, server, reason="R0") is None
    assert record(recorder, server, ref={**REF, "name": "db", "uid": "u-2"}) is not None
    clock.step(299)
    assert record(recorder, server, reason="R0") is None
    clock.step(1)
    assert record(recorder, server, reason="R0") is not None
    assert record(recorder, server, reason="R0") is None


def test_a_patch_of_a_vanished_event_creates_it_again(recorder) -> None:
    """When the earlier Event is gone (404 to the patch), it is created with the raised count
    (client-go recordEvent)."""
    server = Server()
    record(recorder, server)
    server.events.clear()
    again = record(recorder, server)
    assert [r.verb for r in server.sent] == ["create", "patch", "create"]
    assert again is not None and again.body["count"] == 2
    assert "resourceVersion" not in again.body["metadata"]


def test_the_server_answer_updates_the_state() -> None:
    """update_state: the next identical event patches the Event the server named."""
    correlator = EventCorrelator(FakeClock(EPOCH))
    recorder = EventRecorder("c", clock=FakeClock(EPOCH), correlator=correlator)
    event = recorder.event(REF, type="Normal", reason="R", message="m").body
    assert correlator.correlate(event).patch is None
    correlator.update_state({**event, "metadata": {**event["metadata"], "name": "renamed",
                                                  "resourceVersion": "7"}, "count": 5})
    again = correlator.correlate(event)
    assert again.patch == {"count": 6, "lastTimestamp": event["lastTimestamp"], "message": "m"}
    assert again.event is not None and again.event["metadata"]["name"] == "renamed"


def test_the_cache_is_bounded() -> None:
    """The caches keep at most cache_size entries: the least recently used event is forgotten
    and created anew."""
    recorder = EventRecorder("c", clock=FakeClock(EPOCH),
                             correlator=EventCorrelator(FakeClock(EPOCH), cache_size=2))
    server = Server()
    for name in ("a", "b", "c", "a"):
        record(recorder, server, ref={**REF, "name": name, "uid": name})
    assert [r.verb for r in server.sent] == ["create"] * 4


def test_source_fields_follow_the_recorder() -> None:
    """component -> source.component and reportingComponent; host -> source.host and
    reportingInstance, left out without one."""
    plain = EventRecorder("kinrun/web", clock=FakeClock(EPOCH)).event(
        REF, type="Warning", reason="R", message="m").body
    assert plain["source"] == {"component": "kinrun/web"}
    assert plain["reportingComponent"] == "kinrun/web" and "reportingInstance" not in plain
    hosted = EventRecorder("x", "pod-1", clock=FakeClock(EPOCH)).event(
        REF, type="Normal", reason="R", message="m").body
    assert hosted["source"] == {"component": "x", "host": "pod-1"}
    assert hosted["reportingInstance"] == "pod-1"
