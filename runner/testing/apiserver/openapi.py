"""The OpenAPI documents, from the one schema source (``kinrun.openapi``).

``/openapi/v2`` (JSON; its protobuf form in ``openapi_proto``): kube-apiserver 1.20.2's own
``definitions`` of the built-in kinds plus one definition per served CRD version (named as
the real server names them, ``com.example.v1.Widget``, its ``openAPIV3Schema`` with
``apiVersion``/``kind``/``metadata`` and ``x-kubernetes-group-version-kind``); no ``paths``.
A request that accepts neither JSON nor protobuf gets 404, which kubectl 1.27+ takes as "no
v2 document" (a 406 fails its validation).

``/openapi/v3`` and ``/openapi/v3/<gv>`` (1.20 has none: served on purpose, a newer
kube-apiserver's form, because kubectl 1.27+ reads its schemas from there for ``explain`` and
client-side validation): per group-version, the schemas reachable from its kinds under
``components.schemas`` and one PATCH operation per kind that accepts ``fieldValidation``, so
kubectl leaves validation to the server (which validates whatever the parameter says).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from kinrun.openapi import KUBERNETES_VERSION, Schema, builtin_schemas

from .registry import Registry, ResourceType

SchemaOf = Callable[[ResourceType, str], "Schema | None"]
_V2_REF, _V3_REF = "#/definitions/", "#/components/schemas/"
OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def crd_definition_name(t: ResourceType, version: str) -> str:
    """The definition name kube-apiserver gives a CRD version: the group reversed, the
    version, the kind (``widgets.ex.com`` v1 -> ``com.ex.v1.Widget``)."""
    return ".".join([*reversed(t.group.split(".")), version, t.kind])


def _crd_definition(t: ResourceType, version: str, schema: Schema | None) -> dict[str, Any]:
    node: dict[str, Any] = copy.deepcopy(dict(schema.node)) if schema is not None else {
        "type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props = node.setdefault("properties", {})
    props["apiVersion"] = {"type": "string", "description": "APIVersion defines the versioned "
                           "schema of this representation of an object."}
    props["kind"] = {"type": "string", "description": "Kind is a string value representing "
                     "the REST resource this object represents."}
    props["metadata"] = {"$ref": _V2_REF + OBJECT_META}
    node["x-kubernetes-group-version-kind"] = [{"group": t.group, "version": version,
                                                "kind": t.kind}]
    return node


def v2_document(registry: Registry, schema_of: SchemaOf) -> dict[str, Any]:
    """``/openapi/v2``: the built-in definitions plus every served CRD version's."""
    definitions = dict(builtin_schemas().definitions)
    doc = {"swagger": "2.0", "info": {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}"},
           "paths": {}, "definitions": definitions}
    for t in registry.types():
        if t.custom:
            for version in t.versions:
                definitions[crd_definition_name(t, version)] = _crd_definition(
                    t, version, schema_of(t, version))
    return doc


def _refs(node: Any) -> set[str]:
    """Every definition name a node refers to (``$ref``), however deep."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        found = {ref.removeprefix(_V2_REF)} if isinstance(ref, str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def _reachable(definitions: dict[str, Any], roots: list[str]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in definitions:
            continue
        seen[name] = definitions[name]
        todo.extend(_refs(definitions[name]))
    return seen


def _to_v3(node: Any) -> Any:
    """A v2 schema node with ``$ref``s pointing into ``components.schemas``."""
    if isinstance(node, dict):
        return {k: (v.replace(_V2_REF, _V3_REF) if k == "$ref" and isinstance(v, str)
                    else _to_v3(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_to_v3(v) for v in node]
    return node


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [("", "v1")]
    for group, versions in registry.group_versions().items():
        out.extend((group, v) for v in versions)
    return out


def root_document(registry: Registry, schema_of: SchemaOf) -> dict[str, Any]:
    """``/openapi/v3``: every served group-version with a content hash in its URL."""
    paths: dict[str, Any] = {}
    for group, version in _group_versions(registry):
        body = orjson.dumps(_fingerprint(registry, group, version, schema_of))
        gv = _gv_path(group, version)
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash="
                                          f"{hashlib.sha256(body).hexdigest().upper()}"}
    return {"paths": paths}


def _fingerprint(registry: Registry, group: str, version: str, schema_of: SchemaOf) -> Any:
    """What a group-version's document depends on (cheaper to hash than the document)."""
    return [(t.kind, t.plural, t.namespaced, dict(s.node) if t.custom and (s := schema_of(
        t, version)) is not None else None) for t in registry.types()
        if t.group == group and version in t.versions]


def _item_path(t: ResourceType, version: str) -> str:
    scope = "namespaces/{namespace}/" if t.namespaced else ""
    return f"/{_gv_path(t.group, version)}/{scope}{t.plural}/{{name}}"


def _patch_operation(t: ResourceType, version: str) -> dict[str, Any]:
    gvk = {"group": t.group, "version": version, "kind": t.kind}
    query = [{"name": n, "in": "query", "schema": {"type": "string", "uniqueItems": True}}
             for n in ("fieldValidation", "fieldManager")]
    return {"patch": {"operationId": f"patch{t.kind}", "x-kubernetes-group-version-kind": gvk,
                      "x-kubernetes-action": "patch", "parameters": query,
                      "responses": {"200": {"description": "OK"}}}}


def gv_document(registry: Registry, group: str, version: str,
                schema_of: SchemaOf) -> dict[str, Any] | None:
    """``/openapi/v3/api/v1`` or ``/openapi/v3/apis/<g>/<v>``: the kinds' schemas (and
    what they refer to) and a PATCH operation per kind; None when the group-version is not
    served."""
    types = [t for t in registry.types() if t.group == group and version in t.versions]
    if not types:
        return None
    builtins = builtin_schemas().definitions
    definitions = dict(builtins)
    roots = []
    for t in types:
        schema = schema_of(t, version)
        if t.custom:
            name = crd_definition_name(t, version)
            definitions[name] = _crd_definition(t, version, schema)
            roots.append(name)
        elif schema is not None:
            roots.append(schema.name)
    schemas = _to_v3(_reachable(definitions, roots))
    paths = {_item_path(t, version): _patch_operation(t, version) for t in types}
    info = {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}"}
    return {"openapi": "3.0.0", "info": info, "paths": paths,
            "components": {"schemas": schemas}}
