"""The built-in action kinds: log, apply, patch, delete, event, requeueAfter, stop, fail (plus
plugin kinds).

Each kind is compiled once from its config value (templates parsed, literal values checked:
ConfigError) into an object with ``render(scope) -> list[Step]``. Rendering only builds and
checks data; a failed check raises :class:`CheckError` (the program turns it into a RenderError
with the action's location). Nothing here sends anything.

Namespace rule (no discovery at render time): a rendered manifest or target without
``metadata.namespace`` gets the reconciled object's namespace (taken from the key in
``onDelete``); write ``namespace: ""`` for a cluster-scoped target.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kinrun import safe_yaml
from kinrun.config.schema import action_default, action_fields, action_required
from kinrun.durations import parse_duration
from kinrun.actions.steps import LOG_LEVELS, STEP_TYPES, ActionKind, LogLine, RequeueAfter, Step
from kinrun.hooks import ReconcileContext
from kinrun.kube.event_recorder import EventRecorder
from kinrun.kube.events import MAX_MESSAGE
from kinrun.kube.builtin_kinds import builtin_scope
from kinrun.kube.request import ApiRequest
from kinrun.kube.resources import split_api_version
from kinrun.redact import redact_text, secret_values
from kinrun.templating import SourceLocation, TemplateEngine, describe, scrub_quoted

Render = Callable[[Mapping[str, Any]], Any]


# What each kind accepts comes from the config schema (``$defs.action``), the one source of the
# action vocabulary: fields, required fields, enums and defaults (tests/unit/actions checks that
# the compiled kinds and the schema agree).
PATCH_TYPES = tuple(action_fields("patch")["type"]["enum"])
PROPAGATION_POLICIES = tuple(action_fields("delete")["propagationPolicy"]["enum"])
EVENT_TYPES = tuple(action_fields("event")["type"]["enum"])
EVENT_MESSAGE_MAX = MAX_MESSAGE
"""Event messages are cut to this many characters (the events API's limit)."""


class CheckError(Exception):
    """A rendered value failed a check (missing kind, wrong patch shape...)."""


@dataclass
class Scope:
    """What one render of one program sees. ``variables`` is what templates see (obj, old, key,
    controller, reason, get, list, by_index, then the ``reconcile.vars`` in order, each added
    once evaluated; ``results`` in a program whose actions read earlier answers,
    :mod:`kinrun.actions.results`); ``namespace`` is the reconciled object's namespace (from
    the object, else from the key; None for cluster-scoped keys)."""

    controller: str
    key: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    ctx: ReconcileContext
    variables: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None


FALSE_TEXT = ("", "false", "no", "0", "none", "off")
"""Text a ``when:`` (or ``finalizer.when``, ``includeWhen``, ``readyWhen``) treats as false."""


def is_true(value: Any) -> bool:
    """Whether a rendered condition holds: text is false when :data:`FALSE_TEXT` (stripped,
    any case), anything else by Python truth. Used by every ``when``-like key."""
    if isinstance(value, str):
        return value.strip().lower() not in FALSE_TEXT
    return bool(value)


def loop_items(expression: Any, location: SourceLocation, variables: Mapping[str, Any],
               what: str = "") -> list[Any]:
    """The items a ``forEach`` expression gives (a mapping's ``(key, value)`` pairs); a render
    error names ``location`` (forEach's line), anything but a list-like value is a CheckError
    (``what``: the message's prefix, such as ``applySet: ``)."""
    from kinrun.templating import TemplateRenderError

    try:
        items = expression.evaluate(variables)
    except TemplateRenderError as exc:
        exc.location = location  # the action's error names forEach's line
        raise
    if isinstance(items, Mapping):
        items = list(items.items())
    if items is None or isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise CheckError(f"{what}forEach must give a list, got {type(items).__name__}")
    return list(items)


def unsecret(text: str, scope: Scope) -> str:
    """``text`` (a rendered log, event, stop or fail message, or an action's error, which a
    check may have written quoting what was rendered) with every value of the reconciled
    Secret's data (``obj`` and ``old``, as stored and decoded) replaced by ``<redacted>``
    (``kinrun.redact``); any other text as it is."""
    values = secret_values(scope.obj, scope.old)
    return redact_text(text, values) if values else text


# --- compiling nested values -----------------------------------------------------------------


def compile_tree(value: Any, engine: TemplateEngine, loc: SourceLocation) -> Render:
    """Compile a value whose strings are templates: returns ``render(variables)`` building a fresh
    copy with every templated string rendered (mapping keys are not templated)."""
    if isinstance(value, str):
        if "{{" in value or "{%" in value or "{#" in value:
            template = engine.template(value, loc)
            return template.render
        return lambda _v: value
    if isinstance(value, Mapping):
        items = [(k, compile_tree(v, engine, loc.child(f".{k}"))) for k, v in value.items()]
        return lambda v: {k: f(v) for k, f in items}
    if isinstance(value, (list, tuple)):
        parts = [compile_tree(item, engine, loc.child(f"[{i}]")) for i, item in enumerate(value)]
        return lambda v: [f(v) for f in parts]
    return lambda _v: value


def compile_document(value: Any, engine: TemplateEngine, loc: SourceLocation) -> Render:
    """A document given as a template string (rendered, then parsed as one YAML document) or as
    a mapping/list (its strings rendered)."""
    if not isinstance(value, str):
        return compile_tree(value, engine, loc)
    template = engine.template(value, loc)

    def render(variables: Mapping[str, Any]) -> Any:
        return parse_yaml(template.render(variables))
    return render


def parse_yaml(text: str) -> Any:
    """Parse rendered YAML; errors -> CheckError naming the rendered line."""
    try:
        return safe_yaml.load(text, safe_yaml.StrictObjectLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at rendered line {mark.line + 1}" if mark is not None else ""
        problem = scrub_quoted(getattr(exc, "problem", None) or type(exc).__name__, "")
        raise CheckError(f"rendered YAML is invalid{where}: {problem}") from None  # no snippet


def _options(value: Any, loc: SourceLocation, kind: str) -> Mapping[str, Any]:
    """``value`` checked against the schema's fields of ``kind``: a mapping, no unknown field,
    every required one present (ConfigError naming them)."""
    if not isinstance(value, Mapping):
        raise loc.config_error(f"{kind}: expected a mapping, got {type(value).__name__}")
    allowed = set(action_fields(kind))
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise loc.config_error(f"{kind}: unknown field(s) {', '.join(unknown)} "
                               f"(allowed: {', '.join(sorted(allowed))})")
    for required in action_required(kind):
        if required not in value:
            raise loc.config_error(f"{kind}: {required} is required")
    return value


def _setting(value: Mapping[str, Any], kind: str, name: str) -> Any:
    """A field as given, else the schema's default for it."""
    return value[name] if name in value else action_default(kind, name)


def _choice(value: Any, choices: tuple[str, ...], loc: SourceLocation, what: str) -> str:
    if value not in choices:
        raise loc.config_error(f"{what} must be one of {', '.join(choices)}, got {value!r}")
    return value


# --- targets ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The object an action writes to."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    uid: str | None = None
    resource_version: str | None = None


def _nonempty_str(mapping: Mapping[str, Any], field_name: str, what: str) -> str:
    value = mapping.get(field_name)
    if not isinstance(value, str) or not value:
        raise CheckError(f"{what}: {field_name} must be a non-empty string, got "
                         f"{describe(value)}")
    return value


def _namespace(mapping: Mapping[str, Any], scope: Scope, what: str) -> str | None:
    """An explicit namespace ("" or null: cluster-scoped), else the reconciled one."""
    if "namespace" not in mapping:
        return scope.namespace
    value = mapping["namespace"]
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise CheckError(f"{what}: namespace must be a string, got {describe(value)}")
    return value


def _set_namespace(meta: dict[str, Any], scope: Scope, what: str) -> str | None:
    """Resolve a manifest's namespace as :func:`_namespace` and write it back into ``meta``
    (dropped for cluster-scoped); returns it. CheckError for a non-string namespace."""
    namespace = _namespace(meta, scope, what)
    meta.pop("namespace", None)
    if namespace is not None:
        meta["namespace"] = namespace
    return namespace


def reconciled_target(scope: Scope, what: str) -> Target:
    """The reconciled object as a target; CheckError when it is gone or lacks identity."""
    obj = scope.obj
    if obj is None:
        raise CheckError(f"{what}: the reconciled object {scope.key!r} no longer exists; "
                         "give an explicit target")
    meta = obj.get("metadata") or {}
    return Target(_nonempty_str(obj, "apiVersion", what), _nonempty_str(obj, "kind", what),
                  _nonempty_str(meta, "name", what), meta.get("namespace") or None,
                  meta.get("uid"), meta.get("resourceVersion"))


def resolve_target(render: Render | None, scope: Scope, what: str) -> Target:
    """The rendered ``target:`` mapping, or the reconciled object when none is configured."""
    if render is None:
        return reconciled_target(scope, what)
    target = render(scope.variables)
    if not isinstance(target, Mapping):
        raise CheckError(f"{what}: target must be a mapping, got {type(target).__name__}")
    return Target(_nonempty_str(target, "apiVersion", what), _nonempty_str(target, "kind", what),
                  _nonempty_str(target, "name", what), _namespace(target, scope, what),
                  target.get("uid") or None)


# --- log -------------------------------------------------------------------------------------


class LogAction:
    """``log: TEMPLATE`` or ``log: {message: TEMPLATE, level: info}`` -> a LogLine (trailing
    newlines of a block scalar dropped)."""

    kind = "log"
    VERBS: tuple[str, ...] = ()
    """RBAC verbs this kind needs on what it writes (``kinrun.rbac``): none, it only logs."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        if isinstance(value, str):
            value = {"message": value}
        value = _options(value, loc, "log")
        if not isinstance(value.get("message"), str):
            raise loc.config_error("log: message must be a string")
        self._level = _choice(_setting(value, "log", "level"), tuple(LOG_LEVELS), loc,
                              "log.level")
        self._message = engine.template(value["message"], loc.child(".message"))

    def render(self, scope: Scope) -> list[Step]:
        return [LogLine(self._level, _render_message(self._message, scope))]


# --- apply -----------------------------------------------------------------------------------


class ApplyAction:
    """``apply: {manifest, ownerReference: true, force: false, fieldManager}`` -> server-side apply.

    The manifest must render to one mapping with string ``apiVersion``, ``kind`` and
    ``metadata.name``. With ``ownerReference`` (default) the reconciled object becomes the
    child's controller owner (``controller: true``, ``blockOwnerDeletion: true``) so the garbage
    collector deletes the child with it; skipped in ``onDelete`` (no owner left). A namespaced
    owner cannot own an object in another namespace or a cluster-scoped one (CheckError).
    Never an owner of itself (:func:`own`): the default skips the reference when the manifest
    is the reconciled object; an explicit ``ownerReference: true`` there is an error.
    """

    kind = "apply"
    VERBS: tuple[str, ...] = ("patch", "create")
    """RBAC verbs on the manifest's resource (``kinrun.rbac``): server-side apply is a PATCH
    (``application/apply-patch+yaml``), authorized as ``patch``, and as ``create`` too when
    the object does not exist yet (Kubernetes RBAC, "Server-Side Apply")."""
    DRY_RUN_VERBS: tuple[str, ...] = ("get",)
    """Added under ``--dry-run``: the current object is read to show what would change."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation,
                 field_manager: str) -> None:
        value = _options(value, loc, "apply")
        self._manifest = compile_document(value["manifest"], engine, loc.child(".manifest"))
        self._owner = _bool(_setting(value, "apply", "ownerReference"), loc,
                            "apply.ownerReference")
        self.owner_given = value.get("ownerReference") is True
        """Whether ``ownerReference: true`` is written (not only the default)."""
        self.manifest_source = value["manifest"]
        self._force = _bool(_setting(value, "apply", "force"), loc, "apply.force")
        self._field_manager = str(value.get("fieldManager") or field_manager)

    def render(self, scope: Scope) -> list[Step]:
        manifest = check_manifest(self._manifest(scope.variables), "apply")
        meta = manifest["metadata"]
        namespace = _set_namespace(meta, scope, "apply")
        if self._owner and scope.obj is not None:
            own(manifest, scope, namespace, "apply", self.owner_given)
        params: dict[str, Any] = {"fieldManager": self._field_manager}
        if self._force:
            params["force"] = True
        return [ApiRequest("apply", manifest["apiVersion"], manifest["kind"], meta["name"],
                           namespace, body=manifest, params=params)]


def _bool(value: Any, loc: SourceLocation, what: str) -> bool:
    if not isinstance(value, bool):
        raise loc.config_error(f"{what} must be true or false, got {value!r}")
    return value


def check_manifest(manifest: Any, what: str) -> dict[str, Any]:
    """Check a rendered manifest: a mapping with string apiVersion, kind, metadata.name."""
    if not isinstance(manifest, dict):
        raise CheckError(f"{what}: the manifest must render to a mapping, got "
                         f"{type(manifest).__name__}")
    _nonempty_str(manifest, "apiVersion", f"{what}: manifest")
    _nonempty_str(manifest, "kind", f"{what}: manifest")
    meta = manifest.get("metadata")
    if not isinstance(meta, dict):
        raise CheckError(f"{what}: manifest: metadata must be a mapping, got {describe(meta)}")
    _nonempty_str(meta, "name", f"{what}: manifest: metadata")
    return manifest


def is_itself(manifest: Mapping[str, Any], owner: Target, namespace: str | None) -> bool:
    """Whether ``manifest`` (its namespace resolved: ``namespace``) is the object ``owner``
    names: same API group, kind, name and namespace (versions may differ)."""
    return (split_api_version(manifest["apiVersion"])[0], manifest["kind"],
            manifest["metadata"].get("name"), namespace) == \
        (split_api_version(owner.api_version)[0], owner.kind, owner.name, owner.namespace)


def own(manifest: dict[str, Any], scope: Scope, namespace: str | None, what: str,
        explicit: bool) -> None:
    """Make the reconciled object the controller owner of ``manifest`` (``add_owner_reference``)
    unless the manifest is the reconciled object itself: an object is never its own owner (the
    garbage collector would wait on it for ever). Then the default ``ownerReference: true``
    (``explicit`` False: it owns the *children*) is skipped, and an explicit one is a
    CheckError."""
    owner = reconciled_target(scope, f"{what}.ownerReference")
    if not is_itself(manifest, owner, namespace):
        add_owner_reference(manifest, owner, namespace, what)
    elif explicit:
        raise CheckError(f"{what}: the manifest is the reconciled object itself "
                         f"({owner.kind} {owner.name}), which cannot be its own owner; "
                         "remove ownerReference: true (or set it to false)")


_SELF = {"name": re.compile(r"\{\{-?\s*obj\.metadata\.name\s*-?\}\}"),
         "namespace": re.compile(r"\{\{-?\s*obj\.metadata\.namespace\s*-?\}\}")}
_MARK = "kinrun-reconciled-"


def literal_manifest(manifest: Any) -> Mapping[str, Any] | None:
    """A manifest as written (template text or mapping) read without rendering: each ``{{
    obj.metadata.name }}``/``{{ obj.metadata.namespace }}`` becomes a marker, any other ``{{
    }}`` the text ``x``, tags are dropped. None when that is no mapping with a metadata
    mapping (a template whose shape only rendering shows)."""
    manifest = _as_written(manifest)
    if not isinstance(manifest, Mapping) or not isinstance(manifest.get("metadata"), Mapping):
        return None
    return manifest


def _as_written(manifest: Any) -> Any:
    """:func:`literal_manifest`'s reading of template text (a mapping as it is); None when
    the text is no YAML once its ``{{ }}`` are ``x`` and its tags dropped."""
    if not isinstance(manifest, str):
        return manifest
    text = manifest
    for field_name, pattern in _SELF.items():
        text = pattern.sub(_MARK + field_name, text)
    text = re.sub(r"\{%.*?%\}|\{#.*?#\}", "", re.sub(r"\{\{.*?\}\}", _TEMPLATED, text,
                                                     flags=re.S), flags=re.S)
    try:
        return safe_yaml.load(text, safe_yaml.ObjectLoader)
    except yaml.YAMLError:
        return None


_TEMPLATED = "x"
"""What :func:`_as_written` reads each ``{{ }}`` as."""


APPLIED_FIELDS = ("apiVersion", "kind", "metadata")
"""The top-level fields every object a server-side apply sends must have."""


def missing_fields(manifest: Any) -> list[str]:
    """The :data:`APPLIED_FIELDS` that one manifest as written (template text or mapping) has
    no key for, read as :func:`literal_manifest` reads it; [] when it cannot be read without
    rendering (no mapping, or any ``{% %}`` tag: a ``set`` block, macro, loop or branch puts
    text where only rendering shows)."""
    if isinstance(manifest, str) and "{%" in manifest:
        return []   # a block, macro, loop or branch places text where reading it cannot tell
    written = _as_written(manifest)
    if not isinstance(written, Mapping):
        return []
    return [name for name in APPLIED_FIELDS if name not in written]


def names_reconciled_object(manifest: Any, api_version: str, kind: str) -> bool:
    """Whether a manifest as written (template text or mapping) is literally the reconciled
    object of a controller whose primary is ``api_version``/``kind``: the same API group and
    kind, ``metadata.name`` ``{{ obj.metadata.name }}`` and no namespace or ``{{
    obj.metadata.namespace }}``. False when it cannot be read so (the run then checks each
    rendered manifest, :func:`own`)."""
    manifest = literal_manifest(manifest)
    if manifest is None:
        return False
    meta = manifest["metadata"]

    def is_mark(field_name: str) -> bool:
        value = str(meta.get(field_name)).strip()
        return value == _MARK + field_name or bool(_SELF[field_name].fullmatch(value))
    try:
        same_kind = (split_api_version(str(manifest.get("apiVersion")))[0], manifest.get("kind")) \
            == (split_api_version(api_version)[0], kind)
    except ValueError:
        return False
    return same_kind and is_mark("name") and ("namespace" not in meta or is_mark("namespace"))


def add_owner_reference(manifest: dict[str, Any], owner: Target, namespace: str | None,
                        what: str = "apply") -> None:
    """Make ``owner`` the controller owner of ``manifest`` (replacing a reference with the same
    uid); CheckError for a cross-namespace owner, a missing uid, or another controller owner."""
    if not owner.uid:
        raise CheckError(f"{what}: the reconciled object has no metadata.uid; "
                         "set ownerReference: false")
    if owner.namespace is not None and namespace != owner.namespace:
        raise CheckError(f"{what}: an owner in namespace {owner.namespace!r} cannot own an "
                         f"object in {'no namespace' if namespace is None else repr(namespace)}"
                         "; set ownerReference: false")
    if owner.namespace is not None and \
            builtin_scope(manifest["apiVersion"], manifest["kind"]) is False:
        raise CheckError(f"{what}: a namespaced owner cannot own the cluster-scoped "
                         f"{manifest['kind']} {manifest['metadata'].get('name')!r} (the garbage "
                         "collector treats the reference as unresolvable); set ownerReference: "
                         "false")
    refs = [r for r in manifest["metadata"].get("ownerReferences") or []
            if isinstance(r, dict) and r.get("uid") != owner.uid]
    if any(r.get("controller") for r in refs):
        raise CheckError(f"{what}: the manifest already names another controller owner; "
                         "set ownerReference: false")
    refs.append({"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
                 "uid": owner.uid, "controller": True, "blockOwnerDeletion": True})
    manifest["metadata"]["ownerReferences"] = refs


# --- patch -----------------------------------------------------------------------------------


class PatchAction:
    """``patch: {type: merge|json|strategic, subresource: status, patch, target}``.

    ``patch`` renders to a mapping (merge, strategic) or a list of operations each with ``op``
    and ``path`` (json). ``target`` defaults to the reconciled object.
    """

    kind = "patch"
    VERBS: tuple[str, ...] = ("patch",)
    """RBAC verbs on the target's resource, or on ``RESOURCE/status`` with ``subresource:
    status`` (``kinrun.rbac``)."""
    DRY_RUN_VERBS: tuple[str, ...] = ("get",)
    """Added under ``--dry-run``: the current object (or status) is read to show the change."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        value = _options(value, loc, "patch")
        self._type = _choice(_setting(value, "patch", "type"), PATCH_TYPES, loc, "patch.type")
        sub = value.get("subresource")
        self._subresource = None if sub is None else _choice(
            sub, tuple(action_fields("patch")["subresource"]["enum"]), loc, "patch.subresource")
        self._patch = compile_document(value["patch"], engine, loc.child(".patch"))
        self._target = (compile_tree(value["target"], engine, loc.child(".target"))
                        if value.get("target") is not None else None)

    def render(self, scope: Scope) -> list[Step]:
        target = resolve_target(self._target, scope, "patch")
        # check_patch's errors give the type and size of what was rendered, never the value
        body = check_patch(self._patch(scope.variables), self._type)
        return [ApiRequest("patch", target.api_version, target.kind, target.name,
                           target.namespace, body=body, patch_type=self._type,
                           subresource=self._subresource)]


def check_patch(body: Any, patch_type: str) -> Any:
    """Check a rendered patch document's shape for its type."""
    if patch_type != "json":
        if not isinstance(body, dict) or not body:
            raise CheckError(f"patch: a {patch_type} patch must render to a non-empty mapping, "
                             f"got {describe(body)}")
        return body
    if not isinstance(body, list) or not body:
        raise CheckError(f"patch: a json patch must render to a non-empty list, got "
                         f"{describe(body)}")
    for i, op in enumerate(body):
        if not isinstance(op, dict) or not isinstance(op.get("op"), str) \
                or not isinstance(op.get("path"), str):
            raise CheckError(f"patch: json patch operation [{i}] needs string op and path, "
                             f"got {describe(op)}")
    return body


# --- delete ----------------------------------------------------------------------------------


class DeleteAction:
    """``delete: {target, propagationPolicy}``; target defaults to the reconciled object."""

    kind = "delete"
    VERBS: tuple[str, ...] = ("delete",)
    """RBAC verbs on the target's resource (``kinrun.rbac``); a dry-run delete reads nothing."""
    DRY_RUN_VERBS: tuple[str, ...] = ()

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        value = _options(value or {}, loc, "delete")
        policy = value.get("propagationPolicy")
        self._policy = None if policy is None else _choice(policy, PROPAGATION_POLICIES, loc,
                                                           "delete.propagationPolicy")
        self._target = (compile_tree(value["target"], engine, loc.child(".target"))
                        if value.get("target") is not None else None)

    def render(self, scope: Scope) -> list[Step]:
        target = resolve_target(self._target, scope, "delete")
        params = {"propagationPolicy": self._policy} if self._policy else {}
        return [ApiRequest("delete", target.api_version, target.kind, target.name,
                           target.namespace, params=params)]


# --- event -----------------------------------------------------------------------------------


class EventAction:
    """``event: {type: Normal|Warning, reason, message, target}`` -> a core/v1 Event, recorded
    through the controller's :class:`~kinrun.kube.event_recorder.EventRecorder`.

    Renders an :class:`~kinrun.kube.event_recorder.EventRequest`: the create of the Event as
    client-go's recorder makes it (named ``<object name>.<unix nanoseconds in hex>``, in the
    object's namespace, ``default`` for cluster-scoped objects, ``involvedObject`` with uid and
    resourceVersion when known, the recorder's component and host). At execute time the
    recorder's correlator turns a repeat into a PATCH of the earlier Event (count + 1),
    combines similar ones and drops spam (``kinrun.kube.event_correlator``). Without
    ``target`` the Event is about the reconciled object; in ``onDelete`` (the object is gone)
    about its final state (``old``).
    """

    kind = "event"
    VERBS: tuple[str, ...] = ("create", "patch")
    """RBAC verbs on ``RESOURCE`` (not on the target: an Event is a core/v1 object in the
    target's namespace, ``default`` for a cluster-scoped target; ``kinrun.rbac``): ``create``
    for a new Event, ``patch`` to count a repeat (client-go's recorder needs the same)."""
    RESOURCE: tuple[str, str] = ("", "events")
    """(API group, resource) the verbs apply to."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation,
                 recorder: EventRecorder) -> None:
        value = _options(value, loc, "event")
        for required in ("reason", "message"):
            if not isinstance(value.get(required), str):
                raise loc.config_error(f"event: {required} must be a string")
        self._type = _choice(_setting(value, "event", "type"), EVENT_TYPES, loc, "event.type")
        self._reason = engine.template(value["reason"], loc.child(".reason"))
        self._message = engine.template(value["message"], loc.child(".message"))
        self._target = (compile_tree(value["target"], engine, loc.child(".target"))
                        if value.get("target") is not None else None)
        self._recorder = recorder

    def render(self, scope: Scope) -> list[Step]:
        if self._target is None and scope.obj is None and scope.old is not None:
            target = reconciled_target(Scope(scope.controller, scope.key, scope.old, None,
                                             scope.ctx, scope.variables, scope.namespace),
                                       "event")  # onDelete: the final state
        else:
            target = resolve_target(self._target, scope, "event")
        reason = self._reason.render(scope.variables).strip()
        if not reason:
            raise CheckError("event: reason rendered empty")
        message = unsecret(self._message.render(scope.variables), scope)[:EVENT_MESSAGE_MAX]
        return [self._recorder.event(_involved(target), type=self._type, reason=reason,
                                     message=message)]


def _involved(target: Target) -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": target.api_version, "kind": target.kind,
                           "name": target.name}
    if target.namespace:
        ref["namespace"] = target.namespace
    if target.uid:
        ref["uid"] = target.uid
    if target.resource_version:
        ref["resourceVersion"] = target.resource_version
    return ref


# --- requeueAfter ----------------------------------------------------------------------------


class RequeueAfterAction:
    """``requeueAfter: 30s`` (a duration, a number of seconds, or a template rendering one)."""

    kind = "requeueAfter"
    VERBS: tuple[str, ...] = ()
    """RBAC verbs: none, it only schedules the key again (``kinrun.rbac``)."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        self._template = None
        self._seconds = 0.0
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            self._template = engine.template(value, loc)
            return
        try:
            self._seconds = parse_duration(value)
        except ValueError as exc:
            raise loc.config_error(f"requeueAfter: {exc}") from exc

    def render(self, scope: Scope) -> list[Step]:
        if self._template is None:
            return [RequeueAfter(self._seconds)]
        text = self._template.render(scope.variables).strip()
        try:
            return [RequeueAfter(parse_duration(text))]
        except ValueError as exc:
            raise CheckError(f"requeueAfter: {exc}") from exc


# --- stop and fail: flow decided while rendering ---------------------------------------------


class Stop(Exception):
    """Raised by ``stop`` while rendering: the program ends the render there, as a success.
    ``message``: the rendered message, logged at ``level`` (a ``LOG_LEVELS`` name, default
    info). Control flow, never an error: only :class:`kinrun.actions.program.ActionProgram`
    catches it."""

    def __init__(self, message: str, level: str = "info") -> None:
        super().__init__(message)
        self.message, self.level = message, level


class Fail(Exception):
    """Raised by ``fail`` while rendering: the program turns it into the reconcile's failure
    (``ActionFailed``, a TemporaryError, or ``ActionFailedPermanently``, a PermanentError,
    located at the action). ``message``: the rendered message; ``permanent``: as configured."""

    def __init__(self, message: str, permanent: bool) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent


def _message_template(value: Any, engine: TemplateEngine, loc: SourceLocation,
                      kind: str) -> Any:
    if not isinstance(value.get("message"), str) or not value["message"]:
        raise loc.config_error(f"{kind}: message must be a non-empty string")
    return engine.template(value["message"], loc.child(".message"))


def _render_message(template: Any, scope: Scope) -> str:
    """A ``log``/``stop``/``fail`` message rendered, trailing newlines of a block scalar
    dropped, the reconciled Secret's values hidden (``unsecret``)."""
    return unsecret(template.render(scope.variables).rstrip("\n"), scope)


class StopAction:
    """``stop: TEMPLATE`` or ``stop: {message: TEMPLATE, level: info}``: end the reconcile
    here, a success.

    Decided while rendering (the render phase of ``ActionProgram``): the steps of the actions
    before it are kept and then sent, the later actions are neither rendered nor sent, and the
    message (trailing newlines dropped) is logged at ``level`` (debug, info, warning, error;
    the schema's default info) as the last step. A requeue asked for by an earlier action
    stands. Raises :class:`Stop`.
    """

    kind = "stop"
    VERBS: tuple[str, ...] = ()
    """RBAC verbs this kind needs (``kinrun.rbac``): none, it only ends the render."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        if isinstance(value, str):
            value = {"message": value}
        value = _options(value, loc, "stop")
        self._message = _message_template(value, engine, loc, "stop")
        self._level = _setting(value, "stop", "level")
        if self._level not in LOG_LEVELS:
            raise loc.child(".level").config_error(
                f"stop.level must be one of {', '.join(LOG_LEVELS)}, got {self._level!r}")

    def render(self, scope: Scope) -> list[Step]:
        raise Stop(_render_message(self._message, scope), self._level)


class FailAction:
    """``fail: {message: TEMPLATE, permanent: false}``: end the reconcile as a failure.

    Decided while rendering, so nothing of that reconcile is sent, not even the steps of the
    actions before it (as for any render failure). ``permanent: false`` (the schema's
    default): retried with the rate limiter's backoff (a TemporaryError without delay);
    ``true``: a PermanentError, the key is forgotten and waits for its next change
    (``kinrun.reconcile.Result.failed``). Raises :class:`Fail`.
    """

    kind = "fail"
    VERBS: tuple[str, ...] = ()
    """RBAC verbs this kind needs (``kinrun.rbac``): none, nothing is sent."""

    def __init__(self, value: Any, engine: TemplateEngine, loc: SourceLocation) -> None:
        value = _options(value, loc, "fail")
        self._message = _message_template(value, engine, loc, "fail")
        self._permanent = _bool(_setting(value, "fail", "permanent"), loc, "fail.permanent")

    def render(self, scope: Scope) -> list[Step]:
        raise Fail(_render_message(self._message, scope),
                   self._permanent)


# --- plugin kinds ----------------------------------------------------------------------------


class PluginAction:
    """``NAME: ARGS`` for a kind a plugin registered: ARGS rendered, then the kind called."""

    def __init__(self, kind: str, func: ActionKind, value: Any, engine: TemplateEngine,
                 loc: SourceLocation) -> None:
        self.kind = kind
        self._func = func
        self.rbac_rules = getattr(func, "RBAC_RULES", None)
        """What the plugin declares its kind needs (``kinrun.rbac``): the kind function's
        optional attribute ``RBAC_RULES``, a sequence of RBAC PolicyRule mappings
        (``{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}``), granted in
        the namespaces of the reconciled objects (cluster-wide for a cluster-scoped resource);
        None when the plugin does not say."""
        self._args = compile_tree(value, engine, loc)

    def render(self, scope: Scope) -> list[Step]:
        args = self._args(scope.variables)
        steps = list(self._func(args, obj=scope.obj, ctx=scope.ctx) or ())
        for step in steps:
            if not isinstance(step, STEP_TYPES):
                raise CheckError(f"{self.kind}: the plugin returned {type(step).__name__}, "
                                 "expected ApiRequest, LogLine or RequeueAfter")
        return steps


BUILTIN_KINDS = ("log", "apply", "patch", "delete", "event", "requeueAfter", "stop", "fail",
                 "status", "create", "applySet", "children")
"""The action kinds kinrun defines; plugin kinds may not reuse these names."""
