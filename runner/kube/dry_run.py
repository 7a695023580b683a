"""Dry-run: what a write would change, told from the API server's own dry-run answer.

In dry-run mode (``kinrun CONFIG --dry-run``, ``Client(dry_run=True)``) every write is sent with
the query parameter ``dryRun=All``: Kubernetes API dry-run (KEP-576, GA in 1.18; the same
request ``kubectl apply --dry-run=server`` sends). The API server decodes, defaults, validates,
runs mutating and validating admission and computes the object it would store, answers with
that object, and persists nothing: no etcd write, no watch event, no new resourceVersion. So
the answer is the truth about the write, webhooks and defaulting included, as no client-side
guess can be.

This module turns such an answer into one log line by comparing it with the current object
(a GET just before the write, or the object the caller already holds); a Secret's data,
stringData and last-applied annotation are named, never shown (``data.password (changed)``,
``kinrun.redact``):

    would create ConfigMap ns/x
    would patch Deployment ns/web: spec.replicas 1 -> 3, metadata.annotations.foo (added)
    would delete ConfigMap ns/old
    no change to ConfigMap ns/x

Fields the server manages on every write are not changes a controller makes and are left out
of the comparison (``SERVER_MANAGED``: resourceVersion, managedFields, generation, uid,
creationTimestamp, selfLink). Pure data, no I/O: ``kinrun.kube.Client`` does the sending.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kinrun.redact import LAST_APPLIED

DRY_RUN_PARAM = "dryRun"
DRY_RUN_ALL = "All"
"""The only value of ``dryRun`` the API defines: every stage of the request runs, none persists."""

SERVER_MANAGED: frozenset[tuple[str, ...]] = frozenset({
    ("metadata", "resourceVersion"),
    ("metadata", "managedFields"),
    ("metadata", "generation"),
    ("metadata", "uid"),
    ("metadata", "creationTimestamp"),
    ("metadata", "selfLink"),
})
"""Field paths set by the API server on every write (or on create): never reported."""

MAX_CHANGES = 20
"""Changed fields named in one line; the rest are counted (``... and 7 more``)."""

MAX_VALUE = 40
"""Characters of a value shown in ``old -> new`` (longer values are cut and end in ``...``)."""

PathPart = str | int
FieldPath = tuple[PathPart, ...]
Obj = dict[str, Any]


class _Absent(enum.Enum):
    """The value of a field an object does not have (distinct from a JSON null)."""

    ABSENT = 0

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent.ABSENT


@dataclass(frozen=True)
class FieldChange:
    """One field that differs: ``path`` (keys and list indexes from the object's root), ``old``
    and ``new`` values (``ABSENT`` when the field is added or removed)."""

    path: FieldPath
    old: Any = ABSENT
    new: Any = ABSENT

    def describe(self) -> str:
        """``spec.replicas 1 -> 3``, ``metadata.annotations.foo (added)``, ``data.x (removed)``."""
        where = format_path(self.path)
        if self.old is ABSENT:
            return f"{where} (added)"
        if self.new is ABSENT:
            return f"{where} (removed)"
        return f"{where} {show_value(self.old)} -> {show_value(self.new)}"


@dataclass(frozen=True)
class Target:
    """What a write is about: ``kind``, ``namespace`` (None for cluster-scoped), ``name`` and
    ``subresource`` (``status`` or None)."""

    kind: str
    namespace: str | None
    name: str
    subresource: str | None = None

    def __str__(self) -> str:
        """``ConfigMap ns/x``, ``Namespace x``, ``Deployment ns/web/status``."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.kind} {where}" + (f"/{self.subresource}" if self.subresource else "")


Change = Literal["create", "apply", "patch", "update"]


def with_dry_run(params: Mapping[str, Any] | None) -> dict[str, Any]:
    """``params`` (query parameters; not modified) plus ``dryRun=All``, replacing any value a
    caller gave (a dry-run client never lets a write through)."""
    return {**(params or {}), DRY_RUN_PARAM: DRY_RUN_ALL}


# --- comparing ---------------------------------------------------------------------------------


def field_changes(current: Any, proposed: Any, *,
                  ignore: frozenset[tuple[str, ...]] = SERVER_MANAGED) -> list[FieldChange]:
    """Every leaf field where ``proposed`` (the server's dry-run answer) differs from
    ``current``, in document order (``proposed``'s keys first, then removed ones).

    Mappings are compared key by key and lists index by index (an element inserted at the front
    shifts every later index: each is reported); a field whose type changes (say a list becomes
    a mapping) is one change. Paths in ``ignore`` (and everything below them) are skipped.
    """
    out: list[FieldChange] = []
    _diff(current, proposed, (), ignore, out)
    return out


def _diff(old: Any, new: Any, path: FieldPath, ignore: frozenset[tuple[str, ...]],
          out: list[FieldChange]) -> None:
    if path in ignore or old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in [*new, *(k for k in old if k not in new)]:
            _diff(old.get(key, ABSENT), new.get(key, ABSENT), (*path, key), ignore, out)
    elif _is_list(old) and _is_list(new):
        for index in range(max(len(old), len(new))):
            _diff(old[index] if index < len(old) else ABSENT,
                  new[index] if index < len(new) else ABSENT, (*path, index), ignore, out)
    else:
        out.append(FieldChange(path, old, new))


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def format_path(path: FieldPath) -> str:
    """``spec.template.spec.containers[0].image``; keys that are not plain words are quoted in
    brackets: ``metadata.labels["app.kubernetes.io/name"]``. The root is ``.``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.match(part):
            text += f".{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text or "."


def show_value(value: Any) -> str:
    """A value as compact JSON (``3``, ``"web"``, ``{"a":1}``), cut to MAX_VALUE characters."""
    text = json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 3] + "..."


# --- one line per write ------------------------------------------------------------------------


def change_summary(verb: Change, target: Target, current: Obj | None, answer: Any) -> str:
    """The line for a write that creates or changes an object.

    ``verb``: ``create`` (POST), ``apply`` (server-side apply: creates or patches), ``patch`` or
    ``update`` (PUT). ``current``: the object before the write (None: it does not exist);
    ``answer``: the server's dry-run answer (the object as it would be stored). Returns
    ``would create T`` (``create``, or nothing there yet), ``no change to T`` or ``would patch T:
    <changes>`` (``would update`` for PUT).
    """
    if verb == "create" or current is None:
        return f"would create {_created(target, answer)}"
    changes = field_changes(current, answer)
    if not changes:
        return f"no change to {target}"
    describe = _secret_change if target.kind == "Secret" else FieldChange.describe
    named = ", ".join(describe(c) for c in changes[:MAX_CHANGES])
    more = f" ... and {len(changes) - MAX_CHANGES} more" if len(changes) > MAX_CHANGES else ""
    return f"would {'update' if verb == 'update' else 'patch'} {target}: {named}{more}"


def _secret_change(change: FieldChange) -> str:
    """A change of a Secret without its values (``kinrun.redact``): ``data.password
    (changed)`` for data, stringData and the last-applied annotation; other fields as any."""
    path = change.path
    if path[:1] in (("data",), ("stringData",)) or path[:3] == ("metadata", "annotations",
                                                               LAST_APPLIED):
        if change.old is ABSENT or change.new is ABSENT:
            return change.describe()  # (added) / (removed): no value shown
        return f"{format_path(path)} (changed)"
    return change.describe()


def delete_summary(target: Target, answer: Any) -> str:
    """The line for a DELETE the server accepted: ``would delete T``, or ``would delete T (after
    finalizers a, b)`` when the answer is the object with finalizers still pending (the server
    would only set its deletionTimestamp)."""
    meta = answer.get("metadata") if isinstance(answer, Mapping) else None
    finalizers = (meta or {}).get("finalizers") or []
    if meta and meta.get("deletionTimestamp") and finalizers:
        return f"would delete {target} (after finalizers {', '.join(map(str, finalizers))})"
    return f"would delete {target}"


def absent_summary(target: Target) -> str:
    """The line for a write whose target does not exist (a DELETE answered 404)."""
    return f"no change to {target} (not found)"


def _created(target: Target, answer: Any) -> str:
    """``T`` with the name the server gave (``generateName``), plus ``(Normal Synced)`` for a
    core/v1 Event."""
    if isinstance(answer, Mapping):
        name = (answer.get("metadata") or {}).get("name")
        if name and not target.name:
            target = Target(target.kind, target.namespace, str(name), target.subresource)
        if answer.get("kind") == "Event" and answer.get("reason"):
            return f"{target} ({answer.get('type') or 'Normal'} {answer['reason']})"
    return str(target)
