"""What a deletion is: each departure from the primary cache runs onDelete exactly once, with
its final state and reason, whatever was queued or running around it (kinrun.reconcile)."""

from __future__ import annotations

import threading

from reconcile_fakes import WAIT
from pipeline_fakes import pod

from kinrun.errors import PermanentError
from kinrun.reconcile import DELETED, LEFT, UNKNOWN, Reconciler

KEY = "default/p"


def test_deletion_while_a_reconcile_of_the_live_key_runs_keeps_its_final_state(pipeline):
    """A delete arriving during a running reconcile of the key still gives onDelete its final state."""
    pipe = pipeline()
    entered, release = threading.Event(), threading.Event()

    def script(obj, ctx):
        if obj is not None and not entered.is_set():
            entered.set()
            assert release.wait(WAIT)
    pipe.hook.script = script
    pipe.start()
    pipe.server.create(pod("p"))
    assert entered.wait(WAIT)
    final = pipe.server.delete(KEY)
    assert pipe.events.wait_for(lambda ev: any(e[0] == "delete" for e in ev))
    release.set()
    assert pipe.hook.wait(lambda c: any(x["deleted"] for x in c))
    (deletion,) = pipe.hook.deletions()
    assert deletion["old"] is not None and deletion["old"]["metadata"]["resourceVersion"] == \
        final["metadata"]["resourceVersion"]
    assert deletion["reason"] == DELETED


def test_requeue_queued_before_a_deletion_does_not_run_on_delete_again(pipeline, clock):
    """A requeueAfter from a live reconcile that fires after the deletion was handled runs nothing."""
    pipe = pipeline()
    pipe.hook.script = lambda obj, ctx: 30.0 if obj is not None else None
    pipe.start()
    pipe.server.create(pod("p"))
    assert pipe.wait_reconciles(1)
    pipe.server.delete(KEY)
    assert pipe.hook.wait(lambda c: any(x["deleted"] for x in c))
    assert pipe.wait_reconciles(2)
    clock.step(31)  # the requeue fires for a key that is gone and whose deletion was handled
    assert pipe.wait_reconciles(3)
    assert len(pipe.hook.deletions()) == 1
    assert pipe.reconciles[2][1].outcome == "done"


def test_retry_queued_before_a_deletion_does_not_run_on_delete_again(pipeline, clock):
    """A rate-limited retry of a failed live reconcile that fires after the deletion runs nothing."""
    pipe = pipeline()

    def script(obj, ctx):
        if obj is not None:
            raise RuntimeError("live reconcile fails")
    pipe.hook.script = script
    pipe.start()
    pipe.server.create(pod("p"))
    assert pipe.wait_reconciles(1)
    pipe.server.delete(KEY)
    assert pipe.hook.wait(lambda c: any(x["deleted"] for x in c))
    clock.step(5)  # the retry (1 s backoff) fires
    assert pipe.wait_reconciles(3)
    assert len(pipe.hook.deletions()) == 1
    assert pipe.hook.calls[-1]["deleted"] and pipe.reconciles[-1][1].outcome == "done"


def test_recreated_object_gets_on_delete_for_the_old_uid_then_a_reconcile_of_the_new(pipeline):
    """Deleted and created again before the reconcile ran: onDelete(old uid), then the new one, once each."""
    pipe = pipeline()
    first = pipe.server.create(pod("p"))
    pipe.start(controller=False)
    pipe.server.delete(KEY)
    second = pipe.server.create(pod("p"))
    assert pipe.events.wait_for(lambda ev: [e[0] for e in ev] == ["add", "delete", "add"])
    assert pipe.cached_uid(KEY) == second["metadata"]["uid"]
    pipe.controller.start()
    assert pipe.hook.wait(lambda c: len(c) >= 2)
    calls = [(c["deleted"], c["old_uid"] if c["deleted"] else c["uid"]) for c in pipe.hook.calls]
    assert calls == [(True, first["metadata"]["uid"]), (False, second["metadata"]["uid"])]


def test_key_the_primary_cache_never_held_gets_no_on_delete(pipeline):
    """A key mapped from elsewhere that the primary never cached is dropped without onDelete."""
    pipe = pipeline()
    pipe.start()
    pipe.controller.enqueue("default/ghost")
    assert pipe.wait_reconciles(1)
    assert pipe.hook.calls == []
    assert pipe.reconciles[0][1].outcome == "done"


def test_failed_on_delete_is_retried_with_its_final_state_and_reason(pipeline, clock):
    """An onDelete that raises is retried; the retry still sees the final state and reason."""
    pipe = pipeline()
    failures = [1]

    def script(obj, ctx):
        if obj is None and failures[0]:
            failures[0] -= 1
            raise RuntimeError("cleanup failed")
    pipe.hook.script = script
    pipe.start()
    pipe.server.create(pod("p"))
    pipe.server.delete(KEY)
    assert pipe.hook.wait(lambda c: len([x for x in c if x["deleted"]]) >= 1)
    # the retry is scheduled after the hook raised: step until it has fired (bounded)
    assert _step_until(clock, pipe.hook, lambda c: len([x for x in c if x["deleted"]]) >= 2)
    first, retry = pipe.hook.deletions()
    assert retry["old"] is not None and retry["old_uid"] == first["old_uid"]
    assert retry["reason"] == first["reason"] == DELETED


def _step_until(clock, hook, predicate, seconds: float = 5.0) -> bool:
    """Step the fake clock by ``seconds`` until ``predicate(hook.calls)`` holds: for a timer
    the worker sets after the call the test saw (at most WAIT of real time)."""
    for _ in range(int(WAIT / 0.05)):
        if hook.wait(predicate, timeout=0.05):
            return True
        clock.step(seconds)
    return False


def test_permanently_failing_on_delete_is_not_retried(pipeline, clock):
    """PermanentError in onDelete gives up on that deletion: no retry, no second onDelete."""
    pipe = pipeline()

    def script(obj, ctx):
        if obj is None:
            raise PermanentError("cannot clean up")
    pipe.hook.script = script
    pipe.start()
    pipe.server.create(pod("p"))
    pipe.server.delete(KEY)
    assert pipe.hook.wait(lambda c: any(x["deleted"] for x in c))
    assert pipe.wait_reconciles(1)
    done = len(pipe.reconciles)
    pipe.controller.enqueue(KEY)
    assert pipe.wait_reconciles(done + 1)
    assert len(pipe.hook.deletions()) == 1


# -- the reasons, on the Reconciler alone -------------------------------------------------------


def _obj(uid: str, labels: dict | None = None) -> dict:
    return pod("p", meta={"uid": uid, "labels": labels or {}})


def _reasons(reconciler: Reconciler, calls: list) -> list:
    return [(c[0], c[1]) for c in calls]


def _recording() -> tuple[Reconciler, list]:
    calls: list = []

    def hooks(controller, key, obj, ctx):
        calls.append((ctx.reason, (ctx.old or {}).get("metadata", {}).get("uid"), obj))
    return hooks, calls


def test_watch_deletion_without_a_selector_is_deleted():
    """An informer without selectors: a DELETED event means the server deleted the object."""
    hooks, calls = _recording()
    rec = Reconciler("c", hooks=hooks)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False, matches=None)
    assert rec(KEY, None).outcome == "done"
    assert _reasons(rec, calls) == [(DELETED, "u1")]


def test_tombstone_is_unknown():
    """A relist that no longer finds the object (a tombstone) gives reason unknown."""
    hooks, calls = _recording()
    rec = Reconciler("c", hooks=hooks)
    rec.record_deletion(KEY, _obj("u1"), tombstone=True)
    rec(KEY, None)
    assert _reasons(rec, calls) == [(UNKNOWN, "u1")]


def test_event_object_outside_the_selector_is_left_without_asking_the_server():
    """A DELETED event whose object does not match the selector is a departure: left, no GET."""
    hooks, calls = _recording()
    asked = []
    rec = Reconciler("c", hooks=hooks, confirm_gone=lambda k, u: asked.append(k) or True)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False, matches=lambda o: False)
    rec(KEY, None)
    assert _reasons(rec, calls) == [(LEFT, "u1")] and asked == []


def test_selector_informer_asks_the_server_to_tell_deleted_from_left():
    """With a selector, the DELETED event carries the previous (matching) object: a GET decides."""
    hooks, calls = _recording()
    still_there = {"u1": True, "u2": False}
    rec = Reconciler("c", hooks=hooks, confirm_gone=lambda k, uid: not still_there[uid])
    rec.record_deletion(KEY, _obj("u1"), tombstone=False, matches=lambda o: True)
    rec(KEY, None)
    rec.record_deletion(KEY, _obj("u2"), tombstone=False, matches=lambda o: True)
    rec(KEY, None)
    assert _reasons(rec, calls) == [(LEFT, "u1"), (DELETED, "u2")]


def test_failing_confirmation_is_a_retry_that_keeps_the_deletion():
    """An API error while asking the server is retried; the deletion stays recorded."""
    hooks, calls = _recording()

    def confirm(key, uid):
        raise ConnectionError("apiserver down")
    rec = Reconciler("c", hooks=hooks, confirm_gone=confirm)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False, matches=lambda o: True)
    result = rec(KEY, None)
    assert result.outcome == "retry" and calls == []
    assert [d.uid for d in rec.pending_deletions(KEY)] == ["u1"]


def test_departure_and_return_of_the_same_object_coalesce_into_a_live_reconcile():
    """Left and back (same uid) before the reconcile ran: no onDelete, one live reconcile."""
    hooks, calls = _recording()
    rec = Reconciler("c", hooks=hooks)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False, matches=lambda o: False)
    live = _obj("u1", {"app": "x"})
    rec(KEY, live)
    assert [(c[0], c[2] is live) for c in calls] == [("", True)]


def test_several_deletions_before_one_reconcile_each_run_once_in_order():
    """Deleted, re-created and deleted again before the reconcile: onDelete for each uid, in order."""
    hooks, calls = _recording()
    rec = Reconciler("c", hooks=hooks)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False)
    rec.record_deletion(KEY, _obj("u2"), tombstone=False)
    rec(KEY, None)
    rec(KEY, None)  # a later requeue: nothing left to delete
    assert _reasons(rec, calls) == [(DELETED, "u1"), (DELETED, "u2")]


def test_on_delete_requeue_keeps_the_deletion_for_the_next_run():
    """onDelete asking for a requeue runs again after the delay, with the same final state."""
    calls: list = []

    def hooks(controller, key, obj, ctx):
        calls.append(ctx.old["metadata"]["uid"])
        return 10.0 if len(calls) == 1 else None
    rec = Reconciler("c", hooks=hooks)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False)
    first = rec(KEY, None)
    assert (first.outcome, first.delay) == ("requeue", 10.0)
    assert rec(KEY, None).outcome == "done"
    rec(KEY, None)
    assert calls == ["u1", "u1"]


def test_update_with_a_new_uid_is_the_deletion_of_the_old_object():
    """A relist that finds another uid under the name (deleted and re-created while the watch
    was down) arrives as an update: onDelete runs for the old uid, then the new one reconciles."""
    from kinrun.bound import RecordDeletions

    hooks, calls = _recording()
    rec = Reconciler("c", hooks=hooks)
    enqueued = []
    handler = RecordDeletions(type("H", (), {"on_update": lambda s, o, n: enqueued.append(n)})(),
                              rec, None)
    old, new = _obj("u1"), _obj("u2")
    handler.on_update(old, new)
    rec(KEY, new)
    assert [(c[0], c[1], c[2] is new) for c in calls] == [(DELETED, "u1", False), ("", None, True)]
    assert enqueued == [new]


def test_the_reconcile_context_is_the_one_the_constructor_builds():
    """The Reconciler's fast context equals ReconcileContext(...) field by field and stays frozen."""
    import dataclasses

    from kinrun.hooks import ReconcileContext
    from kinrun.reconcile import Cause

    rec = Reconciler("c", hooks=lambda *a: None, listers={"x": 1}, indexers={"y": 2},
                     client="client")
    cause = Cause("updated")
    fast = rec._context(KEY, {"old": 1}, "updated", cause)
    slow = ReconcileContext(controller="c", key=KEY, listers={"x": 1}, client="client",
                            logger=rec.logger, old={"old": 1}, indexers={"y": 2},
                            reason="updated", cause=cause)
    assert fast == slow
    assert {f.name for f in dataclasses.fields(ReconcileContext)} == set(vars(fast))
    try:
        fast.key = "other"  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("the context must stay frozen")


def test_a_live_reconcile_queued_by_a_deletion_never_says_deletion():
    """Issue 28: re-created (another uid) -> onDelete of the old, then a live ``added``; left
    and back (same uid) -> one live ``updated``; ``deletion`` is no reason of a live object."""
    from kinrun.reconcile import Cause
    hooks, calls = _recording()
    rec = Reconciler("c", hooks=hooks)
    rec.record_deletion(KEY, _obj("u1"), tombstone=False)
    rec(KEY, _obj("u2"), Cause("deletion"))
    rec.record_deletion(KEY, _obj("u2"), tombstone=False, matches=lambda o: False)
    rec(KEY, _obj("u2"), Cause("deletion"))
    assert [(c[0], c[1], c[2] is not None) for c in calls] == [
        (DELETED, "u1", False), ("added", None, True), ("updated", None, True)]


def test_a_recreated_object_is_added_through_the_pipeline(pipeline):
    """Informer -> controller -> reconciler: deleted and created again (new uid) while the
    workers hold back: onDelete (deleted) for the old uid, then the live one says ``added``."""
    pipe = pipeline()
    pipe.start(controller=False)
    first = pipe.server.create(pod("p"))
    pipe.controller.process_next_item()
    pipe.server.delete(KEY)
    second = pipe.server.create(pod("p"))
    assert pipe.events.wait_for(lambda ev: sum(e[0] == "add" for e in ev) == 2)
    pipe.controller.process_next_item()
    assert [(c["reason"], c["uid"] or c["old_uid"]) for c in pipe.hook.calls] == [
        ("added", first["metadata"]["uid"]), (DELETED, first["metadata"]["uid"]),
        ("added", second["metadata"]["uid"])]
