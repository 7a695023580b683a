"""The config model: frozen dataclasses built from a validated config file.

Purely data; no I/O. Everything is immutable and hashable (mappings are :class:`FrozenMap`,
lists are tuples) so specs can be shared by threads and used as keys. Field names are Python
spellings of the YAML keys (``resyncPeriod`` -> ``resync_period``); durations are float seconds;
defaults (listed per field) are applied by :mod:`kinrun.config.build`, so consumers never see a
missing value. Each spec that errors may later be reported against carries a :class:`Location`.
The dataclasses' own defaults are the schema's ``default`` keywords (read once, at import): a
default is written only in ``schemas/kinrun.schema.json``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from kinrun.config.paths import is_plugin_path, resolve_path
from kinrun.config.schema import default as _d
from kinrun.durations import parse_duration
from kinrun.errors import ConfigError


def _seconds(definition: str, key: str) -> float:
    """The schema's default duration of ``$defs.DEFINITION.properties.KEY`` in seconds."""
    return parse_duration(_d(definition, key))
from kinrun.templating import BudgetLimits


class FrozenMap(Mapping[str, Any]):
    """An immutable, hashable mapping (insertion-ordered). Values should be immutable too
    (see :func:`freeze`). ``dict(m)`` or :func:`thaw` gives a plain copy. Thread-safe: nothing
    changes after construction (the cached hash is idempotent)."""

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = dict(data or {})
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._data.items()))
        return self._hash

    def __repr__(self) -> str:
        return f"FrozenMap({self._data!r})"


def freeze(value: Any) -> Any:
    """Deeply convert dicts to FrozenMap and lists to tuples; scalars unchanged."""
    if isinstance(value, Mapping):
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Deeply convert FrozenMaps/mappings to dicts and tuples to lists (a fresh, mutable copy)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class Location:
    """Where something is in a config file: ``file`` as given, 1-based ``line``/``column``
    (None if unknown), key ``path`` such as ``controllers[0].reconcile.actions[1]``.

    ``str()`` is ``file:line:column: path``; :meth:`error` builds the ConfigError to raise.
    """

    file: str
    line: int | None = None
    column: int | None = None
    path: str = ""

    def error(self, message: str, *, line_offset: int = 0) -> ConfigError:
        """A ConfigError at this location (``line_offset`` lines further down, e.g. inside a
        block-scalar template)."""
        line = None if self.line is None else self.line + line_offset
        return ConfigError(message, file=self.file, line=line, column=self.column, path=self.path)

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "") + (
            f":{self.column}" if self.line and self.column else "")
        return f"{where}: {self.path}" if self.path else where


_NOWHERE = Location("<config>")


@dataclass(frozen=True)
class ClusterSpec:
    """Cluster access. ``kubeconfig``: absolute path (resolved against the config file's folder)
    or None ($KUBECONFIG, then in-cluster, then ~/.kube/config); ``context``: None = current;
    ``qps`` (requests/s, default 50.0) and ``burst`` (requests, default 100) of the client-side
    rate limiter (client-go QPS/Burst)."""

    kubeconfig: str | None = None
    context: str | None = None
    qps: float = float(_d("cluster", "qps"))
    burst: int = _d("cluster", "burst")


@dataclass(frozen=True)
class TemplatesSpec:
    """Jinja2 sandbox options. Relaxations, both default False: ``allow_env`` exposes the
    environment as ``env``; ``allow_files`` lets templates read files relative to the config
    file. ``budget``: what one reconcile's templates (or one indexer/key mapper call) may spend,
    a :class:`kinrun.templating.BudgetLimits` (timeout seconds, loop steps, output characters;
    defaults from the schema's ``templates.budget``)."""

    allow_env: bool = False
    allow_files: bool = False
    budget: BudgetLimits = field(default_factory=BudgetLimits)


@dataclass(frozen=True)
class TransformSpec:
    """Transform applied before caching (client-go SetTransform): ``strip_managed_fields``
    (default True) drops ``metadata.managedFields``; ``drop``: dotted paths of further fields
    to drop, as written (``kinrun.cache.transform.parse_path`` reads them)."""

    strip_managed_fields: bool = _d("transform", "stripManagedFields")
    drop: tuple[str, ...] = ()


@dataclass(frozen=True)
class IndexerSpec:
    """One named index of an informer. Exactly one of: ``expression`` (a Jinja2 expression over
    ``obj``, as written, with or without ``{{ }}``: a string result is one index value, a list
    several, None/"" none) or ``plugin`` True (the function comes from a plugin's
    ``kinrun_index_funcs`` hook under ``name``)."""

    name: str
    expression: str | None = None
    plugin: bool = False
    location: Location = _NOWHERE


@dataclass(frozen=True)
class InformerSpec:
    """One informer (LIST+WATCH of one resource, cached and indexed).

    ``name`` (the key under ``informers:``); ``api_version`` (``v1``, ``apps/v1``); exactly one
    of ``kind`` (``Pod``) or ``resource`` (``pods``) — resolved to a GVR at discovery;
    ``namespaces``: tuple of namespaces, or None for all namespaces (also for cluster-scoped
    resources, where any namespaces given are ignored at discovery — including the one set by
    :meth:`Config.with_namespace`); ``label_selector``/``field_selector``: None or the string
    sent to the server; ``resync_period`` seconds (0.0 = no resync); ``metadata_only``: list
    and watch PartialObjectMetadata (apiVersion, kind, metadata only); ``projection``:
    ``auto`` (decode only the fields the config reads, ``kinrun.kept_paths``) or ``off``;
    ``transform``;
    ``indexers``: name -> IndexerSpec; ``watch_inactivity_timeout``: seconds (> 0) a watch may
    stay silent (no event, no bookmark) before it is re-opened, or None for the reflector's
    default (``kinrun.cache.reflector.DEFAULT_INACTIVITY_TIMEOUT``, the one place it is written).
    """

    name: str
    api_version: str
    kind: str | None = None
    resource: str | None = None
    namespaces: tuple[str, ...] | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    resync_period: float = _seconds("informer", "resyncPeriod")
    metadata_only: bool = _d("informer", "metadataOnly")
    projection: str = _d("informer", "projection")
    transform: TransformSpec = field(default_factory=TransformSpec)
    indexers: FrozenMap = field(default_factory=FrozenMap)
    watch_inactivity_timeout: float | None = None
    location: Location = _NOWHERE


MapTo = Literal["owner", "template", "index"]


@dataclass(frozen=True)
class WatchSpec:
    """A secondary informer of a controller and how its objects map to primary keys.

    ``informer``: informer name; ``map_to``: ``"owner"`` (owner references whose kind is the
    primary's kind, in the secondary's namespace), ``"template"`` (``template`` renders the
    primary key ``namespace/name``; "" maps to nothing) or ``"index"`` (the primaries whose
    indexer ``index`` on the primary informer holds the secondary's key ``namespace/name``).
    """

    informer: str
    map_to: MapTo = "owner"
    template: str | None = None
    index: str | None = None
    location: Location = _NOWHERE


@dataclass(frozen=True)
class RateLimiterSpec:
    """Workqueue rate limiter (client-go DefaultControllerRateLimiter: max of per-item
    exponential ``base_delay``..``max_delay`` seconds, defaults 0.005 and 1000.0, and a token
    bucket of ``qps`` items/s, default 10.0, with ``burst`` items, default 100)."""

    base_delay: float = _seconds("rateLimiter", "baseDelay")
    max_delay: float = _seconds("rateLimiter", "maxDelay")
    qps: float = float(_d("rateLimiter", "qps"))
    burst: int = _d("rateLimiter", "burst")


@dataclass(frozen=True)
class EventsSpec:
    """The source of a controller's Events (``controllers[].events``; client-go's
    EventSource): ``component`` (``source.component`` and ``reportingComponent``; None: the
    schema's default, ``kinrun/{controller}``, see :meth:`component_of`), ``host``
    (``source.host`` and ``reportingInstance``; None: left out)."""

    component: str | None = None
    host: str | None = None

    def component_of(self, controller: str) -> str:
        """The component of ``controller``'s Events: as configured, else the schema's
        default with ``{controller}`` replaced by the controller's name."""
        if self.component is not None:
            return self.component
        return str(_d("events", "component")).replace("{controller}", controller)


BUILTIN_ACTION_KINDS = ("log", "apply", "patch", "delete", "event", "requeueAfter", "stop",
                        "fail", "status", "create", "applySet", "children")


@dataclass(frozen=True)
class ActionSpec:
    """One action of a reconcile, as written, with defaults applied.

    ``kind``: one of BUILTIN_ACTION_KINDS, or the plugin kind name when ``plugin`` is True.
    ``spec``: read-only mapping with the YAML key names:

    - log: ``{message, level}`` (level default ``info``; the string form becomes message)
    - apply: ``{manifest, ownerReference (default True), force (default False)}``
    - patch: ``{type (default merge), subresource (None), patch, target (None = the object)}``
    - delete: ``{target, propagationPolicy (None = server default)}``
    - event: ``{type (default Normal), reason, message}``
    - requeueAfter: ``{seconds: float}`` or ``{template: str}`` (renders a duration)
    - stop: ``{message}`` (the string form becomes message)
    - fail: ``{message, permanent (default False)}``
    - create: ``{manifest, ownerReference (default True)}``
    - applySet: ``{manifests, forEach (None), as (default item), parent (None: the
      reconciled object), ownerReference (default
      True), prune (default True), force (default False), fieldManager}
    - children: ``{resources: [{name, manifest, dependsOn?, readyWhen?, includeWhen?}],
      ownerReference, prune, force, fieldManager}`` (``kinrun.config.children``)``
    - plugin kinds: the ``with`` mapping as given (empty if omitted)

    ``target`` values are FrozenMaps ``{apiVersion, kind, name, namespace?}`` of templates.
    ``when``: an expression (with or without ``{{ }}``) or None; ``name``: given, else
    ``<list>[<i>].<kind>`` such as ``actions[1].apply``; ``location``: the list item;
    ``field_locations``: Location of each key of ``spec`` (``manifest``, ...) and of ``when``,
    for errors found while rendering; a template in a block scalar (``|``) starts on the line
    after its location. ``raw``: the action in its plain one-kind-key form, as
    ``kinrun.actions.compile_actions`` takes it: the item as written (``{"log": "...",
    "when": ...}``), except that a plugin action ``{plugin: K, with: W}`` becomes ``{K: W}``.
    """

    kind: str
    spec: FrozenMap
    when: str | None = None
    name: str = ""
    plugin: bool = False
    location: Location = _NOWHERE
    field_locations: FrozenMap = field(default_factory=FrozenMap)
    raw: FrozenMap = field(default_factory=FrozenMap)


@dataclass(frozen=True)
class VarSpec:
    """One entry of ``reconcile.vars``: ``name`` (an identifier), ``expression`` (a Jinja2
    expression with or without ``{{ }}``, as written), ``location`` (the value's place in the
    file). Compiled and evaluated by ``kinrun.actions`` (``ActionProgram``)."""

    name: str
    expression: str
    location: Location = _NOWHERE


@dataclass(frozen=True)
class ReconcileSpec:
    """What a controller does per key. ``hooks``: call plugins' ``kinrun_reconcile`` (default
    False); ``hook_plugins``: None = every plugin, else only these plugin names; ``actions``:
    run in order while the object exists; ``on_delete``: run in order once it is gone. With both
    hooks and actions, the order is the main job's (``kinrun.hooks``: actions, then hooks).
    ``keep_old``: the config's ``keepOld`` (None = not given; see ``keeps_old``). ``vars``: the
    ``vars:`` mapping in file order (evaluated in that order per reconcile, before the actions
    of either list; empty when not given). ``finalize``: run in order while the object
    terminates and still carries the controller's ``finalizer`` (``kinrun.reconcile``).
    ``on_error``: run in order when a reconcile of a live object fails, ``error`` in scope."""

    hooks: bool = False
    hook_plugins: tuple[str, ...] | None = None
    reads: tuple[str, ...] | None = None  # what hooks read (``reads:``); None: whole objects
    reads_location: Location = _NOWHERE
    actions: tuple[ActionSpec, ...] = ()
    on_delete: tuple[ActionSpec, ...] = ()
    keep_old: bool | None = None
    vars: tuple[VarSpec, ...] = ()
    finalize: tuple[ActionSpec, ...] = ()
    on_error: tuple[ActionSpec, ...] = ()

    @property
    def every_action(self) -> tuple[ActionSpec, ...]:
        """The actions of every list, in order: ``actions``, ``on_delete``, ``finalize``,
        ``on_error`` (what the config checks walk)."""
        return (*self.actions, *self.on_delete, *self.finalize, *self.on_error)

    @property
    def keeps_old(self) -> bool:
        """Whether the controller keeps each object as last reconciled (``old`` next time):
        ``keepOld`` when given, else whether the word ``old`` appears in any of its actions
        (``actions`` and ``onError``; ``onDelete`` needs no kept version: a deletion brings
        its final state) or in its ``vars`` (which those actions see).
        The word test is conservative: a template that names ``old`` in any way keeps it."""
        if self.keep_old is not None:
            return self.keep_old
        if self.actions and any(_mentions_old(var.expression) for var in self.vars):
            return True
        return any(_mentions_old(action.raw) for action in (*self.actions, *self.on_error))

    @property
    def hook_selection(self) -> bool | tuple[str, ...]:
        """Which plugins' ``kinrun_reconcile`` run: the named ones, else all (True) or none."""
        return self.hook_plugins if self.hook_plugins is not None else self.hooks


_OLD = re.compile(r"\bold\b")


def _mentions_old(value: Any) -> bool:
    """Whether any string in ``value`` (nested mappings and lists) contains the word ``old``."""
    if isinstance(value, str):
        return _OLD.search(value) is not None
    if isinstance(value, Mapping):
        return any(_mentions_old(k) or _mentions_old(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_mentions_old(v) for v in value)
    return False


Predicate = Literal["generationChanged", "labelsChanged", "annotationsChanged",
                    "resourceVersionChanged"]


@dataclass(frozen=True)
class ControllerSpec:
    """One controller. ``name`` (unique); ``primary``: the informer named by ``for``;
    ``watches``; ``predicates``: update filters (an update passes if any holds; empty tuple =
    every update passes); ``resync_period``: seconds between resyncs of this controller's
    primary handler (0.0 = none; None = the primary informer's ``resync_period``);
    ``workers`` (>= 1, default 1); ``rate_limiter``; ``max_retries``
    (>= 0, default 15); ``reconcile``; ``events``: the source its Events name;
    ``finalizer``: the finalizer it owns on its primary objects, or None;
    ``finalizer_location``: where ``finalizer`` is written; ``finalizer_when``: the
    ``finalizer.when`` expression (None: every object), ``finalizer_when_location`` its place; ``schedule``: its cron
    ``schedule``/``timeZone`` (a ScheduleSpec), or None."""

    name: str
    primary: str
    watches: tuple[WatchSpec, ...] = ()
    predicates: tuple[str, ...] = ()
    resync_period: float | None = None
    workers: int = _d("controller", "workers")
    rate_limiter: RateLimiterSpec = field(default_factory=RateLimiterSpec)
    max_retries: int = _d("controller", "maxRetries")
    reconcile: ReconcileSpec = field(default_factory=ReconcileSpec)
    location: Location = _NOWHERE
    events: EventsSpec = field(default_factory=EventsSpec)
    finalizer: str | None = None
    finalizer_location: Location = _NOWHERE
    finalizer_when: str | None = None
    finalizer_when_location: Location = _NOWHERE
    schedule: ScheduleSpec | None = None


@dataclass(frozen=True)
class ScheduleSpec:
    """A controller's ``schedule`` (a cron expression, as written) and ``timeZone`` (an IANA
    name, None = UTC), each with its place in the file; compiled and checked by
    ``kinrun.plan`` (``kinrun.schedule.CronSchedule``)."""

    cron: str
    time_zone: str | None = None
    location: Location = _NOWHERE
    time_zone_location: Location = _NOWHERE


@dataclass(frozen=True)
class LeaderElectionSpec:
    """Leader election through a coordination.k8s.io/v1 Lease (client-go leaderelection).
    Seconds: ``lease_duration`` > ``renew_deadline`` > ``retry_period``; ``warm_standby``: sync
    the caches while waiting for the Lease (workers start once it is held)."""

    lease_name: str
    namespace: str = _d("leaderElection", "namespace")
    lease_duration: float = _seconds("leaderElection", "leaseDuration")
    renew_deadline: float = _seconds("leaderElection", "renewDeadline")
    retry_period: float = _seconds("leaderElection", "retryPeriod")
    warm_standby: bool = _d("leaderElection", "warmStandby")


@dataclass(frozen=True)
class ShardingSpec:
    """``sharding:`` (``kinrun.sharding``): the ``ring`` name; ``namespace`` of the
    membership Leases; seconds ``lease_duration`` > ``renew_deadline`` > ``retry_period`` (as
    leader election); ``sync_period``: seconds between the sharder's looks at every object;
    ``admission``: label new objects at admission (``kinrun.sharding.admission``)."""

    ring: str
    namespace: str = _d("sharding", "namespace")
    admission: bool = _d("sharding", "admission")
    lease_duration: float = _seconds("sharding", "leaseDuration")
    renew_deadline: float = _seconds("sharding", "renewDeadline")
    retry_period: float = _seconds("sharding", "retryPeriod")
    sync_period: float = _seconds("sharding", "syncPeriod")


@dataclass(frozen=True)
class MetricsSpec:
    """Prometheus endpoint: ``port`` (default 8080; 0 = pick a free port), ``address``
    (default ``0.0.0.0``), ``secure`` (HTTPS with delegated authn/authz: ``kinrun.metrics``;
    default False), ``cert_dir`` (absolute; None = self-signed)."""

    port: int = _d("metrics", "port")
    address: str = _d("metrics", "address")
    secure: bool = _d("metrics", "secure")
    cert_dir: str | None = None


@dataclass(frozen=True)
class ProbesSpec:
    """Health probe endpoint (``kinrun.probes``, controller-runtime's
    ``--health-probe-bind-address``): ``port`` (default 8081; 0 = pick a free port),
    ``address`` (default ``0.0.0.0``), ``stuck_reconcile_after``: seconds (> 0; default 600) a
    reconcile may run before ``/healthz`` fails. Defaults: the schema's ``probes``."""

    port: int = _d("probes", "port")
    address: str = _d("probes", "address")
    stuck_reconcile_after: float = _seconds("probes", "stuckReconcileAfter")


@dataclass(frozen=True)
class AdmissionRuleSpec:
    """One rule of a webhook (``kinrun.admission``): ``when`` (an expression or None = always),
    ``deny`` / ``field`` / ``warn`` / ``merge_patch`` / ``json_patch`` (template sources or
    None), ``name`` (given, else ``validate[i]``/``mutate[i]``), ``location`` (the list item;
    a template's errors name it)."""

    name: str
    when: str | None = None
    deny: str | None = None
    field: str | None = None
    warn: str | None = None
    merge_patch: str | None = None
    json_patch: str | None = None
    location: Location = _NOWHERE


@dataclass(frozen=True)
class WebhookSpec:
    """One admission webhook: ``name`` (its DNS name and path), ``type`` (``validating`` or
    ``mutating``), ``rules`` (the API server's RuleWithOperations, as written),
    ``namespace_selector``/``object_selector`` (label selectors as written, or None),
    ``failure_policy``, ``timeout_seconds``, ``validate``/``mutate`` (the rules, in order),
    ``location``; ``builtin``: None for a webhook of ``admission:``, ``"shard"`` for the one
    ``sharding.admission`` adds (``kinrun.sharding.admission``). Defaults: the schema's
    ``webhook``."""

    name: str
    type: str
    rules: tuple[Any, ...]
    namespace_selector: Any = None
    object_selector: Any = None
    failure_policy: str = _d("webhook", "failurePolicy")
    timeout_seconds: int = _d("webhook", "timeoutSeconds")
    validate: tuple[AdmissionRuleSpec, ...] = ()
    mutate: tuple[AdmissionRuleSpec, ...] = ()
    location: Location = _NOWHERE
    builtin: str | None = None

    @property
    def path(self) -> str:
        """The URL path the API server posts AdmissionReviews to."""
        return f"/{'mutate' if self.type == 'mutating' else 'validate'}/{self.name}"


@dataclass(frozen=True)
class AdmissionSpec:
    """``admission:``: the HTTPS webhook server (``port``, ``address``, ``service_name`` or
    None = the manifests' default), where its certificate comes from (``cert_dir``: a mounted
    folder, or None = self-signed, shared through Secret ``cert_secret`` or None = the
    default name), and ``webhooks``. Defaults: the schema's ``admission``."""

    webhooks: tuple[WebhookSpec, ...]
    port: int = _d("admission", "port")
    address: str = _d("admission", "address")
    service_name: str | None = None
    cert_dir: str | None = None
    cert_secret: str | None = None


@dataclass(frozen=True)
class GCSpec:
    """The main job's use of kinrun's GC policy (``kinrun.gc.policy``):
    ``collect_frozen_every`` seconds between collections of the cyclic garbage the policy froze
    (``kinrun.gc.policy.collect_frozen``: a full collection, pausing every thread about
    0.8 s per 10,000 cached Pods); 0.0 (default) = never."""

    collect_frozen_every: float = _seconds("gc", "collectFrozenEvery")


@dataclass(frozen=True)
class ReloadSpec:
    """Hot reload (``kinrun.reload``), seconds each: ``poll_interval`` between looks at the
    config and plugin files (0 = never; SIGHUP only), ``sync_timeout`` for the informers a
    reload adds, ``discovery_interval`` between rediscoveries of non-built-in kinds (0 =
    never). Defaults: the schema's ``reload``."""

    poll_interval: float = _seconds("reload", "pollInterval")
    sync_timeout: float = _seconds("reload", "syncTimeout")
    discovery_interval: float = _seconds("reload", "discoveryInterval")


@dataclass(frozen=True)
class ShutdownSpec:
    """How the main job stops (``kinrun.app``): ``drain_timeout`` seconds the workqueues get
    to drain after a stop signal (the default is the schema's ``default`` of
    ``shutdown.drainTimeout``, filled in by :mod:`kinrun.config.build`; ``--drain-timeout``
    overrides it, see ``RunOptions.effective_drain_timeout``)."""

    drain_timeout: float


@dataclass(frozen=True)
class RbacRuleSpec:
    """One extra RBAC PolicyRule of ``rbac.extraRules`` (Kubernetes RBAC, rbac/v1 PolicyRule):
    ``api_groups`` ("" = core), ``resources`` (plurals, ``x/status`` for a subresource),
    ``verbs``, ``resource_names`` (empty = any), ``namespaces``: granted by a Role in each, or
    None for cluster-wide (a ClusterRole; ``kinrun.rbac`` grants a cluster-scoped resource
    there whatever ``namespaces`` says); ``location`` of the rule in the file."""

    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()
    namespaces: tuple[str, ...] | None = None
    location: Location = _NOWHERE


@dataclass(frozen=True)
class RbacSpec:
    """``rbac:``: ``extra_rules``, what ``kinrun rbac``/``manifests`` grant beyond what
    ``kinrun.rbac`` computes from the plan (empty by default)."""

    extra_rules: tuple[RbacRuleSpec, ...] = ()


@dataclass(frozen=True)
class Config:
    """A whole config file.

    ``file``: the path as given (or the ``file=`` label of load_text); ``base_dir``: the config
    file's folder, which relative paths resolve against; ``plugins``: the specs exactly as
    written (module names, file paths) — they are the plugin names ``reconcile.hooks`` lists, and
    ``kinrun.plugin_manager.load_plugins(config.plugins, config.base_dir)`` resolves them;
    :meth:`plugin_files` gives the absolute paths of the file specs; ``informers``: name -> InformerSpec (file order); ``controllers`` in file order;
    ``leader_election``/``metrics``: None when not configured; ``gc``: a GCSpec (defaults when
    not configured); ``shutdown``: a ShutdownSpec (always set by ``load``, with the schema's
    defaults when not configured; None only on a Config made by hand); ``namespace_override``:
    the namespace of :meth:`with_namespace`, else None; ``rbac``: an RbacSpec (extra RBAC
    rules for ``kinrun rbac``; empty when not configured).
    """

    file: str
    base_dir: Path
    api_version: str = "kinrun.dev/v1alpha1"
    kind: str = "ControllerConfig"
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    plugins: tuple[str, ...] = ()
    plugin_locations: tuple[Location, ...] = ()  # each plugins[i]'s place, for its errors
    templates: TemplatesSpec = field(default_factory=TemplatesSpec)
    informers: FrozenMap = field(default_factory=FrozenMap)
    controllers: tuple[ControllerSpec, ...] = ()
    leader_election: LeaderElectionSpec | None = None
    metrics: MetricsSpec | None = None
    probes: ProbesSpec | None = None  # None: no probe endpoint (``probes:`` omitted)
    gc: GCSpec = field(default_factory=GCSpec)
    shutdown: ShutdownSpec | None = None
    reload: ReloadSpec = field(default_factory=ReloadSpec)
    namespace_override: str | None = None
    rbac: RbacSpec = field(default_factory=RbacSpec)
    sharding: ShardingSpec | None = None  # None: not sharded (``sharding:`` omitted)
    crds: tuple[str, ...] = ()  # CRD files/folders as written (``kinrun.crds``), for rbac
    admission: AdmissionSpec | None = None  # None: no webhook server (``admission:`` omitted)

    def plugin_files(self) -> FrozenMap:
        """Plugin spec -> absolute file path, for the specs that are files (``./hooks.py``)."""
        return FrozenMap({spec: str(resolve_path(spec, self.base_dir))
                          for spec in self.plugins if is_plugin_path(spec)})

    def crd_paths(self) -> tuple[Path, ...]:
        """The ``crds:`` files and folders as absolute paths (relative ones against the config
        file's folder), in the order written."""
        return tuple(resolve_path(c, self.base_dir) for c in self.crds)

    def informer(self, name: str) -> InformerSpec:
        """The informer called ``name``; KeyError if none."""
        return self.informers[name]

    def controller(self, name: str) -> ControllerSpec:
        """The controller called ``name``; KeyError if none."""
        for spec in self.controllers:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def with_namespace(self, namespace: str) -> Config:
        """A copy restricted to ``namespace`` (CLI ``--namespace``): every informer's
        ``namespaces`` becomes ``(namespace,)``, and ``namespace_override`` records it.

        Whether a kind is namespaced is only known at discovery: the main job must ignore
        ``namespaces`` for cluster-scoped resources (as for any namespaces in the file).
        """
        informers = FrozenMap({name: dataclasses.replace(spec, namespaces=(namespace,))
                               for name, spec in self.informers.items()})
        return dataclasses.replace(self, informers=informers, namespace_override=namespace)
