"""Leader election through a coordination.k8s.io/v1 Lease (as client-go ``leaderelection``).

One kinrun of several replicas runs the controllers: it holds the Lease by writing its
identity and renewing ``spec.renewTime`` every ``retry_period``. Another candidate takes the
Lease only after ``lease_duration`` seconds without a renewal. Writes use the Lease's
resourceVersion (optimistic concurrency), so two candidates never both win. A leader that
cannot renew for ``renew_deadline`` seconds calls ``on_lost`` (the main job then stops, as
client-go's OnStoppedLeading usually exits). ``release`` clears the holder on a clean stop
(client-go ReleaseOnCancel) so a successor need not wait out the lease.

``spec.leaseTransitions`` counts changes of holder, as client-go's ``LeaderTransitions``: 0 when
the Lease is created, +1 whenever a candidate that is not the recorded holder acquires it
(after the previous holder's lease expired or it released it: a released Lease records holder
"" and keeps the count), unchanged on renewals and on release.

Thread-safety: ``acquire`` and ``release`` are called from the main job's thread; the renewal
runs on one daemon thread.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
import uuid
from datetime import datetime, timezone
from collections.abc import Mapping
from typing import Any, Callable

from kinrun.config.model import LeaderElectionSpec
from kinrun.errors import ApiError, ConflictError, NotFoundError
from kinrun.threads import SupervisedThread

_log = logging.getLogger("kinrun.leader_election")


def now_micro() -> str:
    """The current time as a Lease MicroTime string (``2026-01-02T03:04:05.123456Z``)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro(value: str | None) -> float:
    """Seconds since the epoch of a Lease MicroTime string (0.0 for None or "")."""
    if not value:
        return 0.0
    text = value.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in text else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc).timestamp()



def hold(spec: dict, identity: str, lease_duration: float) -> None:
    """Write ``identity`` into a Lease's ``spec`` as its holder, renewed now (mutates
    ``spec``): a new holder (also after a release, holder "") gets ``acquireTime`` and
    ``leaseTransitions`` + 1, as client-go's LeaseLock records a transition;
    ``leaseDurationSeconds`` is ``lease_duration`` (seconds) truncated."""
    now = now_micro()
    if (spec.get("holderIdentity") or "") != identity:
        spec["acquireTime"] = now
        spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
    spec.update(holderIdentity=identity, renewTime=now, leaseDurationSeconds=int(lease_duration))


def new_lease(name: str, namespace: str, identity: str, lease_duration: float,
              labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A coordination.k8s.io/v1 Lease body to create, held by ``identity`` from now
    (``acquireTime`` = ``renewTime`` = now, ``leaseTransitions`` 0, as client-go's LeaseLock
    Create); ``leaseDurationSeconds`` is ``lease_duration`` (seconds) truncated; ``labels``
    (when given) go into its metadata."""
    now = now_micro()
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
    """Acquire and keep one Lease.

    ``client``: kinrun.kube.Client (``get_lease``/``create_lease``/``update_lease``);
    ``spec``: lease name, namespace and the three durations in seconds; ``identity``: this
    candidate's name (default ``<hostname>_<random>``); ``on_lost``: called once, from the
    renewal thread, when leadership is lost.
    """

    def __init__(self, client: Any, spec: LeaderElectionSpec, *, identity: str | None = None,
                 on_lost: Callable[[], None] | None = None) -> None:
        self.client, self.spec = client, spec
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.on_lost = on_lost or (lambda: None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lease: dict[str, Any] | None = None
        self.lost = False  # set (before on_lost is called) when leadership was lost

    def acquire(self, stop: threading.Event) -> bool:
        """Block until this candidate holds the Lease (True) or ``stop`` is set (False); then
        keep renewing it on a daemon thread."""
        _log.info("waiting to become leader (lease %s/%s, identity %s)",
                  self.spec.namespace, self.spec.lease_name, self.identity)
        while not stop.is_set():
            if self._try_acquire_or_renew():
                _log.info("became leader (lease %s/%s)", self.spec.namespace, self.spec.lease_name)
                self._thread = SupervisedThread(target=self._renew_loop, name="leader-renew",
                                                daemon=True)
                self._thread.start()
                return True
            stop.wait(self.spec.retry_period)
        return False

    def release(self) -> None:
        """Stop renewing and clear the holder, so another candidate may take over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.spec.retry_period + 1)
        lease = self._lease
        if lease is None or lease["spec"].get("holderIdentity") != self.identity:
            return
        lease["spec"]["holderIdentity"] = ""
        try:
            self.client.update_lease(lease)
            _log.info("released lease %s/%s", self.spec.namespace, self.spec.lease_name)
        except ApiError as exc:
            _log.warning("could not release lease: %s", exc)

    def _renew_loop(self) -> None:
        last_renew = time.monotonic()
        while not self._stop.wait(self.spec.retry_period):
            if self._try_acquire_or_renew():
                last_renew = time.monotonic()
            elif time.monotonic() - last_renew > self.spec.renew_deadline:
                _log.error("lost leadership of lease %s/%s", self.spec.namespace,
                           self.spec.lease_name)
                self.lost = True
                self.on_lost()
                return

    def _try_acquire_or_renew(self) -> bool:
        try:
            lease = self.client.get_lease(self.spec.lease_name, self.spec.namespace)
        except NotFoundError:
            return self._create()
        except ApiError as exc:
            _log.warning("reading lease failed: %s", exc)
            return False
        spec = lease.setdefault("spec", {})
        holder = spec.get("holderIdentity") or ""
        expires = parse_micro(spec.get("renewTime")) + float(
            spec.get("leaseDurationSeconds") or self.spec.lease_duration)
        if holder and holder != self.identity and time.time() < expires:
            return False
        hold(spec, self.identity, self.spec.lease_duration)
        updated = update_lease(self.client, lease, _log, "lease")
        if updated is None:
            return False
        self._lease = updated
        return True

    def _create(self) -> bool:
        lease = new_lease(self.spec.lease_name, self.spec.namespace, self.identity,
                          self.spec.lease_duration)
        try:
            self._lease = self.client.create_lease(lease)
            return True
        except ConflictError as exc:  # AlreadyExists (409): another candidate was faster
            _log.debug("creating lease failed: %s", exc)
            return False
        except ApiError as exc:  # forbidden, invalid, server errors: the user must know
            _log.warning("creating lease %s/%s failed: %s", self.spec.namespace,
                         self.spec.lease_name, exc)
            return False


__all__ = ["LeaderElector", "hold", "new_lease", "now_micro", "parse_micro",
           "update_lease"]
