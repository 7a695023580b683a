"""The compiled plan as data: what ``kinrun.plan.plan`` produces and ``kinrun.bound`` binds.

Types first, so that the spine imports downwards only: ``kinrun.bound`` reads these, ``kinrun.plan``
compiles them (and adds ``Plan.bind``), ``kinrun.manager`` runs what was bound. Frozen and
thread-safe (compiled templates and programs are); no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from dataclasses import dataclass, field

from pluggy import PluginManager

from kinrun.actions import ActionProgram
from kinrun.config.model import (Config, ControllerSpec, InformerSpec, RateLimiterSpec,
                                 WatchSpec)
from kinrun.kube.event_recorder import EventRecorder
from kinrun.plugin_manager import ReconcileHook
from kinrun.reconcile import Matches
from kinrun.schedule import CronSchedule
from kinrun.spine.settings import RunSettings
from kinrun.templating import KeyMapper, TemplateEngine

if TYPE_CHECKING:  # loaded by plan only for configs with admission: webhooks
    from kinrun.admission import AdmissionProgram

IndexFunc = Callable[[dict], list[str]]


@dataclass(frozen=True)
class InformerPlan:
    """One informer, compiled. ``spec``: as configured; ``indexers``: index name -> function
    (the config's expressions and the plugins' ``kinrun_index_funcs``); ``matches``: the
    label/field selector test (None without selectors; field keys read as dotted paths);
    ``transform``: applied to each object before it is cached (``kinrun.cache.transform``), or
    None; ``transform_id``: the id naming it in the informer's key ("" for None);
    ``projection``: the fields decoded (``kinrun.kube.projection.Projection``, worked out by
    ``kinrun.kept_paths``), or None for whole objects; ``reads``: what the config reads of
    the informer's objects (``kinrun.kept_paths.InformerReads``; ``validate --explain``)."""

    spec: InformerSpec
    indexers: Mapping[str, IndexFunc]
    matches: Matches | None
    transform: Callable[[dict], dict] | None = None
    transform_id: str = ""
    projection: Any = None
    reads: Any = None

    @property
    def resync_period(self) -> float:
        """Seconds between resyncs of the handlers registered through this informer name
        (0 = none): the spec's ``resyncPeriod``."""
        return self.spec.resync_period

    @property
    def name(self) -> str:
        """The informer's name under ``informers:``."""
        return self.spec.name


@dataclass(frozen=True)
class WatchPlan:
    """One watched secondary of a controller: ``spec``; ``mapper``: the compiled key mapper
    of ``mapTo: {template}``, not yet bound to the listers its lookups read (None for owner
    and index mappings, which need the primary's resource and cache: they are made at bind)."""

    spec: WatchSpec
    mapper: KeyMapper | None = None


@dataclass(frozen=True)
class ControllerPlan:
    """One controller, compiled. ``actions`` / ``on_delete``: action programs or None;
    ``hooks``: the plugins' reconcile caller or None; ``keep_old``; ``resync_period``: the
    primary handler's, seconds (the controller's, else its primary informer's); ``watches``;
    ``rate_limiter``; ``workers``; ``max_retries``; ``predicates``: names, each known;
    ``finalize``: the program run while an object terminates with ``finalizer`` on it (both
    None without ``finalizer:``; ``kinrun.reconcile``); ``recorder``: the EventRecorder its
    programs share (a reload hands its correlator on: ``kinrun.reload``); ``on_error``: the
    program run when a reconcile of a live object fails (``reconcile.onError``), or None."""

    spec: ControllerSpec
    actions: ActionProgram | None
    on_delete: ActionProgram | None
    hooks: ReconcileHook | None
    keep_old: bool
    resync_period: float
    watches: tuple[WatchPlan, ...]
    finalize: ActionProgram | None = None
    finalizer: str | None = None
    schedule: CronSchedule | None = None
    finalizer_when: Any = None
    """``finalizer.when`` compiled (``kinrun.actions.finalizer.FinalizerCondition``), None:
    every live object holds the finalizer."""
    recorder: EventRecorder | None = None
    on_error: ActionProgram | None = None

    @property
    def name(self) -> str:
        """The controller's name."""
        return self.spec.name

    @property
    def rate_limiter(self) -> RateLimiterSpec:
        """The workqueue's rate limiter settings."""
        return self.spec.rate_limiter


@dataclass(frozen=True)
class CompiledPlan:
    """A config compiled against its plugins: ``config``; ``plugins`` (the pluggy manager);
    ``engine`` (the config's TemplateEngine); ``informers`` (name -> InformerPlan, file order);
    ``controllers`` (ControllerPlans, file order); ``settings``: how a run goes (the
    effective settings, ``kinrun.spine.settings``); ``sharded``: with ``sharding``, informer
    name -> ``primary`` / ``owned`` for the informers the ring shards (``kinrun.sharding.
    scope``; empty otherwise); ``admission``: the webhooks compiled, or None. Pure data: ``kinrun.plan.Plan`` adds the spine's verb (``bind``); build with
    ``kinrun.plan.plan``."""

    config: Config
    plugins: PluginManager
    engine: TemplateEngine
    informers: Mapping[str, InformerPlan]
    controllers: tuple[ControllerPlan, ...]
    settings: RunSettings
    sharded: Mapping[str, str] = field(default_factory=dict)
    admission: AdmissionProgram | None = None  # ``admission:`` compiled (kinrun.admission)

    def controller(self, name: str) -> ControllerPlan:
        """The controller called ``name``; KeyError if none."""
        for controller in self.controllers:
            if controller.name == name:
                return controller
        raise KeyError(name)


def owner_mapping_problem(primary: InformerSpec, secondary: InformerSpec,
                          primary_namespaced: bool | None,
                          secondary_namespaced: bool | None) -> str | None:
    """Why ``mapTo: owner`` from ``secondary`` to ``primary`` can only give keys the primary
    cache never holds, or None. Scopes: True namespaced, False cluster-scoped, None unknown
    (a CRD before discovery). Kubernetes owner references: a namespaced owner must be in its
    dependent's namespace; a cluster-scoped dependent cannot have a namespaced owner."""
    if primary_namespaced is None or secondary_namespaced is None:
        return None
    what = f"mapTo: owner maps {secondary.kind or secondary.resource} to owners of kind " \
           f"{primary.kind or primary.resource}"
    if primary_namespaced and not secondary_namespaced:
        return (f"{what}, but a cluster-scoped object cannot have a namespaced owner: "
                f"no key would ever be in informer {primary.name!r}")
    if primary_namespaced and primary.namespaces is not None \
            and secondary.namespaces is not None \
            and not set(primary.namespaces) & set(secondary.namespaces):
        return (f"{what}, but an owner lives in its dependent's namespace and informer "
                f"{secondary.name!r} watches {', '.join(secondary.namespaces)} while "
                f"{primary.name!r} watches {', '.join(primary.namespaces)}")
    return None


def waiting_controllers(plan: CompiledPlan, waiting: Mapping[str, str]) -> dict[str, list[str]]:
    """Controller name -> the ``waiting`` informers it needs (primary or watched), for the
    controllers of ``plan`` that cannot run yet (file order)."""
    out: dict[str, list[str]] = {}
    for controller in plan.controllers:
        names = [controller.spec.primary, *(w.spec.informer for w in controller.watches)]
        missing = [n for n in dict.fromkeys(names) if n in waiting]
        if missing:
            out[controller.name] = missing
    return out
