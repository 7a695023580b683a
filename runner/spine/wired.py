"""What binding builds for a Manager to run: the wired pipeline of one bound plan.

``kinrun.bound`` builds a :class:`Wired` (as controller-runtime's builder wires a controller to
its sources); ``kinrun.manager.Manager`` runs one; hot reload (``kinrun.reload``) builds another
over the running factory and hands it to ``Manager.adopt``. Nothing here starts a thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kinrun.cache import (DeletedFinalStateUnknown, InformerInterface, ListenerRegistration,
                          ResourceEventHandler, SharedInformerFactory,
                          deletion_handling_meta_namespace_key)
from kinrun.clock import Clock
from kinrun.controller import Controller
from kinrun.kube import Client, ResourceRef
from kinrun.reconcile import Matches, Reconciler
from kinrun.schedule import Scheduler
from kinrun.spine.compiled import CompiledPlan, waiting_controllers
from kinrun.workqueue import RateLimiter

if TYPE_CHECKING:  # prometheus_client is imported only when a config asks for metrics
    from kinrun.metrics import Metrics
    from kinrun.sharding.shard import Shard

Informer = InformerInterface
"""A configured informer: one shared informer, or one per namespace of a ``namespaces`` list
(``kinrun.cache.protocols``)."""


class RecordDeletions:
    """The primary informer's event handler around ``inner`` (the own-key enqueue handler):
    a deletion is recorded in the Reconciler (final state, tombstone or not, the selector
    test) before its key is enqueued, so the reconcile knows what left and why
    (``kinrun.reconcile``). Synchronous, like ``inner``; stateless itself."""

    __slots__ = ("inner", "reconciler", "matches")

    def __init__(self, inner: ResourceEventHandler, reconciler: Reconciler,
                 matches: Matches | None) -> None:
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

    def on_delete(self, obj: dict | DeletedFinalStateUnknown) -> None:
        """Record the deletion, then pass on (which enqueues the key)."""
        tombstone = isinstance(obj, DeletedFinalStateUnknown)
        final = obj.obj if tombstone else obj
        self.reconciler.record_deletion(deletion_handling_meta_namespace_key(obj),
                                        final if isinstance(final, dict) else None,
                                        tombstone=tombstone, matches=self.matches)
        self.inner.on_delete(obj)

    def retarget(self, reconciler: Reconciler) -> None:
        """Record into ``reconciler`` from now on (a swap: a call under way records into the
        new one; ``kinrun.manager.Manager.swap``)."""
        self.reconciler = reconciler


class HandlerEntry:
    """One event handler a wiring registers: ``handler`` on ``informer`` with ``resync``
    seconds (client-go ``AddEventHandlerWithResyncPeriod``), ``synchronous`` (called on the
    informer's thread: a key computation and a workqueue add) or on a listener thread of its
    own. ``register``/``unregister`` keep its registration (None while unregistered); called
    from one thread at a time (the wiring's, then the reload thread's)."""

    __slots__ = ("informer", "handler", "resync", "synchronous", "registration")

    def __init__(self, informer: Informer, handler: ResourceEventHandler, resync: float,
                 synchronous: bool) -> None:
        self.informer, self.handler, self.resync = informer, handler, resync
        self.synchronous = synchronous
        self.registration: ListenerRegistration | list[ListenerRegistration] | None = None

    def register(self) -> None:
        """Add the handler to its informer (a replay of its cache as adds follows)."""
        self.registration = self.informer.add_event_handler(
            self.handler, self.resync, synchronous=self.synchronous)

    def unregister(self) -> None:
        """Remove the handler from its informer, if registered (a stopped informer has
        nothing to remove)."""
        if self.registration is not None:
            self.informer.remove_event_handler(self.registration)
            self.registration = None

    def registrations(self) -> list[ListenerRegistration]:
        """None before it is registered; one per namespace's informer for a multi-namespace
        informer; else one."""
        registration = self.registration
        if registration is None:
            return []
        return registration if isinstance(registration, list) else [registration]


@dataclass(frozen=True)
class Wired:
    """The pipeline of one bound plan, wired and not started.

    ``plan``; ``client``; ``refs``: informer name -> ResourceRef; ``waiting``: informer name ->
    why its kind waits (not wired; ``kinrun.bound.Bound.waiting``); ``factory``;
    ``informers`` (name -> Informer); ``controllers`` (name -> Controller); ``reconcilers``
    (name -> Reconciler); ``metrics`` (or None); ``handlers``: owner -> the event handlers it
    registers (owners are controller names and ``informer:<name>`` for a plugin's event
    hooks; hot reload replaces them by owner); ``schedules``: controller name -> its cron
    Scheduler; ``clock``: the workqueues' clock (None: the real one); ``shard``: the
    replica's Shard when sharded (else None). A rewiring (``kinrun.reload``) also fills
    ``successors``: controller name -> a Controller built for the new definition over the
    running one's queue, never started, for ``Controller.resume``; ``limiters``: controller
    name -> its new rate limiter. Frozen: a reload builds a new one (``dataclasses.replace``).
    """

    plan: CompiledPlan
    client: Client
    refs: Mapping[str, ResourceRef]
    waiting: Mapping[str, str]
    factory: SharedInformerFactory
    informers: dict[str, Informer]
    controllers: dict[str, Controller]
    reconcilers: dict[str, Reconciler]
    metrics: Metrics | None = None
    handlers: dict[str, list[HandlerEntry]] = field(default_factory=dict)
    schedules: dict[str, Scheduler] = field(default_factory=dict)
    clock: Clock | None = None
    shard: Shard | None = None
    successors: dict[str, Controller] = field(default_factory=dict)
    limiters: dict[str, RateLimiter] = field(default_factory=dict)

    def waiting_controllers(self) -> dict[str, list[str]]:
        """Controller name -> the waiting informers it needs (file order)."""
        return waiting_controllers(self.plan, self.waiting)

    def registrations(self) -> list[ListenerRegistration]:
        """Every registered handler's ListenerRegistration, of every owner (one per namespace
        for a multi-namespace informer); unregistered entries have none."""
        return [r for entries in self.handlers.values() for entry in entries
                for r in entry.registrations()]
