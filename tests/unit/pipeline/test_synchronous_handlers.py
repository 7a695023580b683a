"""Synchronous handlers (``add_event_handler(..., synchronous=True)``) and the DeltaFIFO drained on
the producing thread (``_DrainingFIFO``): where and when handlers run, ordering, failures,
late registration, removal, resync, relist tombstones."""

from __future__ import annotations

import logging
import threading
from typing import Any

from pipeline_fakes import WAIT, Recorder, pod

from kinrun.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, SharedIndexInformer
from kinrun.cache.delta_fifo import DeltaFIFO
from kinrun.cache.shared_informer import _DrainingFIFO


class ThreadRecorder(Recorder):
    """A Recorder that also notes the thread each notification arrived on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    def _record(self, item: tuple[Any, ...]) -> None:
        self.threads.append(threading.current_thread())
        super()._record(item)


def running(make_informer, server, **kw) -> SharedIndexInformer:
    """A started informer that has synced."""
    informer = make_informer(server, **kw)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    return informer


# -- where and when a synchronous handler runs --------------------------------------------------


def test_synchronous_handler_runs_on_the_thread_that_applies_the_change(server, make_informer):
    """The handler runs on the thread that stored the object, not on a listener thread."""
    applying: list[threading.Thread] = []

    def spy_index(obj):
        applying.append(threading.current_thread())
        return []
    informer = make_informer(server, indexers={"spy": spy_index})
    sync, buffered = ThreadRecorder(), ThreadRecorder()
    informer.add_event_handler(sync, synchronous=True)
    informer.add_event_handler(buffered)
    informer.start()
    server.create(pod("a"))
    assert sync.wait_count(1) and buffered.wait_count(1)
    assert sync.threads == applying
    assert buffered.threads[0] is not applying[0]
    assert not sync.threads[0].name.startswith("listener-")


def test_synchronous_handler_runs_before_the_next_change_is_applied(server, make_informer):
    """When on_add(p_i) runs, the cache holds p_i and not yet p_(i+1)."""
    informer = make_informer(server)
    seen = []

    def on_add(obj, initial):
        i = int(obj["metadata"]["name"][1:])
        seen.append((i, informer.lister.get(f"default/p{i}") is obj,
                     informer.lister.get(f"default/p{i + 1}") is None))
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=on_add), synchronous=True)
    done = Recorder()
    informer.add_event_handler(done, synchronous=True)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    for i in range(10):
        server.create(pod(f"p{i}"))
    assert done.wait_count(10)
    assert seen == [(i, True, True) for i in range(10)]


def test_synchronous_handler_gets_add_update_delete_in_order(server, make_informer):
    """Each change reaches the handler as add, update(old, new), delete, in order."""
    informer = make_informer(server)
    rec = Recorder()
    informer.add_event_handler(rec, synchronous=True)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    first = server.create(pod("a"))
    second = server.update(pod("a", spec={"v": 2}))
    third = server.update(pod("a", spec={"v": 3}))
    server.delete("default/a")
    assert rec.wait_count(4)
    assert rec.kinds() == [("add", "a"), ("update", "a"), ("update", "a"), ("delete", "a")]
    assert rec.events[1][2] is first and rec.events[1][3] is second
    assert rec.events[2][2] is second and rec.events[2][3] is third


def test_raising_synchronous_handler_is_logged_and_nobody_misses_a_notification(
        server, make_informer, caplog):
    """A synchronous handler that raises is logged; it, a synchronous and a buffered handler
    all get every later notification."""
    calls = Recorder()

    def flaky(obj, initial):
        calls.on_add(obj, initial)
        raise RuntimeError("sync handler bug")
    informer = make_informer(server)
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=flaky), synchronous=True)
    sync, buffered = Recorder(), Recorder()
    informer.add_event_handler(sync, synchronous=True)
    informer.add_event_handler(buffered)
    informer.start()
    with caplog.at_level(logging.ERROR, logger="kinrun.informer"):
        server.create(pod("a"))
        server.create(pod("b"))
        assert sync.wait_count(2) and buffered.wait_count(2)
    assert calls.kinds() == sync.kinds() == buffered.kinds() == [("add", "a"), ("add", "b")]
    failures = [r for r in caplog.records if r.exc_info and "sync handler bug" in str(r.exc_info[1])]
    assert len(failures) == 2


# -- registration -------------------------------------------------------------------------------


def test_late_synchronous_handler_has_the_cache_when_add_returns(server, make_informer):
    """Added after start, it has every cached object as on_add(obj, True) by the time
    add_event_handler returns, then live changes as on_add(obj, False)."""
    for name in ["a", "b"]:
        server.create(pod(name))
    informer = running(make_informer, server)
    rec = Recorder()
    registration = informer.add_event_handler(rec, synchronous=True)
    assert sorted((e[0], e[1], e[2]) for e in rec.events) == [("add", "a", True), ("add", "b", True)]
    assert registration.has_synced()
    server.create(pod("c"))
    assert rec.wait_count(3)
    assert (rec.events[2][1], rec.events[2][2]) == ("c", False)


def test_synchronous_registration_syncs_with_the_informer(server, make_informer):
    """has_synced is False before start; once the informer has synced it is True and the
    handler has already handled every initial add."""
    for i in range(3):
        server.create(pod(f"p{i}"))
    informer = make_informer(server)
    rec = Recorder()
    registration = informer.add_event_handler(rec, synchronous=True)
    assert not registration.has_synced()
    informer.start()
    assert informer.wait_for_sync(WAIT)
    assert registration.has_synced()
    assert sorted((e[1], e[2]) for e in rec.events) == [("p0", True), ("p1", True), ("p2", True)]


def test_removed_synchronous_handler_receives_nothing_more(server, make_informer):
    """After remove_event_handler the synchronous handler gets no further notifications."""
    informer = make_informer(server)
    gone, kept = Recorder(), Recorder()
    registration = informer.add_event_handler(gone, synchronous=True)
    informer.add_event_handler(kept, synchronous=True)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    assert informer.remove_event_handler(registration)
    server.create(pod("a"))
    assert kept.wait_count(1)
    assert gone.events == []


def test_handler_removed_during_a_distribution_misses_that_notification(server, make_informer):
    """A synchronous handler removed while an earlier handler is busy with a notification
    does not receive that notification once the earlier handler returns."""
    entered, release = threading.Event(), threading.Event()

    def blocking(obj, initial):
        entered.set()
        release.wait(WAIT)
    informer = make_informer(server)
    first = Recorder()
    informer.add_event_handler(ResourceEventHandlerFuncs(add_func=blocking), synchronous=True)
    informer.add_event_handler(first, synchronous=True)
    gone = Recorder()
    registration = informer.add_event_handler(gone, synchronous=True)
    informer.start()
    assert informer.wait_for_sync(WAIT)
    server.create(pod("a"))
    assert entered.wait(WAIT)
    assert informer.remove_event_handler(registration)
    release.set()
    assert first.wait_count(1)
    assert gone.events == []


# -- the DeltaFIFO drained on the reflector's and the resync thread ---------------------------


def test_periodic_resync_reaches_a_synchronous_resync_handler_from_the_resync_thread(
        server, clock, make_informer):
    """After the resync period, a synchronous handler with one gets on_update(old, new) with
    the same resourceVersion, on a thread other than the watch's; one without gets nothing."""
    server.create(pod("a"))
    informer = make_informer(server, clock=clock)
    plain, syncing = Recorder(), ThreadRecorder()
    informer.add_event_handler(plain, synchronous=True)
    informer.add_event_handler(syncing, resync_period=30.0, synchronous=True)
    informer.start()
    assert syncing.wait_count(1)
    assert clock.wait_for_waiters(2, WAIT, timed=True)
    clock.step(30.0)
    assert syncing.wait_count(2)
    kind, name, old, new = syncing.events[1]
    assert (kind, name) == ("update", "a")
    assert old["metadata"]["resourceVersion"] == new["metadata"]["resourceVersion"]
    assert syncing.threads[1] is not syncing.threads[0]
    assert syncing.threads[1].name.endswith("-resync")
    server.create(pod("marker"))
    assert plain.wait_count(2)
    assert plain.kinds() == [("add", "a"), ("add", "marker")]


def test_relist_missing_an_object_gives_a_synchronous_handler_a_tombstone(server, make_informer):
    """An object deleted while the watch history was lost reaches on_delete as a
    DeletedFinalStateUnknown carrying the last cached state."""
    server.create(pod("a"))
    server.create(pod("b"))
    informer = make_informer(server)
    rec = Recorder()
    informer.add_event_handler(rec, synchronous=True)
    informer.start()
    assert rec.wait_count(2)
    server.stall_next_watch()
    server.close_watches()
    assert server.wait_for(lambda s: len(s.watch_requests) >= 2)
    server.delete("default/a")  # the stalled watch never delivers this
    server.compact()
    server.close_watches()  # the re-watch from the old rv answers 410: relist
    assert rec.wait_count(3)
    kind, name, tombstone = rec.events[2]
    assert (kind, name) == ("delete", "a")
    assert isinstance(tombstone, DeletedFinalStateUnknown) and tombstone.key == "default/a"
    assert tombstone.obj["metadata"]["name"] == "a"
    assert informer.lister.get("default/a") is None
    assert informer.lister.get("default/b") is not None


def test_index_function_failing_for_one_object_does_not_stop_the_informer(
        server, make_informer, caplog):
    """The object whose index function raises is logged and not cached; changes before and
    after it still reach handlers and the cache."""
    def by_node(obj):
        if obj["metadata"]["name"] == "bad":
            raise KeyError("no node")
        return [obj.get("spec", {}).get("nodeName", "")]
    informer = make_informer(server, indexers={"byNode": by_node})
    sync, buffered = Recorder(), Recorder()
    informer.add_event_handler(sync, synchronous=True)
    informer.add_event_handler(buffered)
    with caplog.at_level(logging.ERROR, logger="kinrun.informer"):
        informer.start()
        assert informer.wait_for_sync(WAIT)
        for name in ["before", "bad", "after"]:
            server.create(pod(name, spec={"nodeName": "n1"}))
        server.update(pod("before", spec={"nodeName": "n2"}))
        assert sync.wait_count(3) and buffered.wait_count(3)
    assert sync.kinds() == buffered.kinds() == [("add", "before"), ("add", "after"),
                                                ("update", "before")]
    assert informer.lister.get("default/bad") is None
    assert [o["metadata"]["name"] for o in informer.lister.by_index("byNode", "n1")] == ["after"]
    assert "'default/bad'" in caplog.text


def test_draining_fifo_keeps_processing_after_one_key_fails(caplog):
    """An exception while processing one key is logged; the keys queued after it are processed."""
    processed = []

    def process(deltas, initial):
        name = deltas[0].object["metadata"]["name"]
        if name == "bad":
            raise RuntimeError("processing bug")
        processed.append(name)
    fifo = DeltaFIFO()
    drain = _DrainingFIFO(fifo, process, "test")
    with caplog.at_level(logging.ERROR):
        drain.replace([pod("a"), pod("bad"), pod("c")], "1")
        drain.add(pod("d"))
    assert processed == ["a", "c", "d"]
    assert "processing bug" in caplog.text
    assert len(fifo) == 0
    assert fifo.has_synced()


def test_replace_runs_no_collection_and_freezes_its_deltas():
    """The DeltaFIFO's Replace of a LIST (a Delta and a one-item list per key) runs under the
    GC pause with a freeze: no collection walks them however low the threshold (at 100,000
    objects two young collections of 150-180 ms ran), yet the drain still processes every
    key; collections run again afterwards."""
    import gc

    from kinrun.gc import policy as gc_tuning

    objects = [pod(f"p{i}") for i in range(3000)]
    collections: list[str] = []
    inside = []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append("inside" if inside else "outside")

    fifo = DeltaFIFO()
    real_replace = fifo.replace

    def replace(objs, rv):
        inside.append(True)
        try:
            real_replace(objs, rv)
        finally:
            inside.clear()
    fifo.replace = replace  # type: ignore[method-assign]
    processed = []
    drain = _DrainingFIFO(fifo, lambda deltas, initial: processed.append(deltas[0].object),
                          "test")
    enabled = gc.isenabled()
    gc.enable()
    before = gc_tuning.manage((100, 10, 10))  # the policy on, a low young threshold
    gc.callbacks.append(on_gc)
    frozen_before = gc.get_freeze_count()
    try:
        drain.replace(objects, "7")
        frozen_after = gc.get_freeze_count()
        [[i] for i in range(1000)]  # collections run again once the pause ended
    finally:
        gc.callbacks.remove(on_gc)
        gc_tuning.unfreeze(before)  # the policy off, nothing left frozen, thresholds back
        if not enabled:
            gc.disable()
    assert "inside" not in collections
    assert "outside" in collections
    assert frozen_after >= frozen_before + len(objects)  # the Deltas went frozen, unwalked
    assert len(processed) == len(objects)
