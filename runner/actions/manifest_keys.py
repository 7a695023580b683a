"""``validate``'s check of apply manifests against their kind's schema: list entries that lack
their list-map keys.

A server-side apply merges the entries of an ``x-kubernetes-list-type: map`` list by their
``x-kubernetes-list-map-keys``; an entry without one of them (a Service port without
``protocol``) cannot be merged: kube-apiserver 1.20 answers such an apply with 500 (newer
releases with 422), every time, so the reconcile could never succeed. A key with a default in
the server's own schema may be left out (a container port's ``protocol``:
``kinrun.openapi.IN_PROCESS_DEFAULTS``). The schema tells which lists are maps (``kinrun.openapi``: the built-in kinds
of the emulated release, and CRDs' ``openAPIV3Schema`` from the config's ``crds:`` files).

The manifest is a template: it is read statically, each ``{{ }}`` replaced by a placeholder
(a value, so a templated key counts as present) and each ``{% %}``/``{# #}`` tag dropped (a
``{% for %}`` body counts once), as ``kinrun rbac`` reads it. A list entry with a value that
only partly is a placeholder (``{port: 80{{ ', protocol: TCP' if x else '' }}}``: the
template may splice keys into it) is left out of the check. A manifest that does not parse
that way, or whose apiVersion or kind is templated, or whose kind has no schema, is not
checked (the run's 422 names the field).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kinrun import safe_yaml
from kinrun.openapi import Schema, builtin_schemas, crd_schema, list_map_key_errors

_EXPR = re.compile(r"\{\{.*?\}\}", re.S)
_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.S)
PLACEHOLDER = "kinrun-placeholder"
"""What a ``{{ }}`` reads as: a non-empty string, so a templated key value counts."""


def apply_key_problems(manifests: str, crds: Iterable[Any] = ()) -> list[str]:
    """``KIND NAME: FIELD: MESSAGE`` for each list entry of ``manifests`` (a template of one or
    more YAML documents) that lacks a list-map key; ``crds``: ``kinrun.crds.CrdNames`` whose
    schemas serve custom kinds. [] when nothing can be checked."""
    problems = []
    for doc in _documents(manifests):
        schema = _schema_of(doc, crds)
        if schema is None:
            continue
        doc = _without_spliced(doc)
        name = str((doc.get("metadata") or {}).get("name", ""))
        shown = f"{doc['kind']} {name}" if name and PLACEHOLDER not in name else doc["kind"]
        for problem in list_map_key_errors(schema, doc):
            problems.append(f"{shown}: {problem.field}: {problem.message}")
    return problems


def _documents(manifests: str) -> Iterator[Mapping[str, Any]]:
    try:
        docs = safe_yaml.load_all(_EXPR.sub(PLACEHOLDER, _TAG.sub("", manifests)))
    except Exception:  # noqa: BLE001 - a template that does not read statically: not checked
        return
    for doc in docs:
        if isinstance(doc, Mapping) and isinstance(doc.get("apiVersion"), str) \
                and isinstance(doc.get("kind"), str) and PLACEHOLDER not in (
                    doc["apiVersion"] + doc["kind"]):
            yield doc


def _without_spliced(value: Any) -> Any:
    """``value`` with every list entry whose own values only partly are the placeholder (a
    template that may add keys to the entry) replaced by None (not checked; the other
    entries keep their index)."""
    if isinstance(value, Mapping):
        return {k: _without_spliced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [None if _spliced(v) else _without_spliced(v) for v in value]
    return value


def _spliced(entry: Any) -> bool:
    return isinstance(entry, Mapping) and any(
        isinstance(v, str) and PLACEHOLDER in v and v != PLACEHOLDER for v in entry.values())


def _schema_of(doc: Mapping[str, Any], crds: Iterable[Any]) -> Schema | None:
    group, _, version = doc["apiVersion"].rpartition("/")
    schema = builtin_schemas().for_gvk(group, version, doc["kind"])
    if schema is not None:
        return schema
    for crd in crds:
        if (crd.group, crd.version, crd.kind) == (group, version, doc["kind"]) and crd.schema:
            return crd_schema({"schema": {"openAPIV3Schema": crd.schema}})
    return None
