"""kinrun.openapi: the schemas of Kubernetes kinds, one source for serving, validating and
type-checking.

The built-in kinds' schemas are kube-apiserver 1.20.2's own OpenAPI v2 ``definitions``, shipped
as package data (``kube-openapi-v2.json.gz``, produced by ``scripts/openapi-snapshot`` from
the envtest kube-apiserver; see docs/embedded.md). Custom kinds' schemas come from their
CRD's ``openAPIV3Schema`` (``crd_schema``). The embedded API server serves ``/openapi/v2``
from the same document and validates writes with the functions below.

    schemas = builtin_schemas()
    deploy = schemas.for_gvk("apps", "v1", "Deployment")           # Schema | None
    deploy.field_exists("spec.template.spec.containers[].image")   # True
    ports = deploy.at("spec.template.spec.containers[].ports")
    ports.list_map_keys                                            # ("containerPort", "protocol")
    svc_port = schemas.for_gvk("", "v1", "Service").at("spec.ports[]")
    BUILTIN_DEFAULTS[svc_port.name]                                 # {"protocol": "TCP"}
    crd_errors(crd_schema(version), obj)   # a custom resource's 422 causes

Public API (stable for ``kinrun validate``'s template type-checking): ``builtin_schemas``,
``builtin_document``, ``crd_schema``, ``Schemas``, ``Schema``, ``GVK``, ``Problem``,
``BUILTIN_DEFAULTS``, ``GO_ZERO_FIELDS``, ``IN_PROCESS_DEFAULTS``, ``KUBERNETES_VERSION``, and
the checks ``decode_errors``, ``required_errors``, ``crd_errors``, ``prune``, ``keeps``,
``undeclared_field``, ``apply_defaults``, ``type_matches``. Pure data and checks: no I/O
beyond reading the package data once. ``kinrun.openapi.typed`` holds how server-side apply
(structured-merge-diff) types an object: associative lists, their keys, and ``typed_errors``
(the list entries it cannot merge).
"""

from ._check import (BUILTIN_DEFAULTS, GO_ZERO_FIELDS, Problem, apply_defaults,
                     canonicalize_quantities, crd_errors, decode_errors, json_type, keeps, prune,
                     required_errors, type_matches, undeclared_field)
from ._quantity import parse_quantity
from ._schema import (GVK, IN_PROCESS_DEFAULTS, KUBERNETES_VERSION, Schema, Schemas,
                      builtin_document, builtin_schemas, crd_schema)

__all__ = [
    "BUILTIN_DEFAULTS",
    "GO_ZERO_FIELDS",
    "GVK",
    "IN_PROCESS_DEFAULTS",
    "KUBERNETES_VERSION",
    "Problem",
    "Schema",
    "Schemas",
    "apply_defaults",
    "builtin_document",
    "builtin_schemas",
    "canonicalize_quantities",
    "crd_errors",
    "crd_schema",
    "decode_errors",
    "json_type",
    "keeps",
    "parse_quantity",
    "prune",
    "required_errors",
    "type_matches",
    "undeclared_field",
]
