"""Manager: runs the wired informers and controllers of a bound plan, and stops them.

As controller-runtime's Manager, lifecycle only: start the informers, wait for their caches
to sync (logging each informer's object count), start every controller's workers; on stop,
stop the informers (no new keys), drain the workqueues within a bound, call the shutdown hooks.
What runs is built elsewhere, once: ``kinrun.plan`` compiles a config, ``kinrun.bound`` resolves
it against a cluster and wires the pipeline::

    manager = plan(config, plugins).bind(client).manager()
    manager.start(stop)      # informers, cache sync, then workers
    ...
    manager.stop()           # informers first, then drain the workqueues

The GC policy (``kinrun.cache.gc_tuning``: thresholds, freezing the initial list) is the main
job's choice (``start(..., gc_policy=True)``); a library user's ``start()`` leaves the process's
GC settings alone.

Hot reload (``kinrun.reload``) changes what runs while it runs: the Reloader wires the new
config over the running factory, swaps, starts and retires controllers and stops unused
informers itself, then hands the result to :meth:`Manager.adopt`; the attributes below always
describe what runs now. Informers whose kind is not served yet (``Bound.waiting``) and their
controllers are not wired at all: :meth:`waiting_informers` names them (for ``/readyz``).

Thread-safety: ``start``/``stop`` are called from one thread (the main job's); ``adopt`` from
the reload thread, which the main job stops before ``stop``; everything they
start runs on its own threads (per informer a reflector thread, which also processes the
DeltaFIFO, and a listener thread per plugin event handler; workers per controller; with
``gc.collectFrozenEvery``, one thread collecting the cyclic garbage the GC policy froze).
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

from kinrun import plugin_manager as plugins
from kinrun.cache import gc_tuning
from kinrun.config.model import Config
from kinrun.fencing import Fence
from kinrun.threads import SupervisedThread

if TYPE_CHECKING:  # prometheus_client is imported only when a config asks for metrics
    from kinrun.metrics import Metrics

_log = logging.getLogger("kinrun.manager")


class Manager:
    """The running side of a bound plan.

    Built by ``Bound.manager()`` from what it wired (``kinrun.bound.Wired``). Attributes:
    ``config``, ``client``, ``pm`` (the plugin manager), ``metrics`` (or None), ``refs``
    (informer name -> ResourceRef), ``informers`` (name -> informer), ``controllers`` (name ->
    Controller), ``reconcilers`` (name -> Reconciler).

    Deprecated form, kept for library users: ``Manager(config, client, plugin_manager, *,
    metrics=None)`` compiles and binds the config (``plan(config, plugin_manager).bind(client)
    .manager(metrics=metrics)``): ConfigError, UnknownKindError, ApiError as those raise.
    """

    def __init__(self, wired: Any, client: Any = None, plugin_manager: Any = None, *,
                 metrics: Metrics | None = None) -> None:
        if isinstance(wired, Config):
            warnings.warn("Manager(config, client, plugin_manager) is deprecated: use "
                          "kinrun.plan(config, plugins).bind(client).manager()",
                          DeprecationWarning, stacklevel=2)
            from kinrun.plan import plan  # the spine: plan, bound and manager are one layer

            wired = plan(wired, plugin_manager).bind(client).manager(metrics=metrics)._wired
        self.metrics = wired.metrics
        self.factory = wired.factory
        self.clock = getattr(wired, "clock", None)  # the workqueues' clock (None: real time)
        self.caches_started = False  # start_caches began: new informers start at once
        self.workers_started = False  # start_workers ran: new controllers start at once
        self.fence: Fence | None = None  # asked before every reconcile (set_fence)
        self.adopt(wired)
        self._gc_thresholds: tuple[int, ...] | None = None  # before start applied the GC policy
        self._gc_policy = False  # start_caches was asked to apply the GC policy
        self._gc_stop = threading.Event()  # set by stop: ends the collect-frozen thread at once
        self._gc_thread: threading.Thread | None = None  # runs while gc.collectFrozenEvery > 0

    def adopt(self, wired: Any) -> None:
        """Run ``wired`` from now on (hot reload, ``kinrun.reload``, which has already started,
        swapped and stopped what differs): the attributes of the class docstring follow it.
        Called on the reload thread (see the module docstring); each attribute is replaced
        whole, so a reader on another thread sees the old or the new value."""
        self._wired = wired
        bound = wired.bound
        self.config, self.client, self.pm = bound.config, bound.client, bound.plan.plugins
        self.refs = bound.refs
        self.informers, self.controllers = wired.informers, wired.controllers
        self.reconcilers = wired.reconcilers
        self.schedules = getattr(wired, "schedules", {})  # controller -> kinrun.schedule.Scheduler
        self.set_fence(self.fence)

    def set_fence(self, fence: Fence | None) -> None:
        """Ask ``fence`` (() -> bool; None: nothing) before every reconcile of every
        controller, also of those a reload adds: ``LeaderElector.is_leading_now``, so a leader
        whose Lease was not renewed within renewDeadline starts no reconcile
        (``kinrun.controller.Controller``, ``fence``)."""
        self.fence = fence
        for controller in self.controllers.values():
            controller.fence = fence

    @property
    def wired(self) -> Any:
        """What runs now (``kinrun.bound.Wired``)."""
        return self._wired

    @property
    def plan(self) -> Any:
        """The Plan in force (``kinrun.plan.Plan``)."""
        return self._wired.bound.plan

    def waiting_informers(self) -> dict[str, str]:
        """Informer name -> why it waits (its kind is not served yet: a CRD not installed);
        their controllers wait too (``kinrun.bound.Bound.waiting``)."""
        return dict(self._wired.bound.waiting)

    def waiting_controllers(self) -> dict[str, list[str]]:
        """Controller name -> the waiting informers it needs."""
        return self._wired.bound.waiting_controllers()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, stop: threading.Event | None = None, sync_timeout: float | None = None, *,
              gc_policy: bool = False) -> bool:
        """``start_caches`` then ``start_workers``. Returns False (workers not started) when
        ``stop`` was set or ``sync_timeout`` seconds passed before every cache synced."""
        if not self.start_caches(stop, sync_timeout, gc_policy=gc_policy):
            return False
        self.start_workers()
        return True

    def start_caches(self, stop: threading.Event | None = None,
                     sync_timeout: float | None = None, *, gc_policy: bool = False) -> bool:
        """Call the startup hooks, start every informer and wait for their caches to sync
        (logging each informer's object count); no worker runs yet, so nothing is written:
        what a warm standby replica does while it waits for the Lease (keys queue up,
        deduplicated, until ``start_workers``; as controller-runtime's warm replicas).
        With ``gc_policy`` (the main job's choice): apply kinrun's GC policy
        (``gc_tuning.manage``) first and freeze the GC over the initial list once synced.
        Returns False when ``stop`` was set or ``sync_timeout`` seconds passed first."""
        plugins.call_startup(self.pm, config=self.config, client=self.client)
        waiting_controllers = self.waiting_controllers()
        for name, why in self.waiting_informers().items():
            _log.warning("informer %s waits: its kind is not served yet (%s); controllers %s "
                         "start when discovery finds it", name, why,
                         ", ".join(c for c, ns in waiting_controllers.items()
                                   if name in ns) or "-")
        self.caches_started = True
        self._gc_policy = gc_policy
        if gc_policy:
            self._gc_thresholds = gc_tuning.manage()
        self.factory.start()
        if not self._wait_for_sync(stop, sync_timeout):
            return False
        if gc_policy:
            gc_tuning.freeze()
        return True

    def start_workers(self) -> None:
        """Start every controller's workers (after ``start_caches`` returned True) and, under
        the GC policy with ``gc.collectFrozenEvery`` set, the thread collecting what it froze."""
        self.workers_started = True
        for name, controller in self.controllers.items():
            controller.start()
            _log.info("controller %s started with %d worker(s)", name, controller.workers)
        for scheduler in self.schedules.values():  # cron schedules fire once workers run
            scheduler.start()
        if self._gc_policy:
            self._start_collecting_frozen(self.config.gc.collect_frozen_every)

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
        # Then every handler of a synced informer has handled its initial-list adds, as
        # client-go's ResourceEventHandlerRegistration.HasSynced (kube-controller-manager waits
        # on it since 1.27): a key that a buffered mapper (a listener thread of its own) maps
        # from the initial list is queued, deduplicated, before the first reconcile, not after
        # it (one reconcile more, at random: seen in ``kinrun test`` of secondary-watch).
        registrations = self._wired.registrations()
        while any(r.informer.has_synced() and not r.has_synced() for r in registrations):
            if stop is not None and stop.is_set():
                return False
            if deadline is not None and time.monotonic() > deadline:
                _log.error("event handlers had not handled the initial lists after %.0fs",
                           timeout)
                return False
            time.sleep(0.005)  # once, at start; listeners signal nothing
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
            self._gc_thread = SupervisedThread(
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

    def stop(self, drain_timeout: float = 10.0, *, drain: bool = True) -> bool:
        """Stop the collect-frozen thread, the informers (no new keys), then drain every
        controller's workqueue for at most ``drain_timeout`` seconds in all, then call the
        shutdown hooks and undo the GC policy. Returns whether every queue drained and every
        worker ended.

        ``drain=False`` is for a replica that lost its Lease (leadership or shard membership):
        another replica may already reconcile these keys, so no queued key is reconciled any
        more; only the reconciles under way finish (within ``drain_timeout``), as a client-go
        controller whose OnStoppedLeading ends the process. Returns whether they finished."""
        self._stop_collecting_frozen()
        for scheduler in self.schedules.values():
            scheduler.stop()
        self.factory.stop()
        deadline = time.monotonic() + drain_timeout
        drained = True
        for name, controller in self.controllers.items():
            left = max(0.1, deadline - time.monotonic())
            ok = controller.stop(left) if drain else controller.retire(left)
            drained = drained and ok
            _log.info("controller %s stopped%s", name, "" if ok else " (not drained)")
        plugins.call_shutdown(self.pm, _log)
        if self._gc_thresholds is not None:
            gc_tuning.unfreeze(self._gc_thresholds)  # the process may go on without kinrun
            self._gc_thresholds = None
        return drained
