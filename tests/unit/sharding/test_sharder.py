"""The sharder's decisions and membership rounds: assign, drain before moving away from a
live member, move at once only from a member whose Lease the sharder holds, children follow
their controller."""

from __future__ import annotations

import pytest

from kinrun.clock import FakeClock
from kinrun.kube import ResourceRef
from kinrun.sharding.keys import controller_key, drain_label, object_key, shard_label
from kinrun.sharding.membership import (EXPIRED, HELD, LIVE, RELEASED, SHARDER_HOLDER,
                                        MembershipSpec, Snapshot)
from kinrun.sharding.ring import Ring
from kinrun.sharding.sharder import (PRIMARY, Decision, ShardedResource, Sharder,
                                     decide_owned, decide_primary)

from .fakes import FakeLeases

RING = "web"
SHARD, DRAIN = shard_label(RING), drain_label(RING)


def members(**states: str) -> Snapshot:
    return Snapshot(states, {n: {} for n in states})


def key_owned_by(ring: Ring, member: str) -> str:
    return next(k for k in (f"/ConfigMap/ns/cm-{i}" for i in range(1000))
                if ring.owner(k) == member)


RING_AB = Ring(["a", "b"])
KEY_A = key_owned_by(RING_AB, "a")


def test_an_unlabelled_object_is_assigned_to_its_ring_owner():
    d = decide_primary({}, KEY_A, RING_AB, members(a=LIVE, b=LIVE), RING)
    assert d == Decision({SHARD: "a", DRAIN: None}, "assign")


def test_nothing_to_do_when_labelled_for_its_owner():
    assert decide_primary({SHARD: "a"}, KEY_A, RING_AB, members(a=LIVE, b=LIVE), RING).labels \
        is None


def test_a_live_members_object_is_drained_first_then_left_alone_until_acknowledged():
    d = decide_primary({SHARD: "b"}, KEY_A, RING_AB, members(a=LIVE, b=LIVE), RING)
    assert d == Decision({DRAIN: "true"}, "drain")
    waiting = decide_primary({SHARD: "b", DRAIN: "true"}, KEY_A, RING_AB,
                             members(a=LIVE, b=LIVE), RING)
    assert waiting.labels is None and waiting.hold is None


def test_a_drain_no_longer_needed_is_withdrawn():
    d = decide_primary({SHARD: "a", DRAIN: "true"}, KEY_A, RING_AB, members(a=LIVE, b=LIVE),
                       RING)
    assert d == Decision({DRAIN: None}, "undrain")


def test_an_object_of_a_held_member_moves_at_once_without_drain():
    d = decide_primary({SHARD: "c", DRAIN: "true"}, KEY_A, RING_AB,
                       members(a=LIVE, b=LIVE, c=HELD), RING)
    assert d == Decision({SHARD: "a", DRAIN: None}, "move")


@pytest.mark.parametrize("state", [EXPIRED, RELEASED, None])
def test_an_object_of_a_member_not_yet_held_waits_for_the_takeover(state):
    states = dict(a=LIVE, b=LIVE)
    if state is not None:
        states["c"] = state
    d = decide_primary({SHARD: "c"}, KEY_A, RING_AB, members(**states), RING)
    assert d.labels is None and d.hold == "c"


def test_an_empty_ring_assigns_nothing():
    assert decide_primary({}, KEY_A, Ring(()), members(), RING) == Decision()


def test_children_follow_their_controllers_current_label_even_while_it_drains():
    d = decide_owned({SHARD: "a"}, "k", {SHARD: "b", DRAIN: "true"}, RING_AB, RING)
    assert d == Decision({SHARD: "b"}, "follow")
    assert decide_owned({SHARD: "b"}, "k", {SHARD: "b"}, RING_AB, RING).labels is None


def test_children_of_an_unlabelled_controller_wait_and_of_an_unknown_one_use_the_ring():
    assert decide_owned({}, KEY_A, {}, RING_AB, RING).labels is None
    assert decide_owned({}, KEY_A, None, RING_AB, RING) == Decision({SHARD: "a"}, "follow")
    assert decide_owned({}, None, None, RING_AB, RING).labels is None  # no controller


def test_hash_keys_of_an_object_and_its_child_agree():
    owner = {"metadata": {"namespace": "ns", "name": "web"}}
    child = {"metadata": {"namespace": "ns", "name": "web-abc", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "other"},
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}]}}
    assert controller_key(child) == object_key("apps", "Deployment", owner) == \
        "apps/Deployment/ns/web"


# -- membership rounds ------------------------------------------------------------------------


def _held_lease(client: FakeLeases, name: str, holder: str) -> None:
    client.leases[name] = {"metadata": {"name": name, "resourceVersion": "1",
                                        "labels": {"kinrun.dev/ring": RING}},
                           "spec": {"holderIdentity": holder, "renewTime": "t0",
                                    "leaseDurationSeconds": 15}}


class _Informer:
    def __init__(self, objects):
        self.objects = {f"{o['metadata']['namespace']}/{o['metadata']['name']}": o
                        for o in objects}
        self.indexer = self

    def get_by_key(self, key):
        return self.objects.get(key)

    def list_keys(self):
        return list(self.objects)

    def index_keys(self, index, value):
        return [k for k, o in self.objects.items()
                if (o["metadata"].get("labels") or {}).get(SHARD) == value]

    def list_index_func_values(self, index):
        return {(o["metadata"].get("labels") or {}).get(SHARD) for o in self.objects.values()} \
            - {None}


def _sharder(client, objects, clock):
    ref = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
    res = ShardedResource("cms", ref, role=PRIMARY)
    res.informers.append(_Informer(objects))
    spec = MembershipSpec(RING, "default", 15.0, 10.0, 2.0)
    return Sharder(client, spec, [res], clock=clock), res


def _cm(name, shard=None, rv="7"):
    labels = {SHARD: shard} if shard else {}
    return {"metadata": {"namespace": "ns", "name": name, "resourceVersion": rv,
                         "labels": labels}}


def test_an_expired_member_is_taken_over_before_its_objects_move_then_freed():
    client, clock = FakeLeases(), FakeClock()
    _held_lease(client, "a", "a")
    _held_lease(client, "b", "b")
    objects = [_cm("x", "b")]
    sharder, res = _sharder(client, objects, clock)
    snap = sharder.sync_membership()
    assert snap.live == ("a", "b")
    clock.step(15.0)  # a renews, b does not
    client.leases["a"]["spec"]["renewTime"] = "t1"
    snap = sharder.sync_membership()
    assert client.leases["b"]["spec"]["holderIdentity"] == SHARDER_HOLDER
    assert snap.state("b") == HELD and snap.live == ("a",)
    sharder._process("cms\x00ns/x", None)  # b's object moves, no drain, with its rv
    assert client.patches == [("x", "ns", {"metadata": {"resourceVersion": "7", "labels": {
        SHARD: "a", DRAIN: None}}})]
    assert "b" in client.leases  # an object still names b: its Lease stays held
    objects[0]["metadata"]["labels"][SHARD] = "a"  # the watch shows the move
    res.informers[0] = _Informer(objects)
    sharder.sync_membership()
    assert "b" not in client.leases  # nothing names b any more: it may join again


def test_a_sharder_whose_election_fence_is_closed_writes_nothing():
    """A sharder paused past renewDeadline (fence closed): its membership round takes no
    expired member's Lease over; its workers write no label."""
    client, clock = FakeLeases(), FakeClock()
    _held_lease(client, "a", "a")
    _held_lease(client, "b", "b")
    sharder, _res = _sharder(client, [_cm("x")], clock)
    sharder.sync_membership()
    leading = [False]
    sharder.fence = lambda: leading[0]
    clock.step(15.0)  # b expired as observed; a renewed
    client.leases["a"]["spec"]["renewTime"] = "t1"
    sharder.sync_membership()
    assert client.leases["b"]["spec"]["holderIdentity"] == "b"
    leading[0] = True  # a renewal succeeded: the round runs
    sharder.sync_membership()
    assert client.leases["b"]["spec"]["holderIdentity"] == SHARDER_HOLDER


def test_objects_labelled_for_a_member_without_a_lease_hold_a_lease_for_it():
    client, clock = FakeLeases(), FakeClock()
    _held_lease(client, "a", "a")
    sharder, _res = _sharder(client, [_cm("x", "ghost")], clock)
    snap = sharder.sync_membership()
    assert client.leases["ghost"]["spec"]["holderIdentity"] == SHARDER_HOLDER
    assert snap.state("ghost") == HELD


def test_a_drained_object_is_not_moved_while_its_member_lives():
    client, clock = FakeLeases(), FakeClock()
    _held_lease(client, "a", "a")
    _held_lease(client, "b", "b")
    ring = Ring(["a", "b"])
    name = next(f"cm-{i}" for i in range(1000)
                if ring.owner(f"/ConfigMap/ns/cm-{i}") == "a")
    obj = _cm(name, "b")
    obj["metadata"]["labels"][DRAIN] = "true"
    sharder, _res = _sharder(client, [obj], clock)
    sharder.sync_membership()
    sharder._process(f"cms\x00ns/{name}", None)
    assert client.patches == []  # b has not acknowledged: nothing is written


class _IndexedInformer(_Informer):
    def index_keys(self, index, value):
        from kinrun.sharding.sharder import OWNER_INDEX
        if index == OWNER_INDEX:
            return [k for k, o in self.objects.items() if controller_key(o) == value]
        return super().index_keys(index, value)


def test_children_follow_their_owner_when_its_label_changes():
    from kinrun.sharding.sharder import OWNED

    client, clock = FakeLeases(), FakeClock()
    _held_lease(client, "a", "a")
    _held_lease(client, "b", "b")
    deploy_ref = ResourceRef("apps", "v1", "deployments", "Deployment", True)
    rs_ref = ResourceRef("apps", "v1", "replicasets", "ReplicaSet", True)
    owner = {"metadata": {"namespace": "ns", "name": "web", "resourceVersion": "3",
                          "labels": {SHARD: "b"}}}
    child = {"metadata": {"namespace": "ns", "name": "web-1", "resourceVersion": "4",
                          "labels": {SHARD: "a"}, "ownerReferences": [
                              {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                               "controller": True}]}}
    deploys = ShardedResource("deploys", deploy_ref, role=PRIMARY)
    deploys.informers.append(_IndexedInformer([owner]))
    rs = ShardedResource("rs", rs_ref, role=OWNED, owners=("deploys",))
    rs.informers.append(_IndexedInformer([child]))
    sharder = Sharder(client, MembershipSpec(RING, "default", 15.0, 10.0, 2.0), [deploys, rs],
                      clock=clock)
    sharder.sync_membership()
    while len(sharder.queue):  # drop what the first round queued
        key, _ = sharder.queue.get()
        sharder.queue.done(key)
    before = {"metadata": {**owner["metadata"], "labels": {SHARD: "a"}}}
    sharder._handler(deploys).on_update(before, owner)  # the owner moved a -> b
    queued = set()
    while len(sharder.queue):
        key, _ = sharder.queue.get()
        queued.add(key)
        sharder.queue.done(key)
    assert "rs\x00ns/web-1" in queued
    sharder._process("rs\x00ns/web-1", None)
    assert client.patches == [("web-1", "ns", {"metadata": {"resourceVersion": "4",
                                                            "labels": {SHARD: "b"}}})]


def test_objects_labelled_with_the_election_lease_name_move_at_once_without_a_lease():
    """No member can be named after the sharder's election Lease, so an object labelled with
    that name (by hand, or by a replica from before the refusal) is nobody's: it moves at
    once, and the sharder neither creates nor takes over a Lease of that name."""
    client, clock = FakeLeases(), FakeClock()
    _held_lease(client, "a", "a")
    _held_lease(client, "web-sharder", "a")  # the election Lease (here even ring-labelled)
    ref = ResourceRef("", "v1", "configmaps", "ConfigMap", True)
    res = ShardedResource("cms", ref, role=PRIMARY)
    res.informers.append(_Informer([_cm("x", "web-sharder")]))
    spec = MembershipSpec(RING, "default", 15.0, 10.0, 2.0, election_lease="web-sharder")
    sharder = Sharder(client, spec, [res], clock=clock)
    creates, create = [], client.create_lease
    client.create_lease = lambda lease: creates.append(lease) or create(lease)
    snap = sharder.sync_membership()
    assert snap.live == ("a",) and snap.state("web-sharder") == HELD
    assert creates == []  # no Lease held for it (it exists: elections run through it)
    clock.step(60.0)  # a renews; the election Lease is not renewed here: still no member
    client.leases["a"]["spec"]["renewTime"] = "t1"
    assert sharder.sync_membership().live == ("a",)
    assert client.leases["web-sharder"]["spec"]["holderIdentity"] == "a"  # never taken over
    sharder._process("cms\x00ns/x", None)
    assert client.patches == [("x", "ns", {"metadata": {"resourceVersion": "7", "labels": {
        SHARD: "a", DRAIN: None}}})]
