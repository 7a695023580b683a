"""Controller workers and the event-handler helpers that map events to keys."""

from __future__ import annotations

import logging
import threading

import pytest
from pipeline_fakes import WAIT, pod

from kinrun.cache import DeletedFinalStateUnknown
from kinrun.clock import FakeClock
from kinrun.controller import (
    Controller,
    enqueue_mapped,
    enqueue_own_key,
    enqueue_owner_key,
    owner_keys,
)
from kinrun.errors import PermanentError, TemporaryError
from kinrun.workqueue import DelayingQueue, ItemExponentialFailureRateLimiter, RateLimitingQueue


@pytest.fixture
def queue(clock: FakeClock):
    q = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0), DelayingQueue(clock=clock))
    yield q
    q.shut_down()


def make(queue, reconcile, objects=None, **kw):
    objects = objects if objects is not None else {}
    return Controller("test", queue, objects.get, reconcile, **kw)


def test_success_forgets_the_key_and_marks_it_done(queue):
    """A successful reconcile resets the failure count and frees the key."""
    calls = []
    ctl = make(queue, lambda k, o: calls.append((k, o)), {"ns/a": {"x": 1}})
    queue.add_rate_limited("ns/a")  # a past failure, to be forgotten
    queue.add("ns/a")
    ctl.process_next_item()
    assert calls == [("ns/a", {"x": 1})]
    assert queue.num_requeues("ns/a") == 0
    queue.add("ns/a")
    assert len(queue) == 1  # done ran: the key can be queued again


def test_absent_object_is_reconciled_as_none(queue):
    """A key missing from the lister reaches reconcile with obj=None (deleted)."""
    calls = []
    ctl = make(queue, lambda k, o: calls.append((k, o)))
    ctl.enqueue("ns/gone")
    ctl.process_next_item()
    assert calls == [("ns/gone", None)]


def test_error_requeues_with_rate_limit(queue, clock):
    """A failing reconcile is retried after the rate limiter's delay, and counted."""
    ctl = make(queue, lambda k, o: 1 / 0)
    ctl.enqueue("a")
    ctl.process_next_item()
    assert queue.num_requeues("a") == 1 and len(queue) == 0
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(1.0)
    assert queue.get(timeout=WAIT) == ("a", False)


def test_key_is_dropped_with_logged_error_after_max_retries(queue, caplog):
    """After max_retries failures the key is forgotten, not requeued, and an error is logged."""
    ctl = make(queue, lambda k, o: 1 / 0, max_retries=2)
    queue.rate_limiter.when("a")
    queue.rate_limiter.when("a")
    ctl.enqueue("a")
    with caplog.at_level(logging.ERROR):
        ctl.process_next_item()
    assert queue.num_requeues("a") == 0
    assert len(queue) == 0 and queue._queue.waiting() == 0  # not requeued, not waiting
    assert "dropping a after 2 retries" in caplog.text


def test_done_runs_even_when_reconcile_raises(queue):
    """The key is released after a failing reconcile (it can be handed out again)."""
    ctl = make(queue, lambda k, o: 1 / 0)
    ctl.enqueue("a")
    ctl.process_next_item()
    queue.add("a")
    assert queue.get(timeout=WAIT) == ("a", False)


def test_done_runs_even_when_get_object_raises(queue):
    """A failing lister read counts as a reconcile failure and still releases the key."""
    def broken(key):
        raise RuntimeError("lister")
    ctl = Controller("t", queue, broken, lambda k, o: None)
    ctl.enqueue("a")
    ctl.process_next_item()
    assert queue.num_requeues("a") == 1
    queue.add("a")
    assert len(queue) == 1


def test_permanent_error_forgets_and_logs(queue, caplog):
    """PermanentError: no retry, failures forgotten, error logged."""
    def reconcile(k, o):
        raise PermanentError("bad spec")
    ctl = make(queue, reconcile)
    queue.rate_limiter.when("a")
    ctl.enqueue("a")
    with caplog.at_level(logging.ERROR):
        ctl.process_next_item()
    assert queue.num_requeues("a") == 0 and len(queue) == 0
    assert "failed permanently: bad spec" in caplog.text


def test_temporary_error_requeues_after_its_delay(queue, clock):
    """TemporaryError(delay) re-adds the key after exactly that delay, not counted as a failure."""
    def reconcile(k, o):
        raise TemporaryError("later", delay=30.0)
    ctl = make(queue, reconcile)
    ctl.enqueue("a")
    ctl.process_next_item()
    assert queue.num_requeues("a") == 0
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(29.0)
    assert len(queue) == 0
    clock.step(1.0)
    assert queue.get(timeout=WAIT) == ("a", False)


def test_temporary_error_without_delay_uses_the_rate_limiter(queue):
    """TemporaryError() with no delay is a counted failure."""
    def reconcile(k, o):
        raise TemporaryError("later")
    ctl = make(queue, reconcile)
    ctl.enqueue("a")
    ctl.process_next_item()
    assert queue.num_requeues("a") == 1


def test_returned_delay_requeues_after_that_many_seconds(queue, clock):
    """A positive return value re-adds the key after that many seconds."""
    ctl = make(queue, lambda k, o: 5.0)
    ctl.enqueue("a")
    ctl.process_next_item()
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    clock.step(5.0)
    assert queue.get(timeout=WAIT) == ("a", False)


def test_stop_drains_the_queue_and_joins_every_worker():
    """stop() lets workers finish every queued key, then all threads end."""
    done = []
    lock = threading.Lock()

    def reconcile(k, o):
        with lock:
            done.append(k)
    queue = RateLimitingQueue()
    ctl = make(queue, reconcile, workers=3)
    for i in range(50):
        ctl.enqueue(f"k{i}")
    ctl.start()
    assert ctl.stop(drain_timeout=WAIT) is True
    assert sorted(done) == sorted(f"k{i}" for i in range(50))
    assert not any(t.is_alive() for t in ctl._threads)


def test_stop_is_bounded_when_a_reconcile_hangs(caplog):
    """A hung reconcile makes stop() return False after the timeout instead of blocking."""
    release, entered = threading.Event(), threading.Event()

    def reconcile(k, o):
        entered.set()
        release.wait(WAIT)
    queue = RateLimitingQueue()
    ctl = make(queue, reconcile)
    ctl.enqueue("a")
    ctl.start()
    assert entered.wait(WAIT)
    with caplog.at_level(logging.ERROR):
        assert ctl.stop(drain_timeout=0.05) is False
    release.set()


def test_workers_never_reconcile_one_key_concurrently():
    """A key queued again while a worker reconciles it waits: an idle worker takes the next key."""
    active, overlap, lock = set(), [], threading.Lock()
    first_entered, release, sentinel_done = threading.Event(), threading.Event(), threading.Event()

    def reconcile(k, o):
        with lock:
            if k in active:
                overlap.append(k)
            active.add(k)
        try:
            if k == "k" and not first_entered.is_set():
                first_entered.set()
                assert release.wait(WAIT)
            if k == "sentinel":
                sentinel_done.set()
        finally:
            with lock:
                active.discard(k)
    queue = RateLimitingQueue()
    ctl = make(queue, reconcile, workers=2)
    ctl.start()
    ctl.enqueue("k")
    assert first_entered.wait(WAIT)
    ctl.enqueue("k")         # queued again while running: must wait for done(k)
    ctl.enqueue("sentinel")  # behind it in FIFO order: the idle worker gets here only after "k"
    assert sentinel_done.wait(WAIT)
    release.set()
    assert ctl.stop(WAIT)
    assert overlap == []


def test_enqueue_own_key_maps_objects_and_tombstones_to_their_keys():
    """The own-key handler enqueues "ns/name" for adds, updates and deletes (tombstones too)."""
    keys = []
    handler = enqueue_own_key(keys.append)
    handler.on_add(pod("a"), True)
    handler.on_update(pod("a"), pod("b"))
    handler.on_delete(DeletedFinalStateUnknown("default/c", None))
    handler.on_delete(pod("node", ns=None))
    assert keys == ["default/a", "default/b", "default/c", "node"]


def owned(name, *refs, ns="default"):
    return pod(name, ns, meta={"ownerReferences": [
        {"apiVersion": av, "kind": kind, "name": n, **extra} for av, kind, n, extra in refs]})


def test_owner_keys_selects_owners_of_the_given_kind_and_group():
    """Only references of the owner kind (and group, when given) count; keys use the object's namespace."""
    obj = owned("cm", ("apps/v1", "Deployment", "web", {}), ("v1", "Pod", "p", {}),
                ("other.io/v1", "Deployment", "x", {}))
    assert owner_keys(obj, "Deployment") == ["default/web", "default/x"]
    assert owner_keys(obj, "Deployment", "apps") == ["default/web"]
    assert owner_keys(obj, "Pod", "") == ["default/p"]


def test_owner_keys_can_require_the_controller_reference():
    """only_controller keeps the reference marked controller: true."""
    obj = owned("cm", ("apps/v1", "ReplicaSet", "a", {}), ("apps/v1", "ReplicaSet", "b", {"controller": True}))
    assert owner_keys(obj, "ReplicaSet", only_controller=True) == ["default/b"]


def test_enqueue_owner_key_enqueues_old_and_new_owners_on_update():
    """An update that changes the owner enqueues both owners; deletes use the tombstone's last state."""
    keys = []
    handler = enqueue_owner_key(keys.append, "Deployment")
    old = owned("cm", ("apps/v1", "Deployment", "a", {}))
    new = owned("cm", ("apps/v1", "Deployment", "b", {}))
    handler.on_update(old, new)
    assert sorted(keys) == ["default/a", "default/b"]
    keys.clear()
    handler.on_delete(DeletedFinalStateUnknown("default/cm", old))
    handler.on_add(pod("orphan"), False)
    assert keys == ["default/a"]


def test_enqueue_mapped_skips_empty_keys_and_failing_maps(caplog):
    """A mapping that returns "" or raises enqueues nothing and does not break the handler."""
    keys = []

    def mapping(obj):
        if obj["metadata"]["name"] == "bad":
            raise ValueError("no")
        return ["", "ns/" + obj["metadata"]["name"]]
    handler = enqueue_mapped(keys.append, mapping)
    with caplog.at_level(logging.ERROR):
        handler.on_add(pod("bad"), False)
    handler.on_add(pod("good"), False)
    assert keys == ["ns/good"]


def test_a_worker_marks_its_reconcile_for_the_gc_policy_and_unmarks_it_when_it_ends():
    """Under the GC policy (``gc_tuning.manage`` installs its observer): while a reconcile
    runs, its worker's ``gc_tuning.reconciling`` entry is True (no young collection or freeze
    on the decoding thread then), False between reconciles and even after a reconcile that
    raised, and gone once the worker thread ended; each reconcile counts one
    ``gc_tuning.epoch`` before it starts (what a watch read checks before it freezes)."""
    from kinrun.gc import policy as gc_tuning

    before = gc_tuning.manage()
    try:
        _marks_its_reconcile(gc_tuning)
    finally:
        gc_tuning.unfreeze(before)


def _marks_its_reconcile(gc_tuning) -> None:
    seen = []
    epochs = [gc_tuning.epoch]
    entered, release = threading.Event(), threading.Event()

    def reconcile(key, obj):
        seen.append(gc_tuning.reconciling.get(threading.get_ident()))
        epochs.append(gc_tuning.epoch)
        if key == "ns/slow":
            entered.set()
            assert release.wait(WAIT)
        if key == "ns/bad":
            raise ValueError("boom")

    q = RateLimitingQueue()
    ctl = Controller("gcflag", q, {}.get, reconcile, max_retries=0)
    ctl.enqueue("ns/bad")
    assert ctl.process_next_item()  # on this thread: raised, retried never (max_retries=0)
    assert gc_tuning.reconciling[threading.get_ident()] is False
    del gc_tuning.reconciling[threading.get_ident()]
    ctl.start()
    ctl.enqueue("ns/slow")
    assert entered.wait(WAIT)
    worker = ctl._threads[0]
    assert gc_tuning.reconciling.get(worker.ident) is True
    release.set()
    assert ctl.stop(drain_timeout=WAIT)
    assert seen == [True, True]
    assert epochs == [epochs[0], epochs[0] + 1, epochs[0] + 2]
    assert worker.ident not in gc_tuning.reconciling


def test_a_stale_cache_is_skipped_counted_and_retried_with_its_cause(queue, clock):
    """KEP-5647: the cache older than our own last write: no reconcile, one count, the key
    added again after STALE_RETRY with its recorded cause; once caught up, it runs."""
    from kinrun.controller import STALE_RETRY
    from kinrun.reconcile import Cause
    calls, skips, stale = [], [], [True]
    ctl = make(queue, lambda k, o, c: calls.append((k, str(c))), {"ns/a": {"x": 1}},
               causes=True, stale=lambda k, o: stale[0], on_stale=lambda: skips.append(1))
    ctl.enqueue("ns/a", Cause("updated"))
    ctl.process_next_item()
    assert (calls, skips, len(queue)) == ([], [1], 0)
    stale[0] = False
    clock.step(STALE_RETRY)
    ctl.process_next_item()
    assert calls == [("ns/a", "updated")]


def test_without_the_gc_policy_a_reconcile_leaves_the_policy_state_alone():
    """No policy installed (the default observer): a worker's reconcile neither marks
    ``reconciling`` nor counts ``epoch`` (kinrun.gc.observer: the pipeline only reports)."""
    from kinrun.gc import policy as gc_tuning

    epoch = gc_tuning.epoch
    q = RateLimitingQueue()
    ctl = Controller("nogc", q, {}.get, lambda key, obj: None, max_retries=0)
    ctl.enqueue("ns/a")
    assert ctl.process_next_item()
    assert gc_tuning.epoch == epoch and threading.get_ident() not in gc_tuning.reconciling
