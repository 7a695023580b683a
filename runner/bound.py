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
  reference, by a template, or by an index of the primary informer. These enqueue handlers are
  synchronous (a key mapping and a workqueue add never block); plugins' raw event hooks get
  listener threads of their own. Resync is per handler (client-go
  ``AddEventHandlerWithResyncPeriod``): the controller's resyncPeriod, else its primary
  informer's; a watch and a plugin's event hooks resync as their own informer says.

Nothing here starts a thread; :class:`kinrun.manager.Manager` runs what is wired.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kinrun import plugin_manager as plugins
from kinrun.cache import (
    STRIP_MANAGED_FIELDS,
    DeletedFinalStateUnknown,
    IndexConflictError,
    InformerKey,
    MultiNamespaceInformer,
    SharedIndexInformer,
    SharedInformerFactory,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    strip_managed_fields,
)
from kinrun.controller import Controller, enqueue_mapped, enqueue_own_key, enqueue_owner_key
from kinrun.clock import Clock
from kinrun.kube import ResourceRef
from kinrun.kube.discovery import UnknownKindError
from kinrun.plan import ControllerPlan, InformerPlan, Plan, WatchPlan, owner_mapping_problem
from kinrun.predicates import filter_updates
from kinrun.reconcile import Reconciler, confirm_gone_by_get
from kinrun.workqueue import RateLimitingQueue, default_controller_rate_limiter

_log = logging.getLogger("kinrun.manager")

Informer = SharedIndexInformer | MultiNamespaceInformer
"""A configured informer: one shared informer, or one per namespace of a ``namespaces`` list."""

Wrap = Callable[[str, Callable[..., Any]], Callable[..., Any]]
"""(controller name, reconcile) -> a reconcile with the same signature, observing each call."""


class Bound:
    """A Plan whose resources the cluster has resolved.

    ``plan``; ``client`` (a ``kinrun.kube.Client``); ``refs``: informer name -> ResourceRef.
    Construction runs discovery: UnknownKindError / ApiError propagate, a located ConfigError
    for a ``mapTo: owner`` that discovery shows can never produce a key. Immutable afterwards.
    """

    def __init__(self, plan: Plan, client: Any) -> None:
        self.plan, self.client = plan, client
        self.refs: dict[str, ResourceRef] = {}
        for name, informer in plan.informers.items():
            spec = informer.spec
            try:
                self.refs[name] = client.resolve(spec.api_version, spec.kind or spec.resource or "")
            except UnknownKindError as exc:
                raise UnknownKindError(f"{spec.location}: {exc}", api_version=exc.api_version,
                                       name=exc.name, suggestions=exc.suggestions) from None
        for controller in plan.controllers:
            for watch in controller.watches:
                self._check_owner_mapping(controller, watch)

    def _check_owner_mapping(self, controller: ControllerPlan, watch: WatchPlan) -> None:
        if watch.spec.map_to != "owner":
            return
        primary, secondary = controller.spec.primary, watch.spec.informer
        problem = owner_mapping_problem(
            self.plan.informers[primary].spec, self.plan.informers[secondary].spec,
            self.refs[primary].namespaced, self.refs[secondary].namespaced)
        if problem:
            raise watch.spec.location.error(problem)

    @property
    def config(self) -> Any:
        """The plan's Config."""
        return self.plan.config

    def manager(self, *, metrics: Any = None, clock: Clock | None = None,
                wrap: Wrap | None = None) -> Any:
        """The informers, controllers and reconcilers of this plan, wired and not started, in
        a :class:`kinrun.manager.Manager`. ``metrics``: a ``kinrun.metrics.Metrics`` to record
        into; ``clock``: the workqueues' clock (requeues, retries, rate limits; default the
        real one; informers always use real time, they do I/O); ``wrap(controller, reconcile)
        -> reconcile``: an observer around every controller's reconcile (``kinrun test``
        records through it). Raises a located ConfigError when two informer names sharing one
        watch define the same index name differently."""
        from kinrun.manager import Manager

        return Manager(_Wiring(self, metrics, clock, wrap).build())

    def start(self, stop: Any = None, *, metrics: Any = None, gc_policy: bool = False,
              sync_timeout: float | None = None) -> Any:
        """Wire and start: ``manager(metrics=...).start(stop, ...)``. Returns the Manager when
        its caches synced and its workers run, None when ``stop`` was set or ``sync_timeout``
        seconds passed first (then everything is stopped again)."""
        manager = self.manager(metrics=metrics)
        if manager.start(stop, sync_timeout, gc_policy=gc_policy):
            return manager
        manager.stop(0.0)
        return None


class Wired:
    """What :class:`_Wiring` builds, for the Manager to run: ``bound``; ``factory``;
    ``informers`` (name -> Informer); ``controllers`` (name -> Controller); ``reconcilers``
    (name -> Reconciler); ``metrics`` (or None)."""

    def __init__(self, bound: Bound, factory: SharedInformerFactory,
                 informers: dict[str, Informer], controllers: dict[str, Controller],
                 reconcilers: dict[str, Reconciler], metrics: Any = None) -> None:
        self.bound, self.factory, self.metrics = bound, factory, metrics
        self.informers, self.controllers, self.reconcilers = informers, controllers, reconcilers


class _Wiring:
    """Builds the pipeline of one Bound (see the module docstring). Used once."""

    def __init__(self, bound: Bound, metrics: Any, clock: Clock | None = None,
                 wrap: Wrap | None = None) -> None:
        self.bound, self.metrics, self.clock, self.wrap = bound, metrics, clock, wrap
        self.plan, self.client, self.refs = bound.plan, bound.client, bound.refs
        self._refs_by_id = {ref.id: ref for ref in self.refs.values()}
        self.factory = SharedInformerFactory(self._lister_watcher_for)
        self.informers: dict[str, Informer] = {}
        # metrics: the workqueues' provider (None: unmetered queues, no cost)
        self._queue_metrics = metrics.workqueue_provider() if metrics is not None else None

    def build(self) -> Wired:
        for name, informer in self.plan.informers.items():
            self.informers[name] = self._informer(informer)
        if self.metrics is not None:  # relists and watch restarts of every reflector
            self.metrics.track_reflectors(self.factory.informers().values())
        reconcilers, controllers = {}, {}
        for controller in self.plan.controllers:
            reconcilers[controller.name] = reconciler = self._reconciler(controller)
            controllers[controller.name] = self._controller(controller, reconciler)
        for name, informer in self.informers.items():
            handler = plugins.event_handler(self.plan.plugins, name)
            if handler is not None:
                informer.add_event_handler(handler, self.plan.informers[name].resync_period)
        return Wired(self.bound, self.factory, self.informers, controllers, reconcilers,
                     self.metrics)

    # -- informers ---------------------------------------------------------------------------

    def _lister_watcher_for(self, key: InformerKey) -> Any:
        return self.client.lister_watcher(
            self._refs_by_id[key.resource], namespace=key.namespace,
            label_selector=key.label_selector or None, field_selector=key.field_selector or None,
            drop_managed_fields=key.transform == STRIP_MANAGED_FIELDS)

    def _informer(self, plan: InformerPlan) -> Informer:
        spec, ref = plan.spec, self.refs[plan.name]
        config = self.plan.config
        namespaces = spec.namespaces if ref.namespaced else None
        if spec.namespaces and not ref.namespaced and spec.namespaces != (config.namespace_override,):
            _log.warning("informer %s: %s is cluster-scoped; namespaces %s ignored",
                         spec.name, ref.kind, list(spec.namespaces))
        strip = spec.transform.strip_managed_fields
        key = InformerKey(ref.id, None, spec.label_selector or "", spec.field_selector or "",
                          STRIP_MANAGED_FIELDS if strip else "")
        try:
            informer = self.factory.informer_for_namespaces(
                key, namespaces, kind=ref.kind, resync_period=0.0,  # resync is per handler
                indexers=dict(plan.indexers),
                transform=strip_managed_fields if strip else None, name=spec.name,
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
        selective = self.plan.informers[spec.primary].matches is not None
        return Reconciler(
            spec.name, actions=plan.actions, on_delete=plan.on_delete, hooks=plan.hooks,
            keep_old=plan.keep_old,
            listers={name: inf.lister for name, inf in self.informers.items()},
            # one namespace or all: the informer's Indexer; several: their merged lister
            indexers={name: getattr(inf, "indexer", inf.lister)
                      for name, inf in self.informers.items()},
            client=self.client,
            confirm_gone=confirm_gone_by_get(self.client, ref.api_version, ref.kind)
            if selective else None)

    def _controller(self, plan: ControllerPlan, reconciler: Reconciler) -> Controller:
        spec, limiter = plan.spec, plan.rate_limiter
        queue = RateLimitingQueue(default_controller_rate_limiter(
            base_delay=limiter.base_delay, max_delay=limiter.max_delay, qps=limiter.qps,
            burst=limiter.burst, clock=self.clock), clock=self.clock, name=spec.name,
            metrics_provider=self._queue_metrics)
        reconcile: Callable[..., Any] = reconciler
        if self.metrics is not None:  # controller-runtime's reconcile metrics
            reconcile = self.metrics.timed(spec.name, reconcile)
            self.metrics.set_max_concurrent_reconciles(spec.name, spec.workers)
        if self.wrap is not None:
            reconcile = self.wrap(spec.name, reconcile)
        controller = Controller(spec.name, queue, self.informers[spec.primary].lister.get,
                                reconcile, workers=spec.workers, max_retries=spec.max_retries,
                                clock=self.clock, causes=True, on_drop=reconciler.forget)
        primary = self.plan.informers[spec.primary]
        self.informers[spec.primary].add_event_handler(
            RecordDeletions(filter_updates(enqueue_own_key(controller.enqueue, causes=True),
                                           spec.predicates), reconciler, primary.matches),
            plan.resync_period, synchronous=True)
        for watch in plan.watches:
            self.informers[watch.spec.informer].add_event_handler(
                self._secondary_handler(watch, spec.primary, controller.enqueue),
                self.plan.informers[watch.spec.informer].resync_period, synchronous=True)
        return controller

    def _secondary_handler(self, watch: WatchPlan, primary: str,
                           enqueue: Callable[..., None]) -> Any:
        spec, primary_ref = watch.spec, self.refs[primary]
        if spec.map_to == "owner":
            return enqueue_owner_key(enqueue, primary_ref.kind, primary_ref.group,
                                     owner_namespaced=primary_ref.namespaced,
                                     informer=spec.informer)
        if spec.map_to == "template":
            return enqueue_mapped(enqueue, watch.mapper, informer=spec.informer)
        informer, index = self.informers[primary], spec.index or ""

        def by_index(obj: dict) -> list[str]:
            return informer.lister.index_keys(index, meta_namespace_key(obj))
        return enqueue_mapped(enqueue, by_index, informer=spec.informer)


class RecordDeletions:
    """The primary informer's event handler around ``inner`` (the own-key enqueue handler):
    a deletion is recorded in the Reconciler (final state, tombstone or not, the selector
    test) before its key is enqueued, so the reconcile knows what left and why
    (``kinrun.reconcile``). Synchronous, like ``inner``; stateless itself."""

    __slots__ = ("inner", "reconciler", "matches")

    def __init__(self, inner: Any, reconciler: Reconciler, matches: Any) -> None:
        self.inner, self.reconciler, self.matches = inner, reconciler, matches

    def on_add(self, obj: dict, is_in_initial_list: bool) -> None:
        """Pass on."""
        self.inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: dict, new: dict) -> None:
        """Pass on; an update whose uid changed is a deletion of the old object the watch
        missed (deleted and re-created while it was down; a relist delivers it as an update),
        recorded first so that ``onDelete`` runs for the old uid (reason ``deleted``: another
        object holds the name, so the old one is gone)."""
        old_uid = (old.get("metadata") or {}).get("uid")
        if old_uid != (new.get("metadata") or {}).get("uid") and old_uid:
            self.reconciler.record_deletion(deletion_handling_meta_namespace_key(old), old,
                                            tombstone=False)
        self.inner.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        """Record the deletion, then pass on (which enqueues the key)."""
        tombstone = isinstance(obj, DeletedFinalStateUnknown)
        final = obj.obj if tombstone else obj
        self.reconciler.record_deletion(deletion_handling_meta_namespace_key(obj),
                                        final if isinstance(final, dict) else None,
                                        tombstone=tombstone, matches=self.matches)
        self.inner.on_delete(obj)
