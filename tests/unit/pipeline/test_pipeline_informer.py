"""SharedIndexInformer: handlers, late handlers, slow listeners, resync, transform, sync
(client-go shared_informer.go)."""

from __future__ import annotations

import logging
import threading

import pytest
from pipeline_fakes import WAIT, Recorder, pod

from kinrun.cache import (
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    InformerStoppedError,
    ResourceEventHandlerFuncs,
    strip_managed_fields,
    wait_for_cache_sync,
)


def test_initial_list_arrives_as_adds_flagged_initial(server, make_informer):
    """Objects of the first list reach on_add with is_in_initial_list=True; later ones with False."""
    server.create(pod("a"))
    informer = make_informer(server)
    rec = Recorder()
    informer.add_event_handler(rec)
    informer.start()
    assert wait_for_cache_sync(informer, timeout=WAIT)
    server.create(pod("b"))
    assert rec.wait_count(2)
    assert [(e[0], e[1], e[2]) for e in rec.events] == [("add", "a", True), ("add", "b", False)]


def test_updates_and_deletes_reach_handlers_in_order(server, make_informer):
    """Each change reaches the handler as add, update(old, new), delete, in order."""
    informer = make_informer(server)
    rec = Recorder()
    informer.add_event_handler(rec)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    first = server.create(pod("a"))
    second = server.update(pod("a", spec={"v": 2}))
    server.delete("default/a")
    assert rec.wait_count(3)
    assert rec.kinds() == [("add", "a"), ("update", "a"), ("delete", "a")]
    assert rec.events[1][2] is first and rec.events[1][3] is second
    assert informer.lister.get("default/a") is None


def test_handler_added_after_start_first_receives_the_store_as_adds(server, make_informer):
    """A late handler gets every cached object as an initial add, then live changes."""
    for name in ["a", "b"]:
        server.create(pod(name))
    informer = make_informer(server)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    rec = Recorder()
    registration = informer.add_event_handler(rec)
    server.create(pod("c"))
    assert rec.wait_count(3)
    assert sorted((e[1], e[2]) for e in rec.events[:2]) == [("a", True), ("b", True)]
    assert (rec.events[2][1], rec.events[2][2]) == ("c", False)
    assert registration.has_synced()


def test_slow_handler_delays_neither_other_handlers_nor_the_store(server, make_informer):
    """While one handler blocks, another receives every event and the store stays current."""
    release = threading.Event()
    informer = make_informer(server)
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=lambda o, i: release.wait(WAIT)))
    fast = Recorder()
    informer.add_event_handler(fast)
    informer.start()
    try:
        for i in range(20):
            server.create(pod(f"p{i}"))
        assert fast.wait_count(20)
        assert len(informer.lister.list()) == 20
    finally:
        release.set()


def test_failing_handler_is_logged_and_keeps_receiving(server, make_informer, caplog):
    """A handler that raises is logged; it and the others still get later notifications."""
    calls = Recorder()

    def flaky(obj, initial):
        calls.on_add(obj, initial)
        raise RuntimeError("handler bug")
    informer = make_informer(server)
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=flaky))
    rec = Recorder()
    informer.add_event_handler(rec)
    informer.start()
    with caplog.at_level(logging.ERROR):
        server.create(pod("a"))
        server.create(pod("b"))
        assert rec.wait_count(2) and calls.wait_count(2)
    informer.stop()
    assert calls.kinds() == [("add", "a"), ("add", "b")]
    assert "handler bug" in caplog.text


def test_missed_deletion_reaches_handlers_as_a_tombstone(server, make_informer):
    """An object deleted while the watch history was lost arrives as DeletedFinalStateUnknown."""
    server.create(pod("a"))
    informer = make_informer(server)
    rec = Recorder()
    informer.add_event_handler(rec)
    informer.start()
    assert rec.wait_count(1)
    server.stall_next_watch()
    server.close_watches()
    assert server.wait_for(lambda s: len(s.watch_requests) >= 2)
    server.delete("default/a")  # the stalled watch never delivers this
    server.compact()
    server.close_watches()  # the re-watch from the old rv answers 410: relist
    assert rec.wait_count(2)
    tombstone = rec.events[1][2]
    assert isinstance(tombstone, DeletedFinalStateUnknown) and tombstone.key == "default/a"
    assert tombstone.obj["metadata"]["name"] == "a"


def test_unchanged_relist_reaches_only_resync_listeners(server, clock, make_informer):
    """Replaced deltas with an unchanged resourceVersion go only to handlers that asked for resync."""
    server.create(pod("a"))
    informer = make_informer(server, clock=clock)
    plain, syncing = Recorder(), Recorder()
    informer.add_event_handler(plain)
    informer.add_event_handler(syncing, resync_period=60.0)
    informer.start()
    assert plain.wait_count(1) and syncing.wait_count(1)
    server.expire_next_watch_event()
    server.close_watches()
    assert server.wait_for(lambda s: len(s.list_requests) >= 2)
    server.create(pod("marker"))  # after the relist: proves the relist was processed
    assert plain.wait_count(2) and syncing.wait_count(3)
    assert plain.kinds() == [("add", "a"), ("add", "marker")]
    assert syncing.kinds() == [("add", "a"), ("update", "a"), ("add", "marker")]


def test_periodic_resync_replays_the_cache_to_resync_listeners(server, clock, make_informer):
    """Each resync period, listeners with a resync period get on_update(obj, obj); others nothing."""
    server.create(pod("a"))
    informer = make_informer(server, clock=clock)
    plain, syncing = Recorder(), Recorder()
    informer.add_event_handler(plain)
    informer.add_event_handler(syncing, resync_period=30.0)
    informer.start()
    assert syncing.wait_count(1)
    assert clock.wait_for_waiters(2, WAIT, timed=True)
    clock.step(30.0)
    assert syncing.wait_count(2)
    _, _, old, new = syncing.events[1]
    assert old is new
    server.create(pod("marker"))
    assert plain.wait_count(2)
    assert plain.kinds() == [("add", "a"), ("add", "marker")]


def test_short_handler_resync_period_is_raised_to_one_second(server, make_informer):
    """A resync period under 1 s is raised to 1 s (client-go minimumResyncPeriod)."""
    informer = make_informer(server)
    registration = informer.add_event_handler(Recorder(), resync_period=0.01)
    assert registration.listener.resync_period == 1.0


def test_late_handler_resync_period_is_raised_to_the_informers_check_period(server, make_informer):
    """After start, a handler cannot resync more often than the informer checks."""
    informer = make_informer(server, resync_period=60.0)
    informer.start()
    registration = informer.add_event_handler(Recorder(), resync_period=10.0)
    assert registration.listener.resync_period == 60.0


def test_transform_runs_before_objects_are_stored(server, make_informer):
    """The cache and the handlers only ever see transformed objects."""
    server.create(pod("a", meta={"managedFields": [{"manager": "kubectl"}]}))
    informer = make_informer(server, transform=strip_managed_fields)
    rec = Recorder()
    informer.add_event_handler(rec)
    informer.start()
    assert rec.wait_count(1)
    assert "managedFields" not in informer.lister.get("default/a")["metadata"]
    assert "managedFields" not in rec.events[0][3]["metadata"]


def test_has_synced_after_the_first_list_is_delivered(server, make_informer):
    """has_synced is false before start and true once the initial list is processed."""
    for i in range(5):
        server.create(pod(f"p{i}"))
    informer = make_informer(server)
    assert not informer.has_synced()
    informer.start()
    assert wait_for_cache_sync(informer, timeout=WAIT)
    assert len(informer.lister.list()) == 5


def test_wait_for_cache_sync_returns_false_when_the_informer_stops_first(server, make_informer):
    """Waiting on an informer that stops before syncing returns False."""
    from kinrun.errors import ServerError
    server.fail_next_list(ServerError("down"), n=1000)
    informer = make_informer(server)
    informer.start()
    informer.stop()
    assert wait_for_cache_sync(informer, timeout=WAIT) is False


def test_adding_a_handler_after_stop_raises(server, make_informer):
    """add_event_handler on a stopped informer raises InformerStoppedError."""
    informer = make_informer(server)
    informer.start()
    informer.stop()
    with pytest.raises(InformerStoppedError):
        informer.add_event_handler(Recorder())


def test_indexers_added_after_start_index_cached_objects(server, make_informer):
    """add_indexers on a running informer indexes what is already cached."""
    server.create(pod("a", spec={"nodeName": "n1"}))
    informer = make_informer(server)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    informer.add_indexers({"byNode": lambda o: [o.get("spec", {}).get("nodeName", "")]})
    assert [o["metadata"]["name"] for o in informer.lister.by_index("byNode", "n1")] == ["a"]


def test_removed_handler_receives_nothing_more(server, make_informer):
    """After remove_event_handler the handler gets no further notifications."""
    informer = make_informer(server)
    gone, kept = Recorder(), Recorder()
    registration = informer.add_event_handler(gone)
    informer.add_event_handler(kept)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    assert informer.remove_event_handler(registration)
    server.create(pod("a"))
    assert kept.wait_count(1)
    assert gone.events == []


def test_filtering_handler_turns_filter_transitions_into_adds_and_deletes():
    """An update leaving the filter becomes a delete; entering it becomes an add."""
    rec = Recorder()
    handler = FilteringResourceEventHandler(lambda o: o.get("spec") == "yes", rec)
    yes, no = pod("a", spec="yes"), pod("a", spec="no")
    handler.on_add(no, True)
    handler.on_update(no, yes)
    handler.on_update(yes, yes)
    handler.on_update(yes, no)
    assert rec.kinds() == [("add", "a"), ("update", "a"), ("delete", "a")]
