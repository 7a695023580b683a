"""Membership Leases: a replica's fence closes before the sharder may take its Lease over;
the sharder's view counts renewals by its own observation, not by the replicas' clocks."""

from __future__ import annotations

import threading

import pytest

from kinrun.clock import FakeClock
from kinrun.sharding.keys import RING_LABEL
from kinrun.sharding.membership import (EXPIRED, HELD, LIVE, RELEASED, SHARDER_HOLDER,
                                        MemberLease, MembershipSpec, MemberTracker, free,
                                        hold_absent, take_over)

from .fakes import FakeLeases

SPEC = MembershipSpec("web", "default", lease_duration=15.0, renew_deadline=10.0,
                      retry_period=2.0)


@pytest.fixture
def member():
    client, clock, lost = FakeLeases(), FakeClock(), threading.Event()
    lease = MemberLease(client, SPEC, "r1", clock=clock, on_lost=lost.set)
    yield client, clock, lease, lost
    lease._stop.set()


def test_acquire_creates_a_lease_named_and_held_by_the_replica_labelled_with_the_ring(member):
    client, _clock, lease, _lost = member
    assert lease.acquire(threading.Event())
    stored = client.leases["r1"]
    assert stored["spec"]["holderIdentity"] == "r1"
    assert stored["metadata"]["labels"][RING_LABEL] == "web"
    assert stored["spec"]["leaseDurationSeconds"] == 15
    assert lease.valid()


def test_the_fence_closes_renew_deadline_after_the_last_renewal_started(member):
    client, clock, lease, lost = member
    assert lease.acquire(threading.Event())
    client.fail = True  # the API server is unreachable from here on
    clock.step(9.9)
    assert lease.valid()
    clock.step(0.1)  # renewDeadline (10 s) < leaseDuration (15 s): closed before a takeover
    assert not lease.valid()


def test_failing_renewals_end_the_membership_after_renew_deadline(member):
    client, clock, lease, lost = member
    assert lease.acquire(threading.Event())
    client.fail = True
    for _ in range(5):  # five retry periods: 10 s without a renewal
        assert clock.wait_for_waiters(1, timed=True)
        clock.step(2.0)
    assert lost.wait(5)
    assert lease.lost and not lease.valid()


def test_renewals_keep_the_fence_open(member):
    client, clock, lease, lost = member
    assert lease.acquire(threading.Event())
    for _ in range(10):  # 20 s of renewals every 2 s
        assert clock.wait_for_waiters(1, timed=True)
        before = client.rv
        clock.step(2.0)
        _wait(lambda: client.rv > before)
    assert lease.valid() and not lost.is_set()


def test_a_lease_taken_over_by_the_sharder_ends_the_membership_at_once(member):
    client, clock, lease, lost = member
    assert lease.acquire(threading.Event())
    assert take_over(client, client.leases["r1"])
    assert clock.wait_for_waiters(1, timed=True)
    clock.step(2.0)
    assert lost.wait(5)
    assert not lease.valid()


def test_a_replica_waits_while_the_sharder_holds_its_lease(member):
    client, clock, lease, _lost = member
    assert hold_absent(client, "web", "default", "r1")
    stop = threading.Event()
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(lease.acquire(stop)))
    thread.start()
    assert clock.wait_for_waiters(1, timed=True)
    assert client.leases["r1"]["spec"]["holderIdentity"] == SHARDER_HOLDER
    assert free(client, client.leases["r1"])  # every object moved: the sharder lets go
    clock.step(2.0)
    thread.join(5)
    assert result == [True]
    assert client.leases["r1"]["spec"]["holderIdentity"] == "r1"


def test_release_clears_the_holder(member):
    client, _clock, lease, _lost = member
    assert lease.acquire(threading.Event())
    lease.release()
    assert client.leases["r1"]["spec"]["holderIdentity"] == ""
    assert not lease.valid()


def _lease(name, holder, renew="2026-01-01T00:00:00.000000Z", duration=15):
    return {"metadata": {"name": name, "resourceVersion": "1"},
            "spec": {"holderIdentity": holder, "renewTime": renew,
                     "leaseDurationSeconds": duration}}


def test_tracker_expires_a_lease_a_duration_after_it_last_saw_a_renewal():
    clock = FakeClock()
    tracker = MemberTracker(clock)
    assert tracker.observe([_lease("a", "a")]).state("a") == LIVE
    clock.step(14.9)
    assert tracker.observe([_lease("a", "a")]).state("a") == LIVE
    clock.step(0.1)
    assert tracker.observe([_lease("a", "a")]).state("a") == EXPIRED
    # a renewal (a new renewTime, whatever its value says) makes it live again
    snapshot = tracker.observe([_lease("a", "a", renew="1999-01-01T00:00:00Z")])
    assert snapshot.state("a") == LIVE and snapshot.live == ("a",)


def test_tracker_ignores_the_replicas_clocks():
    clock = FakeClock()
    tracker = MemberTracker(clock)
    # a renewTime far in the past (a skewed replica clock) is live when first seen
    assert tracker.observe([_lease("a", "a", renew="2000-01-01T00:00:00Z")]).state("a") == LIVE


def test_tracker_states_of_released_and_held_leases():
    snapshot = MemberTracker(FakeClock()).observe(
        [_lease("a", ""), _lease("b", "someone-else"), _lease("c", SHARDER_HOLDER),
         _lease("d", "d")])
    assert snapshot.states == {"a": RELEASED, "b": RELEASED, "c": HELD, "d": LIVE}
    assert snapshot.live == ("d",)


def _wait(check, timeout=5.0):
    import time
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline
        threading.Event().wait(0.01)


def test_a_member_named_after_the_sharder_election_lease_is_refused():
    """A membership Lease cannot be the sharder's election Lease (the same name in the same
    namespace): MemberLease refuses the identity, whoever built it."""
    from kinrun.errors import ConfigError

    spec = MembershipSpec("web", "default", 15.0, 10.0, 2.0, election_lease="web-sharder")
    with pytest.raises(ConfigError, match="election Lease default/web-sharder"):
        MemberLease(FakeLeases(), spec, "web-sharder")
    MemberLease(FakeLeases(), spec, "web-0")  # any other name joins


def test_tracker_never_counts_the_election_lease_as_a_member():
    """The election Lease, even labelled with the ring (as a replica named after it would
    have left it), is no member; objects labelled with its name are nobody's: held."""
    tracker = MemberTracker(FakeClock(), reserved="web-sharder")
    election = _lease("web-sharder", "r1")  # held by the sharder replica r1
    snap = tracker.observe([_lease("r1", "r1"), election])
    assert dict(snap.states) == {"r1": LIVE} and snap.live == ("r1",)
    assert snap.state("web-sharder") == HELD
    assert MemberTracker(FakeClock()).observe([election]).states == {"web-sharder": RELEASED}


def test_a_replica_paused_past_renew_deadline_starts_no_reconcile_of_a_sharded_key(member):
    """A 12 s pause (renewDeadline 10 s) during which the sharder took the Lease over: the
    gate of a sharded controller starts nothing once the process resumes, whether or not the
    renewal thread ran first; the key is put back, not dropped."""
    from kinrun.sharding.shard import Shard

    client, clock, lease, lost = member
    shard = Shard("web", "r1", fence=lease.valid)
    shard.register("c", "cms", "v1", "ConfigMap")
    ran: list[str] = []
    gated = shard.wrap("c", lambda key, obj, cause=None: ran.append(key))
    assert lease.acquire(threading.Event())
    obj = {"metadata": {"name": "x", "namespace": "ns", "labels": {shard.shard_label: "r1"}}}
    gated("ns/x", obj)
    assert ran == ["ns/x"]
    assert take_over(client, client.leases["r1"])  # the sharder, while r1 is frozen
    clock.step(12.0)  # r1 resumes
    assert gated("ns/x", obj).outcome == "requeue"
    assert lost.wait(5)
    assert ran == ["ns/x"] and not lease.valid()
