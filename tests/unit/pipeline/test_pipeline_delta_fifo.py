"""DeltaFIFO semantics (client-go delta_fifo.go)."""

from __future__ import annotations

import threading

import pytest
from pipeline_fakes import WAIT, pod

from kinrun.cache import (
    DeletedFinalStateUnknown,
    DeltaFIFO,
    DeltaType,
    FIFOClosedError,
    RequeueError,
    new_indexer,
    strip_managed_fields,
)


def pop_all(fifo):
    out = []
    while len(fifo):
        out.append(fifo.pop(lambda d, i: None))
    return out


def types(deltas):
    return [d.type for d in deltas]


def test_deltas_accumulate_per_key_in_order():
    """All changes to one key are delivered together, oldest first."""
    fifo = DeltaFIFO()
    fifo.add(pod("a", rv="1"))
    fifo.update(pod("a", rv="2"))
    got = fifo.pop(lambda d, i: None)
    assert types(got) == [DeltaType.ADDED, DeltaType.UPDATED]
    assert [d.object["metadata"]["resourceVersion"] for d in got] == ["1", "2"]


def test_queue_holds_each_key_once_in_first_arrival_order():
    """Keys pop in the order their first pending delta arrived, once each."""
    fifo = DeltaFIFO()
    for name in ["a", "b", "a", "c", "b"]:
        fifo.update(pod(name))
    assert fifo.list_keys() == ["default/a", "default/b", "default/c"]
    assert [d[0].object["metadata"]["name"] for d in pop_all(fifo)] == ["a", "b", "c"]


def test_two_consecutive_deletions_collapse_to_one():
    """Deleted followed by Deleted keeps a single Deleted delta."""
    known = new_indexer()
    known.add(pod("a"))
    fifo = DeltaFIFO(known)
    fifo.delete(pod("a", rv="5"))
    fifo.delete(DeletedFinalStateUnknown("default/a", pod("a")))
    deltas = fifo.get_by_key("default/a")
    assert types(deltas) == [DeltaType.DELETED]
    assert deltas[0].object["metadata"]["resourceVersion"] == "5"


def test_delete_of_unknown_key_is_ignored():
    """A deletion neither the indexer nor the queue knows queues nothing."""
    fifo = DeltaFIFO(new_indexer())
    fifo.delete(pod("ghost"))
    assert len(fifo) == 0


def test_replace_emits_replaced_for_each_listed_object():
    """Every listed object gets a Replaced delta."""
    fifo = DeltaFIFO(new_indexer())
    fifo.replace([pod("a"), pod("b")], "10")
    assert [types(d) for d in pop_all(fifo)] == [[DeltaType.REPLACED]] * 2


def test_replace_emits_tombstones_for_known_keys_missing_from_the_list():
    """A stored key absent from the list gets Deleted(DeletedFinalStateUnknown(key, last))."""
    known = new_indexer()
    last = pod("gone", rv="3")
    known.add(last)
    fifo = DeltaFIFO(known)
    fifo.replace([pod("a")], "10")
    deltas = fifo.get_by_key("default/gone")
    assert types(deltas) == [DeltaType.DELETED]
    assert deltas[0].object == DeletedFinalStateUnknown("default/gone", last)


def test_replace_emits_tombstones_for_queued_keys_missing_from_the_list():
    """A key only in the queue and absent from the list also gets a tombstone."""
    fifo = DeltaFIFO(new_indexer())
    queued = pod("q")
    fifo.add(queued)
    fifo.replace([], "10")
    deltas = fifo.get_by_key("default/q")
    assert types(deltas) == [DeltaType.ADDED, DeltaType.DELETED]
    assert deltas[1].object == DeletedFinalStateUnknown("default/q", queued)


def test_resync_adds_sync_only_for_keys_without_pending_deltas():
    """Sync deltas go to stored objects with nothing pending; pending keys are left alone."""
    known = new_indexer()
    known.add(pod("a"))
    known.add(pod("b"))
    fifo = DeltaFIFO(known)
    fifo.update(pod("b", rv="9"))
    fifo.resync()
    assert types(fifo.get_by_key("default/a")) == [DeltaType.SYNC]
    assert types(fifo.get_by_key("default/b")) == [DeltaType.UPDATED]


def test_pop_requeues_when_process_raises_requeue_error():
    """RequeueError puts the key's deltas back at the end of the queue."""
    fifo = DeltaFIFO()
    fifo.add(pod("a"))
    fifo.add(pod("b"))

    def fail(deltas, initial):
        raise RequeueError()
    fifo.pop(fail)
    assert fifo.list_keys() == ["default/b", "default/a"]
    assert types(fifo.get_by_key("default/a")) == [DeltaType.ADDED]


def test_pop_reraises_the_requeue_cause_after_requeueing():
    """A RequeueError with a cause re-raises the cause, and the key is still queued."""
    fifo = DeltaFIFO()
    fifo.add(pod("a"))

    def fail(deltas, initial):
        raise RequeueError(ValueError("x"))
    with pytest.raises(ValueError):
        fifo.pop(fail)
    assert fifo.list_keys() == ["default/a"]


def test_has_synced_only_after_first_replace_is_fully_popped():
    """has_synced turns true once every key of the first replace has been popped."""
    fifo = DeltaFIFO(new_indexer())
    assert not fifo.has_synced()
    fifo.replace([pod("a"), pod("b")], "1")
    initial_flags = []
    fifo.pop(lambda d, i: initial_flags.append(i))
    assert not fifo.has_synced()
    fifo.pop(lambda d, i: initial_flags.append(i))
    assert fifo.has_synced() and initial_flags == [True, True]


def test_empty_first_replace_is_synced_at_once():
    """An empty initial list counts as synced."""
    fifo = DeltaFIFO(new_indexer())
    fifo.replace([], "1")
    assert fifo.has_synced()


def test_pop_after_close_raises_once_empty():
    """close wakes a blocked pop, which raises FIFOClosedError."""
    fifo = DeltaFIFO()
    result = []

    def consumer():
        try:
            fifo.pop(lambda d, i: None)
        except FIFOClosedError:
            result.append("closed")
    thread = threading.Thread(target=consumer)
    thread.start()
    fifo.close()
    thread.join(WAIT)
    assert result == ["closed"]


def test_close_still_hands_out_queued_keys_first():
    """Keys queued before close are still popped; then pop raises."""
    fifo = DeltaFIFO()
    fifo.add(pod("a"))
    fifo.close()
    assert fifo.pop(lambda d, i: None)[0].object["metadata"]["name"] == "a"
    with pytest.raises(FIFOClosedError):
        fifo.pop(lambda d, i: None)


def test_transform_runs_before_objects_are_queued_but_not_on_tombstones():
    """The transform applies to queued objects; tombstones are queued as they are."""
    known = new_indexer()
    known.add(pod("gone"))
    fifo = DeltaFIFO(known, transform=strip_managed_fields)
    fifo.add(pod("a", meta={"managedFields": [{"manager": "x"}]}))
    fifo.replace([], "1")
    added = fifo.get_by_key("default/a")[0].object
    assert "managedFields" not in added["metadata"]
    assert isinstance(fifo.get_by_key("default/gone")[0].object, DeletedFinalStateUnknown)


def test_a_drained_relist_gives_its_memory_back() -> None:
    """After a relist of 20,000 objects was popped, the empty DeltaFIFO holds no relist-sized table."""
    import tracemalloc

    objs = [{"metadata": {"name": f"pod-{i}", "namespace": "ns", "resourceVersion": "1"}}
            for i in range(20_000)]
    fifo = DeltaFIFO()
    tracemalloc.start()
    try:
        fifo.replace(objs, "1")
        while fifo.pop(lambda deltas, initial: None, 0) is not None:
            pass
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(fifo) == 0
    assert held < 64 * 1024


def test_drain_processes_every_queued_key_in_order_in_one_call():
    """drain pops every queued key, oldest first, with its deltas and the initial-list flag,
    as repeated pops would; the FIFO is then empty and synced."""
    fifo = DeltaFIFO(new_indexer())
    fifo.replace([pod("a"), pod("b")], "1")
    fifo.update(pod("a", rv="2"))
    fifo.add(pod("c"))
    seen = []
    def process(deltas, initial):
        seen.append((deltas[0].object["metadata"]["name"], types(deltas), initial))
    assert fifo.drain(process) == 3
    assert seen == [("a", [DeltaType.REPLACED, DeltaType.UPDATED], True),
                    ("b", [DeltaType.REPLACED], True), ("c", [DeltaType.ADDED], False)]
    assert len(fifo) == 0 and fifo.has_synced()
    assert fifo.drain(lambda d, i: seen.append(d)) == 0


def test_drain_hands_errors_to_on_error_and_goes_on():
    """A failing key goes to on_error and the others are still processed; a key asking to
    be requeued is left queued, not popped again by the same drain."""
    fifo = DeltaFIFO()
    for name in ("a", "b", "c"):
        fifo.add(pod(name))
    errors, done = [], []

    def process(deltas, initial):
        name = deltas[0].object["metadata"]["name"]
        if name == "a":
            raise ValueError("bad a")
        if name == "b":
            raise RequeueError()
        done.append(name)
    assert fifo.drain(process, errors.append) == 3
    assert done == ["c"]
    assert [type(e) for e in errors] == [ValueError]  # a bare RequeueError is no error
    assert fifo.list_keys() == ["default/b"]


def test_drain_without_on_error_raises_and_keeps_the_rest_queued():
    fifo = DeltaFIFO()
    fifo.add(pod("a"))
    fifo.add(pod("b"))

    def fail(deltas, initial):
        raise ValueError("x")
    with pytest.raises(ValueError):
        fifo.drain(fail)
    assert fifo.list_keys() == ["default/b"]


def test_a_blocked_pop_is_woken_by_an_add():
    """A pop waiting for a key is woken when one is queued (producers notify only when a pop
    waits)."""
    fifo = DeltaFIFO()
    got = []
    started = threading.Event()

    def consumer():
        started.set()
        got.append(fifo.pop(lambda d, i: None, timeout=WAIT))
    t = threading.Thread(target=consumer)
    t.start()
    started.wait(WAIT)
    while not fifo._waiting:  # the consumer is inside its wait (test-only peek)
        threading.Event().wait(0.001)
    fifo.add(pod("a"))
    t.join(WAIT)
    assert got and types(got[0]) == [DeltaType.ADDED]
