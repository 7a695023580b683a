"""Leader election on the local monotonic clock: a candidate's skewed wall clock never lets it
take a Lease renewed in time, and a leader whose renewals stopped (a pause, a partition)
starts no reconcile once renewDeadline passed (client-go leaderelection semantics)."""

from __future__ import annotations

import threading

import pytest
from sharding.fakes import FakeLeases

from kinrun.clock import FakeClock, WallOverride
from kinrun.config.model import LeaderElectionSpec
from kinrun.controller import Controller
from kinrun.fencing import FENCED_RETRY, FencedError, check_write
from kinrun.leader_election import LeaderElector
from kinrun.workqueue import DelayingQueue, ItemExponentialFailureRateLimiter, RateLimitingQueue

SPEC = LeaderElectionSpec(lease_name="le", namespace="default", lease_duration=8.0,
                          renew_deadline=5.0, retry_period=1.0)
BASE = 1_800_000_000.0  # Unix seconds at fake time 0
TICK = 0.25  # seconds between looks at both fences


def elector(client, identity, clock, skew=0.0, **kw):
    """An elector whose host's wall clock runs ``skew`` seconds ahead of the true time (which
    is BASE when it is made; its monotonic clock may have any origin)."""
    origin = clock.now()
    wall = WallOverride(clock, lambda: BASE + skew + clock.now() - origin)
    return LeaderElector(client, SPEC, identity=identity, clock=wall, **kw)


class Hosts:
    """Two hosts stepped in lockstep, each on its own monotonic clock (other origins): the
    leader renews every retry period while ``alive``; the candidate tries every retry
    period, half a period later. Counts the ticks at which both fences are open."""

    def __init__(self, skew: float) -> None:
        self.client = FakeLeases()
        self.clock_a, self.clock_b = FakeClock(0.0), FakeClock(7321.5)
        self.a = elector(self.client, "a", self.clock_a)
        self.b = elector(self.client, "b", self.clock_b, skew)
        self.now, self.alive, self.overlaps = 0.0, True, 0
        self.last_renewal: float | None = None  # true time the leader's last renewal started
        self.b_acquired: float | None = None  # true time the candidate first held the Lease

    def run(self, seconds: float) -> None:
        for _ in range(round(seconds / TICK)):
            self.clock_a.step(TICK)
            self.clock_b.step(TICK)
            self.now += TICK
            phase = round(self.now / TICK) % round(SPEC.retry_period / TICK)
            if phase == 0 and self.alive and self.a.try_acquire_or_renew():
                self.last_renewal = self.now
            if phase == 2 and self.b.try_acquire_or_renew() and self.b_acquired is None:
                self.b_acquired = self.now
            self.overlaps += self.a.is_leading_now() and self.b.is_leading_now()


@pytest.mark.parametrize("skew", [10.0, -10.0], ids=["candidate-ahead", "candidate-behind"])
def test_a_skewed_candidate_never_takes_a_lease_renewed_in_time(skew):
    """+/-10 s of wall-clock skew: while the leader renews, the candidate never acquires; once
    the leader stops, it takes over one leaseDuration after it last saw a renewal; 0 ticks
    at which both may reconcile."""
    hosts = Hosts(skew)
    assert hosts.a.try_acquire_or_renew()
    hosts.run(60.0)
    assert hosts.b_acquired is None
    assert hosts.client.leases["le"]["spec"]["holderIdentity"] == "a"
    assert hosts.overlaps == 0
    hosts.alive = False  # the leader is killed: its last renewal is the last write
    hosts.run(30.0)
    assert hosts.b_acquired is not None
    assert hosts.last_renewal is not None
    waited = hosts.b_acquired - hosts.last_renewal
    assert SPEC.lease_duration <= waited <= SPEC.lease_duration + 2 * SPEC.retry_period
    assert hosts.overlaps == 0


def test_a_new_candidate_waits_a_full_lease_duration_whatever_renew_time_says():
    """A Lease whose renewTime is an hour old (by the candidate's clock) but whose holder is
    unknown to it: the candidate takes it only a leaseDuration after it first saw it."""
    client, clock = FakeLeases(), FakeClock(0.0)
    stale = elector(client, "gone", clock, skew=-3600.0)
    assert stale.try_acquire_or_renew()
    candidate = elector(client, "b", clock)
    assert not candidate.try_acquire_or_renew()
    clock.step(SPEC.lease_duration - 0.5)
    assert not candidate.try_acquire_or_renew()
    clock.step(0.5)
    assert candidate.try_acquire_or_renew()
    assert client.leases["le"]["spec"]["leaseTransitions"] == 1


def test_the_fence_closes_renew_deadline_after_the_last_renewal_started():
    """is_leading_now: open after an acquire, closed renewDeadline later without a renewal."""
    client, clock = FakeLeases(), FakeClock(0.0)
    leader = elector(client, "a", clock)
    assert not leader.is_leading_now()
    assert leader.try_acquire_or_renew()
    clock.step(SPEC.renew_deadline - 0.01)
    assert leader.is_leading_now()
    clock.step(0.01)
    assert not leader.is_leading_now()
    assert leader.try_acquire_or_renew()  # nobody took it: renewing reopens it
    assert leader.is_leading_now()


def test_a_lease_taken_by_another_identity_ends_leadership_at_once():
    """The renewal finds another holder: on_lost is called without waiting for the deadline."""
    client, clock, lost = FakeLeases(), FakeClock(0.0), threading.Event()
    leader = elector(client, "a", clock, on_lost=lost.set)
    assert leader.acquire(threading.Event())
    try:
        lease = client.get_lease("le", "default")
        lease["spec"]["holderIdentity"] = "intruder"
        client.update_lease(lease)
        assert clock.wait_for_waiters(1, timed=True)
        clock.step(SPEC.retry_period)
        assert lost.wait(5)
        assert leader.lost and not leader.is_leading_now()
    finally:
        leader.release()


class Worker:
    """A one-worker Controller on ``clock`` whose fence is ``elector.is_leading_now``;
    ``handled`` is released each time the worker took a key: the fence held it back, or it
    was reconciled."""

    def __init__(self, clock: FakeClock, elector: LeaderElector) -> None:
        self.handled = threading.Semaphore(0)
        self.reconciled: list[str] = []
        queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0),
                                  DelayingQueue(clock=clock))
        self.ctl = Controller("c", queue, lambda key: {"key": key}, self._reconcile, clock=clock)
        self.ctl.fence = self._fence
        self.elector = elector

    def took(self, n: int = 1) -> bool:
        """Wait until the worker took ``n`` more keys and finished with them (a held-back key
        is added again before the worker is idle)."""
        took = all(self.handled.acquire(timeout=5) for _ in range(n))
        if took and self.ctl.pause(5.0):
            self.ctl.resume()
            return True
        return False

    def _fence(self) -> bool:
        open_ = self.elector.is_leading_now()
        if not open_:
            self.handled.release()
        return open_

    def _reconcile(self, key: str, obj: dict) -> None:
        self.reconciled.append(key)
        self.handled.release()


def test_a_leader_paused_past_renew_deadline_starts_no_reconcile_after_the_pause():
    """A SIGSTOP of 12 s (renewDeadline 5 s), during which another replica took the Lease:
    when the process resumes, its workers start 0 reconciles of the keys queued (the renewal
    thread finds the Lease taken and calls on_lost); the new leader reconciles them."""
    client, clock_a, clock_b = FakeLeases(), FakeClock(0.0), FakeClock(500.0)
    lost = threading.Event()
    a = elector(client, "a", clock_a, on_lost=lost.set)
    b = elector(client, "b", clock_b)
    worker = Worker(clock_a, a)
    assert a.acquire(threading.Event())
    worker.ctl.start()
    try:
        worker.ctl.enqueue("ns/before")
        assert worker.took()
        assert not b.try_acquire_or_renew()  # b sees a's record: valid for 8 s from now
        clock_b.step(SPEC.lease_duration)  # a is frozen meanwhile: no renewal
        assert b.try_acquire_or_renew()
        for key in ("ns/x", "ns/y"):  # queued before the pause, due right after it
            worker.ctl.queue.add_after(key, 12.0)
        clock_a.step(12.0)  # a resumes: worker and renewal thread run again at once
        assert worker.took(2)
        assert lost.wait(5)
        assert worker.reconciled == ["ns/before"]
        assert len(worker.ctl.queue) == 0  # held back: added again after FENCED_RETRY
        clock_a.step(FENCED_RETRY)
        assert worker.took()
        assert worker.reconciled == ["ns/before"]
    finally:
        worker.ctl.retire(5.0)
        a.release()


def test_a_held_back_key_is_reconciled_once_the_lease_is_renewed_again():
    """A pause shorter than leaseDuration but past renewDeadline: nothing starts until a
    renewal succeeds; then the held-back key runs (it was put back, not dropped)."""
    client, clock = FakeLeases(), FakeClock(0.0)
    a = elector(client, "a", clock)
    worker = Worker(clock, a)
    assert a.try_acquire_or_renew()
    worker.ctl.start()
    try:
        clock.step(SPEC.renew_deadline + 1.0)
        worker.ctl.enqueue("ns/x")
        assert worker.took()
        assert worker.reconciled == []
        assert a.try_acquire_or_renew()  # nobody took it over: leading again
        clock.step(FENCED_RETRY)
        assert worker.took()
        assert worker.reconciled == ["ns/x"]
    finally:
        worker.ctl.retire(5.0)


def test_a_reconcile_under_way_when_the_leader_paused_sends_no_write_after_the_pause():
    """The pause falls inside a reconcile: its next write (after renewDeadline) is not sent;
    the key is retried after FENCED_RETRY s, not counted as a failure."""
    client, clock = FakeLeases(), FakeClock(0.0)
    a = elector(client, "a", clock)
    sent: list[str] = []
    failed = threading.Semaphore(0)

    def reconcile(key: str, obj: dict) -> None:
        check_write("PATCH", "/first")
        sent.append("first")
        clock.step(SPEC.renew_deadline + 1.0)  # the process is stopped here
        try:
            check_write("PATCH", "/second")  # what the transport asks before each write
            sent.append("second")
        except FencedError:
            failed.release()
            raise

    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0),
                              DelayingQueue(clock=clock))
    ctl = Controller("c", queue, lambda key: {"key": key}, reconcile, clock=clock)
    ctl.fence = a.is_leading_now
    assert a.try_acquire_or_renew()
    ctl.start()
    try:
        ctl.enqueue("ns/x")
        assert failed.acquire(timeout=5)
        assert ctl.pause(5.0)  # the worker has acted on the result
        assert sent == ["first"]
        assert queue.num_requeues("ns/x") == 0  # a fixed-delay retry, not a failure
    finally:
        ctl.retire(5.0)


def test_the_manager_gives_its_fence_to_every_controller_also_after_a_reload():
    """Manager.set_fence reaches the running controllers and those a reload adopts."""
    from types import SimpleNamespace

    from kinrun.manager import Manager

    def wired(**controllers):
        return SimpleNamespace(metrics=None, factory=None, clock=None, client=None, refs={},
                               plan=SimpleNamespace(config=None, plugins=None), informers={},
                               controllers=controllers, reconcilers={}, schedules={})

    clock = FakeClock(0.0)
    first, added = (Worker(clock, elector(FakeLeases(), "a", clock)).ctl for _ in range(2))
    manager = Manager(wired(c=first))
    assert first.fence is None
    fence = lambda: True  # noqa: E731
    manager.set_fence(fence)
    assert first.fence is fence
    manager.adopt(wired(c=first, d=added))
    assert added.fence is fence
