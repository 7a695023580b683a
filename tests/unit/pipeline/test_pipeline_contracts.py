"""Contract tests for the remaining protocols (Clock, ListerWatcher, ResourceEventHandler) and
the small helpers (transform, GC tuning)."""

from __future__ import annotations

import gc
import threading

import pytest
from pipeline_fakes import WAIT, Recorder, pod

from kinrun.cache import (
    DeletedFinalStateUnknown,
    FilteringResourceEventHandler,
    ResourceEventHandler,
    ResourceEventHandlerFuncs,
    strip_managed_fields,
)
from kinrun.gc import policy as gc_tuning
from kinrun.clock import FakeClock, RealClock
from kinrun.controller import enqueue_mapped, enqueue_own_key, enqueue_owner_key
from kinrun.errors import ConflictError, ExpiredError, NotFoundError

CLOCKS = {"real": RealClock, "fake": FakeClock}


@pytest.mark.parametrize("make", list(CLOCKS.values()), ids=list(CLOCKS))
def test_clock_wait_returns_at_once_when_the_event_is_set(make):
    """Every clock: wait on a set event returns True without waiting."""
    event = threading.Event()
    event.set()
    assert make().wait(event, 1000.0) is True


@pytest.mark.parametrize("make", list(CLOCKS.values()), ids=list(CLOCKS))
def test_clock_wait_is_ended_by_setting_the_event_from_another_thread(make):
    """Every clock: a wait with no timeout ends when its owner sets the event."""
    clock, event, result = make(), threading.Event(), []
    thread = threading.Thread(target=lambda: result.append(clock.wait(event, None)))
    thread.start()
    event.set()
    thread.join(WAIT)
    assert result == [True]


@pytest.mark.parametrize("make", list(CLOCKS.values()), ids=list(CLOCKS))
def test_clock_now_is_monotonic(make):
    """Every clock: now() never goes backwards."""
    clock = make()
    assert clock.now() <= clock.now()


def test_fake_clock_wakes_waiters_only_when_stepped_past_their_deadline():
    """FakeClock: a timed wait ends when step() reaches its deadline, not before."""
    clock, event, result = FakeClock(), threading.Event(), []
    thread = threading.Thread(target=lambda: result.append(clock.wait(event, 10.0)))
    thread.start()
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(9.0)
    assert clock.waiters() == 1 and result == []
    clock.step(1.0)
    thread.join(WAIT)
    assert result == [True] and clock.now() == 1010.0


# -- ListerWatcher contract (MemoryListerWatcher is the in-memory implementation) -------------

def test_lister_watcher_watch_from_list_rv_sees_every_later_change(server):
    """Watching from a LIST's resourceVersion yields exactly the changes made after it."""
    server.create(pod("a"))
    listed = server.list()
    watch = server.watch(resource_version=listed.resource_version)
    server.update(pod("a", spec={"x": 1}))
    server.delete("default/a")
    server.close_watches()
    assert [(e.type, e.object["metadata"]["name"]) for e in watch] == [("MODIFIED", "a"), ("DELETED", "a")]


def test_lister_watcher_answers_410_for_compacted_resource_versions(server):
    """A watch or LIST from a resourceVersion older than the history raises ExpiredError."""
    old = server.resource_version
    server.create(pod("a"))
    server.compact()
    with pytest.raises(ExpiredError):
        server.watch(resource_version=old)
    with pytest.raises(ExpiredError):
        server.list(resource_version=old)


def test_lister_watcher_close_ends_iteration_from_another_thread(server):
    """Watch.close() from another thread ends a blocked iteration."""
    watch = server.watch(resource_version=server.resource_version)
    got = []
    thread = threading.Thread(target=lambda: got.extend(watch))
    thread.start()
    watch.close()
    thread.join(WAIT)
    assert not thread.is_alive() and got == []


def test_memory_server_rejects_duplicate_creates_and_unknown_updates(server):
    """create of an existing key -> ConflictError; update/delete of a missing key -> NotFoundError."""
    server.create(pod("a"))
    with pytest.raises(ConflictError):
        server.create(pod("a"))
    with pytest.raises(NotFoundError):
        server.update(pod("b"))
    with pytest.raises(NotFoundError):
        server.delete("default/b")


def test_memory_server_resource_versions_increase_and_are_strings(server):
    """Each write gets a new string resourceVersion; stored objects keep their uid on update."""
    a = server.create(pod("a"))
    b = server.update(pod("a", spec={"x": 1}))
    assert isinstance(a["metadata"]["resourceVersion"], str)
    assert a["metadata"]["resourceVersion"] != b["metadata"]["resourceVersion"]
    assert a["metadata"]["uid"] == b["metadata"]["uid"]


def test_memory_server_error_event_fault_sends_a_410_status(server):
    """expire_next_watch_event: the next watch yields one ERROR event with code 410, then ends."""
    server.expire_next_watch_event()
    events = list(server.watch(resource_version=server.resource_version))
    assert [e.type for e in events] == ["ERROR"] and events[0].object["code"] == 410


# -- ResourceEventHandler contract ---------------------------------------------------------

HANDLERS = {
    "funcs": lambda sink: ResourceEventHandlerFuncs(lambda o, i: sink.append(o),
                                                    lambda a, b: sink.append(b),
                                                    lambda o: sink.append(o)),
    "filtering": lambda sink: FilteringResourceEventHandler(
        lambda o: True, ResourceEventHandlerFuncs(lambda o, i: sink.append(o), lambda a, b: sink.append(b),
                                                  lambda o: sink.append(o))),
    "own_key": lambda sink: enqueue_own_key(sink.append),
    "owner_key": lambda sink: enqueue_owner_key(sink.append, "ReplicaSet"),
    "mapped": lambda sink: enqueue_mapped(sink.append, lambda o: ["x"]),
    "recorder": lambda sink: Recorder(),
}


@pytest.mark.parametrize("make", list(HANDLERS.values()), ids=list(HANDLERS))
def test_every_handler_implements_the_protocol_and_accepts_tombstones(make):
    """Every handler is a ResourceEventHandler and takes adds, updates and tombstone deletes."""
    handler = make([])
    assert isinstance(handler, ResourceEventHandler)
    obj = pod("a", meta={"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}]})
    handler.on_add(obj, True)
    handler.on_update(obj, obj)
    handler.on_delete(DeletedFinalStateUnknown("default/a", obj))
    handler.on_delete(DeletedFinalStateUnknown("default/a", None))


# -- helpers --------------------------------------------------------------------------------

def test_strip_managed_fields_copies_only_what_it_changes():
    """The input is untouched; the result shares every value except metadata."""
    obj = pod("a", spec={"big": [1, 2]}, meta={"managedFields": [{"m": 1}], "labels": {"x": "y"}})
    out = strip_managed_fields(obj)
    assert "managedFields" in obj["metadata"] and "managedFields" not in out["metadata"]
    assert out["spec"] is obj["spec"] and out["metadata"]["labels"] is obj["metadata"]["labels"]
    plain = pod("b")
    assert strip_managed_fields(plain) is plain


def test_gc_pause_recorder_records_collections():
    """GCPauseRecorder sees a forced collection with its generation."""
    with gc_tuning.GCPauseRecorder() as recorder:
        gc.collect()
    assert recorder.summary()["gen2_count"] >= 1 and recorder.summary()["max_s"] >= 0


@pytest.mark.parametrize("generation", [0, 1, 2])
def test_gc_policy_freezes_survivors_of_every_collection_until_undone(generation):
    """manage(): thresholds raised and the survivors of a collection of any generation frozen
    (a generation-1 collection's survivors must not pile up for a full one); unfreeze() undoes
    both."""
    before = gc.get_threshold()
    try:
        gc_tuning.manage((10_000, 20, 100))
        keep = [[i] for i in range(1000)]
        gc.collect(generation)
        assert gc.get_freeze_count() >= len(keep)
        assert gc.get_threshold() == (10_000, 20, 100)
    finally:
        gc_tuning.unfreeze(before)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    gc.collect(0)
    assert gc.get_freeze_count() == 0
