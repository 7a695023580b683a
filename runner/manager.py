"""Manager: builds a config's informers and controllers over one client, runs and stops them.

As controller-runtime's Manager: one SharedInformerFactory for the whole config (an informer is
shared by every controller that names it), one rate-limited workqueue and worker pool per
controller, and a reconcile per controller made of the config's templated actions and/or the
plugins' ``kinrun_reconcile`` hooks. The library entry point for running a config without the
CLI::

    manager = Manager(config, client, plugin_manager)
    manager.start()          # informers, cache sync, then workers
    ...
    manager.stop()           # informers first, then drain the workqueues

Step 7 of the pipeline lives here: the primary informer enqueues each object's own key (updates
filtered by the controller's predicates); each watched secondary informer maps its objects to
primary keys by owner reference, by a template, or by an index of the primary informer. These
enqueue handlers are synchronous (they run on the informer's processing thread: a key mapping
and a workqueue add never block); plugins' raw event hooks get listener threads of their own.

Thread-safety: ``start``/``stop`` are called from one thread (the main job's); everything they
start runs on its own threads (per informer a reflector thread, which also processes the
DeltaFIFO, and a listener thread per plugin event handler; workers per controller; with
``gc.collectFrozenEvery``, one thread collecting the cyclic garbage the GC policy froze).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from kinrun import plugin_manager as plugins
from kinrun.actions import ActionProgram, compile_actions, plugin_template_filters
from kinrun.cache import (
    STRIP_MANAGED_FIELDS,
    DeletedFinalStateUnknown,
    IndexConflictError,
    InformerKey,
    MultiNamespaceInformer,
    SharedIndexInformer,
    SharedInformerFactory,
    deletion_handling_meta_namespace_key,
    gc_tuning,
    meta_namespace_key,
    strip_managed_fields,
)
from kinrun.config.model import Config, ControllerSpec, InformerSpec, WatchSpec
from kinrun.controller import Controller, enqueue_mapped, enqueue_own_key, enqueue_owner_key
from kinrun.reconcile import Reconciler, confirm_gone_by_get
from kinrun.selectors import parse_field_selector, parse_label_selector
from kinrun.kube import Client, ResourceRef
from kinrun.metrics import Metrics
from kinrun.predicates import filter_updates
from kinrun.templating import TemplateEngine, compile_index_func, compile_key_mapper
from kinrun.workqueue import RateLimitingQueue, default_controller_rate_limiter

_log = logging.getLogger("kinrun.manager")

Informer = SharedIndexInformer | MultiNamespaceInformer
"""A configured informer: one shared informer, or one per namespace of a ``namespaces`` list."""


class Manager:
    """Informers and controllers of one config.

    ``config``: a loaded Config; ``client``: a kinrun.kube.Client; ``plugin_manager``: from
    ``kinrun.plugin_manager.load_plugins``; ``metrics``: optional Metrics to record into.
    Construction resolves every informer's resource through discovery and compiles every
    template, so a bad config fails here (ConfigError, UnknownKindError, ApiError) before
    anything runs. Attributes after construction: ``informers`` (name -> Informer),
    ``controllers`` (name -> Controller), ``refs`` (informer name -> ResourceRef).
    """

    def __init__(self, config: Config, client: Client, plugin_manager: Any, *,
                 metrics: Metrics | None = None) -> None:
        self.config, self.client, self.pm, self.metrics = config, client, plugin_manager, metrics
        self.engine = TemplateEngine(config.templates,
                                     extra_filters=plugin_template_filters(plugin_manager),
                                     base_dir=config.base_dir)
        self._gc_thresholds: tuple[int, ...] | None = None  # before start applied the GC policy
        self._gc_stop = threading.Event()  # set by stop: ends the collect-frozen thread at once
        self._gc_thread: threading.Thread | None = None  # runs while gc.collectFrozenEvery > 0
        self.refs: dict[str, ResourceRef] = {}
        self._refs_by_id: dict[str, ResourceRef] = {}
        self.factory = SharedInformerFactory(self._lister_watcher_for)
        self.informers: dict[str, Informer] = {
            name: self._build_informer(spec) for name, spec in config.informers.items()}
        self.controllers: dict[str, Controller] = {
            spec.name: self._build_controller(spec) for spec in config.controllers}
        self._add_event_hooks()

    # -- informers ---------------------------------------------------------------------------

    def _lister_watcher_for(self, key: InformerKey) -> Any:
        return self.client.lister_watcher(
            self._refs_by_id[key.resource], namespace=key.namespace,
            label_selector=key.label_selector or None, field_selector=key.field_selector or None,
            drop_managed_fields=key.transform == STRIP_MANAGED_FIELDS)

    def _build_informer(self, spec: InformerSpec) -> Informer:
        ref = self.client.resolve(spec.api_version, spec.kind or spec.resource or "")
        self.refs[spec.name] = self._refs_by_id[ref.id] = ref
        namespaces = spec.namespaces if ref.namespaced else None
        override = self.config.namespace_override
        if spec.namespaces and not ref.namespaced and spec.namespaces != (override,):
            _log.warning("informer %s: %s is cluster-scoped; namespaces %s ignored",
                         spec.name, ref.kind, list(spec.namespaces))
        strip = spec.transform.strip_managed_fields
        key = InformerKey(ref.id, None, spec.label_selector or "", spec.field_selector or "",
                          STRIP_MANAGED_FIELDS if strip else "")
        try:
            informer = self.factory.informer_for_namespaces(
                key, namespaces, kind=ref.kind, resync_period=0.0,  # resync is per handler
                indexers=self._indexers(spec),
                transform=strip_managed_fields if strip else None, name=spec.name)
        except IndexConflictError as exc:
            raise spec.location.error(
                f"index {exc} is defined differently by another informer watching the "
                f"same objects; give it another name") from exc
        if self.metrics is not None:
            self.metrics.track_informer(spec.name, lambda: len(informer.lister.list()))
        return informer

    def _indexers(self, spec: InformerSpec) -> dict[str, Callable[[dict], list[str]]]:
        from_plugins = plugins.collect_index_funcs(self.pm, spec.name)
        indexers = {}
        for name, ix in spec.indexers.items():
            if ix.plugin:
                if name not in from_plugins:
                    raise ix.location.error(
                        f"no plugin supplies index {name!r} (kinrun_index_funcs)")
                indexers[name] = from_plugins[name]
            else:
                indexers[name] = compile_index_func(ix.expression or "", ix.location,
                                                    engine=self.engine)
        return indexers

    def _add_event_hooks(self) -> None:
        for name, informers in self.informers.items():
            handler = plugins.event_handler(self.pm, name)
            if handler is not None:
                informers.add_event_handler(handler, self.config.informers[name].resync_period)

    # -- controllers -------------------------------------------------------------------------

    def _build_controller(self, spec: ControllerSpec) -> Controller:
        limiter = spec.rate_limiter
        queue = RateLimitingQueue(default_controller_rate_limiter(
            base_delay=limiter.base_delay, max_delay=limiter.max_delay, qps=limiter.qps,
            burst=limiter.burst), name=spec.name)
        primary = self.informers[spec.primary]
        reconciler = self._reconciler(spec)
        reconcile: Callable[..., Any] = reconciler
        if self.metrics is not None:
            reconcile = self.metrics.timed(spec.name, reconcile)
            self.metrics.track_queue(spec.name, queue.__len__)
        controller = Controller(spec.name, queue, primary.lister.get, reconcile,
                                workers=spec.workers, max_retries=spec.max_retries,
                                causes=True, on_drop=reconciler.forget)
        primary_spec = self.config.informers[spec.primary]
        # Enqueue handlers only map an object to keys and add them to the workqueue (never
        # block): they run synchronously on the informer's processing thread. Resync is per
        # handler (client-go AddEventHandlerWithResyncPeriod): the controller's resyncPeriod,
        # else its primary informer's; a watch resyncs as its own informer says.
        primary.add_event_handler(
            RecordDeletions(filter_updates(enqueue_own_key(controller.enqueue, causes=True), spec.predicates),
                            reconciler, selector_matcher(primary_spec)),
            spec.resync_period if spec.resync_period is not None else primary_spec.resync_period,
            synchronous=True)
        for watch in spec.watches:
            self.informers[watch.informer].add_event_handler(
                self._secondary_handler(watch, spec, controller.enqueue),
                self.config.informers[watch.informer].resync_period, synchronous=True)
        return controller

    def _reconciler(self, spec: ControllerSpec) -> Reconciler:
        rec = spec.reconcile
        ref = self.refs[spec.primary]
        primary_spec = self.config.informers[spec.primary]
        selective = bool(primary_spec.label_selector or primary_spec.field_selector)
        return Reconciler(
            spec.name, actions=_program(self, spec, rec.actions, "actions"),
            on_delete=_program(self, spec, rec.on_delete, "onDelete"),
            hooks=plugins.reconcile_caller(self.pm, rec.hook_selection), keep_old=rec.keeps_old,
            listers={name: inf.lister for name, inf in self.informers.items()},
            # one namespace or all: the informer's Indexer; several: their merged lister
            indexers={name: getattr(inf, "indexer", inf.lister)
                      for name, inf in self.informers.items()},
            client=self.client,
            confirm_gone=confirm_gone_by_get(self.client, ref.api_version, ref.kind)
            if selective else None)

    def _secondary_handler(self, watch: WatchSpec, spec: ControllerSpec,
                           enqueue: Callable[..., None]) -> Any:
        primary_ref = self.refs[spec.primary]
        if watch.map_to == "owner":
            return enqueue_owner_key(enqueue, primary_ref.kind, primary_ref.group,
                                     owner_namespaced=primary_ref.namespaced,
                                     informer=watch.informer)
        if watch.map_to == "template":
            return enqueue_mapped(enqueue, compile_key_mapper(watch.template or "", watch.location,
                                                              engine=self.engine),
                                  informer=watch.informer)
        primary, index = self.informers[spec.primary], watch.index or ""

        def by_index(obj: dict) -> list[str]:
            return primary.lister.index_keys(index, meta_namespace_key(obj))
        return enqueue_mapped(enqueue, by_index, informer=watch.informer)

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, stop: threading.Event | None = None, sync_timeout: float | None = None) -> bool:
        """Call the startup hooks, apply kinrun's GC policy (``gc_tuning.manage``), start every
        informer, wait for their caches to sync (logging each informer's object count), freeze
        the GC over the initial list, then start every controller's workers and, with
        ``gc.collectFrozenEvery`` set, the thread that runs ``collect_frozen_garbage`` that
        often. Returns False (controllers not started) when ``stop`` was set or
        ``sync_timeout`` seconds passed before every cache synced."""
        plugins.call_startup(self.pm, config=self.config, client=self.client)
        self._gc_thresholds = gc_tuning.manage()
        self.factory.start()
        if not self._wait_for_sync(stop, sync_timeout):
            return False
        gc_tuning.freeze()
        for name, controller in self.controllers.items():
            controller.start()
            _log.info("controller %s started with %d worker(s)", name, controller.workers)
        self._start_collecting_frozen(self.config.gc.collect_frozen_every)
        return True

    def _wait_for_sync(self, stop: threading.Event | None, timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for name, informer in self.informers.items():
            while not informer.wait_for_sync(0.2):
                if stop is not None and stop.is_set():
                    return False
                if deadline is not None and time.monotonic() > deadline:
                    _log.error("informer %s not synced after %.0fs", name, timeout)
                    return False
            _log.info("informer %s synced: %d %s", name, len(informer.lister.list()),
                      self.refs[name].resource)
        return True

    # -- garbage collection (gc_tuning) ------------------------------------------------------

    def collect_frozen_garbage(self) -> gc_tuning.FrozenCollection:
        """Collect the cyclic garbage kinrun's GC policy froze (``gc_tuning.collect_frozen``:
        pauses every thread for a full collection) and log it at INFO. Only between ``start``
        and ``stop`` (the policy must be on: ``gc_tuning.PolicyOffError`` otherwise). Called
        by the thread ``start`` runs when ``gc.collectFrozenEvery`` is set; callable directly."""
        done = gc_tuning.collect_frozen()
        _log.info("gc: collected %d frozen objects in %.0f ms", done.collected,
                  done.seconds * 1000)
        return done

    def _start_collecting_frozen(self, period: float) -> None:
        if period > 0 and self._gc_thread is None:
            self._gc_stop.clear()
            self._gc_thread = threading.Thread(
                target=self._collect_frozen_every, args=(period,),
                name="kinrun-gc-collect-frozen", daemon=True)
            self._gc_thread.start()

    def _collect_frozen_every(self, period: float) -> None:
        while not self._gc_stop.wait(period):
            try:
                self.collect_frozen_garbage()
            except Exception:  # noqa: BLE001 - never let one failure end the thread
                _log.exception("gc: collecting frozen objects failed")

    def _stop_collecting_frozen(self) -> None:
        self._gc_stop.set()
        if self._gc_thread is not None:
            self._gc_thread.join()  # at most the collection under way
            self._gc_thread = None

    def stop(self, drain_timeout: float = 10.0) -> bool:
        """Stop the collect-frozen thread, the informers (no new keys), then drain every
        controller's workqueue for at most ``drain_timeout`` seconds in all, then call the
        shutdown hooks and undo the GC policy. Returns whether every queue drained and every
        worker ended."""
        self._stop_collecting_frozen()
        self.factory.stop()
        deadline = time.monotonic() + drain_timeout
        drained = True
        for name, controller in self.controllers.items():
            left = max(0.1, deadline - time.monotonic())
            ok = controller.stop(left)
            drained = drained and ok
            _log.info("controller %s stopped%s", name, "" if ok else " (not drained)")
        plugins.call_shutdown(self.pm, _log)
        if self._gc_thresholds is not None:
            gc_tuning.unfreeze(self._gc_thresholds)  # the process may go on without kinrun
            self._gc_thresholds = None
        return drained


class RecordDeletions:
    """The primary informer's event handler around ``inner`` (the own-key enqueue handler):
    a deletion is recorded in the Reconciler (final state, tombstone or not, the selector
    test) before its key is enqueued, so the reconcile knows what left and why
    (``kinrun.reconcile``). Synchronous, like ``inner``."""

    __slots__ = ("inner", "reconciler", "matches")

    def __init__(self, inner: Any, reconciler: Reconciler, matches: Any) -> None:
        self.inner, self.reconciler, self.matches = inner, reconciler, matches

    def on_add(self, obj: dict, is_in_initial_list: bool) -> None:
        self.inner.on_add(obj, is_in_initial_list)

    def on_update(self, old: dict, new: dict) -> None:
        self.inner.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        tombstone = isinstance(obj, DeletedFinalStateUnknown)
        final = obj.obj if tombstone else obj
        self.reconciler.record_deletion(deletion_handling_meta_namespace_key(obj),
                                        final if isinstance(final, dict) else None,
                                        tombstone=tombstone, matches=self.matches)
        self.inner.on_delete(obj)


def selector_matcher(spec: InformerSpec) -> Callable[[dict], bool | None] | None:
    """Whether an object matches ``spec``'s label and field selectors (None: no selector).
    Field selector keys are read as dotted paths of the object (``spec.nodeName``)."""
    if not (spec.label_selector or spec.field_selector):
        return None
    labels = parse_label_selector(spec.label_selector)
    fields = parse_field_selector(spec.field_selector)

    def matches(obj: dict) -> bool:
        meta = obj.get("metadata") or {}
        return labels.matches(meta.get("labels") or {}) and fields.matches(
            lambda name: _field(obj, name))
    return matches


def _field(obj: Any, path: str) -> str:
    for part in path.split("."):
        obj = obj.get(part) if isinstance(obj, dict) else None
    return "" if obj is None else str(obj)


def _program(manager: Manager, spec: ControllerSpec, actions: tuple, field: str
             ) -> ActionProgram | None:
    if not actions:
        return None
    where = spec.location
    return compile_actions([a.raw for a in actions], controller=spec.name,
                           plugin_manager=manager.pm, engine=manager.engine,
                           locations=[a.location for a in actions],
                           source=(where.file, where.line, f"{where.path}.reconcile.{field}"))
