"""Reflector: LIST then WATCH, resume points, relists, watchdog, backoff (client-go reflector.go)."""

from __future__ import annotations

import logging
import random
import threading

import pytest
from pipeline_fakes import WAIT, ScriptedListerWatcher, ScriptedWatch, pod

from kinrun.cache import (Backoff, DeltaFIFO, InformerKey, ObjectList, Reflector,
                          SharedInformerFactory, WatchEvent, new_indexer)
from kinrun.cache.reflector import BOOKMARK_INTERVAL, DEFAULT_INACTIVITY_TIMEOUT, MIN_WATCH_TIMEOUT
from kinrun.errors import ApiConnectionError, ExpiredError, ServerError, TooManyRequestsError


class RecordingStore:
    """A reflector store that records calls and can be waited on."""

    def __init__(self):
        self.calls = []
        self._cond = threading.Condition()

    def _rec(self, *call):
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()

    def add(self, obj):
        self._rec("add", obj["metadata"]["name"])

    def update(self, obj):
        self._rec("update", obj["metadata"]["name"])

    def delete(self, obj):
        self._rec("delete", obj["metadata"]["name"])

    def replace(self, objects, rv):
        self._rec("replace", sorted(o["metadata"]["name"] for o in objects), rv)

    def resync(self):
        self._rec("resync")

    def wait_for(self, predicate, timeout=WAIT):
        with self._cond:
            return self._cond.wait_for(lambda: predicate(self.calls), timeout)


@pytest.fixture
def run_reflector():
    started = []

    def start(lw, store, **kw):
        reflector = Reflector(lw, store, **kw)
        thread = reflector.start()
        started.append((reflector, thread))
        return reflector
    yield start
    for reflector, thread in started:
        reflector.stop()
        thread.join(WAIT)
        assert not thread.is_alive()


def n_watches(n):
    return lambda s: len(s.watch_requests) >= n


def test_watch_resumes_from_the_lists_resource_version_not_its_items(server, run_reflector):
    """The first watch starts at the LIST's metadata resourceVersion, not the newest item's."""
    server.create(pod("a"))
    server.create(pod("b"))
    server.delete("default/b")  # the list rv is now newer than any item
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    assert server.watch_requests[0]["resource_version"] == server.resource_version
    assert store.calls[0] == ("replace", ["a"], server.resource_version)


def test_events_reach_the_store_and_move_the_resume_point(server, run_reflector):
    """ADDED/MODIFIED/DELETED become add/update/delete; a reopened watch starts after the last event."""
    store = RecordingStore()
    reflector = run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    server.create(pod("a"))
    server.update(pod("a", spec={"x": 1}))
    server.delete("default/a")
    assert store.wait_for(lambda c: len(c) == 4)
    assert [c[0] for c in store.calls[1:]] == ["add", "update", "delete"]
    assert reflector.last_sync_resource_version == server.resource_version


def test_cleanly_closed_watch_reopens_from_last_rv_without_relist(server, run_reflector):
    """A watch the server ends cleanly is re-opened from the last resourceVersion; no LIST."""
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    server.create(pod("a"))
    assert store.wait_for(lambda c: len(c) == 2)
    rv = server.resource_version
    server.close_watches()
    assert server.wait_for(n_watches(2))
    assert server.watch_requests[1]["resource_version"] == rv
    assert len(server.list_requests) == 1


def test_bookmark_moves_only_the_resource_version(server, run_reflector):
    """A BOOKMARK changes the resume point and never reaches the store."""
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    server.create(pod("other"))  # advance rv, then make a bookmark the last word
    assert store.wait_for(lambda c: len(c) == 2)
    server._rv += 5  # the server moved on (other resources) without events for us
    server.bookmark()
    server.close_watches()  # delivered after the bookmark
    assert server.wait_for(n_watches(2))
    assert server.watch_requests[1]["resource_version"] == server.resource_version
    assert len(store.calls) == 2


def test_each_watch_asks_for_bookmarks_and_a_randomised_timeout(server, run_reflector):
    """Every watch request has allow_bookmarks and timeoutSeconds in [300, 600)."""
    run_reflector(server, RecordingStore(), rand=random.Random(7))
    for i in range(1, 4):
        assert server.wait_for(n_watches(i))
        server.close_watches()
    timeouts = [r["timeout_seconds"] for r in server.watch_requests[:3]]
    assert all(300 <= t < 600 for t in timeouts) and len(set(timeouts)) > 1
    assert all(r["allow_bookmarks"] for r in server.watch_requests)


def test_watch_410_status_relists_at_the_last_resource_version(server, run_reflector):
    """ExpiredError from watch() triggers a relist at the last resourceVersion."""
    server.create(pod("a"))
    server.expire_next_watch(2)  # the first and second watch both answer 410
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(lambda s: len(s.list_requests) >= 3)
    first_rv = store.calls[0][2]
    assert server.list_requests[:2] == ["0", first_rv]


def test_second_watch_410_without_progress_relists_with_an_empty_resource_version(
        server, run_reflector):
    """Watches from the listed resourceVersion expiring twice in a row: the next LIST uses ""."""
    server.create(pod("a"))
    server.expire_next_watch(2)
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(lambda s: len(s.list_requests) >= 3)
    assert server.list_requests[2] == ""


def test_expired_relist_falls_back_to_an_empty_resource_version(server, run_reflector):
    """If the relist at the last resourceVersion is 410 too, the next LIST uses ""."""
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    rv = server.resource_version
    server.expire_next_list(1)
    server.expire_next_watch_event(1)
    server.close_watches()
    assert server.wait_for(lambda s: len(s.list_requests) >= 3)
    assert server.list_requests == ["0", rv, ""]


def test_error_event_410_relists_and_never_reaches_the_store(server, run_reflector):
    """An ERROR event with 410 inside the stream relists; the store sees no ERROR object."""
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    server.expire_next_watch_event()
    server.close_watches()
    assert server.wait_for(lambda s: len(s.list_requests) >= 2 and len(s.watch_requests) >= 3)
    assert [c[0] for c in store.calls] == ["replace", "replace"]


def test_expired_error_raised_during_iteration_relists(server, run_reflector):
    """ExpiredError raised while iterating the stream relists."""
    store = RecordingStore()
    run_reflector(server, store)
    assert server.wait_for(n_watches(1))
    server.open_watches()[0].push(ExpiredError("gone", reason="Expired"))
    assert server.wait_for(lambda s: len(s.list_requests) >= 2)


def test_resource_versions_are_opaque_strings():
    """Non-numeric resourceVersions are passed back verbatim, never parsed."""
    lw = ScriptedListerWatcher()
    lw.lists.append(ObjectList([pod("a", rv="zz-item")], "list-rv-α"))
    lw.watches.append(ScriptedWatch([WatchEvent("ADDED", pod("b", rv="ev-β"))]))
    lw.watches.append(ScriptedWatch([WatchEvent("BOOKMARK", {"metadata": {"resourceVersion": "bm-γ"}})]))
    reflector = Reflector(lw, RecordingStore())
    thread = reflector.start()
    try:
        assert lw.wait_for(lambda s: len(s.watch_requests) >= 3)
        assert [r["resource_version"] for r in lw.watch_requests[:3]] == ["list-rv-α", "ev-β", "bm-γ"]
    finally:
        reflector.stop()
        thread.join(WAIT)


def test_object_of_the_wrong_kind_is_logged_and_skipped(server, run_reflector, caplog):
    """An event whose kind differs from the expected kind never reaches the store."""
    store = RecordingStore()
    run_reflector(server, store, kind="Pod")
    assert server.wait_for(n_watches(1))
    with caplog.at_level(logging.ERROR):
        server.create({"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}})
        server.create(pod("p"))
        assert store.wait_for(lambda c: len(c) >= 2)
    assert store.calls[1] == ("add", "p")
    assert "expected kind Pod, got ConfigMap" in caplog.text


def test_silent_watch_is_dropped_by_the_watchdog_and_reopened(server, clock, run_reflector):
    """A stream that sends nothing for longer than the inactivity limit is closed and re-opened, no relist."""
    server.stall_next_watch()
    run_reflector(server, RecordingStore(), clock=clock, inactivity_timeout=60.0)
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(59.0)
    assert len(server.watch_requests) == 1
    clock.step(2.0)
    assert server.wait_for(n_watches(2))
    assert len(server.list_requests) == 1


def test_default_inactivity_limit_is_three_bookmark_intervals(server, clock, run_reflector):
    """Without an explicit limit, a silent watch is dropped after 3 x 60 s (kube-apiserver's
    bookmark interval), well before its requested server timeout, and re-opened without a relist."""
    assert DEFAULT_INACTIVITY_TIMEOUT == 3 * BOOKMARK_INTERVAL == 180.0
    assert DEFAULT_INACTIVITY_TIMEOUT < MIN_WATCH_TIMEOUT
    server.stall_next_watch()
    run_reflector(server, RecordingStore(), clock=clock)
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(DEFAULT_INACTIVITY_TIMEOUT - 1.0)
    assert clock.wait_for_waiters(1, WAIT, timed=True)  # the watchdog parked again
    assert len(server.watch_requests) == 1
    clock.step(1.5)
    assert server.wait_for(n_watches(2))
    assert server.watch_requests[1]["resource_version"] == server.watch_requests[0]["resource_version"]
    assert len(server.list_requests) == 1


def test_a_bookmark_restarts_the_inactivity_clock(server, clock, run_reflector):
    """A BOOKMARK is activity: the watch lives until the limit has passed since the bookmark,
    then is re-opened from the bookmark's resourceVersion."""
    reflector = run_reflector(server, RecordingStore(), clock=clock, inactivity_timeout=100.0)
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(60.0)
    server._rv += 3  # the server moved on (other resources); the bookmark carries that
    server.bookmark()
    assert server.wait_for(lambda s: reflector.last_sync_resource_version == s.resource_version)
    clock.step(60.0)  # 120 s since the watch opened, 60 s since the bookmark
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    assert len(server.watch_requests) == 1
    clock.step(41.0)  # 101 s since the bookmark
    assert server.wait_for(n_watches(2))
    assert server.watch_requests[1]["resource_version"] == server.resource_version
    assert len(server.list_requests) == 1


@pytest.mark.parametrize("limit", [0.0, -1.0], ids=["zero", "negative"])
def test_a_limit_that_is_not_positive_is_refused(server, limit):
    """inactivity_timeout <= 0 would drop every watch at once: ValueError at construction."""
    with pytest.raises(ValueError, match="inactivity_timeout"):
        Reflector(server, RecordingStore(), inactivity_timeout=limit)


@pytest.mark.parametrize("namespaces", [None, ["a"], ["a", "b"]], ids=["all", "one", "several"])
def test_factory_passes_the_inactivity_limit_to_every_reflector(server, namespaces):
    """SharedInformerFactory.informer_for_namespaces(inactivity_timeout=...) reaches the
    reflector of each namespace's informer; None gives the reflector's default."""
    factory = SharedInformerFactory(lambda key: server)
    informer = factory.informer_for_namespaces(InformerKey("v1/pods"), namespaces,
                                               inactivity_timeout=42.0)
    default = factory.informer_for_namespaces(InformerKey("v1/pods", label_selector="x=y"), None)
    assert {inf.reflector.inactivity_timeout for inf in factory.informers().values()
            if inf is not default} == {42.0}
    assert default.reflector.inactivity_timeout == DEFAULT_INACTIVITY_TIMEOUT
    assert informer is not None


@pytest.mark.parametrize("error", [ApiConnectionError("refused"), TooManyRequestsError("slow"),
                                   ServerError("boom")], ids=["connection", "429", "5xx"])
def test_watch_errors_back_off_then_resume_without_relist(server, clock, run_reflector, error):
    """A failed watch waits the backoff delay on the clock, then re-watches from the same point."""
    server.fail_next_watch(error)
    run_reflector(server, RecordingStore(), clock=clock, rand=random.Random(3))
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    assert len(server.watch_requests) == 1
    clock.step(1.61)  # the first delay is 0.8 s plus up to 100 % jitter
    assert server.wait_for(n_watches(2))
    assert len(server.list_requests) == 1


def test_list_errors_back_off_and_retry_the_list(server, clock, run_reflector):
    """A failed LIST is retried after the backoff delay."""
    server.fail_next_list(ServerError("down"))
    run_reflector(server, RecordingStore(), clock=clock)
    assert server.wait_for(lambda s: len(s.list_requests) == 1)
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(1.61)
    assert server.wait_for(n_watches(1))
    assert len(server.list_requests) == 2


def test_backoff_grows_from_800ms_to_30s_with_jitter_and_resets(clock):
    """Delays double from 0.8 s to a 30 s cap, each with up to 100 % jitter; reset after 2 min healthy."""
    backoff = Backoff(clock, rand=random.Random(0))
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    for base in bases:
        delay = backoff.next_delay()
        assert base <= delay <= 2 * base
    clock.step(121.0)
    assert 0.8 <= backoff.next_delay() <= 1.6


def test_stop_ends_a_blocked_watch_promptly(server, run_reflector):
    """stop() closes the open watch and run() returns (checked by the fixture's join)."""
    reflector = run_reflector(server, RecordingStore())
    assert server.wait_for(n_watches(1))
    reflector.stop()
    assert server.wait_for(lambda s: not s.open_watches())


def test_stop_ends_a_backoff_wait_promptly(server, clock):
    """stop() interrupts a backoff wait without stepping the clock."""
    server.fail_next_list(ServerError("down"))
    reflector = Reflector(server, RecordingStore(), clock=clock)
    thread = reflector.start()
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    reflector.stop()
    thread.join(WAIT)
    assert not thread.is_alive()


def test_resync_calls_store_resync_when_asked(server, clock, run_reflector):
    """Every resync period the reflector asks should_resync and calls store.resync() when true."""
    store = RecordingStore()
    answers = iter([False, True])
    run_reflector(server, store, clock=clock, resync_period=30.0, should_resync=lambda: next(answers))
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(2, WAIT, timed=True)  # the watchdog and the resync loop
    clock.step(30.0)
    assert clock.wait_for_waiters(2, WAIT, timed=True)
    clock.step(30.0)
    assert store.wait_for(lambda c: ("resync",) in c)
    assert store.calls.count(("resync",)) == 1


def test_reflector_feeds_a_delta_fifo(server, run_reflector):
    """With a DeltaFIFO as store, the list becomes Replaced deltas."""
    server.create(pod("a"))
    fifo = DeltaFIFO(new_indexer())
    run_reflector(server, fifo)
    assert server.wait_for(n_watches(1))
    assert fifo.list_keys() == ["default/a"]


def test_non_410_error_event_backs_off_then_resumes_without_relist(server, clock, run_reflector):
    """An ERROR event other than 410 ends the watch, backs off, and re-watches from the same point."""
    store = RecordingStore()
    run_reflector(server, store, clock=clock)
    assert server.wait_for(n_watches(1))
    rv = server.resource_version
    server.open_watches()[0].push(WatchEvent("ERROR", {"kind": "Status", "code": 500, "reason": "InternalError"}))
    assert clock.wait_for_waiters(2, WAIT, timed=True)  # backoff wait (plus the watchdog)
    clock.step(1.61)
    assert server.wait_for(n_watches(2))
    assert server.watch_requests[1]["resource_version"] == rv
    assert len(server.list_requests) == 1 and [c[0] for c in store.calls] == ["replace"]


def _too_large(rv="99", current="7"):
    """kube-apiserver 1.20's answer to a LIST at a resourceVersion it has not reached."""
    body = {"kind": "Status", "code": 504, "reason": "Timeout",
            "message": f"Timeout: Too large resource version: {rv}, current: {current}",
            "details": {"causes": [{"reason": "ResourceVersionTooLarge",
                                    "message": "Too large resource version"}],
                        "retryAfterSeconds": 1}}
    return ServerError(body["message"], status=504, reason="Timeout", body=body)


def test_list_ahead_of_the_server_relists_from_the_latest_at_once(server, clock, run_reflector):
    """A relist answered "Too large resource version" (etcd restored or wiped) is retried with
    "" without backing off (client-go isTooLargeResourceVersionError)."""
    store = RecordingStore()
    run_reflector(server, store, clock=clock)
    assert server.wait_for(n_watches(1))
    rv = server.resource_version
    server.fail_next_list(_too_large(rv))
    server.expire_next_watch_event()
    server.close_watches()
    assert server.wait_for(lambda s: len(s.list_requests) >= 3 and len(s.watch_requests) >= 3)
    assert server.list_requests == ["0", rv, ""]


def test_silent_watch_after_a_failed_one_relists(server, clock, run_reflector):
    """A watch re-opened after a failure that then stays silent past the limit relists at the
    last resourceVersion (only a LIST tells that the server went back in time)."""
    server.fail_next_watch(ApiConnectionError("reset"))
    server.stall_next_watch()
    run_reflector(server, RecordingStore(), clock=clock, rand=random.Random(3),
                  inactivity_timeout=60.0)
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(1, WAIT, timed=True)  # the backoff
    clock.step(1.61)
    assert server.wait_for(n_watches(2))
    assert clock.wait_for_waiters(1, WAIT, timed=True)  # the watchdog
    rv = server.resource_version
    clock.step(61.0)
    assert server.wait_for(lambda s: len(s.list_requests) >= 2)
    assert server.list_requests == ["0", rv]


def test_an_event_after_a_failed_watch_makes_silence_routine_again(server, clock, run_reflector):
    """Once the re-opened watch delivered an event, a later silence re-opens it without a relist."""
    store = RecordingStore()
    server.fail_next_watch(ApiConnectionError("reset"))
    run_reflector(server, store, clock=clock, rand=random.Random(3), inactivity_timeout=60.0)
    assert server.wait_for(n_watches(1))
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(1.61)
    assert server.wait_for(n_watches(2))
    server.create(pod("a"))
    assert store.wait_for(lambda c: len(c) == 2)
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(61.0)
    assert server.wait_for(n_watches(3))
    assert len(server.list_requests) == 1
