"""Server-side apply, simplified: field ownership per Apply manager, conflicts, force.

Each Apply manager owns the leaf fields of its last applied configuration (recorded in its
``managedFields`` entry as ``fieldsV1``; lists count as single leaves). Applying:

- a field the configuration sets to a value different from the live one, owned by another
  Apply manager, is a conflict: 409 ``Apply failed with N conflict(s)`` with one
  ``FieldManagerConflict`` cause per field (``.data.k``), unless ``force``, which moves the
  ownership (a manager left owning nothing loses its entry);
- fields the manager applied before but no longer applies, and that no other Apply manager
  owns, are removed;
- the configuration is then merge-patched onto the live object.

Differs from the real structured-merge-diff: Update managers' fields never conflict, lists are
atomic (no merge by key), no schema-driven defaults. Functions are pure.
"""

from __future__ import annotations

from typing import Any

from .patch import merge_patch
from .status import StatusError

Obj = dict[str, Any]
Path = tuple[str, ...]
_IDENTITY: set[Path] = {("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace")}


def leaf_paths(config: Any, prefix: Path = ()) -> dict[Path, Any]:
    """Every leaf of ``config`` (dicts descended, anything else a leaf) -> its value, without
    the identity fields (apiVersion, kind, metadata.name/namespace)."""
    if isinstance(config, dict) and config:
        out: dict[Path, Any] = {}
        for key, value in config.items():
            out.update(leaf_paths(value, prefix + (str(key),)))
        return out
    return {} if prefix in _IDENTITY or not prefix else {prefix: config}


def fields_v1(paths: set[Path]) -> Obj:
    """The managedFields ``fieldsV1`` set for ``paths``."""
    root: Obj = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(f"f:{part}", {})
    return root


def paths_of(fields: Any, prefix: Path = ()) -> set[Path]:
    """The leaf paths recorded in a ``fieldsV1`` set."""
    if not isinstance(fields, dict) or not fields:
        return {prefix} if prefix else set()
    out: set[Path] = set()
    for key, value in fields.items():
        if key.startswith("f:"):
            out |= paths_of(value, prefix + (key[2:],))
    return out


def _get(obj: Any, path: Path) -> Any:
    for part in path:
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


_MISSING = object()


def _remove(obj: Obj, path: Path) -> None:
    node: Any = obj
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            return
    if isinstance(node, dict):
        node.pop(path[-1], None)


def _dotted(path: Path) -> str:
    return "." + ".".join(path)


def _apply_entries(live: Obj | None) -> list[Obj]:
    meta = (live or {}).get("metadata") or {}
    return [m for m in meta.get("managedFields") or [] if isinstance(m, dict)]


def apply(live: Obj | None, applied: Obj, *, manager: str, force: bool, api_version: str,
          now: str, subresource: str = "") -> Obj:
    """The object after ``manager`` applies ``applied`` onto ``live`` (None: create).
    Raises StatusError 409 on conflicts (see module docstring)."""
    wanted = leaf_paths(applied)
    entries = _apply_entries(live)
    conflicts: list[tuple[Path, str]] = []
    for entry in entries:
        if entry.get("operation") != "Apply" or entry.get("manager") == manager:
            continue
        for path in paths_of(entry.get("fieldsV1")) & set(wanted):
            if _get(live, path) != wanted[path]:
                conflicts.append((path, str(entry.get("manager"))))
    if conflicts and not force:
        raise _conflict_error(conflicts)
    taken = {path for path, _ in conflicts}
    mine = next((e for e in entries if e.get("manager") == manager and e.get("operation") == "Apply"
                 and e.get("subresource", "") == subresource), None)
    others = [e for e in entries if e is not mine]
    owned_by_others = set().union(*(paths_of(e.get("fieldsV1")) for e in others
                                    if e.get("operation") == "Apply")) if others else set()
    result = merge_patch(live or {}, applied)
    for path in (paths_of(mine.get("fieldsV1")) if mine else set()) - set(wanted) - owned_by_others:
        _remove(result, path)
    kept = []
    for entry in others:
        if entry.get("operation") == "Apply" and taken:
            remaining = paths_of(entry.get("fieldsV1")) - taken
            if not remaining:
                continue
            entry = {**entry, "fieldsV1": fields_v1(remaining)}
        kept.append(entry)
    new_fields = fields_v1(set(wanted))
    if mine is not None and mine.get("fieldsV1") == new_fields:
        entry = mine
    else:
        entry = {"manager": manager, "operation": "Apply", "apiVersion": api_version, "time": now,
                 "fieldsType": "FieldsV1", "fieldsV1": new_fields}
        if subresource:
            entry["subresource"] = subresource
    result["metadata"] = {**(result.get("metadata") or {}), "managedFields": kept + [entry]}
    return result


def _conflict_error(conflicts: list[tuple[Path, str]]) -> StatusError:
    parts = [f'conflict with "{who}": {_dotted(path)}' for path, who in conflicts]
    noun = "conflict" if len(conflicts) == 1 else "conflicts"
    causes = [{"reason": "FieldManagerConflict", "message": f'conflict with "{who}"',
               "field": _dotted(path)} for path, who in conflicts]
    return StatusError(409, "Conflict",
                       f"Apply failed with {len(conflicts)} {noun}: " + "\n".join(parts),
                       {"causes": causes})
