"""The shard side: the gate every reconcile passes (fence, drain acknowledgement, objects in
transit) and the moved departures that run no onDelete."""

from __future__ import annotations

from typing import Any

from kinrun.errors import ConflictError
from kinrun.reconcile import LEFT, MOVED, Reconciler, Result, confirm_gone_by_get
from kinrun.sharding.keys import drain_label, shard_label
from kinrun.sharding.shard import Shard

RING = "web"
SHARD, DRAIN = shard_label(RING), drain_label(RING)


class Patches:
    def __init__(self, fail: Exception | None = None) -> None:
        self.sent: list[tuple[str, str | None, dict]] = []
        self.fail = fail

    def patch(self, api_version, kind, name, body, *, namespace=None, patch_type="merge"):
        if self.fail is not None:
            raise self.fail
        self.sent.append((name, namespace, body))
        return {}


def obj(name="x", shard="r1", drain=False, rv="5", uid="u1", **labels):
    labels = {**labels, **({SHARD: shard} if shard else {})}
    if drain:
        labels[DRAIN] = "true"
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv,
                         "labels": labels}}


def gated(shard: Shard, controllers=("c1",)):
    calls: list[tuple[str, str]] = []
    out = {}
    for name in controllers:
        shard.register(name, "cms", "v1", "ConfigMap")
    for name in controllers:
        def reconcile(key, o, cause=None, name=name):
            calls.append((name, key))
            return Result("done")
        out[name] = shard.wrap(name, reconcile)
    return out, calls


def test_the_gate_runs_reconciles_of_this_replicas_objects():
    shard = Shard(RING, "r1", client=Patches())
    wrapped, calls = gated(shard)
    wrapped["c1"]("ns/x", obj())
    assert calls == [("c1", "ns/x")]


def test_no_reconcile_starts_while_the_fence_is_down():
    open_ = [True]
    shard = Shard(RING, "r1", client=Patches(), fence=lambda: open_[0])
    wrapped, calls = gated(shard)
    open_[0] = False
    assert wrapped["c1"]("ns/x", obj()).outcome == "requeue"  # held back, not dropped
    assert wrapped["c1"]("ns/gone", None).outcome == "requeue"  # nor an onDelete
    assert calls == []


def test_a_drained_object_is_acknowledged_instead_of_reconciled():
    client = Patches()
    shard = Shard(RING, "r1", client=client)
    wrapped, calls = gated(shard)
    assert wrapped["c1"]("ns/x", obj(drain=True, rv="9")).outcome == "done"
    assert calls == []
    assert client.sent == [("x", "ns", {"metadata": {"resourceVersion": "9", "labels": {
        SHARD: None, DRAIN: None}}})]
    wrapped["c1"]("ns/x", obj(drain=True, rv="9"))  # the same version again: no second patch
    assert len(client.sent) == 1 and shard.acknowledged() == 1


def test_a_drain_is_acknowledged_only_once_every_controller_of_the_informer_let_go():
    client = Patches()
    shard = Shard(RING, "r1", client=client)
    wrapped, calls = gated(shard, ("c1", "c2"))
    wrapped["c1"]("ns/x", obj(drain=True))
    assert client.sent == []  # c2 may still be reconciling ns/x
    wrapped["c2"]("ns/x", obj(drain=True))
    assert len(client.sent) == 1 and calls == []


def test_a_conflicting_acknowledgement_is_retried():
    shard = Shard(RING, "r1", client=Patches(fail=ConflictError("modified")))
    wrapped, _calls = gated(shard)
    assert wrapped["c1"]("ns/x", obj(drain=True)).outcome == "retry"


def test_an_object_in_transit_to_another_replica_is_not_reconciled():
    shard = Shard(RING, "r1", client=Patches())
    wrapped, calls = gated(shard)
    wrapped["c1"]("ns/x", obj(shard="r2"))
    wrapped["c1"]("ns/x", obj(shard=None))
    assert calls == []


def test_a_withdrawn_drain_resumes_reconciling():
    client = Patches()
    shard = Shard(RING, "r1", client=client)
    wrapped, calls = gated(shard, ("c1", "c2"))
    wrapped["c1"]("ns/x", obj(drain=True))
    wrapped["c1"]("ns/x", obj())  # the sharder removed the drain label
    wrapped["c2"]("ns/x", obj(drain=True))  # a late look: c1 is reconciling again
    assert client.sent == []
    assert calls == [("c1", "ns/x")]


def test_selector_and_matches_add_this_replicas_label():
    shard = Shard(RING, "r1")
    assert shard.selector("app=web") == f"app=web,{SHARD}=r1"
    assert shard.selector("") == f"{SHARD}=r1"
    matches = shard.matches(lambda o: o["metadata"]["labels"].get("app") == "web")
    assert matches(obj(app="web")) is True
    assert matches(obj(shard="r2", app="web")) is False
    assert matches(obj(app="db")) is False


def test_the_drain_label_passes_the_predicates():
    seen: list[str] = []

    class H:
        def __init__(self, name): self.name = name
        def on_add(self, o, initial): seen.append(f"{self.name}:add")
        def on_update(self, old, new): seen.append(f"{self.name}:update")
        def on_delete(self, o): seen.append(f"{self.name}:delete")

    handler = Shard(RING, "r1").bypass(H("filtered"), H("own"))
    handler.on_update(obj(), obj(drain=True))
    handler.on_update(obj(drain=True), obj())
    handler.on_update(obj(rv="1"), obj(rv="2"))
    assert seen == ["own:update", "own:update", "filtered:update"]


# -- moved is not a deletion ------------------------------------------------------------------


class Program:
    def __init__(self):
        self.runs: list[tuple[str, Any]] = []

    def run(self, *, key, obj, old, ctx, **_):
        self.runs.append((key, ctx.reason))
        return None


def reconciler(shard: Shard, live: dict | None) -> tuple[Reconciler, Program]:
    on_delete = Program()

    class Client:
        def get(self, api_version, kind, name, namespace=None):
            if live is None:
                from kinrun.errors import NotFoundError
                raise NotFoundError("gone")
            return live

    base = lambda o: o["metadata"]["labels"].get("app") == "web"  # noqa: E731
    rec = Reconciler("c1", on_delete=on_delete, client=None,
                     confirm_gone=confirm_gone_by_get(Client(), "v1", "ConfigMap",
                                                      moved=shard.still_there(base)),
                     moved=shard.moved_away)
    return rec, on_delete


def test_a_departure_whose_final_state_names_another_replica_runs_no_on_delete():
    shard = Shard(RING, "r1")
    rec, on_delete = reconciler(shard, None)
    rec.record_deletion("ns/x", obj(shard="r2", app="web"), tombstone=False,
                        matches=shard.matches(None))
    assert rec.pending_deletions("ns/x")[0].reason == MOVED
    rec("ns/x", None)
    assert on_delete.runs == []


def test_a_departure_confirmed_as_a_relabel_runs_no_on_delete():
    shard = Shard(RING, "r1")
    rec, on_delete = reconciler(shard, obj(shard=None, app="web"))  # acknowledged drain
    rec.record_deletion("ns/x", obj(app="web"), tombstone=False, matches=shard.matches(None))
    rec("ns/x", None)
    assert on_delete.runs == []


def test_a_tombstone_of_a_moved_object_runs_no_on_delete():
    shard = Shard(RING, "r1")
    rec, on_delete = reconciler(shard, obj(shard="r2", app="web"))
    rec.record_deletion("ns/x", obj(app="web"), tombstone=True, matches=shard.matches(None))
    rec("ns/x", None)
    assert on_delete.runs == []


def test_a_real_deletion_and_a_real_departure_still_run_on_delete():
    shard = Shard(RING, "r1")
    rec, on_delete = reconciler(shard, None)
    rec.record_deletion("ns/x", obj(app="web"), tombstone=False, matches=shard.matches(None))
    rec("ns/x", None)
    assert on_delete.runs == [("ns/x", "deleted")]
    rec, on_delete = reconciler(shard, obj(app="db"))  # relabelled out of the config's selector
    rec.record_deletion("ns/x", obj(app="web"), tombstone=False, matches=shard.matches(None))
    rec("ns/x", None)
    assert on_delete.runs == [("ns/x", LEFT)]
