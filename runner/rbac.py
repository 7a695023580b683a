"""Least-privilege RBAC, computed from a compiled Plan (``kinrun rbac``, ``kinrun manifests``).

What a kinrun process sends is fixed by its plan, so the permissions it needs are too
(Kubernetes RBAC, ``rbac.authorization.k8s.io/v1``; verbs as the API server's authorizer
names them, https://kubernetes.io/docs/reference/access-authn-authz/authorization/#determine-the-request-verb):

=================================  ==========================================================
informer                           ``list``, ``watch`` on its resource, in each namespace it
                                   watches, or cluster-wide (all namespaces; cluster-scoped)
primary informer with a selector   ``get`` on it too: a departure is confirmed by one GET
                                   (``kinrun.reconcile.confirm_gone_by_get``)
action                             its kind's ``VERBS`` (``kinrun.actions.kinds``: apply =
                                   ``patch`` + ``create``, patch = ``patch`` on ``R`` or
                                   ``R/status``, delete = ``delete``, event = ``create`` on
                                   core ``events``, status = ``patch`` on the primary's
                                   ``R/status``) on the resource it writes; ``--dry-run``
                                   adds ``DRY_RUN_VERBS`` (``get``: the current object is read);
                                   create = ``create`` on the manifest's resource
``applySet`` action                ``patch``, ``create``, ``list``, ``delete`` on each child's
                                   resource in its namespaces (``patch``, ``create`` without
                                   prune); ``patch`` on the primary (its ApplySet metadata)
controller ``finalizer``           ``patch`` on the primary's resource (add and remove it)
plugin action kind                 its ``RBAC_RULES`` attribute, in the reconciled namespaces;
                                   cluster-wide for a cluster-scoped resource (built-in, or a
                                   CRD of scope Cluster in ``crds:``/``--crd``)
leader election (not dry-run)      ``get``, ``update`` on the Lease by name and ``create`` on
                                   ``leases`` in the Lease's namespace
``metrics.secure`` (not dry-run)   ``create`` on ``tokenreviews`` and ``subjectaccessreviews``
                                   (what ``system:auth-delegator`` grants)
``sharding`` (not dry-run)         ``create``, ``delete``, ``get``, ``list``, ``update`` on
                                   ``leases`` in ``sharding.namespace``; ``patch`` on every
                                   sharded informer's resource where it watches (labels),
                                   ``get`` on the sharded primaries (a move or a deletion)
``admission`` self-signed           ``get``, ``update`` on the CA Secret by name and ``create``
(not dry-run)                      on ``secrets`` in kinrun's namespace; ``get``, ``patch`` on
                                   the webhook configurations by name (their caBundle)
``rbac.extraRules``                as written (what hook plugins call); a rule's
                                   ``namespaces`` do not apply to its cluster-scoped
                                   resources (granted cluster-wide; ``namespaces`` itself
                                   stays in them: a Role in N grants Namespace N)
=================================  ==========================================================

Discovery (``/api``, ``/apis``) is granted to every authenticated user by the default
``system:discovery`` ClusterRole, so it needs nothing here.

Which resource an action writes is read statically: the manifest's (or ``target:``'s)
``apiVersion`` and ``kind`` must be literal text (a manifest template is parsed with each
``{{ }}`` replaced by a placeholder and each ``{% %}``/``{# #}`` tag dropped), and a built-in
kind maps to its plural without discovery (``kinrun.kube.builtin_kinds``). Its namespace is
the reconciled object's when ``namespace`` is absent or a template that renders to the
object's namespace (``{{ obj.metadata.namespace }}``, ``{{ key.split('/')[0] }}``: tried
with a probe object in a strict sandbox), a literal namespace when literal, cluster-wide when
``""``. A templated kind or namespace, or a CRD (unknown plural and scope), raises a
ConfigError at the action's file:line, unless the CRD's manifest is among the config's
``crds:`` files (or ``kinrun rbac --crd FILE|DIR``: :mod:`kinrun.crds`), a ``resolve``
function (discovery: ``kinrun rbac --kubeconfig``) names it, or ``rbac.extraRules`` has a
rule with the action's verbs (for the CRD's group), which is then trusted to cover it
(recorded in ``notes``). A scope is never guessed: where the permission's scope depends on
whether a resource is namespaced (Events about an object of a custom kind go to its
namespace, or to ``default`` for a cluster-scoped one) and nothing says, it is refused the
same way.

Pure: no I/O (``resolve`` is the caller's). :class:`RbacNeeds` is immutable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kinrun import safe_yaml
from kinrun.config.model import Config, InformerSpec, Location, RbacRuleSpec, thaw
from kinrun.config.naming import default_name
from kinrun.crds import CrdSet
from kinrun.errors import ConfigError
from kinrun.kube.builtin_kinds import builtin_kind, builtin_resource, builtin_scope
from kinrun.kube.resources import split_api_version
from kinrun.plan import ControllerPlan, Plan

CLUSTER = ""
"""The scope of a cluster-wide permission (a ClusterRole); any other scope is a namespace."""

LEASE_VERBS = ("get", "create", "update")
"""What ``kinrun.leader_election`` sends for its Lease (client-go's LeaseLock does the same)."""

Resolve = Callable[[str, str], "Resource | None"]
"""(apiVersion, kind or plural) -> the Resource discovery reports, None when unknown."""


@dataclass(frozen=True, order=True)
class Permission:
    """One verb on one resource in one scope: ``scope`` a namespace or :data:`CLUSTER`;
    ``api_group`` ("" core); ``resource`` a plural, ``R/status`` for the status subresource;
    ``verb``; ``resource_names``: only these objects (empty: any)."""

    scope: str
    api_group: str
    resource: str
    verb: str
    resource_names: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = "cluster-wide" if self.scope == CLUSTER else f"in {self.scope}"
        group = self.api_group or "core"
        names = f" {','.join(self.resource_names)}" if self.resource_names else ""
        return f"{self.verb} {group}/{self.resource}{names} {where}"


@dataclass(frozen=True)
class Resource:
    """A resource as RBAC names it: ``group``, ``plural``, ``namespaced`` (None: unknown)."""

    group: str
    plural: str
    namespaced: bool | None


@dataclass(frozen=True)
class RbacNeeds:
    """What a plan needs: ``permissions`` -> why (one line per source, ``file:line: path:
    ...``); ``notes``: what was trusted rather than computed (hooks, extraRules covering an
    action). Build with :func:`rbac_needs`."""

    permissions: Mapping[Permission, tuple[str, ...]]
    notes: tuple[str, ...] = ()

    def scopes(self) -> list[str]:
        """The scopes with a permission, sorted (:data:`CLUSTER` first)."""
        return sorted({p.scope for p in self.permissions})

    def without(self, permission: Permission) -> RbacNeeds:
        """A copy lacking ``permission`` (the minimality test removes each in turn)."""
        return RbacNeeds({p: w for p, w in self.permissions.items() if p != permission},
                         self.notes)

    def rules(self, scope: str) -> list[dict[str, Any]]:
        """The PolicyRules of ``scope``: one per (group, names, verb set), resources sorted."""
        verbs: dict[tuple[str, str, tuple[str, ...]], set[str]] = {}
        for p in self.permissions:
            if p.scope == scope:
                verbs.setdefault((p.api_group, p.resource, p.resource_names), set()).add(p.verb)
        merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
        for (group, resource, names), vs in verbs.items():
            merged.setdefault((group, names, tuple(sorted(vs))), []).append(resource)
        rules = []
        for (group, names, vs), resources in sorted(merged.items()):
            rule: dict[str, Any] = {"apiGroups": [group], "resources": sorted(resources)}
            if names:
                rule["resourceNames"] = list(names)
            rule["verbs"] = list(vs)
            rules.append(rule)
        return rules


def rbac_needs(plan: Plan, *, dry_run: bool = False, resolve: Resolve | None = None,
               crds: CrdSet | None = None, webhook: tuple[str, str] | None = None
               ) -> RbacNeeds:
    """The permissions ``plan`` needs (see the module docstring for the sources).

    ``dry_run``: for ``kinrun CONFIG --dry-run`` (adds the reads, drops the Lease);
    ``crds``: CRDs read from files besides the config's ``crds:`` (``--crd``); ``resolve``:
    discovery for kinds neither the built-in table nor a CRD file knows (None: none). Raises
    a located ConfigError for an informer or action whose resource or scope cannot be told
    and that no ``rbac.extraRules`` rule covers, or for a ``crds:`` file that cannot be
    read. ``webhook``: (kinrun's namespace, the webhook Service's name) for ``admission:``
    (None: ``kinrun manifests``' defaults: ``default``, ``kinrun-<stem>-webhook``)."""
    files = config_crds(plan.config)
    known = CrdSet([*files, *(crds or ())])
    return _Collector(plan, dry_run, chain(crd_resolver(known), resolve), webhook,
                      known).collect()


def config_crds(config: Config) -> CrdSet:
    """The CRDs of ``config.crds`` (paths relative to the config file's folder). Raises
    ConfigError naming the file for one that cannot be read, at the ``crds`` key."""
    try:
        return CrdSet.load(config.crds, config.base_dir)
    except ConfigError as exc:
        raise ConfigError(f"crds: {exc}", file=config.file) from None


def crd_resolver(crds: CrdSet) -> Resolve:
    """A :data:`Resolve` answering from CRD manifests (:mod:`kinrun.crds`)."""
    def resolve(api_version: str, kind_or_resource: str) -> Resource | None:
        found = crds.lookup(api_version, kind_or_resource)
        return None if found is None else Resource(found.group, found.plural, found.namespaced)
    return resolve


def chain(*resolvers: Resolve | None) -> Resolve:
    """The first answer of ``resolvers`` (None ones skipped)."""
    present = [r for r in resolvers if r is not None]

    def resolve(api_version: str, kind_or_resource: str) -> Resource | None:
        for r in present:
            found = r(api_version, kind_or_resource)
            if found is not None:
                return found
        return None
    return resolve


# -- the collector ----------------------------------------------------------------------------


_REASON = Mapping[Permission, tuple[str, ...]]


class _Unknown(Exception):
    """A resource, scope or namespace that cannot be told statically (the message says why;
    ``group``: the API group concerned, when known)."""

    def __init__(self, message: str, group: str | None = None) -> None:
        super().__init__(message)
        self.group = group


@dataclass
class _Collector:
    plan: Plan
    dry_run: bool
    resolve: Resolve | None
    webhook: tuple[str, str] | None = None
    crds: CrdSet | None = None
    permissions: dict[Permission, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def config(self) -> Config:
        return self.plan.config

    def collect(self) -> RbacNeeds:
        scopes = {name: self._informer(inf.spec) for name, inf in self.plan.informers.items()}
        for controller in self.plan.controllers:
            self._controller(controller, scopes)
        self._leader_election()
        self._secure_metrics()
        self._sharding(scopes)
        self._admission()
        for i, rule in enumerate(self.config.rbac.extra_rules):
            self._extra_rule(i, rule)
        return RbacNeeds({p: tuple(w) for p, w in sorted(self.permissions.items())},
                         tuple(self.notes))

    def grant(self, scopes: Iterable[str], group: str, resource: str, verbs: Iterable[str],
              why: str, names: tuple[str, ...] = ()) -> None:
        for scope in scopes:
            for verb in verbs:
                reasons = self.permissions.setdefault(
                    Permission(scope, group, resource, verb, names), [])
                if why not in reasons:
                    reasons.append(why)

    # informers: list + watch where they watch
    def _informer(self, spec: InformerSpec) -> tuple[Resource, tuple[str, ...]] | None:
        where = f"{spec.location}: informer {spec.name}"
        try:
            res = self._resource(spec.api_version, spec.kind, spec.resource)
            scopes = _watch_scopes(spec, res)
        except _Unknown as exc:
            self._uncovered(spec.location, f"informer {spec.name}: {exc}",
                            _group_of(spec.api_version) or "", ("list", "watch"))
            return None
        self.grant(scopes, res.group, res.plural, ("list", "watch"), f"{where}: list/watch")
        return res, scopes

    def _controller(self, controller: ControllerPlan,
                    scopes: Mapping[str, tuple[Resource, tuple[str, ...]] | None]) -> None:
        primary = scopes[controller.spec.primary]
        informer = self.plan.informers[controller.spec.primary]
        if primary is not None and informer.matches is not None:
            res, where = primary
            self.grant(where, res.group, res.plural, ("get",),
                       f"{controller.spec.location}: controller {controller.name}: GET to "
                       f"confirm a departure from a selector-filtered informer")
        if controller.hooks is not None:
            self.notes.append(f"{controller.spec.location}: controller {controller.name} runs "
                              "hook plugins: what they send through ctx.client is not "
                              "computed; grant it in rbac.extraRules")
        rec = controller.spec.reconcile
        if controller.finalizer is not None and primary is not None:
            res, where = primary  # the finalizer is added and removed with JSON patches
            self.grant(where if res.namespaced else (CLUSTER,), res.group, res.plural,
                       ("patch",), f"{controller.spec.finalizer_location}: finalizer "
                       f"{controller.finalizer}: add and remove it")
        for specs, program in ((rec.actions, controller.actions),
                               (rec.on_delete, controller.on_delete),
                               (rec.finalize, controller.finalize),
                               (rec.on_error, controller.on_error)):
            if program is None:
                continue
            for spec, compiled in zip(specs, program.actions):
                self._action(spec, compiled.impl, primary)

    # actions
    def _action(self, spec: Any, impl: Any, primary: tuple[Resource, tuple[str, ...]] | None
                ) -> None:
        loc: Location = spec.location
        why = f"{loc}: {spec.kind}"
        if hasattr(impl, "rbac_rules"):  # a plugin action kind
            self._plugin_action(spec, impl, primary)
            return
        verbs = tuple(impl.VERBS) + (tuple(getattr(impl, "DRY_RUN_VERBS", ()))
                                     if self.dry_run else ())
        if not verbs:
            return
        value = thaw(spec.raw[spec.kind]) if spec.kind in spec.raw else {}
        if getattr(impl, "PARENT_VERBS", None) is not None:  # applySet: children + parent
            self._children(spec, impl, value, primary)
            return
        try:
            if getattr(impl, "RESOURCE", None) is not None:  # event: a new core/v1 Event
                group, plural = impl.RESOURCE
                target = _target_fields(value.get("target"))
                scopes = self._event_scopes(_namespace_mode(target), primary)
                self.grant(scopes, group, plural, verbs, why)
                return
            fields = (_document_fields(value.get("manifest")) if spec.kind in ("apply", "create")
                      else _target_fields(value.get("target")))
            res, scopes = self._written(fields, primary)
        except _Unknown as exc:
            self._uncovered(loc, f"{spec.kind}: {exc}", exc.group, verbs)
            return
        plural = res.plural
        if spec.kind == "patch" and value.get("subresource"):
            plural = f"{plural}/{value['subresource']}"
        elif getattr(impl, "SUBRESOURCE", None):  # status: RESOURCE/status of the object
            plural = f"{plural}/{impl.SUBRESOURCE}"
        self.grant(scopes, res.group, plural, verbs, why)

    def _children(self, spec: Any, impl: Any, value: Mapping[str, Any],
                  primary: tuple[Resource, tuple[str, ...]] | None) -> None:
        """An ``applySet``: ``PARENT_VERBS`` on the reconciled object's resource (its ApplySet
        labels and annotations), and on each child's resource, in its namespaces, ``VERBS``
        (apply + prune's list and delete; ``APPLY_VERBS`` without prune). The children are read
        statically from ``manifests`` (every document or list item, ``{% %}`` tags dropped, so
        a ``{% for %}`` body counts once). What a set recorded before and no longer renders
        (a kind removed from the config) is not covered: grant it in rbac.extraRules."""
        loc: Location = spec.location
        why = f"{loc}: {spec.kind}"
        dry = tuple(getattr(impl, "DRY_RUN_VERBS", ())) if self.dry_run else ()
        separate = isinstance(value.get("parent"), Mapping)  # applySet.parent: GET, apply
        parent_verbs = tuple(impl.SEPARATE_PARENT_VERBS if separate else impl.PARENT_VERBS)
        try:
            res, scopes = self._written(_target_fields(value["parent"]) if separate else None,
                                        primary)
        except _Unknown as exc:
            self._uncovered(loc, f"{spec.kind}: {exc}", exc.group, parent_verbs)
        else:
            self.grant(scopes, res.group, res.plural, parent_verbs + dry, f"{why}: parent")
        verbs = tuple(impl.VERBS if impl.prune else impl.APPLY_VERBS) + dry
        try:
            children = ([_document_fields(r.get("manifest")) for r in value.get("resources") or []]
                        if spec.kind == "children" else _children_fields(value.get("manifests")))
        except _Unknown as exc:
            self._uncovered(loc, f"{spec.kind}: {exc}", exc.group, verbs)
            return
        for fields in children:
            try:
                res, scopes = self._written(fields, primary)
            except _Unknown as exc:
                self._uncovered(loc, f"{spec.kind}: {exc}", exc.group, verbs)
                continue
            self.grant(scopes, res.group, res.plural, verbs, f"{why}: child")

    def _plugin_action(self, spec: Any, impl: Any,
                       primary: tuple[Resource, tuple[str, ...]] | None) -> None:
        loc = spec.location
        if impl.rbac_rules is None:
            self._uncovered(loc, f"plugin action kind {spec.kind!r} declares no RBAC_RULES "
                                 "(an attribute of its function)", None, ())
            return
        scopes = primary[1] if primary is not None and primary[0].namespaced else (CLUSTER,)
        for rule in impl.rbac_rules:
            for group in rule.get("apiGroups", ()):
                for resource in rule.get("resources", ()):  # a Role cannot grant a cluster one
                    where = (CLUSTER,) if self._cluster_scoped(group, resource) else scopes
                    self.grant(where, group, resource, rule.get("verbs", ()),
                               f"{loc}: plugin action kind {spec.kind}",
                               tuple(rule.get("resourceNames") or ()))

    def _cluster_scoped(self, group: str, resource: str) -> bool:
        """Whether ``resource`` of ``group`` (a plural, ``R/sub`` for a subresource) is known
        to be cluster-scoped and out of a Role's reach: a built-in kind's, or a CRD's
        (``crds:``, ``--crd``) of scope Cluster. False for a namespaced or unknown one
        (discovery is not asked: it needs a version), and for ``namespaces``: a Role in
        namespace N grants access to the Namespace N itself (kube-apiserver's RequestInfo
        takes ``/api/v1/namespaces/N`` as in namespace N), least privilege a ClusterRole
        would widen to every Namespace."""
        plural = resource.split("/", 1)[0]
        if (group, plural) == ("", "namespaces"):
            return False
        kind = builtin_kind(f"{group}/v1" if group else "v1", plural)
        if kind is not None:
            return builtin_scope(f"{group}/v1" if group else "v1", kind) is False
        return any(c.group == group and c.plural == plural and not c.namespaced
                   for c in self.crds or ())

    def _written(self, fields: Mapping[str, Any] | None,
                 primary: tuple[Resource, tuple[str, ...]] | None
                 ) -> tuple[Resource, tuple[str, ...]]:
        """The resource and scopes of an apply/patch/delete target (None: the reconciled
        object)."""
        if fields is None:
            if primary is None:
                raise _Unknown("the reconciled object's resource is unknown")
            res, scopes = primary
            return res, scopes if res.namespaced else (CLUSTER,)
        api_version, kind = fields.get("apiVersion"), fields.get("kind")
        for name, value in (("apiVersion", api_version), ("kind", kind)):
            if not isinstance(value, str) or isinstance(value, _Expr):
                raise _Unknown(f"its {name} is {'templated' if isinstance(value, _Expr) else 'missing'}"
                               ": kinrun cannot tell which resource it writes")
        res = self._resource(api_version, kind, None)
        if res.namespaced is False:
            return res, (CLUSTER,)
        if res.namespaced is None:
            raise _Unknown(f"the scope of {kind} ({api_version}) is unknown: {_GIVE_CRD}", res.group)
        try:
            mode = _namespace_mode(fields)
        except _Unknown:
            if primary is not None and primary[0] == _NAMESPACES \
                    and _renders_namespace_name(fields["namespace"]):
                return res, (CLUSTER,)  # into the reconciled Namespace: any of them
            raise
        if mode is _RECONCILED:
            if primary is None:
                raise _Unknown("the reconciled object's namespaces are unknown")
            return res, primary[1] if primary[0].namespaced else (CLUSTER,)
        return res, (CLUSTER,) if mode == "" else (mode,)

    def _event_scopes(self, mode: Any, primary: tuple[Resource, tuple[str, ...]] | None
                      ) -> tuple[str, ...]:
        """Where an event action creates Events: the target's namespace, ``default`` for none
        (``kinrun.actions.kinds.EventAction``)."""
        if mode is _RECONCILED:
            if primary is None:
                raise _Unknown("the reconciled object's namespaces are unknown")
            if primary[0].namespaced is None:  # its namespace, or "default": never guessed
                raise _Unknown(f"whether {primary[0].plural} ({primary[0].group}) is namespaced "
                               f"is unknown, so where its Events go is too: {_GIVE_CRD}",
                               "")
            return primary[1] if primary[0].namespaced else ("default",)
        return ("default",) if mode == "" else (mode,)

    def _resource(self, api_version: str, kind: str | None, resource: str | None) -> Resource:
        group = _group_of(api_version)
        if group is None:
            raise _Unknown(f"apiVersion {api_version!r} is malformed")
        if resource is not None:
            kind_of = builtin_kind(api_version, resource)
            if kind_of is not None:
                return Resource(group, resource, builtin_scope(api_version, kind_of))
        else:
            plural = builtin_resource(api_version, kind or "")
            if plural is not None:
                return Resource(group, plural, builtin_scope(api_version, kind or ""))
        found = self.resolve(api_version, resource or kind or "") if self.resolve else None
        if found is not None:
            return found
        if resource is not None:
            return Resource(group, resource, None)
        raise _Unknown(f"{kind} ({api_version}) is not a built-in kind: its resource (plural) "
                       f"and scope are unknown: {_GIVE_CRD}", group)

    def _leader_election(self) -> None:
        le = self.config.leader_election
        if le is None or self.dry_run:
            return
        why = f"{self.config.file}: leaderElection: Lease {le.namespace}/{le.lease_name}"
        self.grant((le.namespace,), "coordination.k8s.io", "leases", ("get", "update"), why,
                   (le.lease_name,))
        # a create is authorized before the object has a name: resourceNames cannot limit it
        self.grant((le.namespace,), "coordination.k8s.io", "leases", ("create",), why)

    def _secure_metrics(self) -> None:
        """``metrics.secure``: who scrapes is asked of the API server (``kinrun.kube.
        delegated_auth``), as the ``system:auth-delegator`` ClusterRole grants."""
        metrics = self.config.metrics
        if metrics is None or not metrics.secure or self.dry_run:
            return
        why = f"{self.config.file}: metrics.secure: authenticate and authorize scrapers"
        self.grant((CLUSTER,), "authentication.k8s.io", "tokenreviews", ("create",), why)
        self.grant((CLUSTER,), "authorization.k8s.io", "subjectaccessreviews", ("create",), why)

    def _sharding(self, scopes: Mapping[str, tuple[Resource, tuple[str, ...]] | None]) -> None:
        """``sharding``: the replicas' membership Leases and the sharder (kinrun.sharding)."""
        spec = self.config.sharding
        if spec is None or self.dry_run:  # a dry run runs unsharded
            return
        why = f"{self.config.file}: sharding: ring {spec.ring}"
        # one Lease per replica (named after it), the sharder's election Lease: read, create,
        # renew, take over, free (delete); the sharder lists the ring's Leases
        self.grant((spec.namespace,), "coordination.k8s.io", "leases",
                   ("create", "delete", "get", "list", "update"), f"{why}: membership Leases")
        for name, role in self.plan.sharded.items():
            found = scopes.get(name)
            if found is None:
                continue
            res, where = found
            self.grant(where, res.group, res.plural, ("patch",),
                       f"{why}: informer {name}: the sharder labels and drains its objects"
                       + (", replicas acknowledge drains" if role == "primary" else ""))
            if role == "primary":
                self.grant(where, res.group, res.plural, ("get",),
                           f"{why}: informer {name}: GET tells a move from a deletion")

    def _admission(self) -> None:
        """Self-signed webhook certificates: the CA Secret and the caBundle
        (``kinrun.admission.certs``); mounted ones need nothing."""
        from kinrun.sharding.admission import effective_admission

        spec = effective_admission(self.config)  # admission:, sharding.admission's webhook
        if spec is None or spec.cert_dir is not None or self.dry_run:
            return
        from kinrun.admission.certs import CONFIGURATION_KINDS

        from kinrun.admission.manifests import webhook_service_name

        namespace, service = self.webhook or (  # kinrun manifests' defaults
            "default", webhook_service_name(self.config, default_name(Path(self.config.file))))
        secret = spec.cert_secret or f"{service}-certs"
        why = f"{self.config.file}: admission: CA Secret {namespace}/{secret}"
        self.grant((namespace,), "", "secrets", ("get", "update"), why, (secret,))
        self.grant((namespace,), "", "secrets", ("create",), why)  # no name before create
        for type_, kind in CONFIGURATION_KINDS.items():
            if any(w.type == type_ for w in spec.webhooks):
                self.grant((CLUSTER,), "admissionregistration.k8s.io", f"{kind.lower()}s",
                           ("get", "patch"), f"{self.config.file}: admission: caBundle of "
                           f"{kind} {service}", (service,))

    def _extra_rule(self, i: int, rule: RbacRuleSpec) -> None:
        scopes = rule.namespaces if rule.namespaces is not None else (CLUSTER,)
        for group in rule.api_groups:
            for resource in rule.resources:  # a Role cannot grant a cluster-scoped one
                where = (CLUSTER,) if self._cluster_scoped(group, resource) else scopes
                self.grant(where, group, resource, rule.verbs, f"{rule.location}",
                           tuple(rule.resource_names))

    def _uncovered(self, loc: Location, problem: str, group: str | None,
                   verbs: tuple[str, ...]) -> None:
        """Record ``problem`` as covered by an extra rule granting ``verbs`` (in ``group``
        when known; any rule for a plugin kind that declares nothing), else raise it."""
        for i, rule in enumerate(self.config.rbac.extra_rules):
            if set(verbs) <= set(rule.verbs) and (group is None or group in rule.api_groups):
                self.notes.append(f"{loc}: {problem}; trusting rbac.extraRules[{i}] "
                                  f"({rule.location})")
                return
        need = f" with verbs {', '.join(verbs)}" if verbs else ""
        groups = f" for apiGroups [{group!r}]" if group is not None else ""
        raise loc.error(f"{problem}; kinrun rbac cannot grant it: add a rule{need}{groups} "
                        "to rbac.extraRules")


_GIVE_CRD = ("list its CustomResourceDefinition file under crds: in the config (or pass "
             "--crd FILE|DIR), or ask a cluster (--kubeconfig)")


def _group_of(api_version: str) -> str | None:
    try:
        return split_api_version(api_version)[0]
    except ValueError:
        return None


def _watch_scopes(spec: InformerSpec, res: Resource) -> tuple[str, ...]:
    if res.namespaced is False or spec.namespaces is None:
        return (CLUSTER,)  # a ClusterRole grants a namespaced resource in all namespaces
    if res.namespaced is None:
        raise _Unknown(f"the scope of {spec.resource or spec.kind} ({spec.api_version}) is "
                       f"unknown: {_GIVE_CRD}")
    return tuple(spec.namespaces)


# -- reading targets statically ---------------------------------------------------------------


class _Expr(str):
    """A field value that is (or contains) a template; its text is the template source."""


_RECONCILED = object()
"""The namespace mode of a target without ``namespace`` (or one templated to the reconciled
object's namespace)."""

_EXPR = re.compile(r"\{\{.*?\}\}", re.S)
_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.S)
_TOKEN = "KINRUNRBACX{}X"
_TOKEN_RX = re.compile(r"KINRUNRBACX(\d+)X")


def _tokenized(template: str) -> tuple[str, list[str]]:
    """``template`` with its tags and comments dropped and each ``{{ }}`` expression replaced
    by a numbered placeholder, readable as YAML; and the expressions, by number (for
    :func:`_untokenize`)."""
    exprs: list[str] = []

    def token(match: re.Match[str]) -> str:
        exprs.append(match.group(0))
        return _TOKEN.format(len(exprs) - 1)
    return _EXPR.sub(token, _TAG.sub("", template)), exprs


def _document_fields(manifest: Any) -> Mapping[str, Any] | None:
    """An apply manifest's ``apiVersion``, ``kind`` and ``namespace`` (from ``metadata``),
    templated values as :class:`_Expr`. _Unknown when a template manifest cannot be parsed."""
    if isinstance(manifest, Mapping):
        doc: Any = manifest
    elif isinstance(manifest, str):
        text, exprs = _tokenized(manifest)
        try:
            doc = safe_yaml.load(text)
        except yaml.YAMLError as exc:
            raise _Unknown(f"its manifest cannot be read without rendering it ({exc})") from None
        doc = _untokenize(doc, exprs)
    else:
        raise _Unknown("its manifest is neither a mapping nor a template")
    if not isinstance(doc, Mapping):
        raise _Unknown("its manifest is not a mapping")
    fields = {k: doc[k] for k in ("apiVersion", "kind") if k in doc}
    meta = doc.get("metadata")
    if isinstance(meta, Mapping) and "namespace" in meta:
        fields["namespace"] = meta["namespace"]
    return fields


def _children_fields(manifests: Any) -> list[Mapping[str, Any]]:
    """The ``apiVersion``/``kind``/``namespace`` fields of each child an ``applySet``'s
    ``manifests`` names: every YAML document of a template (``{{ }}`` as placeholders, tags
    dropped), each item of a document that is a list; or each manifest of a literal list."""
    if isinstance(manifests, list):
        return [_document_fields(m) for m in manifests]
    if not isinstance(manifests, str):
        raise _Unknown("its manifests are neither a list nor a template")
    text, exprs = _tokenized(manifests)
    try:
        docs = safe_yaml.load_all(text)
    except yaml.YAMLError as exc:
        raise _Unknown(f"its manifests cannot be read without rendering them ({exc})") from None
    out = []
    for doc in docs:
        for item in (doc if isinstance(doc, list) else [doc]):
            if item is None:
                continue
            if not isinstance(item, Mapping):
                raise _Unknown("a child in its manifests is not a mapping")
            out.append(_document_fields(_untokenize(item, exprs)))
    return out


def _untokenize(value: Any, exprs: list[str]) -> Any:
    if isinstance(value, str):
        if not _TOKEN_RX.search(value):
            return value
        return _Expr(_TOKEN_RX.sub(lambda m: exprs[int(m.group(1))], value))
    if isinstance(value, Mapping):
        return {k: _untokenize(v, exprs) for k, v in value.items()}
    if isinstance(value, list):
        return [_untokenize(v, exprs) for v in value]
    return value


def _target_fields(target: Any) -> Mapping[str, Any] | None:
    """A ``target:`` mapping with templated strings as :class:`_Expr`; None when absent."""
    if target is None:
        return None
    if not isinstance(target, Mapping):
        raise _Unknown("its target is not a mapping")
    return {k: _Expr(v) if isinstance(v, str) and ("{{" in v or "{%" in v) else v
            for k, v in target.items()}


_PROBE_NS = "kinrun-probe-namespace"


def _namespace_mode(fields: Mapping[str, Any] | None) -> Any:
    """_RECONCILED, "" (cluster-scoped / none) or a literal namespace. _Unknown for a
    template that does not render to the reconciled object's namespace."""
    if fields is None or "namespace" not in fields:
        return _RECONCILED
    value = fields["namespace"]
    if value is None or value == "":
        return ""
    if isinstance(value, _Expr):
        if _renders_reconciled_namespace(value):
            return _RECONCILED
        raise _Unknown(f"its namespace {str(value)!r} is templated and is not the reconciled "
                       "object's namespace")
    if not isinstance(value, str):
        raise _Unknown(f"its namespace {value!r} is not a string")
    return value


_NAMESPACES = Resource("", "namespaces", False)


def _renders_namespace_name(template: str) -> bool:
    """Whether ``template`` renders to the name of a probe Namespace (as ``obj``/``old`` and
    ``key``): a controller of Namespaces writing into the Namespace it reconciles, so into
    any namespace (a cluster-wide grant)."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    probe = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": _PROBE_NS}}
    try:
        env = SandboxedEnvironment(undefined=StrictUndefined)
        out = env.from_string(template).render(obj=probe, old=probe, key=_PROBE_NS)
    except Exception:  # noqa: BLE001 - anything else it needs makes it unknown
        return False
    return out.strip() == _PROBE_NS


def _renders_reconciled_namespace(template: str) -> bool:
    """Whether ``template`` renders to the namespace of a probe object (as ``obj``/``old``
    and in ``key``), in a strict sandbox with nothing else defined."""
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    probe = {"apiVersion": "v1", "kind": "Probe",
             "metadata": {"name": "probe", "namespace": _PROBE_NS}}
    try:
        env = SandboxedEnvironment(undefined=StrictUndefined)
        out = env.from_string(template).render(obj=probe, old=probe, key=f"{_PROBE_NS}/probe")
    except Exception:  # noqa: BLE001 - anything else it needs makes it unknown
        return False
    return out.strip() == _PROBE_NS


# -- objects ----------------------------------------------------------------------------------


def rbac_objects(needs: RbacNeeds, *, name: str, service_account: str,
                 service_account_namespace: str,
                 labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The Roles, ClusterRole and their bindings that grant ``needs`` to the ServiceAccount
    ``service_account_namespace/service_account``: per namespace a Role and RoleBinding
    ``name`` in it, and a ClusterRole and ClusterRoleBinding ``name`` for the cluster-wide
    permissions. Plain dicts, in a stable order (cluster first, then namespaces sorted)."""
    subject = {"kind": "ServiceAccount", "name": service_account,
               "namespace": service_account_namespace}
    objects: list[dict[str, Any]] = []
    for scope in needs.scopes():
        cluster = scope == CLUSTER
        role = "ClusterRole" if cluster else "Role"
        meta: dict[str, Any] = {"name": name}
        if not cluster:
            meta["namespace"] = scope
        if labels:
            meta["labels"] = dict(labels)
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role,
                        "metadata": dict(meta), "rules": needs.rules(scope)})
        objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": f"{role}Binding",
                        "metadata": dict(meta),
                        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role,
                                    "name": name},
                        "subjects": [dict(subject)]})
    return objects


def discovery_resolver(client: Any) -> Resolve:
    """A :data:`Resolve` asking ``client`` (a ``kinrun.kube.Client``) discovery; None for a
    kind the server does not serve."""
    from kinrun.kube.discovery import UnknownKindError

    def resolve(api_version: str, kind_or_resource: str) -> Resource | None:
        try:
            ref = client.resolve(api_version, kind_or_resource)
        except UnknownKindError:
            return None
        return Resource(ref.group, ref.resource, ref.namespaced)
    return resolve
