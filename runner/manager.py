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

The GC policy (``kinrun.gc.policy``: thresholds, freezing the initial list) is the main
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
from collections.abc import Iterable

from kinrun import plugin_manager as plugins
from kinrun.gc import policy as gc_tuning
from kinrun.fencing import Fence
from kinrun.threads import SupervisedThread
from kinrun.clock import REAL_CLOCK
from kinrun.spine.compiled import CompiledPlan
from kinrun.spine.runnables import Gate, Group, Runnable
from kinrun.spine.wired import RecordDeletions, Wired

_log = logging.getLogger("kinrun.manager")

HANDLER_WAIT_REPORT = 10.0
"""Seconds between two warnings while event handlers have not handled their initial lists
(a plugin's ``kinrun_on_add`` that does not return holds every controller)."""
_main_log = logging.getLogger("kinrun")  # the run's lifecycle lines, as the main job's


class Manager:
    """The running side of a bound plan.

    Built by ``Bound.manager()`` from what it wired (``kinrun.spine.wired.Wired``).
    Attributes: ``config``, ``client``, ``pm`` (the plugin manager), ``metrics`` (or None),
    ``refs`` (informer name -> ResourceRef), ``informers`` (name -> informer), ``controllers``
    (name -> Controller), ``reconcilers`` (name -> Reconciler).
    """

    def __init__(self, wired: Wired) -> None:
        self.metrics = wired.metrics
        self.factory = wired.factory
        self.clock = wired.clock  # the workqueues' clock (None: real time)
        self.caches_started = False  # start_caches began: new informers start at once
        self.workers_started = False  # start_workers ran: new controllers start at once
        self._pipeline_stopped = False  # stop_pipeline ran
        self.fence: Fence | None = None  # asked before every reconcile (set_fence)
        self.adopt(wired)
        self._gc_thresholds: tuple[int, ...] | None = None  # before start applied the GC policy
        self._gc_policy = False  # start_caches was asked to apply the GC policy
        self._gc_stop = threading.Event()  # set by stop: ends the collect-frozen thread at once
        self._gc_thread: threading.Thread | None = None  # runs while gc.collectFrozenEvery > 0
        self._runnables: list[Runnable] = []  # added, in order (spine.runnables)
        self._gate: Gate | None = None  # the Lease the gated runnables need (None: none)
        self._started: list[Runnable] = []  # started by start(), in order; stop reverses it
        self._drain = (10.0, True)  # (seconds, drain?) of the pipeline's stop under way
        self._drained = True  # the pipeline's last stop drained every queue

    def adopt(self, wired: Wired) -> None:
        """Run ``wired`` from now on (hot reload, ``kinrun.reload``, which has already started,
        swapped and stopped what differs): the attributes of the class docstring follow it.
        Called on the reload thread (see the module docstring); each attribute is replaced
        whole, so a reader on another thread sees the old or the new value."""
        self._wired = wired
        self.config, self.client, self.pm = wired.plan.config, wired.client, wired.plan.plugins
        self.refs = wired.refs
        self.informers, self.controllers = wired.informers, wired.controllers
        self.reconcilers = wired.reconcilers
        self.schedules = wired.schedules  # controller -> kinrun.schedule.Scheduler
        self.set_fence(self.fence)


    def set_fence(self, fence: Fence | None) -> None:
        """Ask ``fence`` (() -> bool; None: nothing) before every reconcile of every
        controller, also of those a reload adds: ``LeaderElector.is_leading_now``, so a leader
        whose Lease was not renewed within renewDeadline starts no reconcile
        (``kinrun.controller.Controller``, ``fence``)."""
        self.fence = fence
        for controller in self.controllers.values():
            controller.fence = fence

    def swap(self, name: str, new: Wired, *, keep_pending: bool, keep_last: bool,
             new_limiter: bool) -> None:
        """Hot reload: the paused controller ``name`` (``Controller.pause``) takes its
        definition in ``new`` (``Bound.rewire``): new handlers registered first (the cache
        replayed into the same workqueue), the old ones removed (a deletion under way records
        into the new Reconciler), with ``keep_pending`` the pending deletions carried over
        (same primary informer; with ``keep_last`` the last reconciled versions too), with ``new_limiter`` the new rate limiter set on the running
        queue (per-key backoff restarts), then resumed with the successor's reconcile. The
        caller adopts ``new`` afterwards. Called on the reload thread."""
        old = self._wired
        controller, successor = old.controllers[name], new.successors[name]
        fresh, stale = new.reconcilers[name], old.reconcilers[name]
        for entry in new.handlers.get(name, []):
            entry.register()
        for entry in old.handlers.get(name, []):
            if isinstance(entry.handler, RecordDeletions):
                entry.handler.retarget(fresh)
            entry.unregister()
        if keep_pending:
            fresh.take_over(stale, keep_last=keep_last)
        if new_limiter:
            controller.queue.rate_limiter = new.limiters[name]
        controller.resume(successor)

    def hand_over_events(self, new: CompiledPlan, names: Iterable[str]) -> None:
        """The controllers ``names`` of ``new`` record Events through the EventCorrelator of
        their namesake in force when their ``events`` settings (component, host) are
        unchanged: an identical Event after a reload patches the earlier one's count, as only
        a restart starts new Events (client-go keeps one correlator per recorder, for the
        process's life)."""
        for name in names:
            before, after = self.plan.controller(name).recorder, new.controller(name).recorder
            if before is None or after is None or before is after:
                continue
            if (before.component, before.host) == (after.component, after.host):
                after.correlator = before.correlator

    @property
    def wired(self) -> Wired:
        """What runs now (``kinrun.spine.wired.Wired``)."""
        return self._wired

    @property
    def plan(self) -> CompiledPlan:
        """The Plan in force (``kinrun.plan.Plan``)."""
        return self._wired.plan

    def waiting_informers(self) -> dict[str, str]:
        """Informer name -> why it waits (its kind is not served yet: a CRD not installed);
        their controllers wait too (``kinrun.bound.Bound.waiting``)."""
        return dict(self._wired.waiting)

    def waiting_controllers(self) -> dict[str, list[str]]:
        """Controller name -> the waiting informers it needs."""
        return self._wired.waiting_controllers()

    # -- lifecycle ---------------------------------------------------------------------------

    def add(self, runnable: Runnable) -> None:
        """Run ``runnable`` from the next :meth:`start` on, in its group (before ``start``;
        ``kinrun.spine.runnables``)."""
        self._runnables.append(runnable)

    def set_gate(self, gate: Gate) -> None:
        """The Lease the gated runnables and the workers wait for (and the caches, unless the
        plan's settings say warm standby); before ``start``."""
        self._gate = gate

    @property
    def lost(self) -> bool:
        """The gate's Lease was held and then lost (False without a gate)."""
        return self._gate is not None and self._gate.lost

    def start(self, stop: threading.Event | None = None, sync_timeout: float | None = None, *,
              gc_policy: bool = False) -> bool:
        """Start everything, in order (``kinrun.spine.runnables``): the runnables that need
        no gate group by group, then the gate (the Lease), then the gated ones group by
        group; the pipeline's caches (``start_caches``: gated unless warm standby) and
        workers (``start_workers``: gated) are in the CACHES and WORKERS groups. Returns
        False, with whatever started stopped again in reverse, when ``stop`` was set first,
        ``sync_timeout`` seconds passed before every cache synced, or a runnable could not
        start; when a runnable's start raises (a port in use, a startup hook's StartupError),
        what started before it is stopped in reverse too and the error propagates: nothing
        is left running in a process that uses kinrun as a library. Once the workers run it
        logs ``kinrun running``."""
        stop = stop or threading.Event()
        pipeline = [_Caches(self, sync_timeout, gc_policy, self._caches_gated()),
                    _Workers(self)]
        everything = sorted([*pipeline, *self._runnables],  # stable: in order of adding
                            key=lambda r: (r.needs_gate, r.group))
        self._started = []
        try:
            for runnable in everything:
                if runnable.needs_gate and self._gate is not None and \
                        not self._hold_gate(stop):
                    return self._undo_start()
                if not runnable.start(stop):
                    return self._undo_start()
                self._started.append(runnable)
        except BaseException:
            self._undo_start()
            raise
        return True

    def _caches_gated(self) -> bool:
        return self._gate is not None and not self.plan.settings.warm_standby

    def _hold_gate(self, stop: threading.Event) -> bool:
        """Acquire the gate, once, before the first gated runnable."""
        gate = self._gate
        if gate is None or any(isinstance(r, _Held) for r in self._started):
            return True
        if not gate.acquire(stop):
            return False
        self._started.append(_Held(gate))
        return True

    def _undo_start(self) -> bool:
        self._drain = (0.0, True)
        self._stop_started()
        return False

    def _stop_started(self) -> None:
        while self._started:
            self._started.pop().stop()

    def running(self) -> None:
        """Log that everything runs (the WORKERS group started)."""
        _main_log.info("kinrun running: %d informer(s), %d controller(s); stop with Ctrl-C",
                       len(self.informers), len(self.controllers))

    def start_caches(self, stop: threading.Event | None = None,
                     sync_timeout: float | None = None, *, gc_policy: bool = False) -> bool:
        """Call the startup hooks, start every informer and wait for their caches to sync
        (logging each informer's object count); no worker runs yet, so nothing is written:
        what a warm standby replica does while it waits for the Lease (keys queue up,
        deduplicated, until ``start_workers``; as controller-runtime's warm replicas).
        With ``gc_policy`` (the main job's choice): apply kinrun's GC policy
        (``kinrun.gc.policy.manage``) first and freeze the GC over the initial list once synced.
        Returns False when ``stop`` was set or ``sync_timeout`` seconds passed first. A startup
        hook failing raises StartupError, once every plugin's shutdown hook was called but
        those of the plugins whose startup hook failed or was not called."""
        try:
            plugins.call_startup(self.pm, config=self.config, client=self.client)
        except plugins.StartupError as exc:
            plugins.call_shutdown(self.pm, _log, skip=exc.not_started)
            raise
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
            self._start_collecting_frozen(self.plan.settings.gc.collect_frozen_every)

    def _wait_for_sync(self, stop: threading.Event | None, timeout: float | None) -> bool:
        deadline = None if timeout is None else REAL_CLOCK.now() + timeout
        for name, informer in self.informers.items():
            while not informer.wait_for_sync(0.2):
                if stop is not None and stop.is_set():
                    return False
                if deadline is not None and REAL_CLOCK.now() > deadline:
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
        clock = self.clock or REAL_CLOCK
        next_report = clock.now() + HANDLER_WAIT_REPORT
        while any(r.informer.has_synced() and not r.has_synced() for r in registrations):
            if stop is not None and stop.is_set():
                return False
            if deadline is not None and REAL_CLOCK.now() > deadline:
                _log.error("event handlers had not handled the initial lists after %.0fs: %s",
                           timeout, "; ".join(self.unhandled_initial_lists()))
                return False
            if clock.now() >= next_report:  # a handler (a hook) that does not return: say so
                _log.warning("waiting for event handlers to handle their informers' initial "
                             "lists; no controller starts before: %s",
                             "; ".join(self.unhandled_initial_lists()))
                next_report = clock.now() + HANDLER_WAIT_REPORT
            REAL_CLOCK.sleep(0.005)  # once, at start; listeners signal nothing
        return True

    def unhandled_initial_lists(self) -> list[str]:
        """One line per event handler whose informer synced but which has not handled every
        add of the initial list yet (client-go's ``HasSynced`` of its registration), naming
        the informer, the handler and, for a plugin's event hooks, the hook and object running
        and for how long (``kinrun_on_add of ns/x for 31s``). Also a ``/readyz`` check."""
        lines = []
        for entry in (e for entries in self._wired.handlers.values() for e in entries):
            for r in entry.registrations():
                if r.informer.has_synced() and not r.has_synced():
                    busy = getattr(entry.handler, "busy", lambda: None)()
                    lines.append(f"informer {r.informer.name}: handler "
                                 f"{type(entry.handler).__name__} has not handled its initial "
                                 f"list" + (f" (running {busy})" if busy else ""))
        return lines

    # -- garbage collection (kinrun.gc) -------------------------------------------------------

    def collect_frozen_garbage(self) -> gc_tuning.FrozenCollection:
        """Collect the cyclic garbage kinrun's GC policy froze (``kinrun.gc.policy``'s
        ``collect_frozen``: pauses every thread for a full collection) and log it at INFO. Only
        between ``start`` and ``stop`` (the policy must be on: ``PolicyOffError`` otherwise). Called
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

    def stop(self, drain_timeout: float = 10.0, *, drain: bool | None = None) -> bool:
        """Stop what :meth:`start` started, in reverse: the gated runnables (reload), the
        pipeline (``stop_pipeline``: ``drain`` None drains unless the gate's Lease was lost),
        the gate (its Lease released), the ungated runnables (probes, metrics). Returns
        whether every queue drained and every worker ended."""
        drain = not self.lost if drain is None else drain
        self._drain = (drain_timeout, drain)
        self._stop_started()
        if self.caches_started and not self._pipeline_stopped:  # start_caches called directly
            self.stop_pipeline(drain_timeout, drain=drain)
        return self._drained

    def stop_pipeline(self, drain_timeout: float = 10.0, *, drain: bool = True) -> bool:
        """Stop the collect-frozen thread, the informers (no new keys), then drain every
        controller's workqueue for at most ``drain_timeout`` seconds in all, then call the
        shutdown hooks and undo the GC policy. Returns whether every queue drained and every
        worker ended.

        ``drain=False`` is for a replica that lost its Lease (leadership or shard membership):
        another replica may already reconcile these keys, so no queued key is reconciled any
        more; only the reconciles under way finish (within ``drain_timeout``), as a client-go
        controller whose OnStoppedLeading ends the process. Returns whether they finished."""
        self._pipeline_stopped = True
        self._stop_collecting_frozen()
        for scheduler in self.schedules.values():
            scheduler.stop()
        self.factory.stop()
        deadline = REAL_CLOCK.now() + drain_timeout  # real time: the workers' threads are real
        drained = True
        for name, controller in self.controllers.items():
            left = max(0.1, deadline - REAL_CLOCK.now())
            ok = controller.stop(left) if drain else controller.retire(left)
            drained = drained and ok
            _log.info("controller %s stopped%s", name, "" if ok else " (not drained)")
        plugins.call_shutdown(self.pm, _log)
        if self._gc_thresholds is not None:
            gc_tuning.unfreeze(self._gc_thresholds)  # the process may go on without kinrun
            self._gc_thresholds = None
        self._drained = drained
        return drained


class _Held:
    """The gate while it is held: stopping it releases the Lease."""

    name, group, needs_gate = "gate", Group.CACHES, True

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def start(self, stop: threading.Event) -> bool:
        return True

    def stop(self) -> None:
        self.gate.release()


class _Caches:
    """The pipeline's caches as a runnable (``Manager.start_caches``); stopping them before
    the workers ran stops the pipeline without a drain."""

    name, group = "caches", Group.CACHES

    def __init__(self, manager: Manager, sync_timeout: float | None, gc_policy: bool,
                 gated: bool) -> None:
        self.manager, self.sync_timeout, self.gc_policy = manager, sync_timeout, gc_policy
        self.needs_gate = gated

    def start(self, stop: threading.Event) -> bool:
        if self.manager.start_caches(stop, self.sync_timeout, gc_policy=self.gc_policy):
            return True
        self.manager.stop_pipeline(0.0)  # the informers started: stop them, hooks called
        return False

    def stop(self) -> None:
        if not self.manager._pipeline_stopped:
            self.manager.stop_pipeline(0.0)


class _Workers:
    """The pipeline's workers as a runnable (``Manager.start_workers``); stopping them stops
    the whole pipeline (informers first, then the drain), between the main job's
    ``stopping`` and ``stopped`` lines."""

    name, group, needs_gate = "workers", Group.WORKERS, True

    def __init__(self, manager: Manager) -> None:
        self.manager = manager

    def start(self, stop: threading.Event) -> bool:
        self.manager.start_workers()
        self.manager.running()
        return True

    def stop(self) -> None:
        seconds, drain = self.manager._drain
        if not drain:  # another replica may reconcile these keys already: none runs here
            _main_log.info("stopping: the Lease is lost; queued keys are left to the replica "
                           "that takes over (reconciles under way finish, at most %gs)",
                           seconds)
        else:
            _main_log.info("stopping: draining workqueues (at most %gs)", seconds)
        drained = self.manager.stop_pipeline(seconds, drain=drain)
        _main_log.info("stopped%s", "" if drained else " (some reconciles did not finish)")
