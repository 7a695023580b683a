"""A plan bound to a cluster: discovery, then the informers, controllers and reconcilers.

``Plan.bind(client)`` resolves every informer's kind to its resource and scope (client-go's
RESTMapper) and checks what only discovery can tell (a ``mapTo: owner`` between CRDs that can
never produce a key). :meth:`Bound.manager` then wires the pipeline, as controller-runtime's
builder does (step 7 of the pipeline lives here):

* one SharedInformerFactory for the whole config: an informer is shared by every informer name
  that lists and watches the same thing (resource, namespace, selectors, transform);
* per controller a rate-limited workqueue, a :class:`kinrun.reconcile.Reconciler` and a
  :class:`kinrun.controller.Controller`;
* the primary informer enqueues each object's own key (updates filtered by the predicates),
  recording deletions first; each watched secondary maps its objects to primary keys by owner
  reference, by a template, or by an index of the primary informer. The own-key, owner and
  index handlers are synchronous (a key computation and a workqueue add never block); a
  ``mapTo: {template}`` mapper, which may look objects up and spend up to its template budget,
  runs on a listener thread of its own (client-go's processorListener), so a slow mapper
  stalls only itself, never its informer or the other handlers. Every template mapper does so,
  lookups or not: the hand-off (~15 us per event, ``benchmarks/``) is small beside a render
  (~50 us for a two-field key template on the 2-core VM) and any template may spend up to its
  budget's timeout. Plugins' raw event hooks get listener threads of their own too. Resync
  is per handler (client-go ``AddEventHandlerWithResyncPeriod``): the controller's
  resyncPeriod, else its primary informer's; a watch and a plugin's event hooks resync as
  their own informer says.

Nothing here starts a thread; :class:`kinrun.manager.Manager` runs what is wired.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kinrun import plugin_manager as plugins
from kinrun.cache import (
    STRIP_MANAGED_FIELDS,
    IndexReader,
    KeyedIndexer,
    Lister,
    ListerInterface,
    IndexConflictError,
    InformerKey,
    ListerWatcher,
    ResourceEventHandler,
    SharedInformerFactory,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
)
from kinrun.clock import Clock
from kinrun.config.model import Config
from kinrun.controller import (Controller, Reconcile, enqueue_mapped, enqueue_own_key,
                               enqueue_owner_key)
from kinrun.kube import Client, ResourceRef
from kinrun.kube.builtin_kinds import builtin_group
from kinrun.kube.projection import shown
from kinrun.kube.discovery import UnknownKindError
from kinrun.manager import Manager
from kinrun.predicates import filter_updates
from kinrun.reconcile import (SCHEDULED, Cause, ConfirmGone, Matches, Reconciler,
                              confirm_gone_by_get)
from kinrun.schedule import Scheduler
from kinrun.spine.compiled import (CompiledPlan, ControllerPlan, InformerPlan, WatchPlan,
                                   owner_mapping_problem, waiting_controllers)
from kinrun.spine.wired import (HandlerEntry, Informer, RecordDeletions,  # noqa: F401
                                Wired)  # RecordDeletions: re-exported, where it was
from kinrun.workqueue import RateLimiter, RateLimitingQueue, default_controller_rate_limiter

if TYPE_CHECKING:  # prometheus_client is imported only when a config asks for metrics
    from kinrun.metrics import Metrics
    from kinrun.sharding.shard import Shard

_log = logging.getLogger("kinrun.manager")

CAUSE_SCHEDULED = Cause(SCHEDULED)

Wrap = Callable[[str, Reconcile], Reconcile]
"""(controller name, reconcile) -> a reconcile with the same signature, observing each call."""


class Bound:
    """A Plan whose resources the cluster has resolved.

    ``plan``; ``client`` (a ``kinrun.kube.Client``); ``refs``: informer name -> ResourceRef.
    Construction runs discovery: UnknownKindError / ApiError propagate, a located ConfigError
    for a ``mapTo: owner`` that discovery shows can never produce a key. Immutable afterwards.

    ``wait_for_kinds`` (the main job's choice): a kind discovery does not know, in an API group
    that is not one of Kubernetes' built-in groups (``kinrun.kube.builtin_kinds``: a CRD not
    installed yet), is not an error: the informer waits (``waiting``: informer name -> why,
    file:line first) and so do the controllers that use it (:meth:`waiting_controllers`);
    nothing is wired for them until a later bind resolves it (``kinrun.reload``). A kind
    unknown in a built-in group (a typo: ``Pods``, ``apps/v1 Deployments``) stays an
    UnknownKindError: those groups serve a fixed set of kinds.
    """

    def __init__(self, plan: CompiledPlan, client: Client, *,
                 wait_for_kinds: bool = False) -> None:
        self.plan, self.client = plan, client
        self.refs: dict[str, ResourceRef] = {}
        self.waiting: dict[str, str] = {}
        # Several API groups: their discovery in one concurrent round (errors: resolve's below).
        client.prefetch(informer.spec.api_version for informer in plan.informers.values())
        for name, informer in plan.informers.items():
            spec = informer.spec
            try:
                self.refs[name] = client.resolve(spec.api_version, spec.kind or spec.resource or "")
            except UnknownKindError as exc:
                if wait_for_kinds and not builtin_group(spec.api_version):
                    self.waiting[name] = f"{spec.location}: {exc}"
                    continue
                raise UnknownKindError(f"{spec.location}: {exc}", api_version=exc.api_version,
                                       name=exc.name, suggestions=exc.suggestions) from None
        for controller in plan.controllers:
            for watch in controller.watches:
                self._check_owner_mapping(controller, watch)

    def waiting_controllers(self) -> dict[str, list[str]]:
        """Controller name -> the waiting informers it needs (primary or watched), for the
        controllers that cannot run yet (file order)."""
        return waiting_controllers(self.plan, self.waiting)

    def _check_owner_mapping(self, controller: ControllerPlan, watch: WatchPlan) -> None:
        if watch.spec.map_to != "owner":
            return
        primary, secondary = controller.spec.primary, watch.spec.informer
        if primary in self.waiting or secondary in self.waiting:
            return  # checked by the bind that resolves them
        problem = owner_mapping_problem(
            self.plan.informers[primary].spec, self.plan.informers[secondary].spec,
            self.refs[primary].namespaced, self.refs[secondary].namespaced)
        if problem:
            raise watch.spec.location.error(problem)

    @property
    def config(self) -> Config:
        """The plan's Config."""
        return self.plan.config

    def manager(self, *, metrics: Metrics | None = None, clock: Clock | None = None,
                wrap: Wrap | None = None, shard: Shard | None = None) -> Manager:
        """The informers, controllers and reconcilers of this plan, wired and not started, in
        a :class:`kinrun.manager.Manager`. ``metrics``: a ``kinrun.metrics.Metrics`` to record
        into; ``clock``: the workqueues' clock (requeues, retries, rate limits; default the
        real one; informers always use real time, they do I/O); ``wrap(controller, reconcile)
        -> reconcile``: an observer around every controller's reconcile (``kinrun test``
        records through it); ``shard``: this replica's ``kinrun.sharding.shard.Shard`` when
        the config is sharded (None: every object, as without ``sharding``): the sharded
        informers select its label, its gate wraps every reconcile, a move is no deletion.
        Raises a located ConfigError when two informer names sharing one watch define the
        same index name differently."""
        return Manager(_Wiring(self, metrics, clock, wrap, shard=shard).build())

    def rewire(self, running: Wired, rewire: Rewire, *, wrap: Wrap | None = None) -> Wired:
        """Hot reload (``kinrun.reload``): wire ``rewire.controllers`` (new and swapped ones)
        and the plugin event hooks of ``rewire.event_hooks`` over ``running``'s factory
        (informers whose key is unchanged are reused, cache and all; new ones are created,
        and started at once when the factory runs), with ``running``'s metrics, clock and
        Shard. A swapped controller's handlers enqueue into its running queue; the new
        definition is in ``successors`` (and its rate limiter in ``limiters``). Nothing is
        registered yet (``HandlerEntry.register``, ``Manager.swap``). Raises as
        :meth:`manager`."""
        return _Wiring(self, running.metrics, running.clock, wrap, factory=running.factory,
                       only=set(rewire.controllers),
                       reuse={n: running.controllers[n] for n in rewire.swapped},
                       event_hooks=set(rewire.event_hooks), defer=True,
                       shard=running.shard).build()

    def start(self, stop: threading.Event | None = None, *, metrics: Metrics | None = None,
              gc_policy: bool = False, sync_timeout: float | None = None) -> Manager | None:
        """Wire and start: ``manager(metrics=...).start(stop, ...)``. Returns the Manager when
        its caches synced and its workers run, None when ``stop`` was set or ``sync_timeout``
        seconds passed first (then everything is stopped again)."""
        manager = self.manager(metrics=metrics)
        if manager.start(stop, sync_timeout, gc_policy=gc_policy):
            return manager
        manager.stop(0.0)
        return None


@dataclass(frozen=True)
class Rewire:
    """What a hot reload rebuilds over a running pipeline (:meth:`Bound.rewire`):
    ``controllers``: the controllers to wire (added and swapped); ``swapped``: those of them
    that take over a running controller's queue; ``event_hooks``: the informer names whose
    plugin event handler to build."""

    controllers: frozenset[str]
    swapped: frozenset[str] = frozenset()
    event_hooks: frozenset[str] = frozenset()


class _Wiring:
    """Builds the pipeline of one Bound (see the module docstring). Used once.

    Hot reload (``kinrun.reload``) rewires over the running pipeline: ``factory`` (the running
    one: informers whose key is unchanged are reused, cache and all); ``only``: the
    controllers to build (None: every controller whose informers are resolved); ``reuse``:
    controller name -> the running Controller whose queue a rebuilt one takes over (its
    handlers enqueue there; the new definition goes to ``Wired.successors``); ``event_hooks``:
    the informer names whose plugin event handler to build (None: all); ``defer``: collect
    the handlers without registering them."""

    def __init__(self, bound: Bound, metrics: Metrics | None, clock: Clock | None = None,
                 wrap: Wrap | None = None, *, factory: SharedInformerFactory | None = None,
                 only: set[str] | None = None, reuse: dict[str, Controller] | None = None,
                 event_hooks: set[str] | None = None, defer: bool = False,
                 shard: Shard | None = None) -> None:
        self.bound, self.metrics, self.clock, self.wrap = bound, metrics, clock, wrap
        # sharding: this replica's Shard, and the informers it shards (kinrun.sharding)
        self.shard = shard
        self.sharded = bound.plan.sharded if shard is not None else {}
        self.plan, self.client, self.refs = bound.plan, bound.client, bound.refs
        self._refs_by_id = {ref.id: ref for ref in self.refs.values()}
        if factory is not None:
            factory.set_lister_watcher_for(self._lister_watcher_for)
        self.factory = factory or SharedInformerFactory(self._lister_watcher_for)
        self.informers: dict[str, Informer] = {}
        self.only, self.reuse, self.event_hooks = only, reuse or {}, event_hooks
        self.defer = defer
        self.handlers: dict[str, list[HandlerEntry]] = {}
        self.successors: dict[str, Controller] = {}
        self.limiters: dict[str, RateLimiter] = {}
        self.schedules: dict[str, Scheduler] = {}
        # metrics: the workqueues' provider (None: unmetered queues, no cost)
        self._queue_metrics = metrics.workqueue_provider() if metrics is not None else None

    def _handler(self, owner: str, informer: Informer, handler: ResourceEventHandler,
                 resync: float, *, synchronous: bool = False) -> None:
        entry = HandlerEntry(informer, handler, resync, synchronous)
        self.handlers.setdefault(owner, []).append(entry)
        if not self.defer:
            entry.register()

    def build(self) -> Wired:
        for name, informer in self.plan.informers.items():
            if name not in self.bound.waiting:
                self.informers[name] = self._informer(informer)
        if self.metrics is not None:  # relists and watch restarts of every reflector
            self.metrics.track_reflectors(self.factory.informers().values())
        reconcilers, controllers = {}, {}
        waiting = self.bound.waiting_controllers()
        for controller in self.plan.controllers:
            if controller.name in waiting or (self.only is not None
                                              and controller.name not in self.only):
                continue
            reconcilers[controller.name] = reconciler = self._reconciler(controller)
            controllers[controller.name] = self._controller(controller, reconciler)
        for name, informer in self.informers.items():
            if self.event_hooks is not None and name not in self.event_hooks:
                continue
            handler = plugins.event_handler(self.plan.plugins, name)
            if handler is not None:
                self._handler(f"informer:{name}", informer, handler,
                              self.plan.informers[name].resync_period)
        bound = self.bound
        return Wired(bound.plan, bound.client, bound.refs, bound.waiting, self.factory,
                     self.informers, controllers, reconcilers, self.metrics, self.handlers,
                     self.schedules, self.clock, self.shard,  # a reload rewires with the Shard
                     self.successors, self.limiters)

    # -- informers ---------------------------------------------------------------------------

    def _lister_watcher_for(self, key: InformerKey) -> ListerWatcher:
        return self.client.lister_watcher(
            self._refs_by_id[key.resource], namespace=key.namespace,
            label_selector=key.label_selector or None, field_selector=key.field_selector or None,
            drop_managed_fields=key.transform.startswith(STRIP_MANAGED_FIELDS),
            **({"metadata_only": True} if key.metadata_only else {}),
            **({"projection": key.projection} if key.projection is not None else {}))

    def _informer(self, plan: InformerPlan) -> Informer:
        spec, ref = plan.spec, self.refs[plan.name]
        config = self.plan.config
        namespaces = spec.namespaces if ref.namespaced else None
        if spec.namespaces and not ref.namespaced and spec.namespaces != (config.namespace_override,):
            _log.warning("informer %s: %s is cluster-scoped; namespaces %s ignored",
                         spec.name, ref.kind, list(spec.namespaces))
        labels = spec.label_selector or ""
        if plan.name in self.sharded:  # this replica's objects only
            labels = self.shard.selector(labels)
        key = InformerKey(ref.id, None, labels, spec.field_selector or "",
                          plan.transform_id, spec.metadata_only, plan.projection)
        if plan.projection is not None:
            _log.info("informer %s decodes only %s and metadata (projection: auto; kinrun "
                      "validate --explain says why)", spec.name, ", ".join(sorted(
                          shown(p) for p in plan.projection.paths if p[0] != "metadata")))
        try:
            informer = self.factory.informer_for_namespaces(
                key, namespaces, kind=ref.kind, resync_period=0.0,  # resync is per handler
                indexers=dict(plan.indexers), transform=plan.transform, name=spec.name,
                inactivity_timeout=spec.watch_inactivity_timeout)
        except IndexConflictError as exc:
            raise spec.location.error(
                f"index {exc} is defined differently by another informer watching the "
                f"same objects; give it another name") from exc
        if self.metrics is not None:
            self.metrics.track_informer(spec.name, lambda: len(informer.lister.list()))
        return informer

    # -- controllers -------------------------------------------------------------------------

    def _reconciler(self, plan: ControllerPlan) -> Reconciler:
        spec = plan.spec
        ref = self.refs[spec.primary]
        base = self.plan.informers[spec.primary].matches
        sharded = spec.primary in self.sharded
        return reconciler(
            plan, listers={name: inf.lister for name, inf in self.informers.items()},
            indexers={name: inf.index_reader() for name, inf in self.informers.items()},
            client=self.client,
            confirm_gone=confirm_gone_by_get(
                self.client, ref.api_version, ref.kind,
                moved=self.shard.still_there(base) if sharded else None)
            if base is not None or sharded else None,
            moved=self.shard.moved_away if sharded else None)

    def _controller(self, plan: ControllerPlan, reconciler: Reconciler) -> Controller:
        """The controller of ``plan`` (over the running queue for a swap, kinrun.reload), its
        handlers registered (or collected), its cron schedule made."""
        spec = plan.spec
        queue = self._queue(plan)
        reconcile, matches = self._observed(plan, reconciler)
        controller = Controller(spec.name, queue, self.informers[spec.primary].lister.get,
                                reconcile, workers=spec.workers, max_retries=spec.max_retries,
                                clock=self.clock, causes=True, on_drop=reconciler.forget,
                                stale=reconciler.stale,
                                on_stale=self.metrics.stale_skip_counter(spec.name)
                                if self.metrics is not None else None)
        enqueue = controller.enqueue
        running = self.reuse.get(spec.name)
        if running is not None:
            self.successors[spec.name] = controller
            controller, enqueue = running, running.enqueue
        self._handlers(plan, reconciler, matches, enqueue)
        if plan.schedule is not None:
            self.schedules[spec.name] = self._scheduler(plan, enqueue)
        return controller

    def _queue(self, plan: ControllerPlan) -> RateLimitingQueue:
        """A new rate-limited workqueue; for a swap the running one, keys and all (its new
        rate limiter in ``limiters``)."""
        spec, limiter = plan.spec, plan.rate_limiter
        rate_limiter = default_controller_rate_limiter(
            base_delay=limiter.base_delay, max_delay=limiter.max_delay, qps=limiter.qps,
            burst=limiter.burst, clock=self.clock)
        running = self.reuse.get(spec.name)
        if running is not None:  # a swap: the running queue, keys and all (kinrun.reload)
            self.limiters[spec.name] = rate_limiter
            return running.queue
        return RateLimitingQueue(rate_limiter, clock=self.clock, name=spec.name,
                                 metrics_provider=self._queue_metrics)

    def _observed(self, plan: ControllerPlan, reconciler: Reconciler
                  ) -> tuple[Reconcile, Matches | None]:
        """The reconcile the workers call (metrics, the shard's gate, the caller's wrap
        around ``reconciler``) and the primary's selector test (the shard's, when sharded)."""
        spec = plan.spec
        reconcile: Reconcile = reconciler
        if self.metrics is not None:  # controller-runtime's reconcile metrics
            reconcile = self.metrics.timed(spec.name, reconcile)
            self.metrics.set_max_concurrent_reconciles(spec.name, spec.workers)
        matches = self.plan.informers[spec.primary].matches
        if spec.primary in self.sharded:  # the gate: fence, drains, objects in transit
            ref = self.refs[spec.primary]
            self.shard.register(spec.name, spec.primary, ref.api_version, ref.kind)
            reconcile = self.shard.wrap(spec.name, reconcile)
            matches = self.shard.matches(matches)
        if self.wrap is not None:
            reconcile = self.wrap(spec.name, reconcile)
        return reconcile, matches

    def _handlers(self, plan: ControllerPlan, reconciler: Reconciler, matches: Matches | None,
                  enqueue: Callable[..., None]) -> None:
        """The primary's handler (deletions recorded, then the own key, updates filtered by
        the predicates) and one per watched secondary."""
        spec = plan.spec
        own = enqueue_own_key(enqueue, causes=True)
        handler = filter_updates(own, spec.predicates)
        if spec.primary in self.sharded:  # a drain reaches the workers whatever the predicates
            handler = self.shard.bypass(handler, own)
        self._handler(spec.name, self.informers[spec.primary], RecordDeletions(
            handler, reconciler, matches), plan.resync_period, synchronous=True)
        for watch in plan.watches:
            self._handler(spec.name, self.informers[watch.spec.informer],
                          self._secondary_handler(watch, spec.primary, enqueue),
                          self.plan.informers[watch.spec.informer].resync_period,
                          synchronous=watch.spec.map_to != "template")

    def _scheduler(self, plan: ControllerPlan, enqueue: Callable[..., None]) -> Scheduler:
        """The controller's cron schedule: every key of its primary cache, cause
        ``scheduled``, timed on the workqueues' clock and read on the plan's wall clock."""
        lister = self.informers[plan.spec.primary].lister
        return Scheduler(
            plan.name, plan.schedule,
            lambda: [deletion_handling_meta_namespace_key(o) for o in lister.list()],
            lambda key: enqueue(key, CAUSE_SCHEDULED), clock=self.clock,
            wall=self.plan.engine.clock)

    def _secondary_handler(self, watch: WatchPlan, primary: str,
                           enqueue: Callable[..., None]) -> ResourceEventHandler:
        spec, primary_ref = watch.spec, self.refs[primary]
        if spec.map_to == "owner":
            return enqueue_owner_key(enqueue, primary_ref.kind, primary_ref.group,
                                     owner_namespaced=primary_ref.namespaced,
                                     informer=spec.informer)
        if spec.map_to == "template":  # lookups read every informer's cache
            mapper = watch.mapper.bind({name: inf.lister for name, inf in self.informers.items()})
            return enqueue_mapped(enqueue, mapper, informer=spec.informer, initial_list=True)
        informer, index = self.informers[primary], spec.index or ""

        def by_index(obj: dict) -> list[str]:
            return informer.lister.index_keys(index, meta_namespace_key(obj))
        return enqueue_mapped(enqueue, by_index, informer=spec.informer)


def reconciler(plan: ControllerPlan, *, listers: Mapping[str, ListerInterface],
               indexers: Mapping[str, IndexReader] | None = None,
               client: Client | None = None, confirm_gone: ConfirmGone | None = None,
               moved: Callable[[dict], bool] | None = None) -> Reconciler:
    """The Reconciler of one compiled controller over ``listers`` (informer name -> lister;
    ``indexers`` the same as indexers, default ``listers``), sending through ``client`` (None:
    nothing may be sent); ``confirm_gone`` and ``moved`` as ``kinrun.reconcile.Reconciler``.
    The one constructor the run (:class:`_Wiring`) and ``kinrun render`` share."""
    return Reconciler(
        plan.name, actions=plan.actions, on_delete=plan.on_delete, hooks=plan.hooks,
        keep_old=plan.keep_old, finalize=plan.finalize, finalizer=plan.finalizer,
        on_error=plan.on_error,
        finalizer_when=plan.finalizer_when,
        listers=listers, indexers=indexers if indexers is not None else listers,
        client=client, confirm_gone=confirm_gone, moved=moved)


def offline_reconciler(plan: CompiledPlan, controller: str,
                       objects: Iterable[dict[str, Any]] = ()) -> Reconciler:
    """The Reconciler of ``controller`` over caches holding ``objects`` (each put in every
    informer that would deliver it: apiVersion, kind, namespaces, selectors; transformed as
    it would be, and projected as its informer decodes it) with no client: what ``kinrun
    render`` runs, having no cluster."""
    indexers = {name: KeyedIndexer(indexers=dict(informer.indexers))
                for name, informer in plan.informers.items()}
    for obj in objects:
        for name, informer in plan.informers.items():
            if _delivers(informer, obj):
                cached = informer.projection.project(obj) if informer.projection else obj
                indexers[name].add(informer.transform(cached) if informer.transform else cached)
    listers = {name: Lister(indexer) for name, indexer in indexers.items()}
    return reconciler(plan.controller(controller), listers=listers)


def _delivers(informer: InformerPlan, obj: dict[str, Any]) -> bool:
    """Whether ``informer`` would list ``obj``: its apiVersion and kind (or a built-in
    resource's kind), a watched namespace, its selectors."""
    from kinrun.kube.builtin_kinds import builtin_kind

    spec, meta = informer.spec, obj.get("metadata") or {}
    kind = spec.kind or builtin_kind(spec.api_version, spec.resource or "")
    if obj.get("apiVersion") != spec.api_version or (kind is not None and obj.get("kind") != kind):
        return False
    if spec.namespaces is not None and meta.get("namespace") not in spec.namespaces:
        return False
    return informer.matches is None or bool(informer.matches(obj))
