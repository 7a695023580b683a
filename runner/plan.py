"""The compiled plan: everything about a config that can be checked without a cluster.

The spine of every command (``../shared/DESIGN.md``, "The spine")::

    load(file) -> Config            YAML with marks, schema defaults, the frozen model
    plan(config, plugins) -> Plan   templates, actions, index functions, key mappers,
                                    predicates, hooks, rate limiters, resync, budgets,
                                    leader election: compiled and checked once
    Plan.bind(client) -> Bound      discovery (GVK -> resource and scope), informers,
                                    controllers (``kinrun.bound``)
    Bound.start(stop)               informers, cache sync, workers (``kinrun.manager``)

``kinrun validate`` is load + plan, so it refuses everything the run would refuse before it
talks to a cluster; ``render`` and ``test`` run a Plan on the embedded API server; ``rbac`` and
``manifests`` read it; hot reload compares two Plans. A bad config fails in :func:`plan` with a
ConfigError at file:line:column of the offending key.

Purely compiling: no I/O here beyond importing the config's plugins (when :func:`plan` is not
given a plugin manager). A Plan is immutable after construction and thread-safe (compiled
templates and programs are).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Set as AbstractSet
from dataclasses import dataclass
import difflib
import functools
import itertools
from typing import Any

from jinja2 import nodes
from pluggy import PluginManager

from kinrun import plugin_manager as plugins
from kinrun.actions import ActionProgram, compile_actions, plugin_template_filters
from kinrun.actions.children import ChildrenAction, ChildrenTeardown
from kinrun.actions.finalizer import FinalizerCondition, finalizer_name_problem
from kinrun.actions.program import RESERVED_VAR_NAMES, CompiledAction
from kinrun.actions.results import EXPRESSION_KEYS
from kinrun.actions.status import StatusAction
from kinrun.config.children import children_actions
from kinrun.actions.kinds import (APPLIED_FIELDS, literal_manifest, missing_fields,
                                  names_reconciled_object)
from kinrun.bound import Bound
from kinrun.cache.index import NAMESPACE_INDEX
from kinrun.cache.transform import (STRIP_MANAGED_FIELDS, FieldPruner, parse_path,
                                    strip_managed_fields)
from kinrun.config import metadata_only
from kinrun.config.model import (Config, ControllerSpec, InformerSpec, Location, WatchSpec,
                                 thaw)
from kinrun.clock import Clock, clock_of
from kinrun.config.options import RunOptions
from kinrun.errors import ConfigError
from kinrun.kept_paths import (InformerReads, declared_path, informer_reads, kept_description,
                                projection_for)
from kinrun.cache_reads import bound_names
from kinrun.template_reads import var_bindings
from kinrun.kube import Client
from kinrun.kube.builtin_kinds import builtin_scope, unserved_builtin
from kinrun.kube.projection import ITEMS, shown
from kinrun.kube.event_recorder import EventRecorder
from kinrun.plugin_manager import ReconcileHook
from kinrun.predicates import PREDICATES
from kinrun.reconcile import Matches
from kinrun.schedule import CronSchedule, ScheduleError
from kinrun.selectors import parse_field_selector, parse_label_selector
from kinrun.sharding.scope import sharded_informers
from kinrun.spine.compiled import (CompiledPlan, ControllerPlan, IndexFunc, InformerPlan,
                                   WatchPlan, owner_mapping_problem)
from kinrun.spine.settings import run_settings
from kinrun.templating import (LookupCall, TemplateEngine, as_location, compile_index_func,
                               compile_key_mapper, lookup_calls)

__all__ = ["ControllerPlan", "IndexFunc", "InformerPlan", "Plan", "WatchPlan",
           "owner_mapping_problem", "plan"]


@dataclass(frozen=True)
class Plan(CompiledPlan):
    """A compiled config (``kinrun.spine.compiled.CompiledPlan``: its fields) and the spine's
    next step, :meth:`bind`. Build with :func:`plan`."""

    def bind(self, client: Client, *, wait_for_kinds: bool = False) -> Bound:
        """Resolve every informer's resource through ``client``'s discovery and build the
        informers, controllers and reconcilers (``kinrun.bound.Bound``). Raises
        UnknownKindError (file:line of the informer) or ApiError. ``wait_for_kinds``: a kind
        of a non-built-in group that is not served yet waits instead (``Bound.waiting``)."""
        return Bound(self, client, wait_for_kinds=wait_for_kinds)

def plan(config: Config, plugin_manager: PluginManager | None = None, *,
         clock: Clock | None = None, options: RunOptions | None = None,
         render_clock: Clock | None = None, template_seed: int | None = None) -> Plan:
    """Compile ``config``; ``plugin_manager`` from ``kinrun.plugin_manager.config_plugins``
    (None: the config's ``plugins:`` and the ``kinrun`` entry points are loaded here).

    Raises ConfigError (file:line:column: key: message) for anything the run would refuse:
    template syntax, action values, a plugin index no plugin supplies, a ``mapTo: {index}`` the
    primary lacks, ``reconcile.hooks`` that no plugin implements, an unknown predicate, a
    ``mapTo: owner`` that can only produce keys the primary cache never holds (for built-in
    kinds; CRDs are checked at bind), plugin import errors, and ``reconcile.vars`` that do not
    compile (each compiled into both action programs, ``ActionProgram.vars``). ``clock``: the run's
    Clock: its ``wall()`` is the time templates and actions stamp (Event names and timestamps,
    conditions) and the templates' ``now()``, its ``now()`` times Event correlation and template
    budgets (``render_clock`` given: that one does); default ``REAL_CLOCK`` (``kinrun test``
    and ``render`` fix it, and time budgets on ``REAL_CLOCK``, as a run does).
    ``template_seed``: the ``random`` filter's (``TemplateEngine``; a run's None: unseeded).
    ``options``: how the main job was asked to run (``Plan.settings``: the effective settings;
    None: as the file says)."""
    pm = plugin_manager if plugin_manager is not None else plugins.config_plugins(config)
    run_clock = clock_of(clock, where="plan")
    engine = TemplateEngine(config.templates, extra_filters=plugin_template_filters(pm),
                            base_dir=config.base_dir, clock=run_clock, budget_clock=render_clock,
                            seed=template_seed)
    index_funcs: dict[str, IndexFunc] = {}  # one function per expression: equal indexes share
    found = informer_reads(config, engine, pm)
    informers = {name: _informer(spec, pm, engine, index_funcs, found[name])
                 for name, spec in config.informers.items()}
    controllers = tuple(_controller(config, spec, informers, pm, engine, run_clock)
                        for spec in config.controllers)
    _check_against_schemas(config, engine)
    return Plan(config, pm, engine, informers, controllers, run_settings(config, options),
                sharded_informers(config), _admission(config, engine))


def _admission(config: Config, engine: TemplateEngine) -> Any:
    """The config's admission webhooks compiled (``kinrun.admission.compile_admission``), the
    sharding webhooks included; None when the config serves none."""
    if config.admission is None and not (config.sharding and config.sharding.admission):
        return None
    from kinrun.admission import compile_admission  # only for configs that have webhooks
    from kinrun.sharding.admission import builtin_webhooks, effective_admission
    spec = effective_admission(config)
    return compile_admission(spec, engine, builtin_webhooks(config, spec))


# -- informers --------------------------------------------------------------------------------


def _informer(spec: InformerSpec, pm: PluginManager, engine: TemplateEngine,
              index_funcs: dict[str, IndexFunc] | None = None,
              found: InformerReads | None = None) -> InformerPlan:
    """One informer compiled; ``index_funcs``: expression -> its compiled index function,
    shared across the plan, so two informers of the same objects with the same index
    expression (two controllers' child informers) can share one informer; ``found``: what the
    config reads of its objects (``kinrun.kept_paths``; None: whole objects)."""
    unserved = unserved_builtin(spec.api_version, spec.kind, spec.resource)
    if unserved is not None:  # apps/v1 Pod: the API server would refuse it at start
        raise spec.location.error(f"informer {spec.name}: {unserved}")
    from_plugins = plugins.collect_index_funcs(pm, spec.name)
    indexers: dict[str, IndexFunc] = {}
    for name, ix in spec.indexers.items():
        if ix.plugin:
            if name not in from_plugins:
                raise ix.location.error(
                    f"no plugin supplies index {name!r} (kinrun_index_funcs)")
            indexers[name] = from_plugins[name]
        else:
            cache = index_funcs if index_funcs is not None else {}
            if ix.expression not in cache:
                cache[ix.expression or ""] = compile_index_func(ix.expression or "", ix.location,
                                                                engine=engine)
            indexers[name] = cache[ix.expression or ""]
    for name, func in from_plugins.items():
        indexers.setdefault(name, func)
    matches = selector_matcher(spec)  # refuses a malformed selector first
    if spec.metadata_only:
        check_metadata_only(spec)
    transform, transform_id = informer_transform(spec)
    projection = projection_for(spec, found) if found is not None else None
    return InformerPlan(spec, indexers, matches, transform, transform_id, projection, found)


def informer_transform(spec: InformerSpec) -> tuple[Callable[[dict], dict] | None, str]:
    """The transform an informer applies before caching and its id: ``strip_managed_fields``
    ("stripManagedFields"), a ``FieldPruner`` for ``transform.drop`` (its ``id``), or (None,
    ""). Raises ConfigError at the informer for a path ``parse_path`` refuses."""
    strip, drop = spec.transform.strip_managed_fields, spec.transform.drop
    if not drop:
        return (strip_managed_fields, STRIP_MANAGED_FIELDS) if strip else (None, "")
    paths = []
    for i, text in enumerate(drop):
        try:
            paths.append(parse_path(text))
        except ValueError as exc:
            raise spec.location.error(f"transform.drop[{i}]: {exc}") from None
    pruner = FieldPruner(paths, strip_managed_fields=strip)
    return pruner, pruner.id


def _check_metadata_only_reads(spec: ControllerSpec,
                               informers: Mapping[str, InformerPlan]) -> None:
    """Refuse templates reading fields a metadata-only informer's objects lack
    (``kinrun.config.metadata_only``): the actions, vars and ``when`` of a controller whose
    primary is metadata-only, and a ``mapTo: {template}`` over a metadata-only secondary.
    Raises ConfigError at the action, var or watch."""
    def refuse(location: Location, reads: list[str], what: str, informer: str) -> None:
        if reads:
            raise location.error(
                f"{what} reads {', '.join(reads)}, but informer {informer!r} is metadataOnly: "
                f"its objects hold only apiVersion, kind and metadata")
    primary = spec.primary
    if informers[primary].spec.metadata_only:
        rec = spec.reconcile
        for action in rec.every_action:
            reads = sorted({r for text in metadata_only.strings_in(action.spec)
                            for r in metadata_only.non_metadata_reads(text)}
                           | set(metadata_only.non_metadata_reads(action.when or "",
                                                                  expression=True)))
            refuse(action.location, reads, f"action {action.name}", primary)
        for var in rec.vars:
            refuse(var.location, metadata_only.non_metadata_reads(var.expression, expression=True),
                   f"var {var.name}", primary)
    for watch in spec.watches:
        if watch.template and informers[watch.informer].spec.metadata_only:
            refuse(watch.location, metadata_only.non_metadata_reads(watch.template, ("obj",)),
                   "the mapTo template", watch.informer)


def check_metadata_only(spec: InformerSpec) -> None:
    """Refuse what cannot work on a metadata-only informer: an index expression reading fields
    other than apiVersion/kind/metadata, and a field selector on fields other than metadata's
    (the server filters on it, but kinrun's own selector test, which confirms departures,
    would read fields its objects lack). Raises ConfigError at the indexer or informer."""
    for name, ix in spec.indexers.items():
        reads = metadata_only.non_metadata_reads(ix.expression or "", ("obj",), expression=True)
        if reads:
            raise ix.location.error(
                f"index {name!r} reads {', '.join(reads)}, but the informer is metadataOnly: its "
                f"objects hold only apiVersion, kind and metadata")
    for key, _, _ in parse_field_selector(spec.field_selector).terms:
        if not key.startswith("metadata."):
            raise spec.location.error(
                f"metadataOnly: fieldSelector {key!r} is not a metadata field; the cached "
                f"objects hold only apiVersion, kind and metadata")


def selector_matcher(spec: InformerSpec) -> Matches | None:
    """Whether an object matches ``spec``'s label and field selectors (as the API server's
    ``labels.Selector`` and ``fields.Selector``); None when it has neither. Field selector
    keys are read as dotted paths of the object (``spec.nodeName``; absent reads as "")."""
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


# -- controllers ------------------------------------------------------------------------------


def _controller(config: Config, spec: ControllerSpec, informers: Mapping[str, InformerPlan],
                pm: PluginManager, engine: TemplateEngine, clock: Clock) -> ControllerPlan:
    rec = spec.reconcile
    for name in spec.predicates:
        if name not in PREDICATES:
            raise spec.location.error(f"unknown predicate {name!r}")
    try:
        projected = frozenset(n for n, i in informers.items() if i.projection is not None)
        hooks = plugins.reconcile_caller(pm, rec.hook_selection, projected, spec.primary)
    except ConfigError as exc:
        loc = spec.location
        raise ConfigError(exc.message, file=loc.file, line=loc.line, column=loc.column,
                          path=f"{loc.path}.reconcile.hooks") from None
    primary = informers[spec.primary]
    watches = tuple(_watch(config, spec, w, primary, informers[w.informer], engine)
                    for w in spec.watches)
    resync = spec.resync_period if spec.resync_period is not None else primary.resync_period
    events = EventRecorder(spec.events.component_of(spec.name), spec.events.host, clock=clock)
    _check_finalizer(spec, hooks)
    _check_metadata_only_reads(spec, informers)
    _check_lookups(spec, informers)
    _check_owner_references(spec, primary)
    _check_status_target(config, spec, primary.spec)
    _check_strategic_patches(config, spec, primary.spec)
    _check_written_kinds(spec)

    def program(actions: tuple, field: str) -> ActionProgram | None:
        return _fit_status(_program(spec, actions, field, pm, engine, clock, recorder=events),
                           config, primary.spec)
    actions = program(rec.actions, "actions")
    return ControllerPlan(
        spec, actions, program(rec.on_delete, "onDelete"), hooks, rec.keeps_old, resync,
        watches, _with_teardown(spec, actions, program(rec.finalize, "finalize"), engine),
        spec.finalizer, schedule=_schedule(spec), recorder=events,
        on_error=program(_on_error_actions(spec), "onError"),
        finalizer_when=_finalizer_when(spec, engine))


def _fit_status(program: ActionProgram | None, config: Config, informer: InformerSpec
                ) -> ActionProgram | None:
    """``program`` with its ``status`` actions fitted to the reconciled kind's schema
    (``StatusAction.fit``: no ``observedGeneration`` where the kind cannot keep one)."""
    statuses = [a.impl for a in program.actions if isinstance(a.impl, StatusAction)] \
        if program is not None else []
    if statuses:
        schema = _primary_schema(config, informer)
        for status in statuses:
            status.fit(schema)
    return program


def _check_against_schemas(config: Config, engine: TemplateEngine) -> None:
    """The offline checks of what the config writes and reads: ``apply`` manifests (their
    fields and list-map keys), template reads against the kinds' schemas, names no template
    has, literal cron expressions of ``cron_next``/``cron_prev``. Raises ConfigErrors with
    the problems of all four (every undefined name and bad cron call; the first problem of
    each of the others), so one run of ``validate`` lists them."""
    _all_errors([lambda: _check_apply_keys(config), lambda: _check_template_reads(config, engine),
                 lambda: _check_template_names(config, engine),
                 lambda: _check_cron_calls(config, engine)])


def _all_errors(checks: Iterable[Callable[[], None]]) -> None:
    """Run every check; raise ConfigErrors of all they raised (ConfigError or ConfigErrors),
    in the file's order, or nothing."""
    from kinrun.config import ConfigErrors

    errors: list[ConfigError] = []
    for check in checks:
        try:
            check()
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(sorted(errors, key=lambda e: (e.line or 0, e.column or 0)))


def _check_template_reads(config: Config, engine: TemplateEngine) -> None:
    """Every read of ``obj``/``old`` in a controller's templates, vars, ``when`` and
    ``forEach`` checked against its primary kind's schema (``kinrun.template_reads``):
    ConfigError at the action (or var) for a field the kind does not have."""
    if not _reads_anything(config):
        return  # no template, no declared reads: no schema needs loading
    from kinrun.template_reads import check_template
    crds = _config_crds(config)  # read once for every informer
    schemas = {name: _primary_schema(config, inf, crds) for name, inf in config.informers.items()}
    lookups = {f"get:{name}": schema for name, schema in schemas.items()}
    for name, informer in config.informers.items():  # indexers read the informer's objects
        for ix in informer.indexers.values():
            _check_reads(engine, ix.expression, True, ix.location, {"obj": schemas[name]}, name)
    for spec in config.controllers:
        for watch in spec.watches:  # a mapTo template reads the secondary's objects
            _check_reads(engine, watch.template, True, watch.location,
                         {**lookups, "obj": schemas[watch.informer]}, watch.informer)
        roots = {**lookups, "obj": schemas[spec.primary], "old": schemas[spec.primary]}
        for declared in spec.reconcile.reads or ():  # what the hooks say they read
            steps = declared_path(declared)  # subscripts: a name such as nodeName-x is a field
            _check_reads(engine, "{{ obj" + "".join("[0]" if step == ITEMS else f"[{step!r}]"
                                                    for step in steps) + " }}", False,
                         spec.reconcile.reads_location, roots, spec.primary, declared=True)
        given = var_bindings(spec, engine)
        for source, expression, loc, hidden in _template_sources(spec):
            tree = engine.syntax_tree(source, expression=expression)
            seen = {**given, **dict.fromkeys(hidden)} if hidden else given  # None: not followed
            for read, why in check_template(tree, roots, seen) if tree is not None else ():
                if read.root == "results":
                    raise loc.error(f"{why} (template line {read.line})")
                shown = ".".join(read.path).replace(".[]", "[]")
                root = read.root.replace("get:", "get('") + ("', ...)" if
                                                             read.root.startswith("get:") else "")
                informer = read.root[4:] if read.root.startswith("get:") else spec.primary
                raise loc.error(f"{root}.{shown}: {why} (template line {read.line}; checked "
                                f"against the schema of the kind of informer {informer})")
        _check_children_reads(config, spec, engine, schemas, roots, given)
    if config.admission is not None:
        _check_admission_reads(config, engine, lookups)


def _check_admission_reads(config: Config, engine: TemplateEngine,
                           lookups: Mapping[str, Any]) -> None:
    """Every admission rule's reads of ``object``/``oldObject`` checked against the schemas of
    the kinds its webhook's ``rules`` name (refused only when every one of them lacks the
    field: a webhook may serve several kinds), and its lookups against their informers'
    kinds. Kinds that cannot be named offline (``*``, an unknown plural) are not checked
    (``validate --explain`` says which are). ConfigError at the rule."""
    from kinrun.template_reads import check_template

    names = {"object": ("object", ()), "oldObject": ("object", ())}
    for webhook in config.admission.webhooks if config.admission else ():
        kinds = _webhook_schemas(config, webhook.rules)
        for rule in (*webhook.validate, *webhook.mutate):
            for source, expression in ((rule.when, True), (rule.deny, False), (rule.field, False),
                                       (rule.warn, False), (rule.merge_patch, False),
                                       (rule.json_patch, False)):
                tree = engine.syntax_tree(source, expression=expression) if source else None
                if tree is None:
                    continue
                per_kind = [check_template(tree, {**lookups, "object": schema}, names)
                            for schema in kinds.values()] or [
                    check_template(tree, dict(lookups), names)]
                refused = [found for found in per_kind if found]
                if len(refused) == len(per_kind):
                    read, why = refused[0][0]
                    shown = ".".join(read.path).replace(".[]", "[]")
                    root = "object" if read.root == "object" else read.root
                    against = ", ".join(kinds) if read.root == "object" else read.root[4:]
                    raise rule.location.error(f"{root}.{shown}: {why} (template line "
                                              f"{read.line}; checked against {against})")


def _webhook_schemas(config: Config, rules: Any) -> dict[str, Any]:
    """Kind name -> schema of each kind a webhook's ``rules`` name by group, version and
    plural (built-in kinds, or the ``crds:`` files, read once); kinds without a schema, and
    ``*`` or subresource rules, left out."""
    from kinrun.kube.builtin_kinds import builtin_kind

    crds = _config_crds(config)
    out: dict[str, Any] = {}
    for rule in rules or ():
        rule = thaw(rule) if isinstance(rule, Mapping) else {}
        for group, version, resource in itertools.product(
                rule.get("apiGroups") or (), rule.get("apiVersions") or (),
                rule.get("resources") or ()):
            if "*" in (group, version) or "*" in resource or "/" in resource:
                continue
            api_version = f"{group}/{version}" if group else version
            found = crds.lookup(api_version, resource)
            kind = builtin_kind(api_version, resource) or (found.kind if found else None)
            schema = _primary_schema(config, InformerSpec(name=kind, api_version=api_version,
                                                          kind=kind), crds) if kind else None
            if schema is not None:
                out[kind] = schema
    return out


def _check_children_reads(config: Config, spec: ControllerSpec, engine: TemplateEngine,
                          schemas: Mapping[str, Any], roots: Mapping[str, Any],
                          given: Mapping[str, Any]) -> None:
    """A ``children`` action's reads: ``children.NAME.path`` in every template of the
    controller, and ``child.path`` in NAME's ``readyWhen``, checked against the schema of
    NAME's kind; ``obj`` in ``readyWhen``/``includeWhen`` against the primary's. ConfigError
    at the template's place."""
    from kinrun.config.children import child_informer_name, children_actions, declared_children
    from kinrun.template_reads import check_template, problems, reads

    actions = children_actions(spec)
    if not actions:
        return
    decls = {d.name: d for a in actions for d in declared_children(
        thaw(a.spec).get("resources") or [], a.field_locations, a.location)}
    kinds = {n: schemas.get(child_informer_name(spec.name, d.api_version, d.kind))
             for n, d in decls.items()}
    for source, expression, loc, names in _children_sources(spec, decls, given):
        tree = engine.syntax_tree(source, expression=expression)
        found = [(r, why) for r, why in check_template(tree, roots, names)] if tree else []
        for read in reads(tree, names) if tree is not None else ():
            schema = kinds.get(read.path[0]) if read.root == "children" and read.path else None
            why = problems(schema, read.path[1:]) if schema is not None else None
            if why is not None:
                found.append((read, why))
        own = names.get("child", ("", ("",)))[1][0]  # readyWhen's child is children.<own>
        for read, why in found:
            shown = f"{read.root}.{'.'.join(read.path)}".replace(".[]", "[]")
            if read.root == "children" and own and read.path[0] == own:
                shown = "child." + ".".join(read.path[1:]).replace(".[]", "[]")
            what = (decls[read.path[0]].kind if read.root == "children"
                    else f"informer {spec.primary}'s kind")
            raise _error_at(loc, f"{shown}: {why} (template line {read.line}; "
                                 f"checked against the schema of {what})")


def _children_sources(spec: ControllerSpec, decls: Mapping[str, Any], given: Mapping[str, Any]
                      ) -> list[tuple[str, bool, Any, dict[str, Any]]]:
    """(source, is an expression, location, names bound) of every template that may read
    ``children`` (any of the controller's) and of each child's ``readyWhen``/``includeWhen``
    (where ``child`` stands for ``children.NAME``)."""
    bound = {**given, "children": ("children", ())}
    sources = [(s, e, loc, {**bound, **dict.fromkeys(hidden.difference(GRAPH_NAMES))})
               for s, e, loc, hidden in _template_sources(spec) if "children" in s]
    for name, decl in decls.items():
        for key, text in (("readyWhen", decl.ready_when), ("includeWhen", decl.include_when)):
            if text:
                sources.append((text, True, decl.location.child(f".{key}"),
                                {**bound, "child": ("children", (name,))}))
    return sources


def _error_at(loc: Any, message: str) -> ConfigError:
    """A ConfigError at ``loc``: a config Location or a template SourceLocation."""
    return loc.error(message) if hasattr(loc, "error") else loc.config_error(message)


def _reads_anything(config: Config) -> bool:
    """Whether any template or declared read of ``config`` reads an object (cheap: it spares
    a config of hooks alone the schemas' loading)."""
    return any(ix.expression for inf in config.informers.values()
               for ix in inf.indexers.values()) or any(
        spec.watches or spec.reconcile.reads or spec.reconcile.vars or spec.reconcile.actions
        or spec.reconcile.on_delete or spec.reconcile.finalize or spec.reconcile.on_error
        or spec.finalizer_when for spec in config.controllers)


def _check_reads(engine: TemplateEngine, source: str | None, expression: bool, loc: Location,
                 roots: Mapping[str, Any], informer: str, *, declared: bool = False) -> None:
    """One template's reads checked (see :func:`_check_template_reads`); ``declared``: the
    source stands for a hook's ``reads:`` entry (no template line to name)."""
    from kinrun.template_reads import check_template

    tree = engine.syntax_tree(source, expression=expression) if source else None
    for read, why in check_template(tree, roots) if tree is not None else ():
        shown = ".".join(read.path).replace(".[]", "[]")
        line = "" if declared else f"template line {read.line}; "
        raise loc.error(f"{read.root}.{shown}: {why} ({line}checked against the schema of the "
                        f"kind of informer {informer})")


def read_report(compiled: CompiledPlan) -> list[str]:
    """``validate --explain``: per informer, the paths the config reads of its objects
    (``kinrun.kept_paths``: templates, hooks' ``reads:``, indexes, field selectors), whether
    they were checked against a schema (or why not), why objects are read whole, and what its
    cache keeps (the projected fields and an estimate of bytes per object, or whole
    objects)."""
    config = compiled.config
    lines = ["reads followed: chains from obj, old, get('INFORMER', key) and the loop variables "
             "and vars bound to them; an object used whole (passed to a filter or function, "
             "looped over, list()/by_index() items) is listed as a whole read"]
    for name, informer in compiled.informers.items():
        found = informer.reads or InformerReads()
        paths = sorted(shown(p) for p in found.paths)
        checked = "checked against its kind's schema" if _primary_schema(config, informer.spec) \
            is not None else "not checked: no schema for its kind (a CRD without crds:?)"
        spec = informer.spec
        lines.append(f"informer {name} ({spec.api_version} {spec.kind or spec.resource}): "
                     f"{len(paths)} path(s) read, {checked}")
        lines += [f"  {p}" for p in paths]
        lines += [f"  (whole objects: {why})" for why in found.whole]
        lines.append(f"  cache keeps: {kept_description(informer)}")
    return lines


def _config_crds(config: Config) -> Any:
    """The config's ``crds:`` as a CrdSet (empty when unreadable: that is validate's own
    error, ``kinrun.rbac.config_crds``)."""
    from kinrun.crds import CrdSet

    try:
        return CrdSet.load(config.crds, config.base_dir)
    except ConfigError:
        return CrdSet()


def _primary_schema(config: Config, informer: InformerSpec, crds: Any = None) -> Any:
    """The schema of an informer's kind: a built-in kind's, a ``crds:`` file's, or None.
    ``crds``: the config's CrdSet when the caller read it already (else read here)."""
    from kinrun.kube.builtin_kinds import builtin_kind
    from kinrun.openapi import builtin_schemas, crd_schema

    kind = informer.kind or builtin_kind(informer.api_version, informer.resource or "")
    group, _, version = informer.api_version.rpartition("/")
    if kind is None or informer.metadata_only:
        return None
    schema = builtin_schemas().for_gvk(group, version, kind)
    if schema is not None:
        return schema
    found = (crds if crds is not None else _config_crds(config)).lookup(informer.api_version,
                                                                       kind)
    return crd_schema({"schema": {"openAPIV3Schema": found.schema}}) \
        if found is not None and found.schema else None


def _check_template_names(config: Config, engine: TemplateEngine) -> None:
    """Every name a template reads that nothing defines where it renders (``{{ colr }}``,
    ``{{ objj.metadata.name }}``, a misspelt var), which fails every render (a mapTo template
    or indexer: every event gives no key or index value): ConfigError at its place, with the
    closest known name. Known: the template variables every action sees
    (``RESERVED_VAR_NAMES``: ``obj``, the lookups, ``results``...), the engine's globals, the
    vars, and where a template sees them (``_template_sources``) an action's ``forEach`` item,
    ``error`` (``onError`` actions and vars) and ``child`` (a child's ``readyWhen``);
    ``finalizer.when``, ``mapTo`` templates and indexers see what ``TEMPLATE_NAMES`` says. A
    name the template binds anywhere, or guards (:func:`_guarded_names`), is left
    alone; plugin actions are not checked (they render their own)."""
    base = {*RESERVED_VAR_NAMES, *engine.global_names} - set(_SCOPED_NAMES)
    only_obj = frozenset(("obj", *engine.global_names))
    map_to, indexer = _place_names("mapTo", engine), _place_names("indexers", engine)
    checks: list[Callable[[], None]] = []
    for spec in config.controllers:
        every = base | {var.name for var in spec.reconcile.vars}
        for source, expression, loc, hidden in _template_sources(spec, plugins=False):
            final = loc is spec.finalizer_when_location  # FinalizerCondition: obj only
            checks.append(functools.partial(
                _refuse_undefined, engine, source, expression, loc,
                only_obj if final else every, hidden,
                "finalizer.when sees obj and the functions only" if final else None))
        checks += [functools.partial(_refuse_undefined, engine, watch.template, True,
                                     watch.location, map_to, frozenset(),
                                     "a mapTo template sees obj, initial_list, the lookups "
                                     "and the functions" + _bare_hint(watch.template))
                   for watch in spec.watches if watch.map_to == "template" and watch.template]
    checks += [functools.partial(_refuse_undefined, engine, ix.expression, True, ix.location,
                                 indexer, frozenset(), "an indexer sees obj and the functions")
               for informer in config.informers.values()
               for ix in informer.indexers.values() if ix.expression]
    _all_errors(checks)


def _bare_hint(template: str) -> str:
    """For a ``mapTo`` template without ``{{ }}``: it is an expression (as a var), so
    ``default/web`` divides names; say how a fixed key is written."""
    if "{{" in template or "{%" in template:
        return ""
    return (f"; text without {{{{ }}}} is an expression: write a fixed key as "
            f"\"{{{{ {template.strip()!r} }}}}\"")


def _check_cron_calls(config: Config, engine: TemplateEngine) -> None:
    """Every ``cron_next``/``cron_prev`` call with a literal expression that ``schedule:``
    would refuse (``kinrun.cron_calls``), in a controller's templates, mapTo templates and
    indexers: ConfigErrors at each template's place, with the template line."""
    from kinrun.cron_calls import cron_call_problems

    sources = [(source, expression, loc) for spec in config.controllers
               for source, expression, loc, _ in _template_sources(spec, plugins=False)]
    sources += [(watch.template, True, watch.location) for spec in config.controllers
                for watch in spec.watches if watch.map_to == "template" and watch.template]
    sources += [(ix.expression, True, ix.location) for informer in config.informers.values()
                for ix in informer.indexers.values() if ix.expression]
    errors = [_error_at(loc, str(problem)) for source, expression, loc in sources
              for problem in cron_call_problems(engine.syntax_tree(source,
                                                                   expression=expression))]
    if errors:
        from kinrun.config import ConfigErrors
        raise ConfigErrors(errors)


def _place_names(place: str, engine: TemplateEngine) -> frozenset[str]:
    """The names templates of ``place`` (a key of ``kinrun.templating.PLACES``) see."""
    from kinrun.templating import TEMPLATE_NAMES
    return frozenset({n.name for n in TEMPLATE_NAMES if place in n.places
                      and not n.name.startswith("<")} | engine.global_names)


def _refuse_undefined(engine: TemplateEngine, source: str, expression: bool, loc: Any,
                      known: AbstractSet[str], hidden: frozenset[str], where: str | None
                      ) -> None:
    """ConfigError at ``loc`` for the first name ``source`` reads that is not ``known``,
    ``hidden``, bound by the template or guarded; ``where``: what this place sees (the
    hint when no known name is close)."""
    from jinja2 import meta

    tree = engine.syntax_tree(source, expression=expression)
    unknown = sorted(meta.find_undeclared_variables(tree) - known - hidden
                     - set(bound_names(tree)) - _guarded_names(tree)
                     ) if tree is not None else []
    if not unknown:
        return
    name = unknown[0]
    line = next(n.lineno for n in tree.find_all(nodes.Name) if n.name == name)
    near = difflib.get_close_matches(name, sorted(known | hidden), 1, 0.6)
    hint = where or _SCOPED_NAMES.get(name, "not a variable, var, lookup or function "
                                            "templates have here")
    raise _error_at(loc, f"{name!r} is undefined (template line {line}); " + (
        f"did you mean {near[0]!r}?" if near and name not in _SCOPED_NAMES else hint))


GRAPH_NAMES = ("children", "children_ready", "children_not_ready")
"""What a ``children`` action's render sets for the actions after it in its list
(``kinrun.actions.children``); its own resources see ``children``."""

_SCOPED_NAMES = {
    "error": "error exists in onError actions only (and in the vars no other action list "
             "reads); elsewhere guard it with 'is defined' or '| default'",
    "child": "child exists in a child's readyWhen only (elsewhere: children.NAME)",
    **dict.fromkeys(GRAPH_NAMES, "it exists in a children action's resources and in the "
                    "actions after a children action, in the same list (not in vars: they "
                    "are evaluated first)")}
"""Template variables only some templates see, with where: ``error`` in ``onError`` actions
(and in the vars no other action list reads: they are rendered there only), ``child`` in a
child's ``readyWhen``, :data:`GRAPH_NAMES` after a ``children`` action."""


_GUARDS = {nodes.Test: ("defined", "undefined", "none"), nodes.Filter: ("default", "d")}
"""The tests and filters that take an undefined name without failing (Jinja2's
StrictUndefined passes ``x is defined``, ``x is none``, ``x | default(...)``)."""


def _guarded_names(tree: nodes.Node) -> set[str]:
    """The names ``tree`` guards with ``is defined``, ``is undefined``, ``is none`` or
    ``| default``: a name that may be undefined there, by its author's choice."""
    return {guard.node.name for guard in tree.find_all((nodes.Test, nodes.Filter))
            if guard.name in _GUARDS[type(guard)] and isinstance(guard.node, nodes.Name)}


def _template_sources(spec: ControllerSpec, *, plugins: bool = True
                      ) -> Iterator[tuple[str, bool, Location, frozenset[str]]]:
    """(source, is an expression, location, names it sees besides every template's) of every
    template a controller compiles, ``finalizer.when`` and a child's ``readyWhen`` and
    ``includeWhen`` included. The names: an action's ``forEach`` item (``as:``, default
    ``item``; an ``applySet``'s own too) in its other keys, where a var of that name is
    hidden; ``error`` in ``onError`` actions and the vars no other list reads; ``child`` in
    ``readyWhen``; :data:`GRAPH_NAMES` after a ``children`` action of the same list.
    ``plugins``: False leaves out plugin actions' strings."""
    rec = spec.reconcile
    on_error = frozenset(("error",))
    elsewhere = _vars_read_by((*rec.actions, *rec.on_delete, *rec.finalize), rec.vars)
    for var in rec.vars:   # a var another list reads is rendered where error is undefined
        yield var.expression, True, var.location, \
            frozenset() if var.name in elsewhere else on_error
    for actions, scoped in ((rec.actions, frozenset()), (rec.on_delete, frozenset()),
                            (rec.finalize, frozenset()), (rec.on_error, on_error)):
        for action in actions:
            if not action.plugin or plugins:
                yield from _action_sources(action, scoped)
            if action.kind == "children" and not action.plugin:
                scoped |= frozenset(GRAPH_NAMES)   # its render sets them for later actions
    if spec.finalizer_when:
        yield spec.finalizer_when, True, spec.finalizer_when_location, frozenset()


def _vars_read_by(actions: Iterable[Any], candidates: tuple[Any, ...]) -> frozenset[str]:
    """The names of the vars ``candidates`` that ``actions`` read, directly or through other vars: the vars
    their program evaluates (as ``kinrun.actions.program.read_vars`` picks them)."""
    from kinrun.actions.program import template_names
    from kinrun.actions.results import template_sources
    needed = set(template_names(source for action in actions for source in template_sources(
        thaw(action.raw) if isinstance(action.raw, Mapping) else {})))
    for var in reversed(candidates):
        if var.name in needed:
            needed |= template_names([(var.expression, True)])
    return frozenset(var.name for var in candidates if var.name in needed)


def _action_sources(action: Any, scoped: frozenset[str]
                    ) -> Iterator[tuple[str, bool, Location, frozenset[str]]]:
    """The templates of one action (``_template_sources``' shape); ``scoped``: the names its
    list adds (``error`` in ``onError``)."""
    from kinrun.template_reads import template_strings
    raw = thaw(action.raw) if isinstance(action.raw, Mapping) else {}
    inner = raw.get("applySet") if isinstance(raw.get("applySet"), Mapping) else {}
    item = frozenset(str(d.get("as", "item")) for d in (raw, inner) if "forEach" in d) | scoped
    for key, value in raw.items():
        if key == "children" and isinstance(value, Mapping):
            yield from _child_sources(value, action, item | {"children"})
            continue
        expression = key in EXPRESSION_KEYS
        for text in template_strings(value):
            if expression or "{{" in text or "{%" in text:
                yield text, expression, action.location, item if key != "forEach" \
                    else frozenset()


def _child_sources(value: Mapping[str, Any], action: Any, item: frozenset[str]
                   ) -> Iterator[tuple[str, bool, Location, frozenset[str]]]:
    """The templates of a ``children`` action (``_template_sources``' shape): each child's
    ``readyWhen`` (which sees ``child``) and ``includeWhen`` as expressions at their own
    place, every other string with ``{{ }}`` or ``{% %}`` as a template."""
    from kinrun.template_reads import template_strings
    for key, part in value.items():
        children = part if key == "resources" and isinstance(part, list) else ()
        for index, child in enumerate(children):
            for field, field_value in (child.items() if isinstance(child, Mapping) else ()):
                loc = action.field_locations.get(f"resources[{index}].{field}", action.location)
                if field in EXPRESSION_KEYS and isinstance(field_value, str):
                    yield field_value, True, loc, item | (
                        frozenset(("child",)) if field == "readyWhen" else frozenset())
                else:
                    yield from ((text, False, loc, item) for text in template_strings(field_value)
                                if "{{" in text or "{%" in text)
        if not children:
            yield from ((text, False, action.location, item) for text in template_strings(part)
                        if "{{" in text or "{%" in text)


def _check_apply_keys(config: Config) -> None:
    """Every ``apply``/``applySet``/child manifest with list entries a server-side apply
    cannot merge, as the kind's schema says (``kinrun.actions.manifest_keys``), and every ``apply`` or child
    manifest without ``apiVersion``, ``kind`` or ``metadata`` as written: a server-side apply
    that can never succeed. ConfigError at the action's manifest."""
    if not any(action.kind in ("apply", "applySet", "children") for spec in config.controllers
               for action in (*spec.reconcile.actions, *spec.reconcile.on_delete,
                              *spec.reconcile.finalize)):
        return  # nothing applied: the schemas need not load
    from kinrun.actions.manifest_keys import apply_key_problems

    crds = list(_config_crds(config))
    for spec in config.controllers:
        rec = spec.reconcile
        for action in (*rec.actions, *rec.on_delete, *rec.finalize):
            for key, text in _applied_manifests(action):
                missing = missing_fields(text) if action.kind != "applySet" else []
                if missing:   # an applySet's manifests are several objects: checked rendered
                    raise action.field_locations.get(key, action.location).error(
                        f"{action.kind}: the manifest has no {' or '.join(missing)}: every "
                        f"object a server-side apply sends needs {', '.join(APPLIED_FIELDS)}")
                problems = apply_key_problems(text, crds) if isinstance(text, str) else []
                if problems:
                    loc = action.field_locations.get(key, action.location)
                    raise loc.error(f"{action.kind}: {problems[0]}: a server-side apply of this "
                                    "manifest can never succeed (kube-apiserver merges these "
                                    "list entries by their keys and answers 500); give each "
                                    "entry its keys, once")


def _applied_manifests(action: Any) -> list[tuple[str, Any]]:
    """(field location key, manifest source) of each manifest an action server-side applies:
    ``apply.manifest``, ``applySet.manifests``, each ``children.resources[I].manifest``."""
    if action.kind not in ("apply", "applySet", "children") or action.plugin:
        return []
    value = thaw(action.raw[action.kind])
    if action.kind == "children":
        return [(f"resources[{i}].manifest", r.get("manifest"))
                for i, r in enumerate(value.get("resources") or [])]
    key = "manifest" if action.kind == "apply" else "manifests"
    return [(key, value.get(key))]


def _check_lookups(spec: ControllerSpec, informers: Mapping[str, InformerPlan]) -> None:
    """``get``/``list``/``by_index``/``index_keys`` with a literal informer name that the
    config does not define, or a literal index that informer lacks, would fail at every
    render: a ConfigError at the template's place (the mapTo watch, the var, the action). A
    computed name is checked when it renders."""
    rec = spec.reconcile
    sources: list[tuple[str, Location]] = [(w.template or "", w.location) for w in spec.watches
                                      if w.map_to == "template"]
    sources += [(v.expression, v.location) for v in rec.vars]
    for action in rec.every_action:
        sources += [(text, action.location) for text in _strings(action.raw)]
    for source, location in sources:
        for call in lookup_calls(source):
            _check_lookup(call, location, informers)


def _check_lookup(call: LookupCall, location: Location,
                  informers: Mapping[str, InformerPlan]) -> None:
    """One lookup of :func:`_check_lookups`: its literal informer must be the config's, and a
    literal index of ``by_index``/``index_keys`` one that informer has (its ``indexers``, a
    plugin's, or ``namespace``); a computed name is checked when it renders."""
    function, informer, index, line = call
    if informer is None:
        return
    if informer not in informers:
        raise location.error(
            f"{function}({informer!r}, ...): no informer {informer!r} in this config "
            f"(known: {', '.join(sorted(informers)) or 'none'}); lookups read the "
            "caches of the config's informers")
    known = {NAMESPACE_INDEX, *informers[informer].indexers}
    if index is not None and index not in known:
        raise location.error(
            f"{function}({informer!r}, {index!r}, ...): informer {informer!r} has no index "
            f"{index!r} (its indexes: {', '.join(sorted(known))}) (template line {line})")


def _check_status_target(config: Config, spec: ControllerSpec, informer: InformerSpec) -> None:
    """A ``status`` action writes through the reconciled kind's ``/status``: a built-in kind
    whose schema has no ``status`` (a ConfigMap) or a ``crds:`` CRD version without
    ``subresources.status`` answers every such write 404. ConfigError at the first ``status``
    action; a kind kinrun has no definition of is not checked."""
    from kinrun.kube.builtin_kinds import builtin_kind
    from kinrun.openapi import builtin_schemas

    rec = spec.reconcile
    actions = [a for a in rec.every_action if a.kind == "status" and not a.plugin]
    kind = informer.kind or builtin_kind(informer.api_version, informer.resource or "")
    if not actions or kind is None:
        return
    group, _, version = informer.api_version.rpartition("/")
    schema = builtin_schemas().for_gvk(group, version, kind)
    crd = _config_crds(config).lookup(informer.api_version, kind) if schema is None else None
    if schema is not None and schema.child("status") is None:
        why = f"{kind} has no status (its schema has none)"
    elif crd is not None and not crd.status_subresource:
        why = (f"the CustomResourceDefinition of {kind} ({crd.source}) has no status "
               f"subresource for {crd.version} (subresources: {{status: {{}}}})")
    else:
        return
    raise actions[0].location.error(f"status: {why}; a status action writes through the "
                                    "status subresource, which would answer 404 every time")


def _check_strategic_patches(config: Config, spec: ControllerSpec,
                             informer: InformerSpec) -> None:
    """A strategic merge patch of a custom resource (the reconciled object, or a ``target``
    whose apiVersion and kind are written out) that a ``crds:`` file defines: kube-apiserver
    answers 415 (strategic merge needs the Go types of a built-in kind). ConfigError at the
    action."""
    rec = spec.reconcile
    crds = None
    for action in rec.every_action:
        value = action.raw.get("patch") if action.kind == "patch" and not action.plugin else None
        if not isinstance(value, Mapping) or value.get("type") != "strategic":
            continue
        target = value.get("target") if isinstance(value.get("target"), Mapping) else {}
        api_version = target.get("apiVersion", informer.api_version)
        kind = target.get("kind", informer.kind) if target else informer.kind
        if not isinstance(api_version, str) or not isinstance(kind, str) or "{" in api_version \
                or "{" in kind:
            continue
        crds = crds if crds is not None else _config_crds(config)
        crd = crds.lookup(api_version, kind)
        if crd is not None:
            raise action.location.error(
                f"patch: {kind} is a custom resource ({crd.source}), which takes no strategic "
                "merge patch (kube-apiserver answers 415): use type: merge or json")


_MANIFEST_KEYS = {"apply": "manifest", "create": "manifest", "applySet": "manifests",
                  "patch": "target", "delete": "target"}
"""Where an action names the kinds it writes: a manifest (template), or a ``target``."""


def _check_written_kinds(spec: ControllerSpec) -> None:
    """A kind an action writes, written out literally, that its built-in API group does not
    serve (``apps/v1`` ``Deploymnet``): every reconcile would fail to find it. ConfigError at
    the manifest or target with the closest kind, as an informer's kind is checked (groups of
    CRDs are left to discovery)."""
    from kinrun.config.manifest_kinds import literal_kinds

    rec = spec.reconcile
    for action in rec.every_action:
        key = _MANIFEST_KEYS.get(action.kind) if not action.plugin else None
        value = action.raw.get(action.kind) if key else None
        part = thaw(value).get(key) if isinstance(value, Mapping) else None
        target = part if key == "target" and isinstance(part, Mapping) else {}
        pairs = [(target.get("apiVersion"), target.get("kind"))] if target else \
            literal_kinds(part) if part and key != "target" else []
        for api_version, kind in pairs:
            if not isinstance(api_version, str) or not isinstance(kind, str) \
                    or "{" in api_version + kind:
                continue
            problem = unserved_builtin(api_version, kind, None)
            if problem is not None:
                loc = action.field_locations.get(key)
                raise loc.error(problem) if loc is not None else \
                    action.location.error(f"{action.kind}.{key}: {problem}")


def _check_owner_references(spec: ControllerSpec, primary: InformerPlan) -> None:
    """What ``apply``/``create`` owner references the manifest as written shows to be wrong
    (``kinrun.actions.kinds.own`` checks each rendered one): an explicit ``ownerReference:
    true`` on the reconciled object itself (its own owner), and a built-in namespaced primary
    owning a built-in cluster-scoped kind. ConfigError at the action."""
    informer = primary.spec
    if not informer.kind:
        return
    namespaced = builtin_scope(informer.api_version, informer.kind)
    for action in (*spec.reconcile.actions, *spec.reconcile.finalize):
        value = action.raw.get(action.kind) if action.kind in ("apply", "create") else None
        if not isinstance(value, Mapping) or value.get("ownerReference") is False:
            continue
        if names_reconciled_object(value.get("manifest"), informer.api_version, informer.kind):
            if value.get("ownerReference") is True:
                raise action.location.error(
                    f"{action.kind}: the manifest is the reconciled {informer.kind} itself, "
                    "which cannot be its own owner: remove ownerReference: true (without it, "
                    "kinrun adds no owner reference to the reconciled object)")
            continue
        child = literal_manifest(value.get("manifest")) or {}
        if namespaced and builtin_scope(str(child.get("apiVersion")),
                                        str(child.get("kind"))) is False:
            raise action.location.error(
                f"{action.kind}: a namespaced {informer.kind} cannot own the cluster-scoped "
                f"{child.get('kind')} (the garbage collector ignores such a reference): set "
                "ownerReference: false")


def _strings(value: Any) -> list[str]:
    """Every string inside an action's raw mapping (its templates), keys excluded."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _schedule(spec: ControllerSpec) -> CronSchedule | None:
    """The controller's cron schedule, checked now: a bad expression or an unknown zone is a
    ConfigError at its key (``kinrun.schedule``)."""
    sched = spec.schedule
    if sched is None:
        return None
    if not sched.cron:
        raise sched.time_zone_location.error("timeZone needs a schedule (a cron expression)")
    try:
        CronSchedule(sched.cron)
    except ScheduleError as exc:
        raise sched.location.error(str(exc)) from None
    try:
        return CronSchedule(sched.cron, sched.time_zone)
    except ScheduleError as exc:
        raise sched.time_zone_location.error(str(exc)) from None


def _check_finalizer(spec: ControllerSpec, hooks: ReconcileHook | None) -> None:
    """Refuse a ``finalizer`` that is not a domain-qualified Kubernetes name, one with nothing
    to run while the object terminates (no ``finalize``, no hooks), and ``finalize`` without
    a ``finalizer`` (it would never run). ConfigError at the key."""
    rec = spec.reconcile
    if spec.finalizer is None:
        if rec.finalize:
            raise rec.finalize[0].location.error(
                "finalize runs only while the controller's finalizer holds a terminating "
                "object: set controllers[].finalizer (such as example.com/cleanup)")
        return
    problem = finalizer_name_problem(spec.finalizer)
    if problem:
        raise spec.finalizer_location.error(problem)
    if not rec.finalize and hooks is None and not children_actions(spec):
        raise spec.finalizer_location.error(
            "nothing would run while an object terminates: give reconcile.finalize (or "
            "hooks, which see the terminating object)")


def _with_teardown(spec: ControllerSpec, actions: ActionProgram | None,
                   finalize: ActionProgram | None, engine: TemplateEngine
                   ) -> ActionProgram | None:
    """``finalize`` preceded, for a controller with a finalizer and ``children`` actions, by
    their teardown (``kinrun.actions.children.ChildrenTeardown``): the children are deleted
    in reverse dependency order, and the user's ``finalize`` runs once none is left."""
    impls = [a.impl for a in (actions.actions if actions is not None else ())
             if isinstance(a.impl, ChildrenAction)]
    if spec.finalizer is None or not impls:
        return finalize
    where = as_location(spec.finalizer_location, f"{spec.location.path}.finalizer")
    teardown = [CompiledAction(-2, "children", where, None, ChildrenTeardown(impls)),
                CompiledAction(-1, "children", where, None, ChildrenTeardown(impls, wait=True))]
    return ActionProgram(spec.name, [*teardown, *(finalize.actions if finalize else ())],
                         budgets=engine.budget, vars=finalize.vars if finalize else ())


ON_ERROR_KINDS = ("log", "event", "status", "patch")
"""The action kinds ``onError`` may use: it reports a failure (a line, an Event, a condition,
an annotation); it does not make or remove objects, nor steer the retry."""


def _on_error_actions(spec: ControllerSpec) -> tuple:
    """``reconcile.onError``, each action's kind one of :data:`ON_ERROR_KINDS` (ConfigError at
    the action otherwise)."""
    for action in spec.reconcile.on_error:
        raw = action.raw if isinstance(action.raw, Mapping) else {}
        kind = raw.get("plugin") or next((k for k in raw if k not in ("when", "name")), None)
        if kind not in ON_ERROR_KINDS:
            raise action.location.error(
                f"onError: {kind!r} cannot run here (onError may use "
                f"{', '.join(ON_ERROR_KINDS)}: it reports the failure; the retry is the "
                "controller's)")
    return spec.reconcile.on_error


def _finalizer_when(spec: ControllerSpec, engine: TemplateEngine) -> FinalizerCondition | None:
    """``finalizer.when`` compiled; a syntax error is a ConfigError at the key."""
    if spec.finalizer is None or spec.finalizer_when is None:
        return None
    where = spec.finalizer_when_location
    loc = as_location(where)
    return FinalizerCondition(engine.value(spec.finalizer_when, loc), loc, spec.name)


def _program(spec: ControllerSpec, actions: tuple, field: str, pm: PluginManager,
             engine: TemplateEngine, clock: Clock, *,
             recorder: EventRecorder) -> ActionProgram | None:
    """One action list of ``spec`` compiled (None when empty). ``recorder``: the controller's
    one EventRecorder, shared by all its programs (the correlator counts across them)."""
    rec = spec.reconcile
    if not actions:
        if rec.vars and not (rec.actions or rec.on_delete or rec.finalize):  # none sees them
            raise rec.vars[0].location.error("vars: no actions, onDelete or finalize would "
                                             "see them (hooks read their own inputs)")
        return None
    where = spec.location
    return compile_actions([a.raw for a in actions], controller=spec.name, plugin_manager=pm,
                           engine=engine, locations=[a.location for a in actions],
                           source=(where.file, where.line, f"{where.path}.reconcile.{field}"),
                           clock=clock, vars=rec.vars, recorder=recorder,
                           field_locations=[a.field_locations for a in actions])


def _watch(config: Config, spec: ControllerSpec, watch: WatchSpec, primary: InformerPlan,
           secondary: InformerPlan, engine: TemplateEngine) -> WatchPlan:
    if watch.map_to == "template":
        return WatchPlan(watch, compile_key_mapper(watch.template or "", watch.location,
                                                   engine=engine))
    if watch.map_to == "index":
        if (watch.index or "") not in primary.indexers:
            raise watch.location.error(
                f"mapTo.index {watch.index!r}: the primary informer {primary.name!r} has no "
                f"such index (known: {', '.join(sorted(primary.indexers)) or 'none'})")
        return WatchPlan(watch)
    problem = owner_mapping_problem(
        primary.spec, secondary.spec,
        builtin_scope(primary.spec.api_version, primary.spec.kind or ""),
        builtin_scope(secondary.spec.api_version, secondary.spec.kind or ""))
    if problem:
        raise watch.location.error(problem)
    return WatchPlan(watch)
