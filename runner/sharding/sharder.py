"""The sharder: assigns every sharded object to a live member of the ring, and moves objects
safely when membership changes.

One replica of the ring is the sharder at a time: the leader election (``leaderElection``, or
a Lease ``<ring>-sharder``: ``kinrun.sharding.sharder_election``; no replica may be named
after it) elects the sharder role only; every replica, the sharder included,
is a shard. The design is timebertt/kubernetes-controller-sharding's first iteration (the
sharder watches the sharded objects, metadata only; docs/design.md "Don't Watch Sharded
Objects" explains why its second iteration moved to an admission webhook, which kinrun
adds with ``sharding.admission``: ``kinrun.sharding.admission``; the watch below stays, for
what admission missed):

* **metadata-only watches** (``kinrun.sharding.metadata``) of every sharded informer's objects,
  with the informer's own namespaces and selectors: the sharder caches a few hundred bytes per
  object, never specs;
* **membership** from the ring's Leases, listed every ``retryPeriod``
  (``kinrun.sharding.membership``);
* a workqueue of object keys, fed by the watches (an object appears or changes: at once), by
  every membership change (all keys), and by a resync every ``syncPeriod`` (all keys): an
  unlabelled object is labelled within one watch delivery plus one PATCH, and at the latest
  ``syncPeriod`` (plus the time to work through the queue at ``cluster.qps``) after it appeared;
* per object, :func:`decide_primary` / :func:`decide_owned` say what to write; writes are JSON
  merge patches of ``metadata.labels`` carrying the resourceVersion the decision read
  (optimistic concurrency: a conflict re-reads and decides again).

The safe handover (timebertt "Object Movements and Rebalancing"): an object of a *live* member
that the ring now gives to another is first drained (``drain.kinrun.dev/<ring>``); the member
stops reconciling it and acknowledges by removing both labels; only the unlabelled object is
assigned to its new member. An object of a member that is not live moves without a drain, but
only after the sharder took that member's Lease over (``SHARDER_HOLDER``): the member can no
longer renew, and its fence (``MemberLease.valid``) stopped its reconciles ``leaseDuration -
renewDeadline`` seconds before the sharder could take over. Owned children follow their
controller's current label (never drained themselves: only the owner's key is reconciled).

Thread-safety: ``start``/``stop`` from one thread; the watches' handlers (informer threads),
the membership thread and the workers share the queue (thread-safe) and ``_snapshot`` (one
reference, replaced whole).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kinrun.cache import SharedIndexInformer
from kinrun.cache.handler import ResourceEventHandlerFuncs
from kinrun.cache.store import DeletedFinalStateUnknown, deletion_handling_meta_namespace_key
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.controller import Controller
from kinrun.errors import NotFoundError
from kinrun.fencing import Fence
from kinrun.kube import ResourceRef
from kinrun.kube.client import LEASE
from kinrun.sharding.keys import (RING_LABEL, controller_key, controller_ref, drain_label,
                                  group_of, labels_of, object_key, shard_label)
from kinrun.sharding.membership import (EXPIRED, HELD, LIVE, RELEASED, MembershipSpec,
                                        MemberTracker, Snapshot, free, hold_absent, take_over)
from kinrun.sharding.metadata import metadata_lister_watcher
from kinrun.sharding.ring import Ring
from kinrun.threads import SupervisedThread
from kinrun.workqueue import RateLimitingQueue, default_controller_rate_limiter

_log = logging.getLogger("kinrun.sharding")

PRIMARY, OWNED = "primary", "owned"
OWNER_INDEX = "kinrun.dev/sharding-owner"
"""The sharder's index of owned children by their controller's hash key."""
SHARD_INDEX = "kinrun.dev/sharding-shard"
"""The sharder's index of objects by their shard label's value."""


# -- decisions (pure) --------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """What to do with one object: ``labels`` to merge-patch (value None removes the label;
    None: write nothing), ``why`` (assign, drain, undrain, move, follow), ``hold``: a member
    whose Lease the sharder must take over before its objects may move (None: none)."""

    labels: Mapping[str, str | None] | None = None
    why: str = ""
    hold: str | None = None


NOTHING = Decision()


def decide_primary(labels: Mapping[str, str], key: str, ring: Ring, members: Snapshot,
                   ring_name: str) -> Decision:
    """The decision for a primary object with ``labels`` and hash ``key`` (see the module
    docstring): unlabelled -> assign to the ring's owner; on a live member that is not the
    owner -> drain (then wait for its acknowledgement); on a member whose Lease the sharder
    holds -> move at once; on a member that is expired, released or has no Lease -> take its
    Lease over first. A drain the ring no longer asks for (the member is the owner again) is
    withdrawn."""
    shard, drain = shard_label(ring_name), drain_label(ring_name)
    desired = ring.owner(key)
    if desired is None:
        return NOTHING
    current = labels.get(shard) or ""
    if not current:
        return Decision({shard: desired, drain: None}, "assign")
    state = members.state(current)
    if state == LIVE:
        if current == desired:
            return Decision({drain: None}, "undrain") if drain in labels else NOTHING
        return NOTHING if drain in labels else Decision({drain: "true"}, "drain")
    if state == HELD:
        return Decision({shard: desired, drain: None}, "move")
    return Decision(hold=current)


def decide_owned(labels: Mapping[str, str], owner_key: str | None,
                 owner_labels: Mapping[str, str] | None, ring: Ring, ring_name: str) -> Decision:
    """The decision for an owned child with ``labels``: it follows its controller (hash key
    ``owner_key``; None: no controller reference, not sharded): the controller's current
    shard label when the sharder knows the controller (``owner_labels``; an unlabelled
    controller: wait, its children are looked at again once it is assigned), else the ring's
    owner of ``owner_key``."""
    if owner_key is None:
        return NOTHING
    shard = shard_label(ring_name)
    if owner_labels is not None:
        target = owner_labels.get(shard) or ""
    else:
        target = ring.owner(owner_key) or ""
    if not target or labels.get(shard) == target:
        return NOTHING
    return Decision({shard: target}, "follow")


# -- the running sharder ---------------------------------------------------------------------


@dataclass
class ShardedResource:
    """One sharded informer, as the sharder watches it: ``name`` (the informer's), ``ref``,
    ``namespaces`` (None: all), selectors, ``role`` (:data:`PRIMARY` or :data:`OWNED`);
    ``owners``: for OWNED, the primaries (informer names) whose kind may control it."""

    name: str
    ref: ResourceRef
    namespaces: Sequence[str] | None = None
    label_selector: str = ""
    field_selector: str = ""
    role: str = PRIMARY
    owners: tuple[str, ...] = ()
    informers: list[SharedIndexInformer] = field(default_factory=list)

    def get(self, key: str) -> dict | None:
        """The cached metadata of ``key`` ("ns/name"), or None."""
        for informer in self.informers:
            obj = informer.indexer.get_by_key(key)
            if obj is not None:
                return obj
        return None

    def keys(self) -> list[str]:
        """Every cached key."""
        return [k for informer in self.informers for k in informer.indexer.list_keys()]

    def keys_by(self, index: str, value: str) -> list[str]:
        """Cached keys filed under ``value`` in ``index``."""
        return [k for informer in self.informers for k in informer.indexer.index_keys(index, value)]

    def count(self, index: str, value: str) -> int:
        """How many cached objects are filed under ``value`` in ``index``."""
        return sum(len(informer.indexer.index_keys(index, value)) for informer in self.informers)

    def shard_values(self) -> set[str]:
        """Every shard label value some cached object carries."""
        return {v for informer in self.informers
                for v in informer.indexer.list_index_func_values(SHARD_INDEX)}


LWFactory = Callable[[ShardedResource, str | None], Any]
"""(resource, namespace or None) -> a ListerWatcher of the resource's metadata."""


class Sharder:
    """The sharder of one ring (see the module docstring).

    ``client``: kinrun.kube.Client (patches, Leases); ``spec``: the ring's MembershipSpec;
    ``resources``: the sharded informers; ``sync_period``: seconds between resyncs of every
    key; ``workers``: patching threads; ``lister_watcher_for``: tests' ListerWatchers (default
    metadata-only ones through ``client``); ``clock``: membership timing and the queue.
    ``moves``: counters by decision (assign, drain, undrain, move, follow) since start.
    ``fence`` (set before ``start``; None: none): whether this replica still holds the sharder
    election (``LeaderElector.is_leading_now``); no membership round and no object's write
    starts while it says no (a sharder paused past renewDeadline writes nothing on resuming)."""

    def __init__(self, client: Any, spec: MembershipSpec, resources: Sequence[ShardedResource],
                 *, sync_period: float = 60.0, workers: int = 4,
                 lister_watcher_for: LWFactory | None = None, clock: Clock | None = None) -> None:
        self.client, self.spec = client, spec
        self.resources = {r.name: r for r in resources}
        self.sync_period, self.clock = sync_period, clock or REAL_CLOCK
        self._lw = lister_watcher_for or self._metadata_lw
        self._tracker = MemberTracker(self.clock, spec.lease_duration, spec.election_lease)
        self._snapshot = Snapshot({}, {})
        self._ring = Ring(())
        self._stop = threading.Event()
        self._wake = threading.Event()  # what the membership thread parks on
        self._thread: threading.Thread | None = None
        self.moves: dict[str, int] = {}
        self.queue = RateLimitingQueue(default_controller_rate_limiter(
            base_delay=0.05, max_delay=30.0, qps=1e6, burst=1 << 20, clock=self.clock),
            clock=self.clock, name=f"sharder-{spec.ring}")
        self.controller = Controller(f"sharder-{spec.ring}", self.queue, lambda key: None,
                                     self._process, workers=workers, max_retries=1 << 30,
                                     clock=self.clock)
        self._owner_of: dict[tuple[str, str], str] = {}  # (group, kind) -> primary name
        self.fence: Fence | None = None
        for res in resources:
            if res.role == PRIMARY:
                self._owner_of[(res.ref.group, res.ref.kind)] = res.name

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, stop: threading.Event | None = None, sync_timeout: float | None = None) -> bool:
        """Start the metadata watches, wait for them to sync (False when ``stop`` was set or
        ``sync_timeout`` passed first), then membership and workers."""
        for res in self.resources.values():
            self._start_watches(res)
        for res in self.resources.values():
            for informer in res.informers:
                deadline = None if sync_timeout is None else self.clock.now() + sync_timeout
                while not informer.wait_for_sync(0.2):
                    if (stop is not None and stop.is_set()) or (
                            deadline is not None and self.clock.now() > deadline):
                        return False
            _log.info("sharder %s: %s synced: %d objects (metadata only)", self.spec.ring,
                      res.name, len(res.keys()))
        self.sync_membership()
        self.controller.fence = self.fence  # asked before every object's write
        self.controller.start()
        self._thread = SupervisedThread(target=self._membership_loop, daemon=True,
                                        name=f"sharder-{self.spec.ring}-membership")
        self._thread.start()
        return True

    def stop(self) -> None:
        """Stop the membership thread, the workers (no drain: the next sharder decides
        again) and the watches."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(self.spec.retry_period + 5)
        self.controller.stop(0.0)
        for res in self.resources.values():
            for informer in res.informers:
                informer.stop()

    def _metadata_lw(self, res: ShardedResource, namespace: str | None) -> Any:
        return metadata_lister_watcher(self.client, res.ref, namespace=namespace,
                                       label_selector=res.label_selector or None,
                                       field_selector=res.field_selector or None)

    def _start_watches(self, res: ShardedResource) -> None:
        indexers: dict[str, Callable[[dict], list[str]]] = {
            SHARD_INDEX: lambda obj: [v] if (v := labels_of(obj).get(self._shard)) else []}
        if res.role == OWNED:
            indexers[OWNER_INDEX] = lambda obj: [k] if (k := controller_key(obj)) else []
        for namespace in (res.namespaces if res.ref.namespaced and res.namespaces else [None]):
            informer = SharedIndexInformer(self._lw(res, namespace), kind=res.ref.kind,
                                           indexers=dict(indexers),
                                           name=f"sharder-{res.name}")
            informer.add_event_handler(self._handler(res))
            res.informers.append(informer)
            informer.start()

    @property
    def _shard(self) -> str:
        return shard_label(self.spec.ring)

    def _handler(self, res: ShardedResource) -> ResourceEventHandlerFuncs:
        def add(obj: dict, _initial: bool) -> None:
            self._enqueue(res, obj)

        def update(old: dict, new: dict) -> None:
            self._enqueue(res, new)
            shard = self._shard
            if res.role == PRIMARY and labels_of(old).get(shard) != labels_of(new).get(shard):
                self._enqueue_children(res, new)

        def delete(obj: Any) -> None:
            final = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
            if isinstance(final, dict) and res.role == PRIMARY:
                self._enqueue_children(res, final)
        return ResourceEventHandlerFuncs(add, update, delete)

    def _enqueue(self, res: ShardedResource, obj: dict) -> None:
        self.queue.add(f"{res.name}\x00{deletion_handling_meta_namespace_key(obj)}")

    def _enqueue_children(self, res: ShardedResource, owner: dict) -> None:
        key = object_key(res.ref.group, res.ref.kind, owner)
        for child in self.resources.values():
            if child.role == OWNED and res.name in child.owners:
                for k in child.keys_by(OWNER_INDEX, key):
                    self.queue.add(f"{child.name}\x00{k}")

    def enqueue_all(self) -> None:
        """Queue every cached key of every sharded resource."""
        for res in self.resources.values():
            for key in res.keys():
                self.queue.add(f"{res.name}\x00{key}")

    # -- membership --------------------------------------------------------------------------

    def _membership_loop(self) -> None:
        last_resync = self.clock.now()
        while True:
            self._wake.clear()
            if not self._stop.is_set():
                self.clock.wait(self._wake, self.spec.retry_period)
            if self._stop.is_set():
                return
            try:
                self.sync_membership()
            except Exception:  # noqa: BLE001 - one failed round never ends the sharder
                _log.exception("sharder %s: membership round failed", self.spec.ring)
            if self.clock.now() - last_resync >= self.sync_period:
                last_resync = self.clock.now()
                self.enqueue_all()

    def list_leases(self) -> list[dict]:
        """The ring's Leases, as listed now."""
        lw = self.client.lister_watcher(LEASE, namespace=self.spec.namespace,
                                        label_selector=f"{RING_LABEL}={self.spec.ring}")
        return list(lw.list().items)

    def sync_membership(self) -> Snapshot:
        """One membership round: list the Leases, take over those of expired or released
        members that still have objects, hold the Leases of labelled members that have none,
        free held Leases with no objects left; when the live members or any state changed,
        queue every key. Returns the snapshot the decisions now use (unchanged, nothing
        listed or written, while the fence is closed)."""
        if self.fence is not None and not self.fence():
            return self._snapshot
        snapshot = self._tracker.observe(self.list_leases())
        carried = set().union(*(r.shard_values() for r in self.resources.values()))
        changed = False
        for name, state in snapshot.states.items():
            lease = snapshot.leases[name]
            if state in (EXPIRED, RELEASED):
                if take_over(self.client, lease, self.clock):
                    _log.info("sharder %s: member %s %s; its lease is held by the sharder",
                              self.spec.ring, name, state)
                    changed = True
            elif state == HELD and name not in carried:
                if free(self.client, lease):
                    _log.info("sharder %s: every object of %s moved; lease freed",
                              self.spec.ring, name)
        for name in carried - set(snapshot.states) - snapshot.reserved:
            if hold_absent(self.client, self.spec.ring, self.spec.namespace, name):
                _log.info("sharder %s: objects labelled for %s, which has no lease: held",
                          self.spec.ring, name)
                changed = True
        if changed:
            snapshot = self._tracker.observe(self.list_leases())
        previous = self._snapshot
        self._snapshot = snapshot
        if snapshot.live != previous.live:
            self._ring = Ring(snapshot.live)
            _log.info("sharder %s: ring members %s", self.spec.ring, list(snapshot.live) or "none")
        if dict(snapshot.states) != dict(previous.states):
            self.enqueue_all()
        return snapshot

    # -- one object --------------------------------------------------------------------------

    def decide(self, res: ShardedResource, obj: dict) -> Decision:
        """The decision for ``obj`` (metadata) of ``res`` under the current membership."""
        labels = labels_of(obj)
        if res.role == PRIMARY:
            return decide_primary(labels, object_key(res.ref.group, res.ref.kind, obj),
                                  self._ring, self._snapshot, self.spec.ring)
        ref = controller_ref(obj)
        owner_labels = None
        if ref is not None:
            owner = self.resources.get(self._owner_of.get(
                (group_of(str(ref.get("apiVersion") or "")), str(ref.get("kind"))), ""))
            if owner is not None:
                namespace = (obj.get("metadata") or {}).get("namespace")
                found = owner.get(f"{namespace}/{ref['name']}" if namespace else ref["name"])
                owner_labels = labels_of(found) if found is not None else None
        return decide_owned(labels, controller_key(obj), owner_labels, self._ring,
                            self.spec.ring)

    def _process(self, key: str, _obj: Any) -> float | None:
        name, _, obj_key = key.partition("\x00")
        res = self.resources[name]
        obj = res.get(obj_key)
        if obj is None:
            return None
        decision = self.decide(res, obj)
        if decision.hold is not None:
            return self.spec.retry_period  # the membership round takes its Lease over
        if decision.labels is None:
            return None
        meta = obj.get("metadata") or {}
        body = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                             "labels": dict(decision.labels)}}
        try:
            self.client.patch(res.ref.api_version, res.ref.kind, meta.get("name"), body,
                              namespace=meta.get("namespace"), patch_type="merge")
        except NotFoundError:
            return None
        self.moves[decision.why] = self.moves.get(decision.why, 0) + 1
        _log.debug("sharder %s: %s %s %s", self.spec.ring, decision.why, res.name, obj_key)
        return None


__all__ = ["Decision", "OWNED", "PRIMARY", "ShardedResource", "Sharder", "decide_owned",
           "decide_primary"]


# -- the elected role ------------------------------------------------------------------------


def sharded_resources(plan: Any, refs: Mapping[str, ResourceRef]) -> list[ShardedResource]:
    """New ShardedResources of a sharded ``kinrun.plan.Plan`` (``Plan.sharded``) with its
    informers' resolved ``refs`` (informer name -> ResourceRef): resources, namespaces,
    selectors."""
    from kinrun.sharding.scope import owners_of

    config, out = plan.config, []
    for name, role in plan.sharded.items():
        spec, ref = config.informers[name], refs[name]
        out.append(ShardedResource(
            name, ref, spec.namespaces if ref.namespaced else None, spec.label_selector or "",
            spec.field_selector or "", role, owners_of(config, name) if role == OWNED else ()))
    return out


class SharderRole:
    """Campaigns for the sharder role through leader election and runs a :class:`Sharder`
    while elected; after a lost election it stops the sharder and campaigns again.

    ``client``; ``election``: a ``LeaderElectionSpec``; ``make``: () -> a new Sharder;
    ``identity``: this candidate's election identity. ``start()`` returns at once (one daemon
    thread); ``stop()`` stops the sharder and releases the election Lease. ``leading``: whether
    the sharder runs on this replica now."""

    def __init__(self, client: Any, election: Any, make: Callable[[], Sharder], *,
                 identity: str | None = None) -> None:
        self.client, self.election, self.make, self.identity = client, election, make, identity
        self._stop, self._wake = threading.Event(), threading.Event()
        self._thread: threading.Thread | None = None
        self.leading = False
        self.sharder: Sharder | None = None

    def start(self) -> None:
        """Start campaigning (once)."""
        if self._thread is None:
            self._thread = SupervisedThread(target=self._run, daemon=True, name="sharder-role")
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the sharder (if running here), release the election Lease, end the thread."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        from kinrun.leader_election import LeaderElector

        while not self._stop.is_set():
            self._wake.clear()
            elector = LeaderElector(self.client, self.election, identity=self.identity,
                                    on_lost=self._wake.set)
            if not elector.acquire(self._stop):
                return
            sharder = self.sharder = self.make()
            sharder.fence = elector.is_leading_now
            self.leading = True
            _log.info("sharder of ring %s runs on this replica", sharder.spec.ring)
            try:
                if sharder.start(self._stop):
                    self._wake.wait()
            finally:
                self.leading = False
                sharder.stop()
            if not elector.lost:
                elector.release()
                return
            _log.warning("sharder of ring %s: election lost; campaigning again",
                         sharder.spec.ring)
