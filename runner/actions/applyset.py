"""The ``applySet`` action: a set of children applied together, and pruned when no longer wanted.

Membership is recorded as kubectl's ApplySet does it (KEP-3659, "kubectl apply --prune"
redesign; the label and annotation keys of ``k8s.io/kubectl/pkg/cmd/apply/applyset.go``), so
a kubectl that knows ApplySets (1.27+) reads what kinrun made:

* the **parent** is the reconciled object, or the object ``applySet.parent`` names (a
  ConfigMap, Secret or custom resource, server-side applied; :class:`SeparateParent`); its id is
  ``applyset-<base64url(sha256("<name>.<namespace>.<kind>.<group>"))>-v1`` (unpadded URL-safe
  base64, RFC 4648; namespace and group "" when cluster-scoped / core) and it carries the label
  ``applyset.kubernetes.io/id=<id>`` and the annotations ``applyset.kubernetes.io/tooling``
  (``kinrun/v<version>``), ``applyset.kubernetes.io/contains-group-kinds`` (the children's
  group-kinds, ``Kind.group`` or ``Kind`` for the core group, sorted, comma-separated) and, when
  children live outside the parent's namespace (or the parent is cluster-scoped),
  ``applyset.kubernetes.io/additional-namespaces``;
* every **child** carries the label ``applyset.kubernetes.io/part-of=<id>``.

One reconcile of an applySet, in this order (kubectl's, ``ApplySet.BeforeApply`` then prune):

1. the parent's metadata is patched (merge patch) to the *union* of the group-kinds and
   namespaces it records and the wanted ones, so a child never exists that the parent does not
   lead to (a crash after an apply leaves it findable); the patch carries the parent's
   ``resourceVersion`` as the informer cache has it, so a stale cache is a 409 Conflict
   (retried) and never shrinks what the server records. Skipped when nothing changes;
2. every wanted child is server-side applied (with the part-of label and, where the child can
   have one, an owner reference to the parent: same namespace, or a cluster-scoped parent);
3. prune (``prune: true``): for each recorded or wanted group-kind, and each the manifests
   name literally (so a parent replaced without its annotations still finds its children), in
   the parent's and each recorded or wanted namespace (once cluster-wide for a cluster-scoped
   kind), the objects labelled
   ``part-of=<id>`` are LISTed from the server; each one that is not wanted, carries the label
   with this id (checked again on the object), is not the parent and is not already being
   deleted, is DELETEd with a ``uid`` precondition (an object replaced meanwhile is left alone:
   409). Nothing without this set's label is ever deleted, whatever its name or kind;
4. the parent's metadata is patched to exactly the wanted group-kinds and namespaces (skipped
   when equal to step 1's), with the resourceVersion that step 1 answered.

Steps 2-4 are decided at render time except what only the server knows (the live children to
prune, the version of a group recorded but no longer wanted: ``GET /apis/<group>``).

kubectl interop: kubectl accepts as ApplySet parents only Secrets, ConfigMaps and custom
resources whose CRD is labelled ``applyset.kubernetes.io/is-parent-type=true``; kubectl refuses
to change a set whose tooling annotation names another tool, and kinrun refuses the same
(CheckError): a parent that kubectl manages is not taken over. Not tested here: the kubectl of
the test machines (Debian's 1.20) predates ApplySets.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from kinrun import __version__
from kinrun import safe_yaml
from kinrun.actions.kinds import (
    loop_items,
    CheckError, Scope, Target, _bool, _set_namespace, _options, _setting, check_manifest,
    compile_tree, is_itself, own, reconciled_target, resolve_target,
)
from kinrun.actions.steps import Step
from kinrun.config.manifest_kinds import flatten_documents, literal_kinds
from kinrun.errors import ConflictError, NotFoundError
from kinrun.kube.request import ApiRequest
from kinrun.kube.resources import split_api_version
from kinrun.templating import SourceLocation, TemplateEngine, TemplateRenderError, as_location
from kinrun.config.children import PART_OF  # the label on each child: the set's id

ID_LABEL = "applyset.kubernetes.io/id"
"""Label on the parent: its ApplySet id."""
TOOLING = "applyset.kubernetes.io/tooling"
"""Annotation on the parent: ``<tool>/<version>`` of the tool that manages the set."""
GROUP_KINDS = "applyset.kubernetes.io/contains-group-kinds"
"""Annotation on the parent: the group-kinds of its children (``Kind.group``, sorted)."""
NAMESPACES = "applyset.kubernetes.io/additional-namespaces"
"""Annotation on the parent: namespaces of children other than the parent's own."""
PARENT_CORE_KINDS = ("ConfigMap", "Secret")
"""Core kinds that may be a separate ApplySet parent (KEP-3659; else a custom resource)."""
TOOL = "kinrun"
TOOLING_VALUE = f"{TOOL}/v{__version__}"

_SHADOWED = ("obj", "old", "key", "controller", "reason", "results")
"""Template names an ``as:`` may not hide (the manifests need them)."""

Send = Callable[[ApiRequest], Any]
"""Sends one request as the program's executor does (logged, errors located): its answer."""
_log = logging.getLogger("kinrun.actions.applyset")


def applyset_id(name: str, namespace: str | None, kind: str, group: str) -> str:
    """The ApplySet id of a parent (KEP-3659 "ApplySet ID"): ``applyset-`` + the unpadded
    URL-safe base64 of sha256 of ``<name>.<namespace>.<kind>.<group>`` + ``-v1`` (55 chars, a
    valid label value)."""
    digest = hashlib.sha256(f"{name}.{namespace or ''}.{kind}.{group}".encode()).digest()
    return f"applyset-{base64.urlsafe_b64encode(digest).decode().rstrip('=')}-v1"


def group_kind(api_version: str, kind: str) -> str:
    """``Deployment.apps``; ``ConfigMap`` for the core group (as apimachinery GroupKind.String)."""
    group = split_api_version(api_version)[0]
    return f"{kind}.{group}" if group else kind


def split_group_kind(text: str) -> tuple[str, str]:
    """(group, kind) of ``Kind.group`` (apimachinery ParseGroupKind: split at the first dot)."""
    kind, _, group = text.partition(".")
    return group, kind


def _listed(value: Any) -> set[str]:
    return {part.strip() for part in str(value or "").split(",") if part.strip()}


@dataclass(frozen=True)
class ParentState:
    """What an ApplySet parent records: group-kinds (``Kind.group``) and additional
    namespaces."""

    group_kinds: frozenset[str]
    namespaces: frozenset[str]

    def annotations(self, current: Mapping[str, Any]) -> dict[str, Any]:
        """The merge patch of ``metadata.annotations`` that makes ``current`` record this state
        (additional-namespaces removed, as null, when empty); {} when it already does."""
        want: dict[str, Any] = {TOOLING: TOOLING_VALUE,
                                GROUP_KINDS: ",".join(sorted(self.group_kinds)),
                                NAMESPACES: ",".join(sorted(self.namespaces)) or None}
        patch = {}
        for key, value in want.items():
            if value is None:
                if key in current:
                    patch[key] = None
            elif current.get(key) != value:
                patch[key] = value
        return patch


@dataclass(frozen=True)
class ApplySetStep:
    """The writes of one ``applySet`` action for one reconcile (module docstring, steps 1-4).

    ``parent``: the reconciled object; ``set_id``; ``begin``: the merge patch of step 1 or None;
    ``applies``: the children's apply requests, in order; ``prune``: whether step 3 runs;
    ``kinds``: (apiVersion or None when only recorded, group, kind) to list; ``namespaces``:
    where namespaced kinds are listed; ``keep``: (group, kind, namespace, name) of the wanted
    children; ``end``: step 4's merge patch (its resourceVersion added when sent) or None;
    ``separate``: a parent other than the reconciled object (``applySet.parent``), whose
    state is read when the step executes (then ``begin``/``end``/``kinds`` are decided there).
    Immutable; ``execute`` keeps its state in locals.
    """

    parent: Target
    set_id: str
    begin: dict[str, Any] | None
    applies: tuple[ApiRequest, ...]
    prune: bool
    kinds: tuple[tuple[str | None, str, str], ...]
    namespaces: tuple[str, ...]
    keep: frozenset[tuple[str, str, str | None, str]]
    end: dict[str, Any] | None
    separate: SeparateParent | None = None

    def summary(self) -> str:
        """``applySet <id> of ConfigMap ns/name: 3 children``."""
        where = f"{self.parent.namespace}/{self.parent.name}" if self.parent.namespace \
            else self.parent.name
        return (f"applySet {self.set_id} of {self.parent.kind} {where}: "
                f"{len(self.applies)} children")

    def parent_patch(self, body: dict[str, Any]) -> ApiRequest:
        """The write of the parent's ApplySet metadata ``body`` (a merge patch of the
        reconciled object; a server-side apply of a separate parent)."""
        p = self.parent
        if self.separate is not None:  # server-side apply: the parent may not exist yet
            return self.separate.apply(body)
        return ApiRequest("patch", p.api_version, p.kind, p.name, p.namespace, body=body,
                          patch_type="merge")

    def prune_description(self) -> dict[str, Any]:
        """The prune step as ``kinrun render`` shows it (what is listed, what is kept)."""
        return {"prune": {
            "applySet": self.set_id,
            "labelSelector": f"{PART_OF}={self.set_id}",
            "groupKinds": sorted(f"{k}.{g}" if g else k for _v, g, k in self.kinds),
            "namespaces": list(self.namespaces),
            "keep": sorted(f"{k}{'.' + g if g else ''} {ns + '/' if ns else ''}{n}"
                           for g, k, ns, n in self.keep)}}

    def requests(self) -> list[ApiRequest | dict[str, Any]]:
        """The planned writes in order: parent patch, applies, the prune description (a dict),
        the final parent patch (its resourceVersion filled in when sent)."""
        out: list[ApiRequest | dict[str, Any]] = []
        if self.begin is not None:
            out.append(self.parent_patch(self.begin))
        elif self.separate is not None:  # not read yet: what it records when it is new
            out.append(self.parent_patch(self.separate.full(self.set_id,
                                                             self.separate.wanted)))
        out.extend(self.applies)
        if self.prune:
            out.append(self.prune_description())
        if self.end is not None:
            out.append(self.parent_patch(self.end))
        return out

    def describe_all(self) -> list[dict[str, Any]]:
        """Every planned write as a JSON-ready dict (``kinrun render``)."""
        return [r if isinstance(r, dict) else r.describe() for r in self.requests()]

    def execute(self, send: Send, client: Any) -> list[Any]:
        """Carry out steps 1-4 (module docstring): ``send`` each write, LIST and resolve through
        ``client`` (``resolve``, ``lister_watcher``, ``transport``). Returns the answers of the
        applies, in order. Raises the ApiError of a failed write (the later ones are not sent;
        the next reconcile starts over: every step is idempotent)."""
        if self.separate is not None:
            return self.separate.read(self, client)._write(send, client)
        return self._write(send, client)

    def _write(self, send: Send, client: Any, *,
               apply: Callable[[int, ApiRequest], Any] | None = None,
               before_prune: Callable[[], None] | None = None) -> list[Any]:
        """Steps 1-4 with the parent's state decided (``execute``). ``apply(i, request)``:
        sends apply number ``i`` (default ``send``); ``before_prune``: writes of the caller
        between the applies and step 3 (the ``children`` action's cached deletes)."""
        rv = self.parent.resource_version
        if self.begin is not None:
            answer = send(self.parent_patch(self.begin))
            rv = ((answer or {}).get("metadata") or {}).get("resourceVersion") or rv
        answers = [apply(i, req) if apply is not None else send(req)
                   for i, req in enumerate(self.applies)]
        if before_prune is not None:
            before_prune()
        if self.prune:
            self.prune_listed(send, client)
        if self.end is not None:
            body = dict(self.end)
            if rv:
                body["metadata"] = {**body["metadata"], "resourceVersion": rv}
            send(self.parent_patch(body))
        return answers

    def prune_listed(self, send: Send, client: Any) -> None:
        """Step 3 (module docstring): LIST each of ``kinds`` by this set's label, DELETE what
        is not wanted (a 409 on the uid precondition: replaced meanwhile, left alone)."""
        selector = f"{PART_OF}={self.set_id}"
        for api_version, group, kind in self.kinds:
            ref = _resolve(client, api_version, group, kind)
            if ref is None:
                continue
            scopes: Iterable[str | None] = self.namespaces if ref.namespaced else (None,)
            for namespace in scopes:
                listed = client.lister_watcher(ref, namespace=namespace,
                                               label_selector=selector).list()
                for item in listed.items:
                    request = self._unwanted(ref, group, item)
                    if request is None:
                        continue
                    try:
                        send(request)
                    except ConflictError:  # replaced since the LIST: not the object listed
                        _log.debug("applySet %s: %s changed meanwhile; left alone",
                                   self.set_id, request.summary())

    def _unwanted(self, ref: Any, group: str, item: Mapping[str, Any]) -> ApiRequest | None:
        """The DELETE of a listed object, or None when it must stay: wanted, not labelled with
        this set's id, the parent itself, or already terminating."""
        meta = item.get("metadata") or {}
        name, uid = meta.get("name"), meta.get("uid")
        namespace = meta.get("namespace") if ref.namespaced else None
        if (meta.get("labels") or {}).get(PART_OF) != self.set_id or not name:
            return None
        if meta.get("deletionTimestamp") or (uid and uid == self.parent.uid):
            return None
        if ref.namespaced:
            if (group, ref.kind, namespace, name) in self.keep:
                return None
        elif any((g, k, n) == (group, ref.kind, name) for g, k, _ns, n in self.keep):
            return None
        body = {"preconditions": {"uid": uid}} if uid else None
        return ApiRequest("delete", ref.api_version, ref.kind, name, namespace, body=body,
                          params={"propagationPolicy": "Background"})


@dataclass(frozen=True)
class Layout:
    """What one reconcile writes to a parent and lists: ``begin``/``end`` (merge patches of
    steps 1 and 4, or None), the ``kinds`` and ``namespaces`` prune lists."""

    begin: dict[str, Any] | None
    end: dict[str, Any] | None
    kinds: tuple[tuple[str | None, str, str], ...]
    namespaces: tuple[str, ...]


def layout(meta: Mapping[str, Any], set_id: str, wanted: ParentState,
           wanted_gk: Mapping[str, str], literal: Iterable[tuple[str, str]],
           namespace: str | None, prune: bool) -> Layout:
    """The parent writes and prune lists for a parent whose metadata is ``meta`` (module
    docstring, steps 1, 3, 4): step 1 records the union of what it records and ``wanted``;
    prune lists that union plus the ``literal`` (apiVersion, kind) pairs, in the union's and
    the parent's ``namespace``; step 4 records exactly ``wanted``. CheckError for a parent of
    another tool or set (``_check_parent``)."""
    labels, annotations = meta.get("labels") or {}, meta.get("annotations") or {}
    _check_parent(labels, annotations, set_id)
    recorded = ParentState(frozenset(_listed(annotations.get(GROUP_KINDS))),
                           frozenset(_listed(annotations.get(NAMESPACES))))
    union = ParentState(recorded.group_kinds | wanted.group_kinds,
                        recorded.namespaces | wanted.namespaces)
    begin = _metadata_patch(labels, annotations, set_id, union, meta.get("resourceVersion"))
    after = {**annotations, **(begin or {}).get("metadata", {}).get("annotations", {})}
    after = {k: v for k, v in after.items() if v is not None}
    end = _metadata_patch({ID_LABEL: set_id}, after, set_id, wanted, None) if prune else None
    listed = {gk: wanted_gk.get(gk) for gk in union.group_kinds}
    for api_version, kind in literal:
        listed.setdefault(group_kind(api_version, kind), api_version)
    kinds = tuple(sorted(((v,) + split_group_kind(gk) for gk, v in listed.items()),
                         key=lambda t: (t[1], t[2])))
    namespaces = tuple(sorted(union.namespaces | ({namespace} if namespace else set())))
    return Layout(begin, end, kinds if prune else (), namespaces)


@dataclass(frozen=True)
class SeparateParent:
    """An ApplySet parent other than the reconciled object (``applySet.parent``: a ConfigMap,
    a Secret or a custom resource, KEP-3659): ``manifest``, what is server-side applied to it
    (apiVersion, kind, name, namespace, the owner reference to the reconciled object);
    ``wanted`` and ``wanted_gk`` (group-kind -> apiVersion) of this reconcile's children;
    ``literal``: (apiVersion, kind) the manifests name; ``field_manager``; ``prune``.

    Its labels and annotations are written by server-side apply as the full set kinrun owns
    (so it is created when missing, and an annotation no longer set is removed), after a GET
    of its current state when the step executes. The reconciled object is never written."""

    manifest: dict[str, Any]
    wanted: ParentState
    wanted_gk: Mapping[str, str]
    literal: tuple[tuple[str, str], ...]
    field_manager: str
    prune: bool

    def apply(self, patch: Mapping[str, Any]) -> ApiRequest:
        """The server-side apply of the parent recording the state a merge ``patch`` of
        :func:`layout` describes (labels and annotations whole; nulls dropped)."""
        meta = patch.get("metadata") or {}
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                       if v is not None}
        body = {**self.manifest, "metadata": {
            **self.manifest["metadata"], "labels": dict(meta.get("labels") or {}),
            "annotations": annotations}}
        m = self.manifest["metadata"]
        return ApiRequest("apply", self.manifest["apiVersion"], self.manifest["kind"],
                          m["name"], m.get("namespace"), body=body,
                          params={"fieldManager": self.field_manager})

    def read(self, step: ApplySetStep, client: Any) -> ApplySetStep:
        """``step`` with the parent's writes and prune lists decided from the parent as the
        server has it now (GET; absent: it records nothing, and step 1 creates it). CheckError
        for a parent of another tool or set, as ``layout``."""
        p = step.parent
        try:
            current = client.get(p.api_version, p.kind, p.name, p.namespace) or {}
        except NotFoundError:
            current = {}
        meta = current.get("metadata") or {}
        plan = layout(meta, step.set_id, self.wanted, self.wanted_gk, self.literal,
                      p.namespace, self.prune)
        begin = (None if plan.begin is None and current else
                 self.full(step.set_id, _state_of(plan.begin, meta)))
        end = self.full(step.set_id, self.wanted) if plan.end is not None else None
        parent = Target(p.api_version, p.kind, p.name, p.namespace, meta.get("uid"))
        return dataclasses.replace(step, parent=parent, begin=begin, end=end,
                                   kinds=plan.kinds, namespaces=plan.namespaces)

    @staticmethod
    def full(set_id: str, state: ParentState) -> dict[str, Any]:
        """The parent's whole ApplySet metadata recording ``state``."""
        return {"metadata": {"labels": {ID_LABEL: set_id}, "annotations": state.annotations({})}}


def _state_of(begin: Mapping[str, Any] | None, meta: Mapping[str, Any]) -> ParentState:
    """The state a parent records after step 1: its annotations with ``begin``'s applied."""
    annotations = {**(meta.get("annotations") or {}),
                   **((begin or {}).get("metadata") or {}).get("annotations", {})}
    return ParentState(frozenset(_listed(annotations.get(GROUP_KINDS))),
                       frozenset(_listed(annotations.get(NAMESPACES))))


def _resolve(client: Any, api_version: str | None, group: str, kind: str) -> Any:
    """The ResourceRef of a group-kind: by its apiVersion when a wanted child gives one, else
    by the group's preferred version (``GET /apis/<group>``; ``v1`` for core). None when the
    server no longer serves it (nothing of it is left to prune)."""
    from kinrun.kube.discovery import UnknownKindError

    try:
        if api_version is None:
            if not group:
                api_version = "v1"
            else:
                answer = client.transport.request("GET", f"/apis/{group}") or {}
                api_version = (answer.get("preferredVersion") or {}).get("groupVersion")
                if not api_version:
                    return None
        return client.resolve(api_version, kind)
    except (NotFoundError, UnknownKindError):
        _log.info("applySet: %s is no longer served; nothing of it to prune",
                  f"{kind}.{group}" if group else kind)
        return None


class ApplySetAction:
    """``applySet: {manifests, forEach, as, parent, ownerReference, prune, force,
    fieldManager}``.

    ``manifests``: a template rendering YAML documents (``---``-separated) and/or YAML lists of
    objects, or a literal list of manifests; with ``forEach`` (an expression giving a list) it
    is rendered once per item with the item as ``as`` (default ``item``). Empty documents are
    skipped; every object needs string apiVersion, kind and metadata.name; the same
    group-kind/namespace/name twice is a CheckError. Namespace rule as ``apply``. In
    ``onDelete`` there is no parent: CheckError. ``parent``: a target mapping (templates) of a
    separate ApplySet parent; None: the reconciled object is the parent.
    """

    kind = "applySet"
    VERBS: tuple[str, ...] = ("patch", "create", "list", "delete")
    """RBAC verbs on each child's resource (``kinrun.rbac``): server-side apply is ``patch``
    (+ ``create`` for a new child); prune LISTs by label and DELETEs. Without ``prune``:
    :attr:`APPLY_VERBS` only."""
    APPLY_VERBS: tuple[str, ...] = ("patch", "create")
    PARENT_VERBS: tuple[str, ...] = ("patch",)
    """RBAC verbs on the reconciled object's resource: its ApplySet labels and annotations."""
    SEPARATE_PARENT_VERBS: tuple[str, ...] = ("get", "patch", "create")
    """RBAC verbs on a separate ``parent``'s resource: read, then server-side applied."""
    DRY_RUN_VERBS: tuple[str, ...] = ("get",)
    """Added under ``--dry-run``: each child is read to show what would change."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation,
                 field_manager: str, fields: Mapping[str, Any] | None = None) -> None:
        """``fields``: the location of each key of ``value`` (``ActionSpec.field_locations``):
        errors of ``forEach`` and ``manifests`` name their key's line (else the action's)."""
        value = _options(value, loc, "applySet")
        self._manifests_loc = _field(fields, "manifests", loc)
        self._for_each_loc = _field(fields, "forEach", loc)
        self._manifests = compile_documents(value["manifests"], engine, self._manifests_loc)
        self.literal_kinds = literal_kinds(value["manifests"])
        """(apiVersion, kind) the manifests name literally: listed by prune even when the
        parent's annotations were lost (the parent replaced without them)."""
        each = value.get("forEach")
        if each is not None and (not isinstance(each, str) or not each.strip()):
            raise self._for_each_loc.config_error("applySet.forEach must be an expression")
        self._for_each = None if each is None else engine.value(each, self._for_each_loc)
        self._as = _setting(value, "applySet", "as")
        if not isinstance(self._as, str) or not self._as.isidentifier() \
                or self._as in _SHADOWED:
            raise loc.child(".as").config_error(
                f"applySet.as must be a variable name other than {', '.join(_SHADOWED)}, "
                f"got {self._as!r}")
        self._owner = _bool(_setting(value, "applySet", "ownerReference"), loc,
                            "applySet.ownerReference")
        self.prune = _bool(_setting(value, "applySet", "prune"), loc, "applySet.prune")
        self._force = _bool(_setting(value, "applySet", "force"), loc, "applySet.force")
        self._field_manager = str(value.get("fieldManager") or field_manager)
        self._parent = (compile_tree(value["parent"], engine, loc.child(".parent"))
                        if value.get("parent") is not None else None)

    def render(self, scope: Scope) -> list[Step]:
        if scope.obj is None:
            raise CheckError("applySet: the reconciled object (the ApplySet parent) is gone; "
                             "applySet cannot run in onDelete")
        owner = reconciled_target(scope, "applySet")
        separate = self._separate(scope, owner) if self._parent is not None else None
        parent = owner if separate is None else _target_of(separate)
        set_id = applyset_id(parent.name, parent.namespace, parent.kind,
                             split_api_version(parent.api_version)[0])
        if separate is None:
            meta = scope.obj.get("metadata") or {}
            _check_parent(meta.get("labels") or {}, meta.get("annotations") or {}, set_id)
        applies, keep, wanted_gk, wanted_ns = [], set(), {}, set()
        for manifest in self._children(scope):
            request, key = self._apply(manifest, scope, owner, set_id)
            if key in keep:
                raise CheckError(f"applySet: {_label(key)} is given twice")
            keep.add(key)
            applies.append(request)
            wanted_gk.setdefault(group_kind(request.api_version, request.kind),
                                 request.api_version)
            if request.namespace is not None and request.namespace != parent.namespace:
                wanted_ns.add(request.namespace)
        wanted = ParentState(frozenset(wanted_gk), frozenset(wanted_ns))
        if separate is not None:  # its state is read when the step executes
            plan = layout({}, set_id, wanted, wanted_gk, self.literal_kinds, parent.namespace,
                          self.prune)
            separate = SeparateParent(separate, wanted, wanted_gk, self.literal_kinds,
                                      self._field_manager, self.prune)
            return [ApplySetStep(parent, set_id, None, tuple(applies), self.prune, plan.kinds,
                                 plan.namespaces, frozenset(keep), None, separate)]
        plan = layout(scope.obj.get("metadata") or {}, set_id, wanted, wanted_gk,
                      self.literal_kinds, parent.namespace, self.prune)
        return [ApplySetStep(parent, set_id, plan.begin, tuple(applies), self.prune,
                             plan.kinds, plan.namespaces, frozenset(keep), plan.end)]

    def _separate(self, scope: Scope, owner: Target) -> dict[str, Any]:
        """The manifest of the ``parent:`` object (its ApplySet metadata added when the step
        executes): apiVersion, kind, name, namespace (the namespace rule), and with
        ``ownerReference`` the reconciled object as its controller owner. CheckError for a
        core kind other than ConfigMap or Secret (KEP-3659 parents)."""
        target = resolve_target(self._parent, scope, "applySet.parent")
        group = split_api_version(target.api_version)[0]
        if not group and target.kind not in PARENT_CORE_KINDS:
            raise CheckError(f"applySet.parent: a {target.kind} cannot be an ApplySet parent "
                             "(KEP-3659: a ConfigMap, a Secret or a custom resource)")
        meta: dict[str, Any] = {"name": target.name}
        if target.namespace is not None:
            meta["namespace"] = target.namespace
        manifest = {"apiVersion": target.api_version, "kind": target.kind, "metadata": meta}
        if self._owner:
            own(manifest, scope, target.namespace, "applySet.parent", False)
        return manifest

    def _children(self, scope: Scope) -> list[dict[str, Any]]:
        if self._for_each is None:
            return self._rendered(scope.variables)
        items = loop_items(self._for_each, self._for_each_loc, scope.variables, "applySet: ")
        children = []
        for item in items:
            children.extend(self._rendered({**scope.variables, self._as: item}))
        return children

    def _rendered(self, variables: Mapping[str, Any]) -> list[Any]:
        try:
            return self._manifests(variables)
        except TemplateRenderError as exc:
            exc.location = self._manifests_loc  # the action's error names manifests' line
            raise

    def _apply(self, manifest: Any, scope: Scope, parent: Target, set_id: str
               ) -> tuple[ApiRequest, tuple[str, str, str | None, str]]:
        return member_apply(manifest, scope, parent, set_id, owner=self._owner,
                            force=self._force, field_manager=self._field_manager,
                            what="applySet")


def member_apply(manifest: Any, scope: Scope, parent: Target, set_id: str, *, owner: bool,
                 force: bool, field_manager: str, what: str
                 ) -> tuple[ApiRequest, tuple[str, str, str | None, str]]:
    """The server-side apply of one child of the set ``set_id`` and its key (group, kind,
    namespace, name): ``manifest`` checked (CheckError naming ``what``), its namespace set by
    the namespace rule, the part-of label added (CheckError when it names another set) and,
    with ``owner``, ``parent`` as its controller owner where it can be one."""
    manifest = check_manifest(manifest, what)
    meta = manifest["metadata"]
    namespace = _set_namespace(meta, scope, what)
    labels = meta.get("labels")
    if labels is None:
        labels = meta["labels"] = {}
    if not isinstance(labels, dict):
        raise CheckError(f"{what}: {meta['name']}: metadata.labels must be a mapping")
    if labels.get(PART_OF) not in (None, set_id):
        raise CheckError(f"{what}: {meta['name']} is labelled part of another ApplySet "
                         f"({labels[PART_OF]})")
    labels[PART_OF] = set_id
    if owner and (parent.namespace is None or parent.namespace == namespace) \
            and not is_itself(manifest, parent, namespace):  # never its own owner
        _own(manifest, parent)
    params: dict[str, Any] = {"fieldManager": field_manager}
    if force:
        params["force"] = True
    api_version, kind = manifest["apiVersion"], manifest["kind"]
    key = (split_api_version(api_version)[0], kind, namespace, meta["name"])
    return ApiRequest("apply", api_version, kind, meta["name"], namespace, body=manifest,
                      params=params), key


def _target_of(manifest: Mapping[str, Any]) -> Target:
    meta = manifest["metadata"]
    return Target(manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace"))


def _field(fields: Mapping[str, Any] | None, key: str, loc: SourceLocation) -> SourceLocation:
    """The location of the key ``key`` of the action's value: its own line when ``fields``
    has it, else the action's (``loc``), with ``.key`` appended to the path either way."""
    given = (fields or {}).get(key)
    return as_location(given, f"{loc.path}.{key}") if given is not None \
        else loc.child(f".{key}")


def _check_parent(labels: Mapping[str, Any], annotations: Mapping[str, Any],
                  set_id: str) -> None:
    tooling = annotations.get(TOOLING)
    if tooling and str(tooling).split("/", 1)[0] != TOOL:
        raise CheckError(f"applySet: the reconciled object is an ApplySet of {tooling!r} "
                         f"({TOOLING}); kinrun does not change another tool's set")
    if labels.get(ID_LABEL) not in (None, set_id):
        raise CheckError(f"applySet: the reconciled object's {ID_LABEL} label is "
                         f"{labels[ID_LABEL]!r}, not its id {set_id!r}")


def _metadata_patch(labels: Mapping[str, Any], annotations: Mapping[str, Any], set_id: str,
                    state: ParentState, resource_version: str | None) -> dict[str, Any] | None:
    """The merge patch making the parent record ``state`` (None: it already does)."""
    meta: dict[str, Any] = {}
    if labels.get(ID_LABEL) != set_id:
        meta["labels"] = {ID_LABEL: set_id}
    changed = state.annotations(annotations)
    if changed:
        meta["annotations"] = changed
    if not meta:
        return None
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {"metadata": meta}


def _own(manifest: dict[str, Any], owner: Target) -> None:
    """Make ``owner`` the child's controller owner (as apply's ownerReference); CheckError when
    it names another controller owner or the parent has no uid."""
    if not owner.uid:
        raise CheckError("applySet: the reconciled object has no metadata.uid; "
                         "set ownerReference: false")
    refs = [r for r in manifest["metadata"].get("ownerReferences") or []
            if isinstance(r, dict) and r.get("uid") != owner.uid]
    if any(r.get("controller") for r in refs):
        raise CheckError(f"applySet: {manifest['metadata']['name']} already names another "
                         "controller owner; set ownerReference: false")
    refs.append({"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
                 "uid": owner.uid, "controller": True, "blockOwnerDeletion": True})
    manifest["metadata"]["ownerReferences"] = refs


def _label(key: tuple[str, str, str | None, str]) -> str:
    group, kind, namespace, name = key
    return f"{kind}{'.' + group if group else ''} {namespace + '/' if namespace else ''}{name}"


def compile_documents(value: Any, engine: TemplateEngine, loc: SourceLocation
                      ) -> Callable[[Mapping[str, Any]], list[Any]]:
    """``render(variables) -> list of objects`` for a value that is a template (rendered, then
    read as YAML documents, each a mapping or a list of mappings; empty ones skipped), a list
    of manifests, or one manifest mapping (their strings rendered)."""
    if isinstance(value, str):
        template = engine.template(value, loc)

        def render(variables: Mapping[str, Any]) -> list[Any]:
            return flatten_documents(parse_yaml_documents(template.render(variables)))
        return render
    tree = compile_tree(value, engine, loc)
    return lambda variables: flatten_documents([tree(variables)])


def parse_yaml_documents(text: str) -> list[Any]:
    """Every YAML document of rendered text; errors -> CheckError naming the rendered line."""
    try:
        return safe_yaml.load_all(text, safe_yaml.StrictObjectLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at rendered line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise CheckError(f"rendered YAML is invalid{where}: {problem}") from exc

