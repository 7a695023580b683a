"""Field ownership (``metadata.managedFields``) as kube-apiserver 1.20's fieldmanager keeps it.

Semantics (k8s.io/apiserver ``pkg/endpoints/handlers/fieldmanager`` v1.20 and the
structured-merge-diff v4 ``merge.Updater`` it wraps):

- A *manager* is identified by (name, operation, apiVersion for Update only); 1.20's entries
  have no ``subresource`` (1.22 added it), so a manager's writes of ``/status`` and of the
  object are one manager; it owns a set of field paths. Sets hold leaves - a scalar, an atomic list or map, an empty
  map - and the items of associative lists (``typed.Item``: ``k:{"name":"c"}``, ``v:"x"``)
  with their fields, as structured-merge-diff v4's ToFieldSet. ``apiVersion``, ``kind`` and
  the server-set metadata (name, namespace, uid, resourceVersion, generation,
  creationTimestamp, selfLink, clusterName, managedFields) are never owned (fieldmanager's
  stripMeta).
- Create/update/patch (operation ``Update``): the manager is the request's ``fieldManager``,
  else the User-Agent up to its first ``/`` (``manager_from_user_agent``), else ``unknown``.
  Comparing the live and the new object, the fields it changed or added become its own and are
  taken from every other manager, fields it removed leave every manager; its entry's ``time``
  moves only when its set changed (managedFieldsUpdater). An update of an object that has no
  managedFields is not tracked (skipNonApplied; creates are always tracked).
- The managedFields a request body carries are used when non-empty; ``[]`` resets them
  (decodeManagedFields); otherwise the live object's are kept.
- Entries are written sorted by operation, time, manager, apiVersion
  (sortEncodedManagedFields).

The functions take the kind's schema (``kinrun.openapi.Schema``, None: every list atomic) to
tell associative lists (``typed``); a comparison matches their items by key and records an
item, an associative list and a map (not a built-in struct) it sees added or removed as a
path (``"."`` in fieldsV1; not a built-in kind's required list, which Go always encodes).
Apply (conflicts, force, pruning) is in ``apply``, built on these functions. Differences from
the real server: a built-in struct held by pointer (a Deployment's
``strategy.rollingUpdate``) gets no ``"."`` when added (the schema does not tell pointers),
defaults the embedded server sets after the write are not owned,
and the 10-Update-manager cap (``ancient-changes``) is not applied. Functions are pure: they
never modify their arguments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kinrun.openapi import Schema

from kinrun.openapi.typed import (Item, atomic_map, child, elements, item_schema, parse_member,
                                  part_order)

Obj = dict[str, Any]
Path = tuple["str | Item", ...]

APPLY, UPDATE = "Apply", "Update"
FIELD_MANAGER_MAX_LENGTH = 128            # apimachinery validation.FieldManagerMaxLength
_STRIPPED: frozenset[Path] = frozenset({
    ("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"), ("metadata", "namespace"),
    ("metadata", "creationTimestamp"), ("metadata", "selfLink"), ("metadata", "uid"),
    ("metadata", "clusterName"), ("metadata", "generation"), ("metadata", "managedFields"),
    ("metadata", "resourceVersion")})


class Manager:
    """One managedFields entry, decoded: ``manager`` (name), ``operation`` (Apply/Update),
    ``api_version`` (of the request that wrote it), ``time`` (RFC 3339 or None), ``fields`` (owned leaf paths) and ``raw`` (the entry it was
    decoded from, reused as is while unchanged). ``fields`` of a decoded entry is computed on
    first use; ``owns`` answers for one path without decoding the whole set. Treat as
    immutable: ``with_fields`` gives a changed copy."""

    __slots__ = ("manager", "operation", "api_version", "time", "_fields", "raw")

    def __init__(self, manager: str, operation: str, api_version: str,
                 time: str | None = None, fields: set[Path] | None = None,
                 raw: Obj | None = None) -> None:
        self.manager, self.operation, self.api_version = manager, operation, api_version
        self.time, self.raw = time, raw
        self._fields = fields if fields is not None or raw is not None else set()

    @property
    def fields(self) -> set[Path]:
        """The owned paths (do not modify)."""
        if self._fields is None:
            self._fields = paths_of((self.raw or {}).get("fieldsV1"))
        return self._fields

    def owns(self, path: Path) -> bool:
        """Whether ``path`` is in the set."""
        if self._fields is not None or any(isinstance(p, Item) for p in path):
            return path in self.fields
        node: Any = (self.raw or {}).get("fieldsV1")
        for part in path:
            if not isinstance(node, dict):
                return False
            node = node.get(f"f:{part}")
        return isinstance(node, dict) and (not node or "." in node)

    def with_fields(self, fields: set[Path], time: str | None) -> Manager:
        """A copy owning ``fields`` at ``time`` (re-encoded when written)."""
        return Manager(self.manager, self.operation, self.api_version, time, fields)

    def __repr__(self) -> str:
        return f"Manager({self.identifier()}, fields={sorted(self.fields, key=path_key)})"

    @property
    def key(self) -> tuple[str, str, str]:
        """The identity: appliers are one manager across apiVersions (BuildManagerIdentifier)."""
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version)

    def identifier(self) -> str:
        """The manager identifier as the fieldmanager builds it (compact JSON of manager,
        operation and, for Update, apiVersion); the conflict message sorts managers by it."""
        ident: Obj = {"manager": self.manager, "operation": self.operation}
        if self.operation != APPLY:
            ident["apiVersion"] = self.api_version
        return json.dumps(ident, separators=(",", ":"))

    def describe(self) -> str:
        """How a conflict names this manager (fieldmanager printManager): ``"kubectl-patch"
        using apps/v1`` for an Update manager, ``"name"`` for an applier."""
        name = json.dumps(self.manager, ensure_ascii=False)
        return f"{name} using {self.api_version}" if self.operation == UPDATE else name


def manager_from_user_agent(user_agent: str) -> str:
    """The field manager a write without ``fieldManager`` gets: the User-Agent before its first
    ``/``, non-printable characters dropped, at most 128 bytes (handlers.prefixFromUserAgent);
    "unknown" when that leaves nothing (buildManagerInfo)."""
    out, size = [], 0
    for char in user_agent.split("/")[0]:
        if not char.isprintable():      # same class as Go's unicode.IsPrint
            continue
        size += len(char.encode())
        if size > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(char)
    return "".join(out) or "unknown"


# -- field sets ---------------------------------------------------------------------------------


def field_paths(obj: Any, schema: Schema | None = None, prefix: Path = (), *,
                added: bool = False) -> dict[Path, Any]:
    """Every owned-able path of ``obj`` (typed by ``schema``, see ``typed``) -> its value, as
    structured-merge-diff's ToFieldSet: non-empty granular maps are descended, an associative
    list's items are paths themselves and descended, anything else (scalar, atomic list or
    map, null) is a leaf, an empty map none (1.20's ToFieldSet); stripped paths are left out.
    ``added``: as a comparison with nothing sees ``obj`` (the fieldmanager's Update of a
    create, ``before-first-apply``): the lists and maps it adds are paths too (``"."``) and
    an empty map is a leaf."""
    out: dict[Path, Any] = {}
    _collect(obj, schema, prefix, out, added)
    return out


def _collect(obj: Any, schema: Schema | None, prefix: Path, out: dict[Path, Any],
             nodes: bool, required: bool = False) -> None:
    """Paths of ``obj`` into ``out``; ``nodes``: also an associative list itself, as a
    comparison records a list it sees added (``"."`` in fieldsV1), unless ``required`` (Go
    encodes such a field always: a create compares with the zero value, where it is null).
    Without ``nodes`` (an applied object's set, SMD's ToFieldSet), a map entry that is no
    declared field (``additionalProperties``, unknown fields kept) is a path itself too."""
    if isinstance(obj, dict) and obj and not atomic_map(schema):
        if nodes and prefix and _go_map(schema):
            out[prefix] = obj
        for key, value in obj.items():
            path = prefix + (str(key),)
            if path == ("metadata", "managedFields"):
                continue
            if not nodes and prefix and (schema is None or schema.child(str(key)) is None):
                out[path] = value
            _collect(value, child(schema, str(key), not prefix), path, out, nodes,
                     _go_required(schema, str(key)))
        return
    items = elements(schema, obj)
    if items is None:
        if prefix and prefix not in _STRIPPED and (nodes or obj != {}):
            out[prefix] = obj   # an applied empty map is owned by nobody (SMD in 1.20)
        return
    if nodes and not required:
        out[prefix] = obj
    for item, value in zip(items, obj):
        out[prefix + (item,)] = value
        if item.tag == "k":
            _collect(value, item_schema(schema), prefix + (item,), out, nodes)


def _go_map(schema: Schema | None) -> bool:
    """Whether an object typed ``schema`` is a map to structured-merge-diff's comparison, which
    records a map it sees added (``"."``): a custom resource's object (unstructured), a
    built-in kind's ``additionalProperties`` map (``labels``); a built-in struct (a named
    definition) is not (a pointer struct would be; the schema does not say which)."""
    return schema is None or not schema.name


def _go_required(schema: Schema | None, key: str) -> bool:
    """Whether field ``key`` of a built-in kind's type ``schema`` is required, so Go encodes
    it always (no ``omitempty``). A custom resource's schema (no definition name) is no Go
    type: its required lists get their ``"."`` as any other (found by review)."""
    return schema is not None and bool(schema.name) and key in schema.required


def same_value(a: Any, b: Any) -> bool:
    """Value equality as structured-merge-diff's: numbers by value, bools apart from numbers,
    maps regardless of key order."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@dataclass(frozen=True, slots=True)
class Comparison:
    """What changed from an old to a new object (typed.Comparison): leaf paths ``modified``
    (in both, different), ``added`` (only in new), ``removed`` (only in old)."""

    modified: frozenset[Path]
    added: frozenset[Path]
    removed: frozenset[Path]

    @property
    def same(self) -> bool:
        """Nothing changed."""
        return not (self.modified or self.added or self.removed)


def compare(old: Any, new: Any, schema: Schema | None = None) -> Comparison:
    """The Comparison of ``old`` and ``new`` (objects typed ``schema``, or None for nothing).
    A leaf that turns into a map with content (or back) is neither added nor removed: only its
    children are. Associative lists are compared item by item (matched by key); an item added
    or removed is itself a path, and so is an associative list that was absent (typed.Compare).
    Equal subtrees are skipped whole (Python equality: ``True == 1`` is not told apart there)."""
    diff = _Diff()
    diff.walk(old or {}, new or {}, schema, ())
    return Comparison(frozenset(diff.modified), frozenset(diff.added), frozenset(diff.removed))


class _Diff:
    """The paths one comparison finds (see ``compare``)."""

    def __init__(self) -> None:
        self.modified: set[Path] = set()
        self.added: dict[Path, Any] = {}
        self.removed: dict[Path, Any] = {}

    def walk(self, old: Any, new: Any, schema: Schema | None, prefix: Path) -> None:
        old_map = isinstance(old, dict) and bool(old) and not atomic_map(schema)
        new_map = isinstance(new, dict) and bool(new) and not atomic_map(schema)
        if old_map and new_map or new_map and old == {} or old_map and new == {}:
            self.fields(old, new, schema, prefix)   # {} <-> map: the map itself stays
        elif old_map:                   # map -> leaf: the children go, the leaf is not "added"
            _collect(old, schema, prefix, self.removed, True)
        elif new_map:                   # leaf -> map: the children come
            _collect(new, schema, prefix, self.added, True)
        elif not self.items(old, new, schema, prefix) and prefix and \
                prefix not in _STRIPPED and not same_value(old, new):
            self.modified.add(prefix)

    def fields(self, old: Obj, new: Obj, schema: Schema | None, prefix: Path) -> None:
        for key in old.keys() | new.keys():
            path = prefix + (str(key),)
            if path == ("metadata", "managedFields"):
                continue
            sub = child(schema, str(key), not prefix)
            required = _go_required(schema, str(key))
            if key not in new:
                _collect(old[key], sub, path, self.removed, True, required)
            elif key not in old:
                _collect(new[key], sub, path, self.added, True, required)
            elif old[key] is not new[key] and old[key] != new[key]:
                self.walk(old[key], new[key], sub, path)

    def items(self, old: Any, new: Any, schema: Schema | None, prefix: Path) -> bool:
        """Two associative lists compared item by item; False when they are not both such."""
        old_items, new_items = elements(schema, old), elements(schema, new)
        if old_items is None or new_items is None or not (old or new):
            return False
        before = dict(zip(old_items, old))
        after = dict(zip(new_items, new))
        for item in before.keys() | after.keys():
            path = prefix + (item,)
            if item not in after:
                self._item(before[item], schema, path, self.removed)
            elif item not in before:
                self._item(after[item], schema, path, self.added)
            elif item.tag == "k" and before[item] != after[item]:
                self.walk(before[item], after[item], item_schema(schema), path)
        return True

    @staticmethod
    def _item(value: Any, schema: Schema | None, path: Path, out: dict[Path, Any]) -> None:
        out[path] = value
        if isinstance(path[-1], Item) and path[-1].tag == "k":
            _collect(value, item_schema(schema), path, out, True)


def path_string(path: Path) -> str:
    """A path as fieldpath.Path.String writes it: ``.spec.replicas``,
    ``.spec.containers[name="c"].image``."""
    return "".join(part.label() if isinstance(part, Item) else f".{part}" for part in path)


def path_key(path: Path) -> tuple[tuple[Any, ...], ...]:
    """Sort key of paths: element by element in structured-merge-diff's order (a path before
    its children)."""
    return tuple(part_order(part) for part in path)


def path_order(path: Path) -> tuple[tuple[Any, ...], ...]:
    """Sort key giving fieldpath.Set.Iterate's order: at each level the leaves there, sorted,
    before the subtrees, sorted."""
    return tuple((0 if i == len(path) - 1 else 1, part_order(part))
                 for i, part in enumerate(path))


def _member(part: str | Item) -> str:
    return part.fields_key() if isinstance(part, Item) else f"f:{part}"


def to_fields_v1(paths: Iterable[Path]) -> Obj:
    """The ``fieldsV1`` document of a path set (``{"f:spec": {"f:replicas": {}}}``; members in
    structured-merge-diff's order: ``f:`` by name, then ``k:``, then ``v:``); a path that is
    itself owned and has owned children gets the ``"."`` member."""
    root: Obj = {}
    wanted = set(paths)
    for path in sorted(wanted, key=path_key):   # a path sorts before its children
        node = root
        for i, part in enumerate(path):
            child_node = node.get(_member(part))
            if child_node is None:
                child_node = node[_member(part)] = {}
            elif not child_node and i + 1 < len(path) and path[:i + 1] in wanted:
                child_node["."] = {}
            node = child_node
    return root


def paths_of(fields: Any, prefix: Path = ()) -> set[Path]:
    """The paths a ``fieldsV1`` document records (``f:`` fields, ``k:``/``v:`` list items;
    unreadable members are ignored)."""
    out: set[Path] = set()
    _paths_into(fields, prefix, out)
    return out


def _paths_into(fields: Any, prefix: Path, out: set[Path]) -> None:
    if not isinstance(fields, dict) or not fields:
        if prefix:
            out.add(prefix)
        return
    if prefix and "." in fields:
        out.add(prefix)
    for key, value in fields.items():
        part = parse_member(key)
        if part is not None:
            _paths_into(value, prefix + (part,), out)


# -- entries ------------------------------------------------------------------------------------


def decode(entries: Any) -> list[Manager]:
    """The managers of a ``metadata.managedFields`` list (malformed entries are skipped)."""
    out = []
    for entry in entries or []:
        if not isinstance(entry, dict) or entry.get("operation") not in (APPLY, UPDATE):
            continue
        out.append(Manager(str(entry.get("manager") or ""), entry["operation"],
                           str(entry.get("apiVersion") or ""), entry.get("time"), None, entry))
    return out


def encode(managers: Iterable[Manager]) -> list[Obj]:
    """The ``metadata.managedFields`` list for ``managers``, empty sets dropped, sorted as
    kube-apiserver sorts them (Apply before Update, then time, manager, apiVersion)."""
    entries = []
    for m in managers:
        if m.raw is not None:
            if m.raw.get("fieldsV1"):
                entries.append(m.raw)
            continue
        if not m.fields:
            continue
        entry: Obj = {"manager": m.manager, "operation": m.operation, "apiVersion": m.api_version}
        if m.time is not None:
            entry["time"] = m.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = to_fields_v1(m.fields)
        entries.append(entry)
    return sorted(entries, key=lambda e: (e["operation"], e.get("time") or "", e["manager"],
                                          e["apiVersion"]))


def request_managers(live: Obj | None, new: Obj) -> list[Manager]:
    """The managers a write starts from (decodeManagedFields): the request body's managedFields
    when non-empty, none when it sends ``[]`` (a reset), else the live object's."""
    sent = (new.get("metadata") or {}).get("managedFields")
    if isinstance(sent, list) and not sent:
        return []
    managers = decode(sent) if isinstance(sent, list) else []
    return managers or decode(((live or {}).get("metadata") or {}).get("managedFields"))


def with_managers(obj: Obj, managers: Iterable[Manager]) -> Obj:
    """A shallow copy of ``obj`` (and its metadata) carrying ``managers`` as managedFields
    (none: the field is absent)."""
    meta = dict(obj.get("metadata") or {})
    entries = encode(managers)
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return {**obj, "metadata": meta}


def take(managers: list[Manager], taken: Iterable[Path]) -> tuple[list[Manager], bool]:
    """``managers`` without the paths ``taken``, managers left owning nothing dropped; and
    whether any manager lost a path. Managers that lose nothing are returned as they are."""
    gone = list(taken)
    out, changed = [], False
    for m in managers:
        if any(m.owns(p) for p in gone):
            m, changed = m.with_fields(m.fields - set(gone), m.time), True
        if m.raw is not None or m.fields:
            out.append(m)
    return out, changed


def update(live: Obj | None, new: Obj, *, manager: str, api_version: str, now: str,
           schema: Schema | None = None) -> Obj:
    """``new`` with managedFields after ``manager`` wrote it over ``live`` (None: a create) with
    a create/update/patch, as the fieldmanager's Update (see module docstring); ``schema``:
    the kind's (``typed``: which lists are associative), None when unknown."""
    managers = request_managers(live, new)
    if not managers and live is not None:
        return with_managers(new, [])           # untracked object: stays untracked
    change = compare(live, new, schema)
    mine = Manager(manager, UPDATE, api_version)
    former = next((m for m in managers if m.key == mine.key), None)
    managers, _ = take(managers, change.modified | change.added | change.removed)
    gained = set(change.modified | change.added)
    if gained:
        previous = next((m for m in managers if m.key == mine.key), None)
        owned = gained | (previous.fields if previous else set())
        changed = former is None or owned != former.fields
        mine = mine.with_fields(owned, now if changed else former.time)  # type: ignore[union-attr]
        managers = [m for m in managers if m.key != mine.key] + [mine]
    return with_managers(new, managers)
