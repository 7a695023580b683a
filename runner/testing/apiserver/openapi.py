"""Minimal OpenAPI v3 documents, enough for kubectl to prefer server-side field validation.

kubectl (1.27+) decides whether to validate client-side by looking, in ``/openapi/v3/<gv>``,
for a PATCH operation tagged with the kind's ``x-kubernetes-group-version-kind`` that accepts a
``fieldValidation`` query parameter; when it finds one it sends ``fieldValidation=Strict`` and
leaves validation to the server (this one ignores the parameter). No schemas are served, so
kubectl computes apply patches from its compiled-in types (built-in kinds) or as JSON merge
patches (custom resources). ``/openapi/v2`` is not served.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from .registry import Registry, ResourceType


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def root_document(registry: Registry) -> dict[str, Any]:
    """``/openapi/v3``: every served group-version with a content hash in its URL."""
    paths: dict[str, Any] = {}
    for group, version in _group_versions(registry):
        doc_hash = hashlib.sha256(orjson.dumps(gv_document(registry, group, version))).hexdigest()
        gv = _gv_path(group, version)
        paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={doc_hash.upper()}"}
    return {"paths": paths}


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [("", "v1")]
    for group, versions in registry.group_versions().items():
        out.extend((group, v) for v in versions)
    return out


def _item_path(t: ResourceType, version: str) -> str:
    scope = "namespaces/{namespace}/" if t.namespaced else ""
    return f"/{_gv_path(t.group, version)}/{scope}{t.plural}/{{name}}"


def gv_document(registry: Registry, group: str, version: str) -> dict[str, Any] | None:
    """``/openapi/v3/api/v1`` or ``/openapi/v3/apis/<g>/<v>``: PATCH operations only; None when
    the group-version is not served."""
    types = [t for t in registry.types() if t.group == group and version in t.versions]
    if not types:
        return None
    paths = {}
    for t in types:
        gvk = {"group": t.group, "version": version, "kind": t.kind}
        paths[_item_path(t, version)] = {"patch": {
            "operationId": f"patch{t.kind}", "x-kubernetes-group-version-kind": gvk,
            "x-kubernetes-action": "patch",
            "parameters": [{"name": "fieldValidation", "in": "query",
                            "schema": {"type": "string", "uniqueItems": True}},
                           {"name": "fieldManager", "in": "query",
                            "schema": {"type": "string", "uniqueItems": True}}],
            "responses": {"200": {"description": "OK"}}}}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": paths, "components": {"schemas": {}}}
