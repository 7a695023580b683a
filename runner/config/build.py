"""Build the frozen model (:mod:`kinrun.config.model`) from validated config data.

Input is data that passed the schema and the reference checks; this module only converts
(durations to seconds, relative paths to absolute, lists to tuples) and applies defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinrun.durations import parse_duration
from kinrun.config.loader import LoadedYaml, PathKey, format_path
from kinrun.config.model import (ActionSpec, ClusterSpec, Config, ControllerSpec, FrozenMap,
                                 GCSpec, IndexerSpec, InformerSpec, LeaderElectionSpec, Location,
                                 MetricsSpec, RateLimiterSpec, ReconcileSpec, TemplatesSpec,
                                 TransformSpec, WatchSpec, freeze)
from kinrun.config.model import RbacRuleSpec, RbacSpec, ShutdownSpec
from kinrun.config.model import ProbesSpec
from kinrun.config.model import ReloadSpec
from kinrun.config.model import VarSpec
from kinrun.config.model import ScheduleSpec
from kinrun.config.model import ShardingSpec
from kinrun.config.model import AdmissionRuleSpec, AdmissionSpec, WebhookSpec
from kinrun.config.model import EventsSpec
from kinrun.config.schema import action_fields, action_required, default, load_schema
from kinrun.config.children import with_child_informers
from kinrun.config.paths import resolve_path
from kinrun.templating import BudgetLimits


class _Ctx:
    """The loaded document and base folder, for locations and path resolution."""

    def __init__(self, loaded: LoadedYaml, base_dir: Path) -> None:
        self.loaded = loaded
        self.base_dir = base_dir

    def at(self, path: PathKey) -> Location:
        marks = self.loaded.marks.get(path)
        if marks is None:
            return Location(self.loaded.file, path=format_path(path))
        return Location(self.loaded.file, marks.line + 1, marks.column + 1, format_path(path))


def build_config(loaded: LoadedYaml, base_dir: Path) -> Config:
    """The Config for valid ``loaded.data``; relative paths resolved against ``base_dir``;
    with the informers of ``children`` actions added (``kinrun.config.children``)."""
    ctx = _Ctx(loaded, base_dir)
    data = loaded.data
    le, metrics = data.get("leaderElection"), data.get("metrics")
    return with_child_informers(Config(
        file=loaded.file, base_dir=base_dir,
        api_version=data["apiVersion"], kind=data["kind"],
        cluster=_cluster(ctx, data.get("cluster") or {}),
        plugins=tuple(data.get("plugins") or ()),
        plugin_locations=tuple(ctx.at(("plugins", i))
                               for i, _ in enumerate(data.get("plugins") or ())),
        crds=tuple(data.get("crds") or ()),
        admission=_admission(ctx, data["admission"]) if data.get("admission") else None,
        templates=_templates(data.get("templates") or {}),
        informers=FrozenMap({name: _informer(ctx, name, spec)
                             for name, spec in data["informers"].items()}),
        controllers=tuple(_controller(ctx, i, spec) for i, spec in enumerate(data["controllers"])),
        leader_election=_leader_election(le) if le is not None else None,
        metrics=_metrics(ctx, metrics) if metrics is not None else None,
        probes=_probes(data["probes"]) if data.get("probes") is not None else None,
        gc=_gc(data.get("gc") or {}),
        shutdown=_shutdown(data.get("shutdown") or {}),
        reload=_reload(data.get("reload") or {}),
        rbac=_rbac(ctx, data.get("rbac") or {}),
        sharding=_sharding(data["sharding"]) if data.get("sharding") is not None else None,
    ))


def _metrics(ctx: _Ctx, data: dict[str, Any]) -> MetricsSpec:
    """``metrics:``; ``certDir`` relative to the config's folder."""
    cert_dir = data.get("certDir")
    return MetricsSpec(port=_get(data, "metrics", "port"),
                       address=_get(data, "metrics", "address"),
                       secure=_get(data, "metrics", "secure"),
                       cert_dir=str(resolve_path(cert_dir, ctx.base_dir)) if cert_dir else None)


def _admission(ctx: _Ctx, data: dict[str, Any]) -> AdmissionSpec:
    """``admission:``; paths relative to the config's folder; keys left out take the schema's
    defaults."""
    certs = data.get("certificates") or {}
    cert_dir = certs.get("directory")
    return AdmissionSpec(
        webhooks=tuple(_webhook(ctx, i, w) for i, w in enumerate(data.get("webhooks") or ())),
        port=_get(data, "admission", "port"), address=_get(data, "admission", "address"),
        service_name=data.get("serviceName"),
        cert_dir=str(resolve_path(cert_dir, ctx.base_dir)) if cert_dir else None,
        cert_secret=(certs.get("selfSigned") or {}).get("secretName"))


def _webhook(ctx: _Ctx, i: int, data: dict[str, Any]) -> WebhookSpec:
    path: PathKey = ("admission", "webhooks", i)
    return WebhookSpec(
        name=data["name"], type=data["type"], rules=freeze(data["rules"]),
        namespace_selector=freeze(data.get("namespaceSelector")),
        object_selector=freeze(data.get("objectSelector")),
        failure_policy=_get(data, "webhook", "failurePolicy"),
        timeout_seconds=_get(data, "webhook", "timeoutSeconds"),
        validate=tuple(_admission_rule(ctx, (*path, "validate", j), r)
                       for j, r in enumerate(data.get("validate") or ())),
        mutate=tuple(_admission_rule(ctx, (*path, "mutate", j), r)
                     for j, r in enumerate(data.get("mutate") or ())),
        location=ctx.at(path))


def _admission_rule(ctx: _Ctx, path: PathKey, data: dict[str, Any]) -> AdmissionRuleSpec:
    return AdmissionRuleSpec(
        name=data.get("name") or f"{path[-2]}[{path[-1]}]", when=data.get("when"),
        deny=data.get("deny"), field=data.get("field"), warn=data.get("warn"),
        merge_patch=data.get("mergePatch"), json_patch=data.get("jsonPatch"),
        location=ctx.at(path))


def _sharding(data: dict[str, Any]) -> ShardingSpec:
    """``sharding:``; keys left out take the schema's defaults."""
    return ShardingSpec(
        ring=data["ring"], namespace=_get(data, "sharding", "namespace"),
        admission=_get(data, "sharding", "admission"),
        **{field: parse_duration(_get(data, "sharding", key)) for field, key in (
            ("lease_duration", "leaseDuration"), ("renew_deadline", "renewDeadline"),
            ("retry_period", "retryPeriod"), ("sync_period", "syncPeriod"))})


def _probes(data: dict[str, Any]) -> ProbesSpec:
    """``probes:``; keys left out take the schema's defaults."""
    return ProbesSpec(port=_get(data, "probes", "port"), address=_get(data, "probes", "address"),
                      stuck_reconcile_after=parse_duration(
                          _get(data, "probes", "stuckReconcileAfter")))


def _get(data: dict[str, Any], definition: str, key: str) -> Any:
    """``data[key]``, else the schema's default for ``$defs.DEFINITION.properties.KEY`` (the
    one place defaults are written)."""
    return data[key] if key in data else default(definition, key)


def _renamed(data: dict[str, Any], **names: str) -> dict[str, Any]:
    return {names[k]: v for k, v in data.items() if k in names}


def _templates(data: dict[str, Any]) -> TemplatesSpec:
    """``templates:``; ``budget`` keys left out take the schema's defaults (BudgetLimits)."""
    return TemplatesSpec(**_renamed(data, allowEnv="allow_env", allowFiles="allow_files"),
                         budget=BudgetLimits.coerce(data.get("budget")))


def _cluster(ctx: _Ctx, data: dict[str, Any]) -> ClusterSpec:
    kubeconfig = data.get("kubeconfig")
    if kubeconfig is not None:
        kubeconfig = str(resolve_path(kubeconfig, ctx.base_dir))
    return ClusterSpec(kubeconfig=kubeconfig, context=data.get("context"),
                       qps=float(_get(data, "cluster", "qps")),
                       burst=int(_get(data, "cluster", "burst")))


def _informer(ctx: _Ctx, name: str, data: dict[str, Any]) -> InformerSpec:
    base: PathKey = ("informers", name)
    indexers = {}
    for index_name, value in (data.get("indexers") or {}).items():
        loc = ctx.at(base + ("indexers", index_name))
        indexers[index_name] = IndexerSpec(index_name, expression=value, location=loc) \
            if isinstance(value, str) else IndexerSpec(index_name, plugin=True, location=loc)
    transform = data.get("transform") or {}
    namespaces = data.get("namespaces")
    return InformerSpec(
        name=name, api_version=data["apiVersion"], kind=data.get("kind"),
        resource=data.get("resource"),
        namespaces=tuple(namespaces) if namespaces is not None else None,
        label_selector=data.get("labelSelector"), field_selector=data.get("fieldSelector"),
        resync_period=parse_duration(_get(data, "informer", "resyncPeriod")),
        metadata_only=bool(_get(data, "informer", "metadataOnly")),
        projection=_get(data, "informer", "projection"),
        transform=TransformSpec(strip_managed_fields=_get(transform, "transform",
                                                          "stripManagedFields"),
                                drop=tuple(transform.get("drop") or ())),
        indexers=FrozenMap(indexers),
        watch_inactivity_timeout=_optional_duration(data.get("watchInactivityTimeout")),
        location=ctx.at(base))


def _optional_duration(value: Any) -> float | None:
    """Seconds, or None when the key is absent (the consumer's default applies)."""
    return None if value is None else parse_duration(value)


def _controller(ctx: _Ctx, i: int, data: dict[str, Any]) -> ControllerSpec:
    base: PathKey = ("controllers", i)
    return ControllerSpec(
        name=data["name"], primary=data["for"],
        watches=tuple(_watch(ctx, base + ("watches", j), w)
                      for j, w in enumerate(data.get("watches") or [])),
        predicates=tuple(data.get("predicates") or ()),
        resync_period=parse_duration(data["resyncPeriod"]) if "resyncPeriod" in data else None,
        workers=_get(data, "controller", "workers"),
        rate_limiter=_rate_limiter(data.get("rateLimiter") or {}),
        max_retries=_get(data, "controller", "maxRetries"),
        reconcile=_reconcile(ctx, base + ("reconcile",), data["reconcile"]),
        location=ctx.at(base), events=_events(data.get("events") or {}),
        finalizer=_finalizer(data).get("name"), finalizer_location=ctx.at(base + ("finalizer",)),
        finalizer_when=_finalizer(data).get("when"),
        finalizer_when_location=ctx.at(base + ("finalizer", "when")),
        schedule=_schedule(ctx, base, data))


def _finalizer(data: dict[str, Any]) -> dict[str, Any]:
    """A controller's ``finalizer`` in its mapping form: ``{name, when}`` ({} when absent)."""
    value = data.get("finalizer")
    return {"name": value} if isinstance(value, str) else dict(value or {})


def _schedule(ctx: _Ctx, base: PathKey, data: dict[str, Any]) -> ScheduleSpec | None:
    """``schedule``/``timeZone`` of a controller; a lone ``timeZone`` keeps its location for
    the plan's error."""
    if "schedule" not in data and "timeZone" not in data:
        return None
    return ScheduleSpec(data.get("schedule") or "", data.get("timeZone"),
                        ctx.at(base + ("schedule",)) if "schedule" in data else ctx.at(base),
                        ctx.at(base + ("timeZone",)) if "timeZone" in data else ctx.at(base))


def _events(data: dict[str, Any]) -> EventsSpec:
    return EventsSpec(component=data.get("component"), host=data.get("host"))


def _watch(ctx: _Ctx, path: PathKey, data: dict[str, Any]) -> WatchSpec:
    map_to = data.get("mapTo", "owner")
    loc = ctx.at(path)
    if isinstance(map_to, dict) and "template" in map_to:
        return WatchSpec(data["informer"], "template", template=map_to["template"], location=loc)
    if isinstance(map_to, dict):
        return WatchSpec(data["informer"], "index", index=map_to["index"], location=loc)
    return WatchSpec(data["informer"], "owner", location=loc)


def _rate_limiter(data: dict[str, Any]) -> RateLimiterSpec:
    return RateLimiterSpec(base_delay=parse_duration(_get(data, "rateLimiter", "baseDelay")),
                           max_delay=parse_duration(_get(data, "rateLimiter", "maxDelay")),
                           qps=float(_get(data, "rateLimiter", "qps")),
                           burst=int(_get(data, "rateLimiter", "burst")))


def _reconcile(ctx: _Ctx, path: PathKey, data: dict[str, Any]) -> ReconcileSpec:
    hooks = data.get("hooks", False)
    return ReconcileSpec(
        hooks=bool(hooks),
        hook_plugins=tuple(hooks) if isinstance(hooks, list) else None,
        reads=tuple(data["reads"]) if "reads" in data else None,
        reads_location=ctx.at(path + ("reads",)),
        actions=tuple(_action(ctx, path + ("actions", k), a)
                      for k, a in enumerate(data.get("actions") or [])),
        on_delete=tuple(_action(ctx, path + ("onDelete", k), a)
                        for k, a in enumerate(data.get("onDelete") or [])),
        finalize=tuple(_action(ctx, path + ("finalize", k), a)
                       for k, a in enumerate(data.get("finalize") or [])),
        on_error=tuple(_action(ctx, path + ("onError", k), a)
                       for k, a in enumerate(data.get("onError") or [])),
        keep_old=data.get("keepOld"),
        vars=tuple(VarSpec(name, expression, ctx.at(path + ("vars", name)))
                   for name, expression in (data.get("vars") or {}).items()))


_ACTION_KEYS = ("when", "name", "forEach", "as")
"""The keys of an action besides its kind (and a plugin's ``plugin``/``with``)."""


def _action(ctx: _Ctx, path: PathKey, data: dict[str, Any]) -> ActionSpec:
    plugin = "plugin" in data
    kind = data["plugin"] if plugin else next(k for k in data if k not in _ACTION_KEYS)
    key = "with" if plugin else kind
    spec = data.get("with", {}) if plugin else _action_spec(kind, data[kind])
    value = data.get(key)
    if isinstance(value, dict):
        fields = {f: ctx.at(path + (key, f)) for f in value}
    else:  # the scalar forms: log "...", requeueAfter 30s / "{{ ... }}"
        fields = {f: ctx.at(path + (key,)) for f in spec}
    if kind == "children" and isinstance(value, dict):  # each child's item and keys
        for i, item in enumerate(value.get("resources") or []):
            fields[f"resources[{i}]"] = ctx.at(path + (key, "resources", i))
            for f in item if isinstance(item, dict) else ():
                fields[f"resources[{i}].{f}"] = ctx.at(path + (key, "resources", i, f))
    for key_name in ("when", "forEach", "as"):
        if key_name in data:
            fields[key_name] = ctx.at(path + (key_name,))
    raw = {k: v for k, v in data.items() if k not in ("plugin", "with")}
    if plugin:
        raw[kind] = data.get("with", {})
    return ActionSpec(kind=kind, spec=freeze(spec), when=data.get("when"),
                      name=data.get("name") or f"{path[-2]}[{path[-1]}].{kind}", plugin=plugin,
                      location=ctx.at(path), field_locations=FrozenMap(fields), raw=freeze(raw))


def _action_spec(kind: str, value: Any) -> dict[str, Any]:
    if kind in ("log", "stop") and isinstance(value, str):
        value = {"message": value}
    if kind == "requeueAfter":
        if isinstance(value, str) and "{{" in value:
            return {"template": value}
        return {"seconds": parse_duration(value)}
    required = action_required(kind)  # the schema's defaults; None for optional fields without
    defaults = {name: prop.get("default") for name, prop in action_fields(kind).items()
                if name not in required}
    return {**defaults, **value}


def _leader_election(data: dict[str, Any]) -> LeaderElectionSpec:
    return LeaderElectionSpec(
        lease_name=data["leaseName"], namespace=_get(data, "leaderElection", "namespace"),
        lease_duration=parse_duration(_get(data, "leaderElection", "leaseDuration")),
        renew_deadline=parse_duration(_get(data, "leaderElection", "renewDeadline")),
        retry_period=parse_duration(_get(data, "leaderElection", "retryPeriod")),
        warm_standby=_get(data, "leaderElection", "warmStandby"))


def _reload(data: dict[str, Any]) -> ReloadSpec:
    return ReloadSpec(*(parse_duration(_get(data, "reload", key))
                        for key in ("pollInterval", "syncTimeout", "discoveryInterval")))


def _gc(data: dict[str, Any]) -> GCSpec:
    return GCSpec(collect_frozen_every=parse_duration(_get(data, "gc", "collectFrozenEvery")))


def _rbac(ctx: _Ctx, data: dict[str, Any]) -> RbacSpec:
    """``rbac``: each ``extraRules`` item as an RbacRuleSpec with its location."""
    rules = []
    for i, rule in enumerate(data.get("extraRules") or []):
        namespaces = rule.get("namespaces")
        rules.append(RbacRuleSpec(
            api_groups=tuple(rule["apiGroups"]), resources=tuple(rule["resources"]),
            verbs=tuple(rule["verbs"]), resource_names=tuple(rule.get("resourceNames") or ()),
            namespaces=tuple(namespaces) if namespaces is not None else None,
            location=ctx.at(("rbac", "extraRules", i))))
    return RbacSpec(extra_rules=tuple(rules))


def _shutdown(data: dict[str, Any]) -> ShutdownSpec:
    """``shutdown``; an omitted key takes the schema's ``default`` (written only there)."""
    props = load_schema()["$defs"]["shutdown"]["properties"]
    return ShutdownSpec(drain_timeout=parse_duration(
        data.get("drainTimeout", props["drainTimeout"]["default"])))
