"""Single-object requests: get, create, replace, server-side apply, patch, delete.

Each function takes the Transport and the target's ResourceRef (resolved by discovery) and
returns the server's answer as a dict. Semantics are the API server's (``kubectl``'s verbs):

- apply is server-side apply, ``PATCH`` with ``application/apply-patch+yaml`` (JSON is YAML),
  field manager ``kinrun`` unless told otherwise; ``force`` takes over conflicting fields;
- patch is merge (RFC 7386), JSON (RFC 6902, a list of operations) or strategic merge (built-in
  kinds only: custom resources answer 415, an ApiError);
- delete sends DeleteOptions (propagation policy, preconditions on uid/resourceVersion) and
  returns the final object (while finalizers run) or a Status.

``params`` adds query parameters (``dryRun``, ``fieldValidation``, ...). Nothing is retried
here beyond the transport's policy (writes: 429 only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kinrun.errors import ApplyConflictError
from kinrun.kube.resources import ResourceRef
from kinrun.kube.transport import Transport

FIELD_MANAGER = "kinrun"

PATCH_CONTENT_TYPES = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}

Obj = dict[str, Any]
Params = Mapping[str, Any] | None


def object_namespace(ref: ResourceRef, body: Mapping[str, Any],
                     namespace: str | None) -> str | None:
    """The namespace a body-carrying write goes to: ``namespace``, else the body's own; None
    for cluster-scoped resources. Raises ValueError for a namespaced kind with neither."""
    if not ref.namespaced:
        return None
    ns = namespace or (body.get("metadata") or {}).get("namespace")
    if not ns:
        raise ValueError(f"{ref.kind} is namespaced: give a namespace (or metadata.namespace)")
    return str(ns)


def object_name(ref: ResourceRef, body: Mapping[str, Any]) -> str:
    """``metadata.name`` of ``body``; raises ValueError when it has none."""
    name = (body.get("metadata") or {}).get("name")
    if not name:
        raise ValueError(f"{ref.kind}: the object needs metadata.name")
    return str(name)


def with_type_meta(ref: ResourceRef, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` with apiVersion/kind filled from ``ref`` when missing (a new dict then; the
    caller's body is never modified)."""
    if body.get("apiVersion") and body.get("kind"):
        return body
    return {**body, "apiVersion": ref.api_version, "kind": ref.kind}


def get_object(t: Transport, ref: ResourceRef, name: str, *, namespace: str | None = None,
               subresource: str | None = None, params: Params = None) -> Obj:
    """GET one object (or its subresource). Raises NotFoundError when absent."""
    return t.request("GET", ref.path(namespace, name, subresource), query=params)


def create_object(t: Transport, ref: ResourceRef, body: Mapping[str, Any], *,
                  namespace: str | None = None, params: Params = None) -> Obj:
    """POST a new object (``generateName`` works). Raises ConflictError when it exists."""
    ns = object_namespace(ref, body, namespace)
    return t.request("POST", ref.path(ns), query=params, body=with_type_meta(ref, body))


def replace_object(t: Transport, ref: ResourceRef, body: Mapping[str, Any], *,
                   namespace: str | None = None, subresource: str | None = None,
                   params: Params = None) -> Obj:
    """PUT the whole object; with ``metadata.resourceVersion`` set this is an optimistic
    update (ConflictError when the object changed meanwhile)."""
    ns = object_namespace(ref, body, namespace)
    path = ref.path(ns, object_name(ref, body), subresource)
    return t.request("PUT", path, query=params, body=with_type_meta(ref, body))


def apply_object(t: Transport, ref: ResourceRef, body: Mapping[str, Any], *,
                 namespace: str | None = None, force: bool = False,
                 field_manager: str = FIELD_MANAGER, subresource: str | None = None,
                 params: Params = None) -> Obj:
    """Server-side apply ``body`` (the fields kinrun manages). Raises ApplyConflictError (a
    ConflictError) naming this object, the fields and their managers when another manager
    (an applier, or whoever set the field with create/update/patch) owns a field the apply
    changes and ``force`` is False."""
    ns = object_namespace(ref, body, namespace)
    name = object_name(ref, body)
    path = ref.path(ns, name, subresource)
    query = {**(params or {}), "fieldManager": field_manager, "force": True if force else None}
    try:
        return t.request("PATCH", path, query=query, body=with_type_meta(ref, body),
                         content_type=PATCH_CONTENT_TYPES["apply"])
    except ApplyConflictError as exc:
        raise exc.for_object(ref.kind, ns, name) from None


def patch_object(t: Transport, ref: ResourceRef, name: str, patch: Any, *,
                 namespace: str | None = None, patch_type: str = "merge",
                 subresource: str | None = None, params: Params = None) -> Obj:
    """PATCH one object: ``patch`` is a dict (merge, strategic) or a list of operations (json).

    Raises ValueError for an unknown patch type or a patch of the wrong shape.
    """
    content_type = PATCH_CONTENT_TYPES.get(patch_type)
    if content_type is None or patch_type == "apply":
        raise ValueError(f"unknown patch type {patch_type!r}: use merge, json or strategic")
    if (patch_type == "json") != isinstance(patch, list):
        shape = "a list of operations" if patch_type == "json" else "a dict"
        raise ValueError(f"a {patch_type} patch must be {shape}, got {type(patch).__name__}")
    path = ref.path(namespace if ref.namespaced else None, name, subresource)
    return t.request("PATCH", path, query=params, body=patch, content_type=content_type)


def delete_options(*, propagation_policy: str | None = None,
                   preconditions: Mapping[str, str] | None = None,
                   grace_period_seconds: int | None = None) -> Obj | None:
    """A DeleteOptions dict, or None when every option is unset."""
    opts: Obj = {}
    if propagation_policy:
        opts["propagationPolicy"] = propagation_policy
    if preconditions:
        opts["preconditions"] = dict(preconditions)
    if grace_period_seconds is not None:
        opts["gracePeriodSeconds"] = int(grace_period_seconds)
    if not opts:
        return None
    return {"apiVersion": "v1", "kind": "DeleteOptions", **opts}


def delete_object(t: Transport, ref: ResourceRef, name: str, *, namespace: str | None = None,
                  options: Mapping[str, Any] | None = None, params: Params = None) -> Obj:
    """DELETE one object with optional DeleteOptions (see ``delete_options``).

    Raises NotFoundError when absent, ConflictError when a precondition fails.
    """
    path = ref.path(namespace if ref.namespaced else None, name)
    return t.request("DELETE", path, query=params, body=dict(options) if options else None)
