"""The ``children`` action: named children applied as a graph, with readiness, conditional
children, drift correction and ordered deletion.

::

    - children:
        resources:
          - name: config
            manifest: {apiVersion: v1, kind: ConfigMap, metadata: {name: "{{ obj.metadata.name }}"}}
          - name: deployment
            manifest: |
              apiVersion: apps/v1
              kind: Deployment
              ...  # may read children.config (its live object)
          - name: service
            dependsOn: [deployment]           # applied once the Deployment is available
            manifest: ...
          - name: ingress
            includeWhen: "obj.spec.ingress.enabled"
            readyWhen: "child.status.loadBalancer.ingress | default([]) | length > 0"
            manifest: ...                       # reads children.service.spec.clusterIP

The graph (which child waits for which, the order) is compiled once, at load time
(:mod:`kinrun.config.children`). One reconcile renders, in that order (as kro walks a
ResourceGraphDefinition; Java Operator SDK's dependent resources with ``dependsOn`` and ready
conditions):

1. a child is **excluded** when a child it depends on is excluded or its ``includeWhen`` is
   false (kro's rule for ``includeWhen``);
2. else it **waits** when a child it depends on is not ready (absent, or its readiness false):
   it is not rendered, and nothing is pruned in this reconcile (a Deployment briefly
   unavailable never costs its Service). The reconcile runs again when that child changes
   (kinrun watches every child kind, ``kinrun.config.children``), never on a timer;
3. else its manifest is rendered with ``children`` (the live objects of the children before
   it, from the informer cache: None when absent) and becomes a member of the parent's
   ApplySet (:func:`kinrun.actions.applyset.member_apply`: part-of label, owner reference);
   it is applied only when it **drifted** (below); its readiness is ``readyWhen`` (with
   ``child``, its live object) or :func:`kinrun.actions.readiness.default_ready`.

Drift: a child is sent when it is absent from the cache, when its rendered manifest differs
from the one this process last applied (a digest), when the live object is another one (uid),
or when it changed since that apply (a resourceVersion newer than the answer: an older one is
the cache not having caught up with our own write) and the live object no longer contains
every field the manifest sets (a metadata-only cache holds no spec: such a child that
changed is sent). So a hand edit of
a field the config sets is reverted, a deleted child is recreated, a status update of a
Deployment sends nothing, and a child nobody touched costs no request. The digests and
versions live in memory (per child, bounded by the children in the cache): after a restart or
a reload every child is applied once more.

Pruning reads the cache (the child informers' ``applyset`` index), not the server: a child of
this set that is not wanted is deleted with a uid precondition, in reverse dependency order;
kinds the parent still records but the config no longer names are LISTed from the server as
``applySet`` does. The parent's ApplySet metadata is written as ``applySet`` writes it (steps
1 and 4 of :mod:`kinrun.actions.applyset`), with every kind the config names.

After it renders, later actions see ``children`` (name -> live object or None),
``children_ready`` (every wanted child exists and is ready) and ``children_not_ready``
(``{name, reason}`` of the first child that is not, or None); a ``status`` action then writes
the condition ``status.graphCondition`` (``Ready``) from them.

Deletion: with ``finalizer:``, the finalize program starts with :class:`ChildrenTeardown`: the
children of the last kind in dependency order are deleted first, and the finalizer stays
(the reconcile runs again when they are gone) until none is left. Without a finalizer the
parent's deletion leaves the children to Kubernetes' garbage collector (owner references),
in no order.

Departures from kro, on purpose: a child reads other children only from the cache, never
from the answer of an apply in the same reconcile, so a child that reads a new one is
applied by the reconcile the new child's watch event starts; a waiting child's existing
object is kept (kro deletes nothing either until the graph resolves).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kinrun.actions.applyset import (
    ApplySetAction, ApplySetStep, ParentState, Send, _check_parent, applyset_id, group_kind,
    layout, member_apply,
)
from kinrun.actions.kinds import (CheckError, Scope, Stop, Target, _bool, _options, _setting,
                                  compile_document, is_true, reconciled_target)
from kinrun.actions.readiness import Readiness, default_ready
from kinrun.actions.steps import RequeueAfter, Step
from kinrun.cache.store import meta_namespace_key
from kinrun.config.children import (CHILDREN, INDEX, PART_OF, ChildDecl,
                                    child_informer_name, declared_children)
from kinrun.errors import ConflictError, NotFoundError
from kinrun.kube.builtin_kinds import builtin_scope
from kinrun.kube.request import ApiRequest
from kinrun.kube.resources import split_api_version
from kinrun.templating import SourceLocation, TemplateEngine, TemplateRenderError

READY, NOT_READY, WAITING, EXCLUDED = "ready", "not-ready", "waiting", "excluded"
"""The states of a child in one reconcile."""
TEARDOWN_RECHECK = 60.0
"""Seconds after which a finalize that waits for children to go runs again even without their
deletion events (a safety net: each deleted child's event queues the parent at once)."""
CORRECTION_RECHECK = 10.0
"""Seconds after which a reconcile that held back the readers of a drifted child runs again
even without the corrected child's event (a safety net: an apply that changes nothing on the
server sends no event)."""
ChildKey = tuple[str, str, "str | None", str]


@dataclass(frozen=True)
class ChildState:
    """One child in one reconcile: ``state`` (:data:`READY` ...), ``reason`` (why it is not
    ready, waits, or is excluded; "" when ready), ``applied`` (it is sent this reconcile)."""

    state: str
    reason: str = ""
    applied: bool = False

    def describe(self) -> dict[str, Any]:
        """JSON-ready, as ``kinrun render`` shows it."""
        out: dict[str, Any] = {"state": self.state}
        if self.reason:
            out["reason"] = self.reason
        if self.applied:
            out["applied"] = True
        return out


class _Child:
    """A compiled child: its declaration, manifest template and expressions."""

    def __init__(self, decl: ChildDecl, engine: TemplateEngine) -> None:
        self.decl = decl
        self.manifest = compile_document(decl.manifest, engine, decl.manifest_location)
        self.ready_when = (engine.value(decl.ready_when, decl.location.child(".readyWhen"))
                           if decl.ready_when else None)
        self.include_when = (engine.value(decl.include_when,
                                          decl.location.child(".includeWhen"))
                             if decl.include_when else None)

    def render(self, variables: Mapping[str, Any]) -> Any:
        try:
            return self.manifest(variables)
        except TemplateRenderError as exc:
            exc.location = self.decl.manifest_location
            raise

    def included(self, variables: Mapping[str, Any]) -> bool:
        if self.include_when is None:
            return True
        return is_true(_evaluate(self.include_when, variables, self.decl, "includeWhen"))

    def readiness(self, live: Any, variables: Mapping[str, Any]) -> Readiness:
        if self.ready_when is None or live is None:
            return default_ready(live)
        value = _evaluate(self.ready_when, {**variables, "child": live}, self.decl, "readyWhen")
        return (True, "") if is_true(value) else (False, f"readyWhen is {value!r}")


def _evaluate(expression: Any, variables: Mapping[str, Any], decl: ChildDecl,
              key: str) -> Any:
    try:
        return expression.evaluate(variables)
    except TemplateRenderError as exc:
        exc.location = decl.location.child(f".{key}")
        raise


class ChildrenAction:
    """``children: {resources: [{name, manifest, dependsOn, readyWhen, includeWhen}],
    ownerReference, prune, force, fieldManager}`` (module docstring).

    ``render(scope)`` gives one :class:`ChildrenStep` (whose writes may be none) and sets ``children``, ``children_ready`` and
    ``children_not_ready`` in ``scope.variables``. CheckError (the reconcile fails, nothing
    sent) for a rendered manifest that is not one object, a child of another set, or a parent
    managed by another tool. Thread-safe: the drift records are kept under a lock; one key is
    never rendered by two workers at once (the workqueue's guarantee)."""

    kind = CHILDREN
    VERBS: tuple[str, ...] = ("patch", "create", "delete")
    """RBAC verbs on each child's resource (``kinrun.rbac``): server-side apply (``patch``,
    ``create``) and prune's DELETE; its reads are the child informers' LIST and WATCH,
    granted as any informer's. Without ``prune``: :attr:`APPLY_VERBS`."""
    APPLY_VERBS = ApplySetAction.APPLY_VERBS
    PARENT_VERBS = ApplySetAction.PARENT_VERBS
    DRY_RUN_VERBS = ApplySetAction.DRY_RUN_VERBS

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation,
                 field_manager: str, fields: Mapping[str, Any] | None = None) -> None:
        value = _options(value, loc, CHILDREN)
        decls = declared_children(value["resources"], fields or {}, loc)
        self.children: tuple[_Child, ...] = tuple(_Child(d, engine) for d in decls)
        self.decls: tuple[ChildDecl, ...] = decls
        self._owner = _bool(_setting(value, CHILDREN, "ownerReference"), loc,
                            "children.ownerReference")
        self.prune = _bool(_setting(value, CHILDREN, "prune"), loc, "children.prune")
        self._force = _bool(_setting(value, CHILDREN, "force"), loc, "children.force")
        self._field_manager = str(value.get("fieldManager") or field_manager)
        self.read_by_others = frozenset(r for d in decls for r in d.reads)
        """Children whose live state another child's templates read."""
        self.literal_kinds = tuple(dict.fromkeys((d.api_version, d.kind) for d in decls))
        """(apiVersion, kind) of the children, dependencies first: what the parent records."""
        self._records: dict[tuple[str, str], tuple[str, str, str]] = {}
        """(informer, cache key) -> (uid, manifest digest, resourceVersion) of the last apply
        this process sent and the server answered; under ``_lock``."""
        self._deleted: dict[tuple[str, str], str] = {}
        """(informer, cache key) -> uid of a child this process deleted; under ``_lock``."""
        self._lock = threading.Lock()
        self._swept = 64

    # -- rendering ----------------------------------------------------------------------------

    def render(self, scope: Scope) -> list[Step]:
        if scope.obj is None:
            raise CheckError("children: the reconciled object (the parent) is gone; children "
                             "cannot run in onDelete")
        parent = reconciled_target(scope, CHILDREN)
        set_id = applyset_id(parent.name, parent.namespace, parent.kind,
                             split_api_version(parent.api_version)[0])
        meta = scope.obj.get("metadata") or {}
        _check_parent(meta.get("labels") or {}, meta.get("annotations") or {}, set_id)
        graph = _Graph(self, scope, parent, set_id)
        graph.walk()
        scope.variables.update(graph.variables())
        self._sweep(scope)
        step: list[Step] = [self._step(scope, parent, set_id, graph)]
        if graph.drifted:  # its corrected version's event queues the parent; a safety net
            step.append(RequeueAfter(CORRECTION_RECHECK))
        return step

    def _step(self, scope: Scope, parent: Target, set_id: str, graph: _Graph) -> ChildrenStep:
        wanted_gk = {group_kind(v, k): v for v, k in self.literal_kinds}
        wanted = ParentState(frozenset(wanted_gk), frozenset(
            key[2] for key in graph.keep if key[2] is not None and key[2] != parent.namespace))
        prune = self.prune and not graph.waiting()
        plan = layout(scope.obj.get("metadata") or {}, set_id, wanted, wanted_gk,
                      self.literal_kinds, parent.namespace, prune)
        mine = {(split_api_version(v)[0], k) for v, k in self.literal_kinds}
        leftover = tuple(k for k in plan.kinds if (k[1], k[2]) not in mine) if prune else ()
        unwanted = self._unwanted(scope, parent, set_id, graph.keep) if prune else []
        deletes, deleting = tuple(r for r, _ in unwanted), tuple(w for _, w in unwanted)
        inner = ApplySetStep(parent, set_id, plan.begin, tuple(r for r, _ in graph.applies),
                             bool(leftover), leftover, plan.namespaces, frozenset(graph.keep),
                             plan.end)
        return ChildrenStep(inner, tuple(rec for _, rec in graph.applies), deletes,
                            tuple((d.name, graph.states[d.name]) for d in self.decls),
                            self._record, deleting, self._record_delete)

    def _unwanted(self, scope: Scope, parent: Target, set_id: str, keep: set[ChildKey]
                  ) -> list[tuple[ApiRequest, tuple[str, str, str]]]:
        """The DELETEs of this set's children in the cache that are not wanted, the kinds in
        reverse dependency order (module docstring, "Pruning"), each with (informer, cache
        key, uid); a child this process deleted already is left out."""
        out = []
        for api_version, kind in reversed(self.literal_kinds):
            informer = child_informer_name(scope.controller, api_version, kind)
            group = split_api_version(api_version)[0]
            items = _lister(scope, informer).by_index(INDEX, set_id)
            for cache_key, item in sorted((meta_namespace_key(i), i) for i in items):
                m = item.get("metadata") or {}
                key = (group, kind, m.get("namespace") or None, m.get("name"))
                if key in keep or m.get("deletionTimestamp") or m.get("uid") == parent.uid:
                    continue
                with self._lock:  # sent already: the cache has not seen it go yet
                    if self._deleted.get((informer, cache_key)) == m.get("uid"):
                        continue
                out.append((_delete(api_version, kind, m),
                            (informer, cache_key, str(m.get("uid")))))
        return out

    def _record_delete(self, where: tuple[str, str, str]) -> None:
        """Remember that the child (informer, cache key, uid) was deleted (or found gone), so
        a reconcile on a cache that still holds it does not delete it again."""
        with self._lock:
            self._deleted[where[:2]] = where[2]

    # -- drift records ------------------------------------------------------------------------

    def drifted(self, informer: str, key: str, digest: str, live: Any,
                body: Mapping[str, Any]) -> bool:
        """Whether the child rendered as ``body`` (its ``digest``) must be sent, given its
        ``live`` object in the cache of ``informer`` under ``key`` (module docstring,
        "Drift"). A metadata-only cache holds no spec to compare: a changed version of such a
        child is sent unless the manifest sets metadata only."""
        if live is None:
            return True
        meta = live.get("metadata") or {}
        with self._lock:
            record = self._records.get((informer, key))
        if record is None or record[:2] != (meta.get("uid"), digest):
            return True
        if record[2] == meta.get("resourceVersion") or _older(meta.get("resourceVersion"),
                                                               record[2]):
            return False  # ours, or older than ours: the cache has not caught up yet
        if contains(live, body):
            with self._lock:
                self._records[(informer, key)] = (record[0], digest,
                                                  meta.get("resourceVersion"))
            return False
        return True

    def _record(self, where: tuple[str, str, str], answer: Any) -> None:
        """Remember the server's answer to the apply of one child (``where``: informer, cache
        key, digest)."""
        meta = (answer or {}).get("metadata") if isinstance(answer, dict) else None
        if not meta:
            return
        informer, key, digest = where[:3]
        with self._lock:
            self._records[(informer, key)] = (meta.get("uid"), digest,
                                              meta.get("resourceVersion"))

    def _sweep(self, scope: Scope) -> None:
        """Drop the records of children no longer in the cache, once the records doubled
        since the last sweep (amortized O(1) per reconcile; bounds them by the cache)."""
        with self._lock:
            if len(self._records) + len(self._deleted) < 2 * self._swept:
                return
            keys = [*self._records, *self._deleted]
        gone = [k for k in keys if k[0] in scope.ctx.listers
                and scope.ctx.listers[k[0]].get(k[1]) is None]
        with self._lock:
            for k in gone:
                self._records.pop(k, None)
                self._deleted.pop(k, None)
            self._swept = max(64, len(self._records) + len(self._deleted))

    # -- deletion -----------------------------------------------------------------------------

    def teardown(self, scope: Scope) -> tuple[list[ApiRequest], int]:
        """The deletion step of a terminating parent: (the DELETEs of this set's children of
        the last kind in dependency order that still has some, how many children of that
        kind remain). ([], 0): none is left."""
        parent = reconciled_target(scope, CHILDREN)
        set_id = applyset_id(parent.name, parent.namespace, parent.kind,
                             split_api_version(parent.api_version)[0])
        for api_version, kind in reversed(self.literal_kinds):
            lister = _lister(scope, child_informer_name(scope.controller, api_version, kind))
            items = sorted(lister.by_index(INDEX, set_id), key=meta_namespace_key)
            if items:
                deletes = [_delete(api_version, kind, i.get("metadata") or {}) for i in items
                           if not (i.get("metadata") or {}).get("deletionTimestamp")]
                return deletes, len(items)
        return [], 0


class _Graph:
    """One reconcile's walk of the children in dependency order (module docstring, 1-3)."""

    def __init__(self, action: ChildrenAction, scope: Scope, parent: Target,
                 set_id: str) -> None:
        self.action, self.scope, self.parent, self.set_id = action, scope, parent, set_id
        self.view: dict[str, Any] = {}
        self.states: dict[str, ChildState] = {}
        self.keep: set[ChildKey] = set()
        self.applies: list[tuple[ApiRequest, tuple[str, str, str, bool]]] = []
        self.drifted: set[str] = set()

    def walk(self) -> None:
        """Decide every child's state, render and check the wanted ones."""
        excluded: set[str] = set()
        for child in self.action.children:
            decl = child.decl
            variables = {**self.scope.variables, CHILDREN: dict(self.view)}
            blocked = next((d for d in decl.depends_on if d in excluded), None)
            if blocked is not None or not child.included(variables):
                excluded.add(decl.name)
                self.view[decl.name] = None
                self.states[decl.name] = ChildState(EXCLUDED, f"{blocked} is excluded"
                                                    if blocked else "includeWhen is false")
                continue
            waiting = next((d for d in decl.depends_on
                            if self.states[d].state != READY), None)
            if waiting is not None:
                self.view[decl.name] = None
                before = self.states[waiting]
                self.states[decl.name] = ChildState(WAITING, before.reason if before.state ==
                                                    WAITING else f"waiting for {waiting}: "
                                                    f"{before.reason}")
                continue
            self._member(child, variables)

    def _member(self, child: _Child, variables: dict[str, Any]) -> None:
        decl, action = child.decl, self.action
        request, key = member_apply(child.render(variables), self.scope, self.parent,
                                    self.set_id, owner=action._owner, force=action._force,
                                    field_manager=action._field_manager,
                                    what=f"children: {decl.name}")
        if (request.api_version, request.kind) != (decl.api_version, decl.kind):
            raise CheckError(f"children: {decl.name}: the manifest rendered a "
                             f"{request.kind} of {request.api_version}, not the "
                             f"{decl.kind} of {decl.api_version} it names")
        if key in self.keep:
            raise CheckError(f"children: {decl.name}: {request.kind} {request.name} is "
                             "another child's object too")
        if request.namespace is None and builtin_scope(decl.api_version, decl.kind):
            raise CheckError(f"children: {decl.name}: a {decl.kind} is namespaced and the "
                             "parent is cluster-scoped: give metadata.namespace")
        if self.parent.namespace is not None and request.namespace != self.parent.namespace:
            where = (f"is in namespace {request.namespace}" if request.namespace else
                     "is cluster-scoped")
            raise CheckError(f"children: {decl.name}: {request.kind} {request.name} {where}, "
                             f"the parent in {self.parent.namespace}: a child lives in its "
                             "parent's namespace (its owner reference is how kinrun hears of "
                             "its changes)")
        self.keep.add(key)
        informer = child_informer_name(self.scope.controller, decl.api_version, decl.kind)
        cache_key = meta_namespace_key(request.body)  # as the informer keys it
        live = _lister(self.scope, informer).get(cache_key)
        self.view[decl.name] = live
        digest = hashlib.sha256(json.dumps(request.body, sort_keys=True,
                                           default=str).encode()).hexdigest()
        applied = action.drifted(informer, cache_key, digest, live, request.body or {})
        if applied:
            self.applies.append((request, (informer, cache_key, digest, live is None)))
        ready, why = child.readiness(live, {**variables, CHILDREN: dict(self.view)})
        if applied and decl.name in action.read_by_others and live is not None \
                and not contains(live, request.body or {}):
            ready, why = False, "being corrected (its cached version drifted)"
            self.drifted.add(decl.name)  # who reads it waits for the corrected version
        self.states[decl.name] = ChildState(READY if ready else NOT_READY, why, applied)

    def waiting(self) -> bool:
        """Whether some child waits for another (then nothing is pruned)."""
        return any(s.state == WAITING for s in self.states.values())

    def variables(self) -> dict[str, Any]:
        """``children``, ``children_ready`` and ``children_not_ready`` for later actions."""
        first = next(((name, s) for name, s in self.states.items()
                      if s.state in (NOT_READY, WAITING)), None)
        return {CHILDREN: dict(self.view), "children_ready": first is None,
                "children_not_ready": None if first is None else {
                    "name": first[0], "reason": first[1].reason, "state": first[1].state}}


@dataclass(frozen=True)
class ChildrenStep:
    """The writes of one ``children`` action for one reconcile: ``inner`` (the parent's
    ApplySet metadata before and after, the applies of the drifted children in dependency
    order, and the server-side prune of kinds the config no longer names); ``records``: per
    apply, (informer, cache key, digest) to remember its answer by; ``deletes``: the cached
    unwanted children, in reverse dependency order; ``states``: (name, ChildState) per child,
    for logs and ``kinrun render``; ``record``: called with each apply's answer (``records``
    hold a 4th item: the child was absent from the cache, so it is read first and refused
    when someone else's object has its name);
    ``deleting``: per delete, (informer, cache key, uid), given to ``record_delete`` once
    sent."""

    inner: ApplySetStep
    records: tuple[tuple[str, str, str, bool], ...]
    deletes: tuple[ApiRequest, ...]
    states: tuple[tuple[str, ChildState], ...]
    record: Any
    deleting: tuple[tuple[str, str, str], ...] = ()
    record_delete: Any = None

    def summary(self) -> str:
        """``children of Foo ns/name: 1 applied, 0 deleted, ready`` (or the first waiting)."""
        p = self.inner.parent
        where = f"{p.namespace}/{p.name}" if p.namespace else p.name
        pending = next((f"{n} {s.state}" for n, s in self.states if s.state in
                        (NOT_READY, WAITING)), "all ready")
        return (f"children of {p.kind} {where}: {len(self.inner.applies)} applied, "
                f"{len(self.deletes)} deleted, {pending}")

    def describe_all(self) -> list[dict[str, Any]]:
        """Every planned write as a JSON-ready dict (``kinrun render``), then the graph."""
        inner = self.inner
        out: list[dict[str, Any]] = []
        if inner.begin is not None:
            out.append(inner.parent_patch(inner.begin).describe())
        out.extend(r.describe() for r in inner.applies)
        out.extend(r.describe() for r in self.deletes)
        if inner.prune:
            out.append(inner.prune_description())
        if inner.end is not None:
            out.append(inner.parent_patch(inner.end).describe())
        out.append({"children": {name: s.describe() for name, s in self.states}})
        return out

    def _check_not_taken(self, request: ApiRequest, client: Any) -> None:
        """A child absent from the cache may still exist, made by someone else (the cache
        holds this set's children only): GET it, and refuse to take over an object that does
        not carry this set's part-of label (it would be overwritten, owned and later pruned).
        Raises ChildTakenError."""
        try:
            current = client.get(request.api_version, request.kind, request.name,
                                 request.namespace)
        except NotFoundError:
            return
        labels = ((current or {}).get("metadata") or {}).get("labels") or {}
        if current and labels.get(PART_OF) != self.inner.set_id:
            where = f"{request.namespace}/{request.name}" if request.namespace else request.name
            raise ChildTakenError(
                f"children: {request.kind} {where} exists and is not a child of this parent "
                f"(no {PART_OF}={self.inner.set_id}): kinrun does not take over an object "
                "it did not make; delete or rename it, or label it to adopt it")

    def execute(self, send: Send, client: Any) -> list[Any]:
        """Send the writes in order, as ``applySet``'s (``ApplySetStep``): parent metadata
        (step 1), the applies (a child absent from the cache read first; each answer
        remembered for drift), the cached deletes (404: gone already, 409: replaced
        meanwhile; both left alone), the prune of leftover kinds, parent metadata (step 4).
        Returns the applies' answers. Raises the ApiError of a failed write, or
        ChildTakenError (the later writes are not sent)."""
        def apply(i: int, request: ApiRequest) -> Any:
            if self.records[i][3]:
                self._check_not_taken(request, client)
            answer = send(request)
            self.record(self.records[i], answer)
            return answer

        def delete_unwanted() -> None:
            for request, where in zip(self.deletes, self.deleting):
                try:
                    send(request)
                except (NotFoundError, ConflictError):
                    pass  # gone already, or replaced meanwhile (uid precondition): left alone
                self.record_delete(where)
        return self.inner._write(send, client, apply=apply, before_prune=delete_unwanted)


class ChildTakenError(CheckError):
    """A child's name is taken by an object that is not this set's (ChildrenStep)."""


class ChildrenTeardown:
    """The first action of a finalize program whose controller has a ``children`` action:
    deletes the children of the last kind in dependency order that still has some and asks to
    run again (:data:`TEARDOWN_RECHECK` seconds, or at their deletion events); with a
    ``wait`` twin, ends the finalize there, so the finalizer stays until every child is
    gone and the user's ``finalize`` actions run once, after."""

    kind = "children"
    VERBS: tuple[str, ...] = ()

    def __init__(self, actions: Sequence[ChildrenAction], wait: bool = False) -> None:
        self.actions, self.wait = tuple(actions), wait

    def render(self, scope: Scope) -> list[Step]:
        for action in reversed(self.actions):
            deletes, remaining = action.teardown(scope)
            if remaining:
                if self.wait:
                    raise Stop(f"children: waiting for {remaining} child(ren) to be deleted "
                               "before the finalizer goes", level="info")
                return [*deletes, RequeueAfter(TEARDOWN_RECHECK)]
        return []


def contains(live: Any, wanted: Any) -> bool:
    """Whether ``live`` holds every field ``wanted`` sets, with equal values (mappings: each
    key of ``wanted``, recursively; lists: the same length, item by item; anything else:
    equal). What server-side apply would leave unchanged, up to defaulting and
    normalisation (a quantity written ``0.5`` is stored ``500m``: then the child is sent, and
    the server changes nothing)."""
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(
            k in live and contains(live[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(
            contains(a, b) for a, b in zip(live, wanted))
    return live == wanted


def _older(cached: Any, written: Any) -> bool:
    """Whether the cached resourceVersion is older than the one our apply was answered with:
    compared as integers, as kinrun's read-your-writes does (KEP-5647's staleness check in
    client-go 1.36; kube-apiserver's versions are etcd revisions). Unparsable: False."""
    try:
        return int(cached) < int(written)
    except (TypeError, ValueError):
        return False


def _lister(scope: Scope, informer: str) -> Any:
    try:
        return scope.ctx.listers[informer]
    except KeyError:
        raise CheckError(f"children: the informer {informer!r} of this controller's children "
                         "is not running (the config was not loaded by kinrun.config?)") from None


def _delete(api_version: str, kind: str, meta: Mapping[str, Any]) -> ApiRequest:
    """The DELETE of a cached child, with a uid precondition (a replaced object is left
    alone: 409)."""
    uid = meta.get("uid")
    return ApiRequest("delete", api_version, kind, str(meta.get("name")),
                      meta.get("namespace") or None,
                      body={"preconditions": {"uid": uid}} if uid else None,
                      params={"propagationPolicy": "Background"})
