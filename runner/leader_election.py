"""Leader election through a coordination.k8s.io/v1 Lease (as client-go ``leaderelection``).

One kinrun of several replicas runs the controllers: it holds the Lease by writing its
identity and renewing ``spec.renewTime`` every ``retry_period``. Writes use the Lease's
resourceVersion (optimistic concurrency), so two candidates never both win. ``release`` clears
the holder on a clean stop (client-go ReleaseOnCancel) so a successor need not wait out the
lease.

Time: only this host's monotonic clock (``kinrun.clock``) is ever compared, never another
host's timestamps, as client-go's ``tryAcquireOrRenew`` (leaderelection.go; its doc.go: "a
client observes timestamps captured locally ... tolerant to arbitrary clock skew, but not
to arbitrary clock skew rate"):

* A candidate records the local time at which it first *observed* the current Lease record
  (holder, renewTime, acquireTime, duration, transitions: client-go's observedRecord and
  observedTime). It takes a Lease held by another only once ``leaseDurationSeconds`` passed on
  its own clock since then without the record changing. ``renewTime`` is written (for people
  and ``kubectl``) but never read as a time: a candidate whose wall clock runs ahead or behind
  waits exactly as long. A candidate that starts while a Lease is held waits one full
  duration, whatever ``renewTime`` says.
* The holder's fence, :meth:`LeaderElector.is_leading_now`: True only while the last
  successful acquire or renewal *started* less than ``renew_deadline`` seconds ago (local
  monotonic time). A candidate can take over no earlier than ``lease_duration`` after it saw
  that write, and ``renew_deadline < lease_duration``, so a leader that checks the fence
  before every reconcile never starts one while another replica may lead: also after a pause
  (SIGSTOP, a long GC pause), when the renewal thread has not run yet. A holder that cannot
  renew for ``renew_deadline`` seconds, or finds the Lease held by another identity, calls
  ``on_lost`` (the main job then stops, as client-go's OnStoppedLeading usually exits).

``spec.leaseTransitions`` counts changes of holder, as client-go's ``LeaderTransitions``: 0 when
the Lease is created, +1 whenever a candidate that is not the recorded holder acquires it
(after the previous holder's lease expired or it released it: a released Lease records holder
"" and keeps the count), unchanged on renewals and on release.

Thread-safety: ``acquire``, ``try_acquire_or_renew`` and ``release`` are called from one
thread (the main job's) until ``acquire`` returned True; the renewal then runs on one daemon
thread; ``is_leading_now`` may be called from any thread (it reads two fields).
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from datetime import datetime, timezone
from collections.abc import Mapping
from typing import Any, Callable

from kinrun.clock import REAL_CLOCK, Clock, with_wall
from kinrun.config.model import LeaderElectionSpec
from kinrun.errors import ApiError, ConflictError, NotFoundError
from kinrun.threads import SupervisedThread

_log = logging.getLogger("kinrun.leader_election")

_RECORD = ("holderIdentity", "renewTime", "acquireTime", "leaseDurationSeconds",
           "leaseTransitions")
"""The Lease fields that make up the election record (client-go ``LeaderElectionRecord``):
any change of them is a change a candidate observes."""


def now_micro(clock: Clock = REAL_CLOCK) -> str:
    """The time ``clock.wall()`` (Unix seconds; default now) as a Lease MicroTime string
    (``2026-01-02T03:04:05.123456Z``)."""
    moment = datetime.fromtimestamp(clock.wall(), tz=timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro(value: str | None) -> float:
    """Seconds since the epoch of a Lease MicroTime string (0.0 for None or ""). For display
    only: leader election never compares another host's timestamps with this host's clock."""
    if not value:
        return 0.0
    text = value.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp()


def hold(spec: dict, identity: str, lease_duration: float, now: str | None = None) -> None:
    """Write ``identity`` into a Lease's ``spec`` as its holder, renewed ``now`` (a MicroTime
    string; default :func:`now_micro`) (mutates ``spec``): a new holder (also after a release,
    holder "") gets ``acquireTime`` and ``leaseTransitions`` + 1, as client-go's LeaseLock
    records a transition; ``leaseDurationSeconds`` is ``lease_duration`` (seconds) truncated."""
    now = now or now_micro()
    if (spec.get("holderIdentity") or "") != identity:
        spec["acquireTime"] = now
        spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
    spec.update(holderIdentity=identity, renewTime=now, leaseDurationSeconds=int(lease_duration))


def new_lease(name: str, namespace: str, identity: str, lease_duration: float,
              labels: Mapping[str, str] | None = None, now: str | None = None) -> dict[str, Any]:
    """A coordination.k8s.io/v1 Lease body to create, held by ``identity`` from ``now`` (a
    MicroTime string; default :func:`now_micro`) (``acquireTime`` = ``renewTime`` = now,
    ``leaseTransitions`` 0, as client-go's LeaseLock Create); ``leaseDurationSeconds`` is
    ``lease_duration`` (seconds) truncated; ``labels`` (when given) go into its metadata."""
    now = now or now_micro()
    metadata: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": {"holderIdentity": identity, "acquireTime": now, "renewTime": now,
                     "leaseDurationSeconds": int(lease_duration), "leaseTransitions": 0}}


def update_lease(client: Any, lease: dict[str, Any], log: logging.Logger,
                 what: str) -> dict[str, Any] | None:
    """Write ``lease`` (a compare-and-swap on its resourceVersion, as client-go's
    LeaseLock.Update): the stored Lease, or None when another writer was first (409 Conflict,
    quietly) or the server refused (any other ApiError, logged on ``log`` as
    "renewing ``what`` failed")."""
    try:
        return client.update_lease(lease)
    except ConflictError:
        return None
    except ApiError as exc:
        log.warning("renewing %s failed: %s", what, exc)
        return None


class LeaderElector:
    """Acquire and keep one Lease (see the module docstring for the time rules).

    ``client``: kinrun.kube.Client (``get_lease``/``create_lease``/``update_lease``);
    ``spec``: lease name, namespace and the three durations in seconds; ``identity``: this
    candidate's name (default ``<hostname>_<random>``); ``on_lost``: called once, from the
    renewal thread, when leadership is lost; ``clock``: the monotonic clock every duration is
    measured on (waits too); its ``wall()`` (Unix seconds) is only written into the Lease
    (``acquireTime``/``renewTime``), never compared. ``wall_clock``: deprecated (a callable
    for that wall; pass ``clock`` instead).
    """

    def __init__(self, client: Any, spec: LeaderElectionSpec, *, identity: str | None = None,
                 on_lost: Callable[[], None] | None = None, clock: Clock | None = None,
                 wall_clock: Callable[[], float] | None = None) -> None:
        self.client, self.spec = client, spec
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.on_lost = on_lost or (lambda: None)
        self.clock = with_wall(clock, wall_clock, where="LeaderElector")
        self._stop = threading.Event()  # release(): the renewal thread ends
        self._wake = threading.Event()  # what waits park on (a FakeClock sets it when due)
        self._thread: threading.Thread | None = None
        self._lease: dict[str, Any] | None = None
        self._observed: tuple[str, ...] | None = None  # the record last seen (observedRecord)
        self._observed_at = 0.0  # clock time it was first seen (client-go observedTime)
        self._renewed_at: float | None = None  # clock time the last successful write started
        self.lost = False  # set (before on_lost is called) when leadership was lost

    # -- the fence ---------------------------------------------------------------------------

    def is_leading_now(self) -> bool:
        """Whether this replica may start a reconcile (or a write) now: it holds the Lease and
        its last successful acquire or renewal started less than ``renew_deadline`` seconds
        ago on the local monotonic clock (also right after a pause, before the renewal thread
        ran again)."""
        at = self._renewed_at
        return (not self.lost and at is not None
                and self.clock.now() - at < self.spec.renew_deadline)

    # -- lifecycle ---------------------------------------------------------------------------

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate holds the Lease (True) or ``stop`` is set (False; looked
        at between attempts, every ``retry_period``); then keep renewing it on a daemon
        thread."""
        _log.info("waiting to become leader (lease %s/%s, identity %s)",
                  self.spec.namespace, self.spec.lease_name, self.identity)
        while not stop.is_set():
            if self.try_acquire_or_renew():
                _log.info("became leader (lease %s/%s)", self.spec.namespace, self.spec.lease_name)
                self._thread = SupervisedThread(target=self._renew_loop, name="leader-renew",
                                                daemon=True)
                self._thread.start()
                return True
            if self._pause(self.spec.retry_period):
                break
        return False

    def release(self) -> None:
        """Stop renewing and clear the holder, so another candidate may take over at once."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self.spec.retry_period + 1)
        self._renewed_at = None
        lease = self._lease
        if lease is None or lease["spec"].get("holderIdentity") != self.identity or self.lost:
            return
        lease["spec"]["holderIdentity"] = ""
        try:
            self.client.update_lease(lease)
            _log.info("released lease %s/%s", self.spec.namespace, self.spec.lease_name)
        except ApiError as exc:
            _log.warning("could not release lease: %s", exc)

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` on the clock (or until ``release``); True when released."""
        self._wake.clear()
        if not self._stop.is_set():
            self.clock.wait(self._wake, seconds)
        return self._stop.is_set()

    def _renew_loop(self) -> None:
        while not self._pause(self.spec.retry_period):
            if self.try_acquire_or_renew():
                continue
            why = self._lost_because()
            if why:
                _log.error("lost leadership of lease %s/%s: %s", self.spec.namespace,
                           self.spec.lease_name, why)
                self.lost = True
                self.on_lost()
                return

    def _lost_because(self) -> str:
        """Why leadership is lost after a failed renewal ("" when it is not, yet)."""
        holder = self._observed[0] if self._observed else ""
        if holder not in ("", self.identity):
            return f"the Lease is held by {holder}"
        at = self._renewed_at
        if at is None or self.clock.now() - at >= self.spec.renew_deadline:
            return f"not renewed within renewDeadline ({self.spec.renew_deadline:g}s)"
        return ""

    # -- one round (client-go tryAcquireOrRenew) ---------------------------------------------

    def try_acquire_or_renew(self) -> bool:
        """One attempt, as client-go's ``tryAcquireOrRenew``: read the Lease (create it when
        absent); when another identity holds it and its record changed less than its
        ``leaseDurationSeconds`` ago as observed here, False; else write this identity as the
        holder (compare-and-swap). True when this replica holds the Lease now; the fence
        (:meth:`is_leading_now`) then counts from the start of this call. API errors are
        logged and give False."""
        started = self.clock.now()
        try:
            lease = self.client.get_lease(self.spec.lease_name, self.spec.namespace)
        except NotFoundError:
            held = self._create()
        except ApiError as exc:
            _log.warning("reading lease failed: %s", exc)
            return False
        else:
            held = self._take(lease)
        if held:
            self._renewed_at = started
        return held

    def _take(self, lease: dict[str, Any]) -> bool:
        spec = lease.setdefault("spec", {})
        self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and self._observed_valid(spec):
            return False
        hold(spec, self.identity, self.spec.lease_duration, now_micro(self.clock))
        updated = update_lease(self.client, lease, _log, "lease")
        if updated is None:
            return False
        self._lease = updated
        self._observe(updated.get("spec") or {})
        return True

    def _observe(self, spec: Mapping[str, Any]) -> None:
        """Record ``spec``'s election record and, when it changed, the local time now."""
        record = tuple(str(spec.get(name) or "") for name in _RECORD)
        if record != self._observed:
            self._observed, self._observed_at = record, self.clock.now()

    def _observed_valid(self, spec: Mapping[str, Any]) -> bool:
        """client-go ``isLeaseValid``: the observed record is younger than its duration, both
        measured on the local clock."""
        duration = float(spec.get("leaseDurationSeconds") or self.spec.lease_duration)
        return self.clock.now() - self._observed_at < duration

    def _create(self) -> bool:
        lease = new_lease(self.spec.lease_name, self.spec.namespace, self.identity,
                          self.spec.lease_duration, now=now_micro(self.clock))
        try:
            self._lease = self.client.create_lease(lease)
        except ConflictError as exc:  # AlreadyExists (409): another candidate was faster
            _log.debug("creating lease failed: %s", exc)
            return False
        except ApiError as exc:  # forbidden, invalid, server errors: the user must know
            _log.warning("creating lease %s/%s failed: %s", self.spec.namespace,
                         self.spec.lease_name, exc)
            return False
        self._observe(self._lease.get("spec") or {})
        return True


__all__ = ["LeaderElector", "hold", "new_lease", "now_micro", "parse_micro",
           "update_lease"]
