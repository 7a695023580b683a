"""``validate``'s check of apply manifests against how server-side apply types them: list
entries it cannot merge.

A server-side apply merges the entries of an associative list (``x-kubernetes-list-type:
map``/``set``, or a built-in list with a patch merge key: containers by ``name``, env, ports,
volumes) by their keys. An entry without one of them (a Service port without ``protocol``, a
container without ``name``), a null entry, an object in a set, or two entries with one key
cannot be typed: kube-apiserver 1.20 answers such an apply with 500 (newer releases with 422),
every time, so the reconcile could never succeed (``kinrun.openapi.typed.typed_errors``, the
same check the embedded API server answers with). A key with a default in the server's own
schema may be left out (a container port's ``protocol``:
``kinrun.openapi.IN_PROCESS_DEFAULTS``). The schema tells which lists are associative
(``kinrun.openapi``: the built-in kinds of the emulated release, and CRDs' ``openAPIV3Schema``
from the config's ``crds:`` files); every kind's ``metadata`` is ``ObjectMeta``.

The manifest is a template: it is read statically, each ``{{ }}`` replaced by a placeholder
(a value, so a templated key counts as present) and each ``{% %}``/``{# #}`` tag dropped (a
``{% for %}`` body counts once), as ``kinrun rbac`` reads it. A list entry with a value that
only partly is a placeholder (``{port: 80{{ ', protocol: TCP' if x else '' }}}``: the
template may splice keys into it), or that is one (``- {{ item }}``), is left out of the check; two entries with one key are
reported only when neither key is templated and the manifest has no ``{% %}`` tag (both
branches of an ``{% if %}`` may hold the same entry). A manifest that does not parse that way,
or whose apiVersion or kind is templated, is not checked; one whose kind has no schema has only
its ``metadata`` checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from kinrun import safe_yaml
from kinrun.openapi import Schema, builtin_schemas, crd_schema
from kinrun.openapi.typed import typed_errors

_EXPR = re.compile(r"\{\{.*?\}\}", re.S)
_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.S)
PLACEHOLDER = "kinrun-placeholder"
"""What a ``{{ }}`` reads as: a non-empty string, so a templated key value counts."""


def apply_key_problems(manifests: str, crds: Iterable[Any] = ()) -> list[str]:
    """``KIND NAME: PATH: MESSAGE`` (structured-merge-diff's words: ``Service web: .spec.ports:
    element 0: associative list with keys has an element that omits key field "protocol" (and
    doesn't have default value)``) for each list entry of ``manifests`` (a template of one or
    more YAML documents) that a server-side apply cannot type; ``crds``:
    ``kinrun.crds.CrdNames`` whose schemas serve custom kinds. [] when nothing is found."""
    branches = _TAG.search(manifests) is not None
    problems = []
    for doc in _documents(manifests):
        name = str((doc.get("metadata") or {}).get("name", ""))
        shown = f"{doc['kind']} {name}" if name and PLACEHOLDER not in name else doc["kind"]
        for problem in typed_errors(_schema_of(doc, crds), doc, opaque=_templated):
            if ": duplicate entries for key " in problem and (branches or PLACEHOLDER in problem):
                continue
            problems.append(f"{shown}: {problem}")
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


def _templated(entry: Any) -> bool:
    """Whether a list entry is (``- {{ item }}``) or may be (a key spliced in) what a template
    writes: not checked."""
    if isinstance(entry, str):
        return PLACEHOLDER in entry
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
