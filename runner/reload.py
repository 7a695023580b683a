"""Hot reload: compare two Plans, then change a running Manager by exactly the difference.

    diff(old, new) -> PlanDiff         which informers and controllers are added, removed,
                                       kept / swapped (pure: two Plans, optional discovery)
    Reloader(manager, ...).reload()    load + plan + bind the config file again, then apply
    Reloader.rediscover()              the same Plan bound again: kinds not served yet that a
                                       CRD now serves start, kinds whose CRD went away stop

What is compared. Specs are compared without their file positions (a line added above a
controller changes nothing), as values of the frozen config model, so any field a config
gains is covered without this module knowing it:

* an informer is *kept* when everything that decides what it lists and watches is equal
  (every InformerSpec field except its indexers, resync period and position, and the
  resource discovery resolved): it keeps running with its cache, no new LIST. Informers are
  shared by InformerKey (``kinrun.cache.SharedInformerFactory``), so a ``namespaces`` list
  that gains a namespace starts only that namespace's informer. An index that is added or
  whose definition changed is built from the cache (``update_indexers``, as client-go
  ``AddIndexers`` on a started informer); one no longer defined is dropped. An informer no
  informer name uses any more is stopped.
* a controller is *unchanged* when its spec, the full specs (indexers included) and
  resources of every informer it reads (primary and watches), the plugins (names and file
  digests) and every other top-level key that compiles into it (``templates`` ...) are equal;
  otherwise it is *swapped*: the new definition takes over the running workqueue (no key
  lost) at a barrier (``Controller.pause``: the reconciles under way finish first, none of the
  new definition starts before; each reconcile runs entirely under one definition, and the
  workqueue never hands one key to two workers), its event handlers are replaced (new ones
  registered first, which replays the cache as adds so every key is reconciled under the new
  definition, then the old removed) and its Reconciler's pending deletions carried over.
  A changed plugin file (re-imported: ``kinrun.plugin_manager.file_digest``) swaps every
  controller, so two versions of a plugin are never both active. Entry-point plugins and
  modules are never re-imported (Python caches them): a new version needs a restart.
* top-level keys that only a start reads (``cluster``, ``metrics``, ``probes``,
  ``leaderElection``, ``sharding``, ``gc``, ``shutdown``, ``reload``, ``admission``: the
  webhook server serves the rules it started with) are reported as needing
  a restart and not applied; ``rbac`` is read by ``kinrun rbac`` only.

How it applies (:meth:`Reloader.apply`), all or nothing up to the barrier: carry over
unchanged index functions, re-set changed indexes on kept informers, wire the new and swapped
controllers over the running factory (new informers start), wait for the new informers to
sync, pause the controllers to swap; any failure so far (an index function failing on a
cached object, an informer not synced within ``sync_timeout``, a reconcile not finishing
within ``drain_timeout``) undoes it all and the old config stays in force. Then: swap,
start the added controllers, retire the removed ones (their queued keys are dropped: they are
no longer configured), replace plugin event handlers, stop unused informers. One log line says
what changed.

A config that fails to load, compile or bind changes nothing: the errors are logged once per
file content (file:line), ``kinrun_config_last_reload_successful`` is 0 and
``kinrun_config_reloads_total{result="failure"}`` counts it (as Prometheus'
``prometheus_config_last_reload_successful``); readiness is not touched. A watched change
back to the bytes in force (the bad edit reverted, a ConfigMap rolled back) is then a
successful reload with nothing to apply: one info line, the rejected state cleared.

Thread-safety: ``reload``, ``rediscover`` and ``apply`` run on one thread at a time
(``_lock``), normally the loop of :meth:`Reloader.run`; the Manager is not stopped meanwhile
(``close`` ends the loop first).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from kinrun import plugin_manager as plugins
from kinrun.bound import Bound, Rewire, Wrap
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.config.model import Config, Location
from kinrun.controller import Controller
from kinrun.errors import KinrunError
from kinrun.manager import Manager
from kinrun.plan import InformerPlan, Plan
from kinrun.reconcile import Reconciler
from kinrun.schedule import Scheduler
from kinrun.sharding.scope import sharded_informers
from kinrun.spine.compiled import CompiledPlan
from kinrun.spine.wired import HandlerEntry, Informer, Wired

if TYPE_CHECKING:  # prometheus_client is imported only when a config asks for metrics
    from kinrun.metrics import Metrics

_log = logging.getLogger("kinrun.reload")

RESTART_ONLY = ("cluster", "metrics", "probes", "leader_election", "sharding", "gc",
                "shutdown", "reload", "admission")
"""Config fields a running kinrun reads only at start: a change is logged, applied at the next
restart."""

_NOT_COMPILED = frozenset(("file", "base_dir", "informers", "controllers", "rbac",
                           *RESTART_ONLY))
"""Config fields that do not compile into controllers (the rest does: a change swaps all)."""

_POSITIONS = frozenset(("location", "field_locations", "plugin_locations"))
"""Fields that only say where something is written; so is any field named ``*_location``
(``finalizer_location``, ``time_zone_location``) and any Location value."""


def _position(name: str) -> bool:
    return name in _POSITIONS or name.endswith("_location")


DISCOVERY_BACKOFF_START = 1.0
"""Seconds before the first rediscovery of a kind not served yet; doubled per miss up to the
config's ``reload.discoveryInterval``."""


def comparable(value: Any) -> Any:
    """``value`` (a config model object) as nested tuples without file positions, equal
    exactly when the two configs mean the same (``location``/``field_locations`` left out)."""
    if isinstance(value, Location):
        return None  # where, not what
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple(
            (f.name, comparable(getattr(value, f.name))) for f in dataclasses.fields(value)
            if not _position(f.name)))
    if isinstance(value, Mapping):
        return ("{}", tuple((k, comparable(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(comparable(v) for v in value)
    if isinstance(value, PurePath):
        return str(value)
    return value


def _without(value: Any, names: Iterable[str]) -> Any:
    skip = set(names)
    return tuple((f.name, comparable(getattr(value, f.name)))
                 for f in dataclasses.fields(value)
                 if f.name not in skip and not _position(f.name))


def _watch_identity(informer: InformerPlan, ref: Any) -> Any:
    """What decides what an informer lists and watches and what it decodes (not its indexes
    nor resync): a projection that keeps other fields needs a new LIST."""
    return _without(informer.spec, ("name", "indexers", "resync_period")), ref, \
        informer.projection


def _informer_fingerprint(informer: InformerPlan, ref: Any) -> Any:
    return _without(informer.spec, ("name",)), ref, informer.projection


def _context(plan: CompiledPlan) -> Any:
    """Everything outside informers and controllers that compiles into a controller (the
    config's folder too when templates may read files from it: a ConfigMap volume's update
    moves it to a new timestamped folder and deletes the old one)."""
    folder = str(plan.config.base_dir) if plan.config.templates.allow_files else None
    return _without(plan.config, _NOT_COMPILED), plugin_fingerprint(plan), folder


def plugin_fingerprint(plan: CompiledPlan) -> tuple:
    """The plugins as (name, source, file digest), registration order."""
    pm = plan.plugins
    digests = plugins.plugin_digests(pm)
    return tuple((name, source.split(" ", 1)[0], digests.get(name))
                 for name, source in getattr(pm, "sources", {}).items())


@dataclass(frozen=True)
class PlanDiff:
    """What a reload changes. Informer names: ``informers_added`` (new names),
    ``informers_removed``, ``informers_changed`` (same name, another watch: a new informer),
    ``informers_kept`` (same watch: cache kept), ``indexes`` (kept informer -> (added,
    changed, removed) index names, only those with a change). Controller names:
    ``controllers_added``, ``controllers_removed`` (also those that must wait for a kind),
    ``controllers_swapped``, ``controllers_unchanged``; ``waiting``: controller of the new
    config that cannot run yet -> the informers it waits for (kinds not served yet; shown
    in the summary). ``plugins_changed``; ``restart_only``: the top-level keys whose change
    waits for a restart (camelCase); ``relisted``: changed informer whose watch is the same
    but whose projection keeps other fields -> what changed (``+spec.x -status``): it lists
    again, the only informer that does (``kinrun.kube.projection``)."""

    informers_added: tuple[str, ...] = ()
    informers_removed: tuple[str, ...] = ()
    informers_changed: tuple[str, ...] = ()
    informers_kept: tuple[str, ...] = ()
    indexes: Mapping[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = \
        field(default_factory=dict)
    controllers_added: tuple[str, ...] = ()
    controllers_removed: tuple[str, ...] = ()
    controllers_swapped: tuple[str, ...] = ()
    controllers_unchanged: tuple[str, ...] = ()
    plugins_changed: bool = False
    restart_only: tuple[str, ...] = ()
    waiting: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    relisted: Mapping[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Nothing to apply (restart-only changes aside)."""
        return not (self.informers_added or self.informers_removed or self.informers_changed
                    or self.indexes or self.controllers_added or self.controllers_removed
                    or self.controllers_swapped)

    def summary(self) -> str:
        """One line: ``informers +a -b ~c =d; controllers +x -y swapped z unchanged w``."""
        def names(values: Iterable[str]) -> str:
            return ",".join(values) or "-"
        text = (f"informers added {names(self.informers_added)} removed "
                f"{names(self.informers_removed)} changed {names(self.informers_changed)} "
                f"kept {names(self.informers_kept)}")
        if self.relisted:
            text += " (relisted for the fields read: " + "; ".join(
                f"{n} {what}" for n, what in self.relisted.items()) + ")"
        if self.indexes:
            text += " (indexes: " + "; ".join(
                f"{n} +{','.join(a) or '-'} ~{','.join(c) or '-'} -{','.join(r) or '-'}"
                for n, (a, c, r) in self.indexes.items()) + ")"
        waits = [f"{c} (waiting for {','.join(ns)})" for c, ns in self.waiting.items()
                 if c not in self.controllers_removed]
        gone = [f"{c} (waiting for {','.join(self.waiting[c])})" if c in self.waiting else c
                for c in self.controllers_removed]
        text += (f"; controllers added {names([*self.controllers_added, *waits])} removed "
                 f"{names(gone)} swapped {names(self.controllers_swapped)}"
                 f" unchanged {names(self.controllers_unchanged)}")
        if self.plugins_changed:
            text += "; plugins changed"
        if self.restart_only:
            text += f"; needs a restart: {', '.join(self.restart_only)}"
        return text


_CAMEL = {"leader_election": "leaderElection"}


def diff(old: CompiledPlan, new: CompiledPlan, *, old_refs: Mapping[str, Any] | None = None,
         new_refs: Mapping[str, Any] | None = None, running: Iterable[str] | None = None,
         waiting: Iterable[str] | Mapping[str, Iterable[str]] = ()) -> PlanDiff:
    """The difference between the running ``old`` and the ``new`` Plan (module docstring).

    ``old_refs`` / ``new_refs``: informer name -> ResourceRef from discovery (None: compare
    specs only; an informer missing from a given mapping waits for its kind); ``running``:
    the controllers running now (default: every controller of ``old``); ``waiting``: the
    controllers of ``new`` that cannot run yet (a kind not served), reported removed when
    running and never added (a mapping: with the informers each waits for)."""
    old_refs, new_refs = old_refs or {}, new_refs or {}
    running = set(running) if running is not None else {c.name for c in old.controllers}
    waits = {c: tuple(ns) for c, ns in waiting.items()} if isinstance(waiting, Mapping) \
        else {c: () for c in waiting}
    added, removed, changed, kept, indexes = _informer_changes(old, new, old_refs, new_refs)
    relisted = {name: _projection_change(old.informers[name], new.informers[name])
                for name in changed if _watch_identity(old.informers[name], old_refs.get(name))[:2]
                == _watch_identity(new.informers[name], new_refs.get(name))[:2]}
    c_added, c_removed, c_swapped, c_same = _controller_changes(old, new, old_refs, new_refs,
                                                                running, set(waits))
    restart = tuple(_CAMEL.get(f, f) for f in RESTART_ONLY
                    if comparable(getattr(old.config, f, None))
                    != comparable(getattr(new.config, f, None)))
    return PlanDiff(tuple(added), tuple(removed), tuple(changed), tuple(kept), indexes,
                    tuple(c_added), tuple(c_removed), tuple(c_swapped), tuple(c_same),
                    plugin_fingerprint(old) != plugin_fingerprint(new), restart,
                    {c: ns for c, ns in waits.items()  # newly waiting: not already before
                     if c in running or c not in {o.name for o in old.controllers}},
                    relisted)


def _projection_change(old: InformerPlan, new: InformerPlan) -> str:
    """``+path -path`` between two informers' projections (``whole objects`` for none)."""
    from kinrun.kube.projection import shown

    def paths(informer: InformerPlan) -> set[str] | None:
        projection = informer.projection
        return None if projection is None else {shown(p) for p in projection.paths}
    before, after = paths(old), paths(new)
    if before is None or after is None:
        return "now decodes whole objects" if after is None else "now projected"
    return " ".join([*(f"+{p}" for p in sorted(after - before)),
                     *(f"-{p}" for p in sorted(before - after))])


def _informer_changes(old: CompiledPlan, new: CompiledPlan, old_refs: Mapping[str, Any],
                      new_refs: Mapping[str, Any]) -> tuple[list[str], list[str], list[str],
                                                            list[str], dict[str, Any]]:
    """``diff``'s informers: added, removed, changed (another watch), kept, and the kept ones'
    index changes."""
    added, changed, kept = [], [], []
    indexes: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}
    for name, informer in new.informers.items():
        previous = old.informers.get(name)
        if previous is None:
            added.append(name)
        elif (_watch_identity(previous, old_refs.get(name))
              != _watch_identity(informer, new_refs.get(name))):
            changed.append(name)
        else:
            kept.append(name)
            change = _index_change(previous, informer, old, new)
            if any(change):
                indexes[name] = change
    removed = [name for name in old.informers if name not in new.informers]
    return added, removed, changed, kept, indexes


def _controller_changes(old: CompiledPlan, new: CompiledPlan, old_refs: Mapping[str, Any],
                        new_refs: Mapping[str, Any], running: set[str],
                        waiting: set[str]) -> tuple[list[str], list[str], list[str], list[str]]:
    """``diff``'s controllers: added, removed, swapped (rebuilt) and the same."""
    context_same = _context(old) == _context(new)
    c_added, c_swapped, c_same = [], [], []
    old_controllers = {c.name: c for c in old.controllers}
    for controller in new.controllers:
        name = controller.name
        if name in waiting:
            continue
        if name not in running:
            c_added.append(name)
        elif context_same and _controller_fingerprint(
                old_controllers[name], old, old_refs) == _controller_fingerprint(
                controller, new, new_refs):
            c_same.append(name)
        else:
            c_swapped.append(name)
    desired = set(c_added) | set(c_swapped) | set(c_same)
    c_removed = [c.name for c in old.controllers if c.name in running and c.name not in desired]
    return c_added, c_removed, c_swapped, c_same


def _controller_fingerprint(controller: Any, plan: CompiledPlan, refs: Mapping[str, Any]) -> Any:
    spec = controller.spec
    names = dict.fromkeys([spec.primary, *(w.informer for w in spec.watches)])
    return comparable(spec), tuple(
        (n, _informer_fingerprint(plan.informers[n], refs.get(n))) for n in names)


def _index_fingerprint(informer: InformerPlan, name: str, plan: CompiledPlan) -> Any:
    spec = informer.spec.indexers.get(name)
    templates = comparable(plan.config.templates)
    if spec is None or spec.plugin:  # a plugin's function: as its plugin's file
        return "plugin", name, templates, plugin_fingerprint(plan)
    return comparable(spec), templates


def _index_change(old: InformerPlan, new: InformerPlan, old_plan: Plan,
                  new_plan: Plan) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    added = tuple(n for n in new.indexers if n not in old.indexers)
    removed = tuple(n for n in old.indexers if n not in new.indexers)
    changed = tuple(n for n in new.indexers if n in old.indexers and _index_fingerprint(
        old, n, old_plan) != _index_fingerprint(new, n, new_plan))
    return added, changed, removed


def carry_over_indexers(old: Plan, new: Plan) -> Plan:
    """``new`` with the index functions of ``old`` wherever an informer name defines an index
    the same way in both (so the running informer's index is kept as is: same function)."""
    informers = {}
    for name, informer in new.informers.items():
        previous = old.informers.get(name)
        if previous is None:
            informers[name] = informer
            continue
        indexers = {n: (previous.indexers[n] if n in previous.indexers and _index_fingerprint(
            previous, n, old) == _index_fingerprint(informer, n, new) else f)
            for n, f in informer.indexers.items()}
        informers[name] = dataclasses.replace(informer, indexers=indexers)
    return dataclasses.replace(new, informers=informers)


def keep_sharding(new: Plan, sharding: Any) -> Plan:
    """``new`` sharded as the running replica is (``sharding``: the ShardingSpec it started
    with, or None): ``sharding`` is read at start only (the replica's Lease and Shard), so a
    reload that adds, removes or edits it keeps the running scope (``Plan.sharded`` as
    ``kinrun.sharding.scope.sharded_informers`` gives for ``new``'s informers under the
    started ``sharding``) until the restart, and a sharded informer never loses the shard's
    label selector (it would list every replica's objects)."""
    if comparable(new.config.sharding) == comparable(sharding):
        return new
    started = dataclasses.replace(new.config, sharding=sharding)
    return dataclasses.replace(new, sharded=sharded_informers(started))


def config_hash(paths: Iterable[str]) -> str:
    """SHA-256 (hex) of the files' bytes in order (the config file, then its plugin files);
    an unreadable file counts as empty. The ``hash`` label of ``kinrun_config_info``:
    compare with ``sha256sum`` of a one-file config."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as file:
                digest.update(file.read())
        except OSError:
            pass  # unreadable: counts as empty
    return digest.hexdigest()


class ReloadError(KinrunError):
    """A reload that was undone (the old config stays in force): why."""


@dataclass
class _Running:
    """What runs, being assembled by a switch: owner -> handler entries, controllers,
    reconcilers and cron schedules by controller name."""

    handlers: dict[str, list[HandlerEntry]]
    controllers: dict[str, Controller]
    reconcilers: dict[str, Reconciler]
    schedules: dict[str, Scheduler]


class Reloader:
    """Reloads a running Manager's config (module docstring).

    ``manager``: the running Manager; ``load()``: the config again (Config, or raises
    ConfigError with every problem located); ``compile(config)``: the Plan (``kinrun.plan
    .plan``); ``wrap_for(bound)``: the reconcile observer for a Bound (``kinrun.bound.Wrap``
    or None); ``metrics``: a ``kinrun.metrics.Metrics`` or None; ``files()``: the paths whose
    bytes make the config's hash (config file first); ``clock``; ``sync_timeout``: seconds new
    informers get to sync; ``drain_timeout``: seconds the reconciles under way get before a
    swap; ``discovery_interval``: seconds between rediscoveries of CRD kinds (0 = never);
    ``stop``: the run's stop Event (a reload waiting for informers then gives up, undone).
    """

    def __init__(self, manager: Manager, load: Callable[[], Config],
                 compile: Callable[[Config], Plan], *,
                 wrap_for: Callable[[Bound], Wrap | None] = lambda bound: None,
                 metrics: Metrics | None = None,
                 files: Callable[[], list[str]] = lambda: [], clock: Clock | None = None,
                 sync_timeout: float = 120.0, drain_timeout: float = 10.0,
                 discovery_interval: float = 30.0, stop: threading.Event | None = None) -> None:
        self.manager, self._load, self._compile = manager, load, compile
        self._wrap_for, self.metrics, self._files = wrap_for, metrics, files
        self._clock = clock or REAL_CLOCK
        self.sync_timeout, self.drain_timeout = sync_timeout, drain_timeout
        self.discovery_interval = discovery_interval
        self._stop = stop or threading.Event()  # the run stops: a reload under way gives up
        self._lock = threading.Lock()
        self._failed_hash: str | None = None  # content whose errors were logged already
        self._rediscovery_error: str | None = None  # the last one logged
        self.hash = config_hash(files())
        # ``sharding`` as started (restart only): every Plan applied shards as it says
        self._sharding = manager.plan.config.sharding
        self.last_diff: PlanDiff | None = None
        self.reloads = {"success": 0, "failure": 0}
        if metrics is not None:
            metrics.config_loaded(self.hash)
            self._report_waiting()

    def _report_waiting(self) -> None:
        if self.metrics is not None:
            self.metrics.set_waiting(self.manager.waiting_informers(),
                                     self.manager.plan.informers)

    # -- what triggers a reload ----------------------------------------------------------------

    def reload(self, reason: str = "file changed", *, force: bool = False) -> bool:
        """Load, compile and bind the config file again and apply the difference. Returns
        whether the new config is in force (an unchanged file is a success with nothing to
        do). Errors are logged once per file content unless ``force`` (SIGHUP)."""
        with self._lock:
            content = config_hash(self._files())
            if content == self.hash and not force:
                self._back_in_force(content, reason)
                return True
            try:
                config = self._load()
                new_plan = self._compile(config)
                plan = keep_sharding(carry_over_indexers(self.manager.plan, new_plan),
                                     self._sharding)
                bound = plan.bind(self.manager.client, wait_for_kinds=True)
                before = dict(self.manager.waiting_informers())
                change = self.apply(bound)
            except Exception as exc:  # noqa: BLE001 - the old config stays in force
                if self._stop.is_set():  # the stop interrupted it (e.g. waiting for a sync)
                    _log.info("config reload (%s) abandoned: kinrun is stopping (%s)",
                              reason, exc)
                    return False
                self._failed(content, exc, reason, force)
                return False
            for name, why in bound.waiting.items():  # as at start (kinrun.manager)
                if name not in before:
                    _log.warning("informer %s waits: its kind is not served yet (%s); "
                                 "controllers %s start when discovery finds it", name, why,
                                 ", ".join(c for c, ns in change.waiting.items()
                                           if name in ns) or "-")
            self._succeeded(content, change, reason)
            return True

    def rediscover(self) -> bool:
        """Bind the Plan in force again (discovery asked afresh for every CRD group version)
        and apply the difference: informers whose kind is now served start (with their
        controllers), those whose kind went away stop. Returns whether anything changed."""
        with self._lock:
            plan = self.manager.plan
            client = self.manager.client
            invalidate = getattr(getattr(client, "discovery", None), "invalidate", None)
            for informer in plan.informers.values():
                if invalidate is not None and not _builtin(informer.spec.api_version):
                    invalidate(informer.spec.api_version)
            try:
                bound = plan.bind(client, wait_for_kinds=True)
                before = dict(self.manager.waiting_informers())
                if bound.refs == self.manager.refs:  # dicts: same names, same ResourceRefs
                    return False
                change = self.apply(bound)
            except Exception as exc:  # noqa: BLE001 - retried at the next rediscovery
                if str(exc) != self._rediscovery_error:  # once per distinct error
                    _log.warning("rediscovery failed (retried): %s", exc)
                self._rediscovery_error = str(exc)
                return False
            self._rediscovery_error = None
            started = [n for n in before if n in bound.refs]
            stopped = [n for n in bound.waiting if n not in before]
            for name in started:
                _log.info("informer %s: its kind is served now: started (%s)", name,
                          change.summary())
            for name in stopped:
                _log.warning("informer %s: its kind is not served any more: stopped; "
                             "controllers %s wait for it", name,
                             ", ".join(c for c, ns in bound.waiting_controllers().items()
                                       if name in ns) or "-")
            return bool(started or stopped)

    def _failed(self, content: str, exc: Exception, reason: str, force: bool) -> None:
        self.reloads["failure"] += 1
        if self.metrics is not None:
            self.metrics.reload_failed(content)
        if content != self._failed_hash or force:  # one record per error line: the text
            lines = str(exc).splitlines() or [  # log format keeps records on one line
                f"{type(exc).__name__} while reloading {', '.join(map(str, self._files()))}"]
            _log.error("config reload (%s) failed; still running the previous config "
                       "(hash %s): %s", reason, self.hash[:12],
                       lines[0] if len(lines) == 1 else f"{len(lines)} error lines follow")
            for line in lines if len(lines) > 1 else ():
                _log.error("config reload (%s): %s", reason, line)
        self._failed_hash = content

    def _back_in_force(self, content: str, reason: str) -> None:
        """The watched files hold the config in force (touched, or swapped for the same
        bytes): nothing to apply. After a rejected reload (the bad edit reverted, a ConfigMap
        rolled back) that is a successful reload, logged once: the rejected state is cleared
        (``kinrun_config_last_reload_successful`` 1), nothing is loaded or restarted."""
        if self._failed_hash is None:
            return
        self.reloads["success"] += 1
        self._failed_hash = None
        if self.metrics is not None:
            self.metrics.reload_succeeded(content, self._clock.wall())
        _log.info("config reload (%s): back to the config in force (hash %s); nothing to apply",
                  reason, content[:12])

    def _succeeded(self, content: str, change: PlanDiff, reason: str) -> None:
        self.reloads["success"] += 1
        self._failed_hash = None
        self.hash, self.last_diff = content, change
        if self.metrics is not None:
            self.metrics.reload_succeeded(content, self._clock.wall())
        _log.info("config reloaded (%s, hash %s): %s", reason, content[:12], change.summary())

    # -- the loop ------------------------------------------------------------------------------

    def run(self, stop: threading.Event, wake: threading.Event, changed: Callable[[], bool],
            poll_interval: float, hup: Callable[[], bool] = lambda: False) -> None:
        """Until ``stop``: every ``poll_interval`` s (0: only when ``wake`` is set) ask
        ``changed()`` (the file watcher) and reload when it says so; ``hup()`` True (SIGHUP,
        which also sets ``wake``) reloads even an unchanged file; kinds not served yet are
        looked for again with a backoff from DISCOVERY_BACKOFF_START s up to
        ``discovery_interval``, served CRD kinds every ``discovery_interval`` s."""
        backoff = DISCOVERY_BACKOFF_START
        next_discovery = self._clock.now() + backoff
        while not stop.is_set():
            now = self._clock.now()
            timeouts = [t for t in (poll_interval or None,
                                    next_discovery - now if self.discovery_interval else None)
                        if t is not None]
            self._clock.wait(wake, max(0.0, min(timeouts)) if timeouts else None)
            wake.clear()
            if stop.is_set():
                return
            try:
                if hup():
                    self.reload("SIGHUP", force=True)
                elif changed():
                    self.reload()
                if self.discovery_interval and self._clock.now() >= next_discovery:
                    if self.rediscover():
                        backoff = DISCOVERY_BACKOFF_START
                    waits = bool(self.manager.waiting_informers())
                    backoff = min(backoff * 2, self.discovery_interval) if waits \
                        else self.discovery_interval
                    next_discovery = self._clock.now() + backoff
            except Exception:  # noqa: BLE001 - the loop must survive anything
                _log.exception("reload loop: unexpected error")

    # -- applying ------------------------------------------------------------------------------

    def apply(self, bound: Bound) -> PlanDiff:
        """Change the running Manager to ``bound`` (module docstring, "How it applies").
        Returns the PlanDiff applied. Raises ReloadError, ConfigError (an index defined two
        ways on one shared informer) or IndexFuncError, with nothing changed."""
        old = self.manager.wired
        change = diff(old.plan, bound.plan, old_refs=old.refs, new_refs=bound.refs,
                      running=set(old.controllers), waiting=bound.waiting_controllers())
        for key in change.restart_only:
            _log.warning("config reload: %s changed; it takes effect at the next restart", key)
        undo: list[Callable[[], None]] = []
        try:
            new = self._prepare(old, bound, change, undo)
        except BaseException:
            for step in reversed(undo):
                try:
                    step()
                except Exception:  # noqa: BLE001 - undo as much as possible
                    _log.exception("config reload: undoing a step failed")
            raise
        self._switch(old, new, change, bound)
        return change

    def _prepare(self, old: Wired, bound: Bound, change: PlanDiff,
                 undo: list[Callable[[], None]]) -> Wired:
        """Everything up to the barrier, each step's undo appended to ``undo``: indexes
        re-set, the new and swapped controllers rewired (``Bound.rewire``), new informers
        synced, the controllers to swap paused. Returns the rewired pipeline."""
        manager, factory = self.manager, self.manager.factory
        keys_before = set(factory.informers())
        self._reindex(old, bound.plan, undo)
        swapped = set(change.controllers_swapped)
        rebuilt = {*change.informers_added, *change.informers_changed, *old.waiting}
        hooks = set(bound.refs) if change.plugins_changed else set(bound.refs) & rebuilt
        rewire = Rewire(frozenset(swapped | set(change.controllers_added)),
                        frozenset(swapped), frozenset(hooks))
        undo.append(lambda: factory.remove(set(factory.informers()) - keys_before))
        if manager.metrics is not None:
            undo.extend(lambda n=n: manager.metrics.forget_informer(n)
                        for n in change.informers_added)
        new = bound.rewire(old, rewire, wrap=self._wrap_for(bound))
        self._wait_synced(new, change)
        paused: list[Controller] = []
        undo.append(lambda: [c.resume() for c in paused])
        for name in change.controllers_swapped:
            controller = old.controllers[name]
            if not controller.pause(self.drain_timeout):
                raise ReloadError(f"controller {name}: {controller.running_keys()} "
                                  f"reconcile(s) still running after "
                                  f"{self.drain_timeout:g}s; not swapped")
            paused.append(controller)
        return new

    def _reindex(self, old: Wired, new_plan: Plan, undo: list[Callable[[], None]]) -> None:
        """Re-set the indexes whose definition changed on the running informers of the same
        name (built from their caches; the undo puts the old functions back)."""
        for name, informer in new_plan.informers.items():
            running = old.informers.get(name)
            previous = old.plan.informers.get(name)
            if running is None or previous is None:
                continue
            changed = {n: f for n, f in informer.indexers.items()
                       if n in previous.indexers and previous.indexers[n] is not f}
            if not changed:
                continue
            for shared in running.shared_informers():
                before = {n: shared.indexer.get_indexers()[n] for n in changed
                          if n in shared.indexer.get_indexers()}
                shared.update_indexers(changed)
                undo.append(lambda s=shared, b=before: s.update_indexers(b))

    def _wait_synced(self, new: Wired, change: PlanDiff) -> None:
        if not self.manager.caches_started:
            return  # started later with the factory
        deadline = self._clock.now() + self.sync_timeout
        for name, informer in new.informers.items():
            while not informer.wait_for_sync(0.1):
                if self._stop.is_set():
                    raise ReloadError("stopping")
                if self._clock.now() > deadline:
                    raise ReloadError(f"informer {name} not synced within "
                                      f"{self.sync_timeout:g}s")

    def _switch(self, old: Wired, new: Wired, change: PlanDiff, bound: Bound) -> None:
        """Past the point of no return: swap, add, retire, replace hooks, stop unused."""
        manager = self.manager
        manager.hand_over_events(bound.plan,
                                 (*change.controllers_swapped, *change.controllers_unchanged))
        state = _Running(dict(old.handlers), dict(old.controllers), dict(old.reconcilers),
                         dict(old.schedules))
        for name in (*change.controllers_swapped, *change.controllers_removed):
            schedule = state.schedules.pop(name, None)
            if schedule is not None:
                schedule.stop()
        for name in change.controllers_swapped:
            self._swap(name, old, new, bound, state, change)
        for name in change.controllers_added:
            self._add(name, new, state)
        for name in change.controllers_removed:
            self._retire(name, old, state)
        self._replace_event_hooks(new, change, state)
        self._refresh_unchanged(new, change, state)
        self._drop_indexes(new)
        self._stop_unused(old, new)
        if change.plugins_changed:
            plugins.call_shutdown(old.plan.plugins, _log)
            plugins.call_startup(bound.plan.plugins, config=bound.config, client=bound.client)
        for name in (*change.controllers_swapped, *change.controllers_added):
            schedule = new.schedules.get(name)
            if schedule is not None:
                state.schedules[name] = schedule
                if manager.workers_started:
                    schedule.start()
        manager.adopt(dataclasses.replace(
            new, controllers=state.controllers, reconcilers=state.reconcilers,
            handlers=state.handlers, schedules=state.schedules))
        self._report_waiting()

    def _swap(self, name: str, old: Wired, new: Wired, bound: Bound, state: _Running,
              change: PlanDiff) -> None:
        """The paused controller ``name`` takes the new definition (``Manager.swap``): its
        pending deletions carried over when its primary informer is the same (else those were
        other objects) or only relists for the fields read (their final states keep the old
        fields: the objects are gone), its last reconciled versions (``keepOld``) only when
        the informer is kept (a relisted one's were decoded with other fields), the new rate
        limiter when its settings changed."""
        before, after = old.plan.controller(name), bound.plan.controller(name)
        primary = after.spec.primary
        same = primary == before.spec.primary
        kept = same and primary in change.informers_kept
        self.manager.swap(name, new, keep_pending=kept or (same and primary in change.relisted),
                          keep_last=kept, new_limiter=comparable(before.rate_limiter)
                          != comparable(after.rate_limiter))
        state.handlers[name] = new.handlers.get(name, [])
        state.reconcilers[name] = new.reconcilers[name]

    def _add(self, name: str, new: Wired, state: _Running) -> None:
        for entry in new.handlers.get(name, []):
            entry.register()
        controller = new.controllers[name]
        state.controllers[name], state.reconcilers[name] = controller, new.reconcilers[name]
        state.handlers[name] = new.handlers.get(name, [])
        controller.fence = self.manager.fence  # the Lease's fence (Manager.set_fence)
        if self.manager.workers_started:
            controller.start()
            _log.info("controller %s started with %d worker(s)", name, controller.workers)

    def _retire(self, name: str, old: Wired, state: _Running) -> None:
        if not old.controllers[name].retire(self.drain_timeout):
            _log.warning("controller %s: a reconcile did not finish within %gs of its removal",
                         name, self.drain_timeout)
        for entry in old.handlers.get(name, []):
            entry.unregister()
        del state.controllers[name], state.reconcilers[name]
        state.handlers.pop(name, None)

    @staticmethod
    def _replace_event_hooks(new: Wired, change: PlanDiff, state: _Running) -> None:
        """Plugins' event hooks: replaced where rebuilt, dropped where their informer went."""
        for owner in [o for o in state.handlers if o.startswith("informer:")]:
            name = owner.split(":", 1)[1]
            if owner in new.handlers or name not in new.informers or change.plugins_changed:
                for entry in state.handlers.pop(owner):
                    entry.unregister()
        for owner, entries in new.handlers.items():
            if owner.startswith("informer:"):
                for entry in entries:
                    entry.register()
                state.handlers[owner] = entries

    @staticmethod
    def _refresh_unchanged(new: Wired, change: PlanDiff, state: _Running) -> None:
        """Unchanged controllers' templates see the informers of the new config (entries
        added before removed ones go, each a single dict operation)."""
        for name in change.controllers_unchanged:
            reconciler = state.reconcilers[name]
            views: tuple[tuple[dict[str, Any], Callable[[Informer], Any]], ...] = (
                (reconciler.listers, lambda inf: inf.lister),
                (reconciler.indexers, lambda inf: inf.index_reader()))
            for table, view in views:
                for informer_name, informer in new.informers.items():
                    table[informer_name] = view(informer)
                for gone in [n for n in table if n not in new.informers]:
                    table.pop(gone, None)

    def _stop_unused(self, old: Wired, new: Wired) -> None:
        """Stop the informers no informer name of the new config uses."""
        manager = self.manager
        used = {id(s) for inf in new.informers.values() for s in inf.shared_informers()}
        manager.factory.remove([k for k, inf in manager.factory.informers().items()
                                if id(inf) not in used])
        if manager.metrics is not None:
            for name in old.informers:
                if name not in new.informers:
                    manager.metrics.forget_informer(name)

    @staticmethod
    def _drop_indexes(new: Wired) -> None:
        wanted: dict[int, set[str]] = {}
        objects: dict[int, Any] = {}
        for name, informer in new.informers.items():
            for shared in informer.shared_informers():
                objects[id(shared)] = shared
                wanted.setdefault(id(shared), {"namespace"}).update(
                    new.plan.informers[name].indexers)
        for ident, shared in objects.items():
            extra = [n for n in shared.indexer.get_indexers() if n not in wanted[ident]]
            if extra:
                shared.update_indexers({}, extra)


def _builtin(api_version: str) -> bool:
    from kinrun.kube.builtin_kinds import builtin_group

    return builtin_group(api_version)
