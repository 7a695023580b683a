"""Ring membership through one coordination.k8s.io/v1 Lease per replica.

As timebertt/kubernetes-controller-sharding's shard Leases (docs/design.md "Shard Leases",
docs/implement-sharding.md "Shard Lease"): every replica holds a Lease named after itself
(``holderIdentity`` == the Lease's name), labelled ``kinrun.dev/ring: <ring>``, and renews it
as a leader renews its election Lease (client-go ``leaderelection``). The live members of a
ring are the Leases held by their own name and not expired.

Two sides:

* :class:`MemberLease` — the replica's own Lease. ``valid()`` is the fence every reconcile
  passes: True only while the last successful renewal started less than ``renew_deadline``
  seconds ago (by this replica's clock). The sharder declares a member dead only after it saw
  no renewal for ``lease_duration`` seconds (by its own clock, from when it *observed* the
  last change, as client-go's ``observedTime``, so the two clocks need not agree), and
  ``renew_deadline < lease_duration``: a replica whose renewals fail starts no reconcile after
  its deadline, before its Lease can be taken over. A Lease taken by someone else (the
  sharder) ends the membership at once. Losing it calls ``on_lost`` (the main job stops, as
  on lost leadership).
* :class:`MemberTracker` — the sharder's view: which Leases are live members, which are
  expired (the sharder takes them over: :func:`take_over`), which it holds
  (:data:`SHARDER_HOLDER`: their objects may be moved without a drain, nobody reconciles them).

A replica cannot rejoin while the sharder holds its Lease: the sharder deletes the Lease once
none of the replica's objects is left (so a restarted Pod of the same name never reconciles an
object that is being moved away from its previous incarnation).

Thread-safety: ``MemberLease.acquire``/``release`` from the main job's thread, the renewal on
one daemon thread, ``valid()`` from any thread (reads two fields). ``MemberTracker`` is used by
the sharder's one membership thread; ``snapshot()`` results are immutable.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import ApiError, ConfigError, ConflictError, NotFoundError
from kinrun.leader_election import hold, new_lease, now_micro, update_lease
from kinrun.sharding.keys import RING_LABEL
from kinrun.threads import SupervisedThread

_log = logging.getLogger("kinrun.sharding")

SHARDER_HOLDER = "kinrun.dev/sharder"
"""``holderIdentity`` of a member Lease the sharder took over (timebertt's "dead" state):
never a replica's identity (it holds a '/')."""

LEASE_API = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class MembershipSpec:
    """A ring's membership settings: ``ring`` name, Lease ``namespace``, seconds
    ``lease_duration`` > ``renew_deadline`` > ``retry_period`` (as leader election);
    ``election_lease``: the sharder's election Lease when it lives in ``namespace``
    (``kinrun.sharding.election_lease``; "" none), a name no member can have: a replica of that
    name would renew the election Lease as its membership (:class:`MemberLease` refuses it,
    :class:`MemberTracker` never counts that Lease as a member)."""

    ring: str
    namespace: str
    lease_duration: float
    renew_deadline: float
    retry_period: float
    election_lease: str = ""


class MemberLease:
    """This replica's membership Lease (``identity`` is the Lease's name and holder).

    ``client``: kinrun.kube.Client (``get_lease``/``create_lease``/``update_lease``);
    ``clock``: for the fence and the renewal period; ``on_lost``: called once, from the
    renewal thread, when the membership ends (renewal deadline passed, or the Lease taken).
    Raises ConfigError when ``identity`` is ``spec.election_lease``.
    """

    def __init__(self, client: Any, spec: MembershipSpec, identity: str, *,
                 clock: Clock | None = None, on_lost: Callable[[], None] | None = None) -> None:
        if spec.election_lease and identity == spec.election_lease:
            raise ConfigError(f"shard identity {identity!r} is the name of the sharder's "
                              f"election Lease {spec.namespace}/{identity}: a membership Lease "
                              f"cannot be it (set --shard-id or POD_NAME to another name)")
        self.client, self.spec, self.identity = client, spec, identity
        self.clock = clock or REAL_CLOCK
        self.on_lost = on_lost or (lambda: None)
        self._renewed_at: float | None = None  # clock time a successful renewal was started
        self._lease: dict[str, Any] | None = None
        self._stop = threading.Event()  # release(): the renewal thread ends
        self._wake = threading.Event()  # what waits park on (a FakeClock sets it when due)
        self._thread: threading.Thread | None = None
        self.lost = False

    # -- the fence ---------------------------------------------------------------------------

    def valid(self) -> bool:
        """Whether this replica may start a reconcile now: it holds its Lease and renewed it
        less than ``renew_deadline`` seconds ago."""
        at = self._renewed_at
        return (not self.lost and at is not None
                and self.clock.now() - at < self.spec.renew_deadline)

    # -- lifecycle ---------------------------------------------------------------------------

    def acquire(self, stop: threading.Event) -> bool:
        """Block until the Lease is held (True) or ``stop`` is set (False); then renew it every
        ``retry_period`` on a daemon thread. Waits while the sharder holds the Lease."""
        _log.info("joining ring %s as %s (lease %s/%s)", self.spec.ring, self.identity,
                  self.spec.namespace, self.identity)
        waited = False
        while not stop.is_set():
            started = self.clock.now()
            outcome = self._try()
            if outcome is True:
                self._renewed_at = started
                _log.info("member of ring %s as %s", self.spec.ring, self.identity)
                self._thread = SupervisedThread(target=self._renew_loop, daemon=True,
                                                name="shard-lease-renew")
                self._thread.start()
                return True
            if outcome == "taken" and not waited:
                _log.info("lease %s/%s is held by the sharder (objects of a previous member "
                          "%s are being moved); waiting", self.spec.namespace, self.identity,
                          self.identity)
                waited = True
            self._pause(self.spec.retry_period)
        return False

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` (or until ``release``); True when released. A caller's stop event
        is looked at between waits (at most ``retry_period`` late)."""
        self._wake.clear()
        if not self._stop.is_set():
            self.clock.wait(self._wake, seconds)
        return self._stop.is_set()

    def release(self) -> None:
        """Stop renewing and clear the holder (after the workers stopped), so the sharder
        moves this replica's objects at once instead of after ``lease_duration``."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self.spec.retry_period + 1)
        lease = self._lease
        self._renewed_at = None
        if lease is None or self.lost:
            return
        lease["spec"]["holderIdentity"] = ""
        try:
            self.client.update_lease(lease)
            _log.info("left ring %s (lease %s/%s released)", self.spec.ring,
                      self.spec.namespace, self.identity)
        except ApiError as exc:
            _log.warning("could not release membership lease: %s", exc)

    def _renew_loop(self) -> None:
        while not self._pause(self.spec.retry_period):
            started = self.clock.now()
            outcome = self._try()
            if outcome is True:
                self._renewed_at = started
                continue
            at = self._renewed_at or started
            if outcome == "taken" or self.clock.now() - at >= self.spec.renew_deadline:
                why = "taken over" if outcome == "taken" else "not renewed in time"
                _log.error("left ring %s: membership lease %s/%s %s", self.spec.ring,
                           self.spec.namespace, self.identity, why)
                self.lost = True
                self.on_lost()
                return

    def _try(self) -> bool | str:
        """One acquire-or-renew: True when held now, "taken" when another holder has it,
        False on a failure (logged)."""
        try:
            lease = self.client.get_lease(self.identity, self.spec.namespace)
        except NotFoundError:
            return self._create()
        except ApiError as exc:
            _log.warning("reading membership lease failed: %s", exc)
            return False
        spec = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity") or ""
        if holder not in ("", self.identity):
            return "taken"
        hold(spec, self.identity, self.spec.lease_duration)
        meta = lease.setdefault("metadata", {})
        meta["labels"] = {**(meta.get("labels") or {}), RING_LABEL: self.spec.ring}
        updated = update_lease(self.client, lease, _log, "membership lease")
        if updated is None:
            return False
        self._lease = updated
        return True

    def _create(self) -> bool:
        lease = new_lease(self.identity, self.spec.namespace, self.identity,
                          self.spec.lease_duration, {RING_LABEL: self.spec.ring})
        try:
            self._lease = self.client.create_lease(lease)
            return True
        except ApiError as exc:
            _log.warning("creating membership lease %s/%s failed: %s", self.spec.namespace,
                         self.identity, exc)
            return False


# -- the sharder's view ----------------------------------------------------------------------

LIVE, EXPIRED, RELEASED, HELD = "live", "expired", "released", "held"
"""Member states: ``live`` (held by its own name, renewed within its duration as observed),
``expired`` (held by its own name, no renewal observed for its duration), ``released`` (holder
"" or another name: a clean stop), ``held`` (the sharder holds it: :data:`SHARDER_HOLDER`)."""


@dataclass(frozen=True)
class Snapshot:
    """Membership at one moment: ``states`` lease name -> state; ``leases`` name -> the Lease
    as listed (for CAS writes); ``reserved``: names no member can have (the sharder's election
    Lease): objects labelled with one are nobody's, so their state is :data:`HELD` (they move
    at once) without a Lease. ``live``: the sorted live members."""

    states: Mapping[str, str]
    leases: Mapping[str, Mapping[str, Any]]
    reserved: frozenset[str] = frozenset()

    @property
    def live(self) -> tuple[str, ...]:
        return tuple(sorted(n for n, s in self.states.items() if s == LIVE))

    def state(self, name: str) -> str | None:
        """The state of member ``name``; None when it has no Lease (HELD when reserved)."""
        return HELD if name in self.reserved else self.states.get(name)


class MemberTracker:
    """Turns successive lists of a ring's Leases into membership :class:`Snapshot` s.

    A Lease counts as renewed when its (holder, renewTime) changed since the previous list;
    it expires ``leaseDurationSeconds`` after the sharder first saw its current renewal (its
    own ``clock``: the replicas' clocks are never compared with it). A Lease seen for the
    first time counts as renewed at that moment (a new sharder waits a full duration before it
    declares anyone dead). A Lease named ``reserved`` (the sharder's election Lease,
    ``MembershipSpec.election_lease``; "" none) is never a member, whatever its labels."""

    def __init__(self, clock: Clock | None = None, default_duration: float = 15.0,
                 reserved: str = "") -> None:
        self.clock = clock or REAL_CLOCK
        self.default_duration = default_duration
        self.reserved = frozenset([reserved] if reserved else ())
        self._seen: dict[str, tuple[tuple[str, str], float]] = {}  # name -> (mark, observed)

    def observe(self, leases: Iterable[Mapping[str, Any]]) -> Snapshot:
        """The membership shown by ``leases`` (this ring's, as just listed)."""
        now = self.clock.now()
        states, by_name, seen = {}, {}, {}
        for lease in leases:
            name = (lease.get("metadata") or {}).get("name") or ""
            if name in self.reserved:
                continue
            spec = lease.get("spec") or {}
            holder = spec.get("holderIdentity") or ""
            mark = (holder, str(spec.get("renewTime") or ""))
            previous = self._seen.get(name)
            observed = previous[1] if previous is not None and previous[0] == mark else now
            seen[name] = (mark, observed)
            by_name[name] = lease
            if holder == SHARDER_HOLDER:
                states[name] = HELD
            elif holder != name:
                states[name] = RELEASED
            else:
                duration = float(spec.get("leaseDurationSeconds") or self.default_duration)
                states[name] = LIVE if now - observed < duration else EXPIRED
        self._seen = seen
        return Snapshot(states, by_name, self.reserved)


def take_over(client: Any, lease: Mapping[str, Any], clock: Clock = REAL_CLOCK) -> bool:
    """Make the sharder the holder of a member's expired or released ``lease`` (a
    compare-and-swap on its resourceVersion; ``renewTime`` from ``clock.wall()``). True when it
    now holds it; False when the member (or another sharder) wrote it first."""
    body = {**lease, "spec": {**(lease.get("spec") or {}), "holderIdentity": SHARDER_HOLDER,
                              "renewTime": now_micro(clock)}}
    try:
        client.update_lease(body)
        return True
    except ConflictError:
        return False
    except ApiError as exc:
        _log.warning("taking over lease %s failed: %s", (lease.get("metadata") or {}).get("name"),
                     exc)
        return False


def hold_absent(client: Any, ring: str, namespace: str, name: str) -> bool:
    """Create a Lease ``name`` held by the sharder (objects are labelled with a member whose
    Lease is gone: it must not come back while they move). False when it exists already."""
    lease = new_lease(name, namespace, SHARDER_HOLDER, 15, {RING_LABEL: ring})
    try:
        client.create_lease(lease)
        return True
    except ConflictError:  # it exists: the next round sees it
        return False
    except ApiError as exc:
        _log.warning("holding the absent lease %s failed: %s", name, exc)
        return False


def free(client: Any, lease: Mapping[str, Any]) -> bool:
    """Delete a Lease the sharder holds (its objects have all moved), if unchanged since
    listed (resourceVersion precondition), so the replica of that name may join again."""
    meta = lease.get("metadata") or {}
    try:
        client.delete(LEASE_API, "Lease", meta.get("name"), meta.get("namespace"),
                      preconditions={"resourceVersion": meta.get("resourceVersion")},
                      missing_ok=True)
        return True
    except ConflictError:  # changed since listed (the replica came back): looked at again
        return False
    except ApiError as exc:
        _log.warning("freeing lease %s failed: %s", meta.get("name"), exc)
        return False


__all__ = ["EXPIRED", "HELD", "LIVE", "RELEASED", "SHARDER_HOLDER", "MemberLease",
           "MemberTracker", "MembershipSpec", "Snapshot", "free", "hold_absent", "take_over"]
