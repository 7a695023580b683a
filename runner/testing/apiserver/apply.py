"""Server-side apply as kube-apiserver 1.20's fieldmanager does it (over ``managed_fields``).

Applying configuration ``C`` as manager ``m`` onto the live object (structured-merge-diff v4
``Updater.Apply`` and the fieldmanager wrappers of k8s.io/apiserver v1.20):

1. An existing object without managedFields is first owned, every field, by the Update
   manager ``before-first-apply`` (skipNonApplied).
2. ``C`` is merged onto the live object; fields ``m`` applied last time but not now, and that
   no other manager (Apply or Update) owns, are removed (prune).
3. Every field another manager owns - an applier, or an Update manager from a create, update
   or patch - that the merge changes or adds is a conflict. Without ``force`` the answer is
   409 Conflict, ``Apply failed with 1 conflict: conflict with "kubectl-patch" using apps/v1:
   .spec.replicas`` (several: ``Apply failed with N conflicts: conflicts with "a":\\n- .x``,
   managers sorted by identifier), one ``FieldManagerConflict`` cause per field. With
   ``force`` the fields move to ``m``. Fields the apply removes leave every other manager.
4. The merged object gets the server's defaults (a field ``m`` stopped applying and nobody
   else owns is defaulted again), and ``m`` then owns exactly the leaves of ``C``, not the
   defaults: another manager may apply ``spec.replicas`` of a Deployment ``m`` applied without
   it. Setting a field to the value it already has is
   no conflict and takes no ownership away (both managers own it).
5. Manager ``kubectl`` (``kubectl apply --server-side``) may take, without ``force``, fields
   whose live value still equals the ``kubectl.kubernetes.io/last-applied-configuration``
   annotation, and keeps that annotation current (lastAppliedManager/lastAppliedUpdater).

Lists and maps are merged as SMD's Merge, by the kind's schema (``typed``): an associative
list item by item matched by key (live items in their order, then the new ones), an atomic
list or map replaced whole; paths name list items (``k:{"name":"c"}``), so ownership,
prune and conflicts are per field of an item (``.spec.template.spec.containers[name="c"]
.image``).

Differences: the merged object is defaulted before it is compared with the live one (an
atomic list re-applied without its defaults is no change), null in ``C`` deletes (merge
patch), and an associative list with an item lacking its key is merged as atomic (for a
container without ``name`` validation then answers 422, as kube-apiserver does). Functions
are pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kinrun.openapi import Schema

from .managed_fields import (APPLY, UPDATE, Manager, compare, decode, field_paths, path_key,
                             path_order, path_string, same_value, take, with_managers)
from .patch import merge_patch
from .status import StatusError, bad_request
from kinrun.openapi.typed import Item, atomic_map, child, elements, item_schema

Obj = dict[str, Any]
Path = tuple["str | Item", ...]
BEFORE_FIRST_APPLY = "before-first-apply"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
KUBECTL = "kubectl"


def merge(live: Any, applied: Any, schema: Schema | None = None, root: bool = True) -> Any:
    """``applied`` merged onto ``live`` as structured-merge-diff's Merge: maps field by field
    (null deletes, as a merge patch), associative lists (``typed``) item by item matched by
    key - the live items in their order, each merged with its applied one, then the new
    items in applied order -, anything else (scalars, atomic lists and maps) replaced. A new
    value, sharing nothing mutable with ``applied``."""
    if isinstance(applied, dict) and isinstance(live, dict) and not atomic_map(schema):
        out = dict(live)
        for key, value in applied.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(out.get(key), value, child(schema, str(key), root), False)
        return out
    live_items, applied_items = elements(schema, live), elements(schema, applied)
    if live_items is None or applied_items is None:
        return merge_patch(None, applied)
    given = dict(zip(applied_items, applied))
    out_list = [merge(value, given[item], item_schema(schema), False) if item in given
                else value for item, value in zip(live_items, live)]
    seen = set(live_items)
    out_list.extend(merge_patch(None, value) for item, value in zip(applied_items, applied)
                    if item not in seen)
    return out_list


def _without(obj: Any, paths: list[Path], schema: Schema | None, owned: frozenset[Path],
             at: Path = ()) -> Any:
    """A copy of ``obj`` (at path ``at``; () the object) without each of ``paths`` (a field,
    or a list item by its ``Item``), in one walk, copying only the maps and lists along them
    (linear in what they reach: an apply that prunes half of a 2,000-item list was
    quadratic). A map or list that loses its last entry this way becomes null, as
    structured-merge-diff's ``RemoveItems`` leaves it, unless a manager owns it whole
    (``owned``: an applier that now applies ``spec: {}`` keeps ``spec: {}``): a built-in
    kind's decode then drops the field (Go omits it); a CRD's schema may refuse it (1.20's 422
    ``must be of type array: "null"``; differential tests)."""
    if not paths:
        return obj
    here: dict[Any, list[Path]] = {}   # first element -> the rest of each path through it
    for path in paths:
        here.setdefault(path[0], []).append(path[1:])
    if isinstance(obj, dict):
        out = dict(obj)
        for part, rests in here.items():
            if isinstance(part, Item) or part not in out:
                continue
            if not all(rests):
                del out[part]
            else:
                out[part] = _without(out[part], rests, child(schema, part, not at), owned,
                                     (*at, part))
    else:
        items = elements(schema, obj)
        if items is None:
            return obj
        out = [value if item not in here else
               _without(value, here[item], item_schema(schema), owned, (*at, item))
               for item, value in zip(items, obj) if item not in here or all(here[item])]
    return out if out or not at or not obj or at in owned else None


def _starting_managers(live: Obj | None, api_version: str, now: str,
                       schema: Schema | None) -> list[Manager]:
    if live is None:
        return []
    managers = decode((live.get("metadata") or {}).get("managedFields"))
    if managers:
        return managers
    owned = set(field_paths(live, schema, added=True))   # as the Update of a create
    return [Manager(BEFORE_FIRST_APPLY, UPDATE, api_version, now, owned)] if owned else []


def apply(live: Obj | None, applied: Obj, *, manager: str, force: bool, api_version: str,
          now: str, defaults: Callable[[Obj], Obj] | None = None, schema: Schema | None = None) -> Obj:
    """The object after ``manager`` applies ``applied`` onto ``live`` (None: create), with
    managedFields; ``now`` is the RFC 3339 time for entries that change. ``defaults``: the
    merged object with the server's defaults (a copy), before it is compared with ``live``;
    ``manager`` owns the fields of ``applied`` only, not what the defaults add (step 4).
    ``schema``: the kind's (which lists merge by key, ``typed``), None when unknown.
    Raises StatusError 409 Conflict (see module docstring) and 400 when ``applied`` carries
    managedFields."""
    if (applied.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    managers = _starting_managers(live, api_version, now, schema)
    mine = Manager(manager, APPLY, api_version)
    last = next((m for m in managers if m.key == mine.key), None)
    others = [m for m in managers if m is not last]
    wanted = set(field_paths(applied, schema))
    merged = merge(live or {}, applied, schema)
    owned = frozenset(field_paths(applied, schema, added=True)).union(  # spec: {} stays
        *(m.fields for m in others))
    merged = _without(merged, [path for path in _stopped_applying(
        last.fields if last else set(), wanted) if not any(m.owns(path) for m in others)],
        schema, owned)
    if defaults is not None:
        merged = defaults(merged)
    change = compare(live, merged, schema)
    conflicts = _conflicts(others, change.modified | change.added)
    if conflicts and not force:
        if manager != KUBECTL or not _allowed_by_last_applied(live, conflicts, api_version, schema):
            raise conflict_error(conflicts)
    kept, taken = take(others, change.modified | change.added | change.removed)
    moved = taken or wanted != (last.fields if last else set())
    mine = mine.with_fields(wanted, now if moved or not change.same else
                            (last.time if last else None))
    result = with_managers(merged, kept + [mine])
    if manager == KUBECTL and LAST_APPLIED in ((result.get("metadata") or {}).get("annotations") or {}):
        result = _with_last_applied(result, applied)
    return result


def _stopped_applying(before: frozenset[Path] | set[Path], wanted: set[Path]) -> list[Path]:
    """The fields a manager applied last time and not now, in path order, but for those it
    still applies under: an empty map applied before (``data: {}``, a leaf then) and filled
    now is the parent of the new fields, not a field to prune (as structured-merge-diff's
    prune, which removes only what the new applied set no longer reaches)."""
    parents = {path[:i] for path in wanted for i in range(1, len(path))}
    return sorted((p for p in before if p not in wanted and p not in parents), key=path_key)


def _conflicts(others: list[Manager], changed: frozenset[Path]) -> list[tuple[Manager, list[Path]]]:
    """(manager, its changed fields in set order) for every other manager losing fields,
    managers sorted by identifier."""
    out = [(m, sorted((p for p in changed if m.owns(p)), key=path_order)) for m in others]
    return sorted(((m, paths) for m, paths in out if paths), key=lambda mp: mp[0].identifier())


def conflict_error(conflicts: list[tuple[Manager, list[Path]]]) -> StatusError:
    """409 Conflict for apply conflicts, message and causes as fieldmanager's NewConflictError
    (the real server orders the causes of several managers at random; this one by identifier)."""
    count = sum(len(paths) for _, paths in conflicts)
    causes = [{"reason": "FieldManagerConflict", "message": f"conflict with {m.describe()}",
               "field": path_string(p)} for m, paths in conflicts for p in paths]
    if count == 1:
        (who, (path,)), = conflicts
        message = f"Apply failed with 1 conflict: conflict with {who.describe()}: {path_string(path)}"
    else:
        lines = []
        for who, paths in conflicts:
            lines.append(f"conflicts with {who.describe()}:")
            lines.extend(f"- {path_string(p)}" for p in paths)
        message = f"Apply failed with {count} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def _allowed_by_last_applied(live: Obj | None, conflicts: list[tuple[Manager, list[Path]]],
                             api_version: str, schema: Schema | None) -> bool:
    """Whether every conflicting field is in the last-applied annotation with the live value
    (then kubectl's server-side apply takes them); raises the remaining conflicts otherwise."""
    text = (((live or {}).get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        last_applied = json.loads(text) if text else None
    except ValueError:
        last_applied = None
    if not isinstance(last_applied, dict) or last_applied.get("apiVersion") != api_version:
        return False
    before, now = field_paths(last_applied, schema), field_paths(live, schema)
    allowed = {p for p, v in before.items() if p in now and same_value(v, now[p])}
    remaining = [(m, [p for p in paths if p not in allowed]) for m, paths in conflicts]
    remaining = [(m, paths) for m, paths in remaining if paths]
    if remaining:
        raise conflict_error(remaining)
    return True


def _with_last_applied(obj: Obj, applied: Obj) -> Obj:
    config = json.loads(json.dumps(applied))
    annotations = (config.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    meta = dict(obj["metadata"])
    meta["annotations"] = {**meta["annotations"],
                           LAST_APPLIED: json.dumps(config, sort_keys=True, separators=(",", ":")) + "\n"}
    return {**obj, "metadata": meta}
