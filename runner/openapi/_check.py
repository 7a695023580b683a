"""Checking, defaulting and pruning objects against a ``Schema``, as kube-apiserver 1.20 does.

Two families, because the real server treats them differently:

- built-in kinds are decoded into Go types: a value of the wrong JSON type is a decode error
  (400 BadRequest, ``decode_errors``), unknown fields are dropped silently (``prune``), fields
  the Go code defaults are filled (``apply_defaults`` with ``BUILTIN_DEFAULTS``), and required
  fields are checked by validation (422, ``required_errors``);
- custom resources are validated against their CRD's structural schema (422 Invalid with one
  cause per field, ``crd_errors``: type, required, enum, pattern, minimum/maximum, lengths,
  item counts, nullable), after pruning (``prune``) and defaulting (``apply_defaults``).

How server-side apply types an object (associative lists and their keys) is
``kinrun.openapi.typed``. Every function is pure except ``prune`` and
``apply_defaults``, which change the object they are given.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._quantity import canonical_quantity
from ._schema import Schema

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
BUILTIN_DEFAULTS: dict[str, dict[str, Any]] = {
    "io.k8s.api.core.v1.ServicePort": {"protocol": "TCP"},
    "io.k8s.api.core.v1.ContainerPort": {"protocol": "TCP"},
    "io.k8s.api.core.v1.EndpointPort": {"protocol": "TCP"},
    "io.k8s.api.core.v1.Container": {"terminationMessagePath": "/dev/termination-log",
                                     "terminationMessagePolicy": "File"},
    "io.k8s.api.core.v1.ServiceSpec": {"type": "ClusterIP", "sessionAffinity": "None"},
    "io.k8s.api.apps.v1.DeploymentSpec": {"replicas": 1},
    "io.k8s.api.apps.v1.ReplicaSetSpec": {"replicas": 1},
    "io.k8s.api.apps.v1.StatefulSetSpec": {"replicas": 1},
    "io.k8s.api.core.v1.ReplicationControllerSpec": {"replicas": 1},
    # pkg/apis/admissionregistration/v1/defaults.go
    "io.k8s.api.admissionregistration.v1.MutatingWebhook": {
        "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
        "objectSelector": {}, "timeoutSeconds": 10, "reinvocationPolicy": "Never"},
    "io.k8s.api.admissionregistration.v1.ValidatingWebhook": {
        "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
        "objectSelector": {}, "timeoutSeconds": 10},
    "io.k8s.api.admissionregistration.v1.RuleWithOperations": {"scope": "*"},
    "io.k8s.api.admissionregistration.v1.ServiceReference": {"port": 443},
}
"""Fields the Go defaulting of kube-apiserver 1.20 fills (``pkg/apis/core/v1/defaults.go``,
``pkg/apis/admissionregistration/v1/defaults.go``),
by definition name; only the ones kinrun's users meet (list-map keys first). Not in the
OpenAPI v2 document, which carries no defaults for built-in kinds."""


_NODE_INFO = ("machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
              "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
              "operatingSystem", "architecture")
GO_ZERO_FIELDS: dict[str, dict[str, Any]] = {
    "io.k8s.api.apps.v1.Deployment": {"status": {}},
    "io.k8s.api.apps.v1.ReplicaSet": {"status": {}},
    "io.k8s.api.apps.v1.ReplicaSetStatus": {"replicas": 0},
    "io.k8s.api.apps.v1.StatefulSet": {"status": {}},
    "io.k8s.api.apps.v1.StatefulSetStatus": {"replicas": 0},
    "io.k8s.api.apps.v1.DaemonSet": {"status": {}},
    "io.k8s.api.apps.v1.DaemonSetStatus": {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                           "desiredNumberScheduled": 0, "numberReady": 0},
    "io.k8s.api.core.v1.ReplicationController": {"status": {}},
    "io.k8s.api.core.v1.ReplicationControllerStatus": {"replicas": 0},
    "io.k8s.api.batch.v1.Job": {"status": {}},
    "io.k8s.api.core.v1.Service": {"status": {}},
    "io.k8s.api.core.v1.ServiceStatus": {"loadBalancer": {}},
    "io.k8s.api.networking.v1.Ingress": {"status": {}},
    "io.k8s.api.networking.v1.IngressStatus": {"loadBalancer": {}},
    "io.k8s.api.core.v1.PersistentVolumeClaim": {"status": {}},
    "io.k8s.api.core.v1.PersistentVolumeClaimStatus": {"phase": "Pending"},  # SetDefaults_
    "io.k8s.api.core.v1.Node": {"status": {}},
    "io.k8s.api.core.v1.NodeStatus": {"daemonEndpoints": {}, "nodeInfo": {}},
    "io.k8s.api.core.v1.NodeDaemonEndpoints": {"kubeletEndpoint": {}},
    "io.k8s.api.core.v1.DaemonEndpoint": {"Port": 0},
    "io.k8s.api.core.v1.NodeSystemInfo": dict.fromkeys(_NODE_INFO, ""),
    "io.k8s.api.core.v1.PodSpec": {"securityContext": {}},  # SetDefaults_PodSpec
    "io.k8s.api.core.v1.Container": {"resources": {}},
    "io.k8s.api.core.v1.Event": {"source": {}},
    "io.k8s.api.events.v1.Event": {"deprecatedSource": {}},
    "io.k8s.api.coordination.v1.Lease": {"spec": {}},
}
"""Fields kube-apiserver 1.20 always writes, by definition name: Go's encoding of a
non-pointer struct or scalar field without ``omitempty`` (a new Deployment's ``status: {}``, a
Service's ``status.loadBalancer: {}``, a ReplicaSet's ``status.replicas: 0``), and two
defaults of its strategies a fresh status gets (a claim is ``Pending``, a pod spec has a
``securityContext``). Filled after the strategy's PrepareForCreate/PrepareForUpdate, so that
a status reset on create comes back as 1.20 answers it (differential test
``test_differential_empty_structs``)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One field error as kube-apiserver writes it: ``field`` (``spec.ports[0].protocol``),
    ``reason`` (metav1.CauseType: ``FieldValueInvalid``, ``FieldValueRequired``,
    ``FieldValueNotSupported``), ``message``
    (``Required value``, ``Invalid value: "x": ...``)."""

    field: str
    reason: str
    message: str


def json_type(value: Any) -> str:
    """The JSON type name of a decoded value (``string``, ``integer``, ``object``, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    return {float: "number", str: "string", list: "array", dict: "object"}.get(type(value), "?")


def type_matches(schema: Schema, value: Any, *, null_ok: bool) -> bool:
    """Whether ``value``'s JSON type fits ``schema`` (int-or-string and Quantity accept numbers
    too; a node without a type accepts anything; ``null_ok``: null fits any type, as Go's
    decoder allows)."""
    if value is None:
        return null_ok or bool(schema.node.get("nullable"))
    kind = json_type(value)
    if schema.format == "int-or-string" or (
            schema.node.get("x-kubernetes-int-or-string")):
        return kind in ("integer", "string")
    if schema.name == QUANTITY:
        return kind in ("integer", "number", "string")
    wanted = schema.type
    return not wanted or kind == wanted or (wanted == "number" and kind == "integer")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(schema: Schema, value: Any, path: str,
          visit: Callable[[Schema, Any, str], bool], *, indexed: bool = True) -> None:
    """Call ``visit(schema, value, path)`` on every node of ``value`` that the schema
    describes, depth first; ``visit`` returns False to skip a node's children. ``indexed``:
    list items get ``path[i]`` (Go's field.Path, built-in kinds), else the list's own path
    (the CRD validator's form, ``spec.items.n``)."""
    if not visit(schema, value, path):
        return
    if isinstance(value, dict):
        for key, child in value.items():
            sub = schema.child(key) or schema.additional
            if sub is not None:
                _walk(sub, child, _join(path, key), visit, indexed=indexed)
    elif isinstance(value, list) and schema.items is not None:
        for index, child in enumerate(value):
            _walk(schema.items, child, f"{path}[{index}]" if indexed else path, visit,
                  indexed=indexed)


def decode_errors(schema: Schema, obj: Any) -> list[str]:
    """Where a built-in object cannot be decoded into its Go type: ``path: expected T, got
    U`` for each value of the wrong JSON type (null is accepted, as Go's decoder does)."""
    found: list[str] = []

    def visit(node: Schema, value: Any, path: str) -> bool:
        if type_matches(node, value, null_ok=True):
            return True
        found.append(f"{path or '<root>'}: expected {node.type}, got {json_type(value)}")
        return False
    _walk(schema, obj, "", visit)
    return found


def required_errors(schema: Schema, obj: Any) -> list[Problem]:
    """``path: Required value`` for each field the schema's ``required`` lists that an object
    present in ``obj`` lacks (null counts as absent)."""
    found: list[Problem] = []

    def visit(node: Schema, value: Any, path: str) -> bool:
        if isinstance(value, dict):
            for name in node.required:
                if value.get(name) is None:
                    found.append(Problem(_join(path, name), "FieldValueRequired", "Required value"))
        return True
    _walk(schema, obj, "", visit)
    return found


def prune(schema: Schema, obj: Any, *, keep_root: tuple[str, ...] = ()) -> None:
    """Remove, in place, every object field the schema does not declare, except under
    ``x-kubernetes-preserve-unknown-fields: true`` or ``additionalProperties`` (as the
    apiextensions pruning of structural schemas). ``keep_root``: top-level fields kept
    whatever the schema says (``apiVersion``, ``kind``, ``metadata``)."""
    if not isinstance(obj, dict):
        return
    for key in list(obj):
        if key in keep_root:
            continue
        _prune_value(schema.child(key) or schema.additional, obj, key,
                     schema.preserves_unknown)


def undeclared_field(schema: Schema, obj: Any, path: str = "") -> str | None:
    """The first field of ``obj`` (keys in sorted order, depth first) that ``schema`` does not
    declare, as structured-merge-diff names it (``.spec.containers[name="c"].imagee``: an
    entry by its list-map keys or patch merge key, else by its index), or None. What
    kube-apiserver 1.20 refuses in a server-side apply of a built-in kind (500 ``failed to
    create typed patch object: PATH: field not declared in schema``), where an update or
    patch drops the field. Open:
    maps (``additionalProperties``), ``x-kubernetes-preserve-unknown-fields``, and an object
    node that declares nothing (``RawExtension``, ``FieldsV1``). With several undeclared fields
    kube-apiserver names one in Go's map order (random); this names the first in sorted order."""
    if isinstance(obj, dict):
        declared = schema.node.get("properties")
        if not declared and schema.additional is None:
            return None
        for key in sorted(obj):
            sub = schema.child(key) or schema.additional
            if sub is None:
                if schema.preserves_unknown:
                    continue
                return f"{path}.{key}"
            found = undeclared_field(sub, obj[key], f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(obj, list) and schema.items is not None:
        merge_key = schema.node.get("x-kubernetes-patch-merge-key")
        keys = schema.list_map_keys or ((merge_key,) if isinstance(merge_key, str) else ())
        for index, item in enumerate(obj):
            where = (",".join(f"{k}={json.dumps(item.get(k))}" for k in keys if k in item)
                     if keys and isinstance(item, dict) else "") or str(index)
            found = undeclared_field(schema.items, item, f"{path}[{where}]")
            if found is not None:
                return found
    return None


def keeps(schema: Schema, path: tuple[str, ...]) -> bool:
    """Whether :func:`prune` with ``schema`` keeps a value at ``path`` (field names; ``[]``
    for any item of a list): what a server that prunes, or decodes into typed structs as
    kube-apiserver does for built-in kinds, stores of a write. ``("status", "conditions",
    "[]", "observedGeneration")``: False for a Deployment (its conditions have no such
    field), True for a CRD whose conditions are ``metav1.Condition``s."""
    node = schema
    for step in path:
        if step == "[]":
            if node.items is None:
                return True   # prune does not walk into such a list
            node = node.items
            continue
        declared = node.node.get("properties")
        if not (node.type == "object" or declared) or not (
                declared or node.additional is not None or not node.preserves_unknown):
            return True   # prune leaves this value as it is
        sub = node.child(step) or node.additional
        if sub is None:
            return node.preserves_unknown
        node = sub
    return True


def _prune_value(sub: Schema | None, parent: dict[str, Any], key: str, preserve: bool) -> None:
    if sub is None:
        if not preserve:
            del parent[key]
        return
    if parent[key] is None and sub.default is not None and not sub.node.get("nullable"):
        del parent[key]   # as 1.20: a null where a default exists is dropped, then defaulted
        return
    _prune_node(sub, parent[key])


def _prune_node(schema: Schema, value: Any) -> None:
    declared = schema.node.get("properties")
    if isinstance(value, dict) and (schema.type == "object" or declared):
        if declared or schema.additional is not None or not schema.preserves_unknown:
            prune(schema, value)
    elif isinstance(value, list) and schema.items is not None:
        for item in value:
            _prune_node(schema.items, item)


def apply_defaults(schema: Schema, obj: Any,
                   table: dict[str, dict[str, Any]] | None = None) -> None:
    """Fill, in place, absent fields of every object in ``obj`` with the schema's ``default``
    (CRD structural defaulting) or, for built-ins, ``table[definition name]``
    (``BUILTIN_DEFAULTS``). Defaults are deep copies; null values are not replaced."""
    def visit(node: Schema, value: Any, path: str) -> bool:
        if not isinstance(value, dict):
            return True
        for name, default in ((table or {}).get(node.name) or {}).items():
            value.setdefault(name, copy.deepcopy(default))
        for name, prop in (node.node.get("properties") or {}).items():
            if name not in value and prop.get("default") is not None:
                value[name] = copy.deepcopy(prop["default"])
        return True
    _walk(schema, obj, "", visit)


def canonicalize_quantities(schema: Schema, obj: Any) -> None:
    """Rewrite, in place, every resource quantity of built-in ``obj`` (a field or map value
    of type ``Quantity``: ``resources.limits``, ``emptyDir.sizeLimit``...) in the canonical
    form kube-apiserver stores (:func:`canonical_quantity`: ``0.5`` -> ``500m``)."""
    def visit(node: Schema, value: Any, path: str) -> bool:
        if isinstance(value, dict):
            for key, item in value.items():
                sub = node.child(key) or node.additional
                if sub is not None and sub.name == QUANTITY:
                    value[key] = canonical_quantity(item)
        return True
    _walk(schema, obj, "", visit)


def crd_errors(schema: Schema, obj: Any, *,
               skip_root: tuple[str, ...] = ("metadata",)) -> list[Problem]:
    """Every violation of a CRD's structural schema in ``obj``, with kube-apiserver 1.20's
    causes (``spec.replicas: Invalid value: "x": spec.replicas in body must be of type
    integer: "string"``). Top-level ``skip_root`` fields are not checked (metadata is
    validated as ObjectMeta)."""
    found: list[Problem] = []

    def visit(node: Schema, value: Any, path: str) -> bool:
        if path in skip_root:
            return False
        if not type_matches(node, value, null_ok=False):
            found.append(Problem(path, "FieldValueInvalid",
                                 f'Invalid value: "{json_type(value)}": {path} in body must be '
                                 f'of type {node.type}: "{json_type(value)}"'))
            return False                   # as go-openapi: a value of the wrong type stops there
        found.extend(_value_problems(node, value, path))
        return True
    _walk(schema, obj, "", visit, indexed=False)
    return found


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, (int, float)) else json_type(value)


def _value_problems(node: Schema, value: Any, path: str) -> list[Problem]:
    """The problems of a value of the right type against one node (its children are checked
    by the walk)."""
    found = _scalar_problems(node, value, path)
    if isinstance(value, dict):
        found += [Problem(_join(path, r), "FieldValueRequired", "Required value")
                  for r in node.required if r not in value]
    if isinstance(value, list):
        found += _count_problems(node, value, path)
    return found


def _scalar_problems(node: Schema, value: Any, path: str) -> list[Problem]:
    spec, found = node.node, []
    enum = spec.get("enum")
    if enum is not None and value not in enum:
        allowed = ", ".join(_quote(e) for e in enum)
        found.append(Problem(path, "FieldValueNotSupported",
                             f"Unsupported value: {_quote(value)}: supported values: {allowed}"))
    if isinstance(value, str):
        found += _string_problems(spec, value, path)[:1]   # go-openapi: the first one only
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        found += _bound_problems(spec, value, path)
    return found


def _string_problems(spec: dict[str, Any], value: str, path: str) -> list[Problem]:
    """maxLength, minLength, pattern problems, in go-openapi's stringValidator order."""
    found, head = [], f"Invalid value: {_quote(value)}: {path} in body should"
    if spec.get("maxLength") is not None and len(value) > spec["maxLength"]:
        found.append(Problem(path, "FieldValueInvalid",
                             f"{head} be at most {spec['maxLength']} chars long"))
    if spec.get("minLength") is not None and len(value) < spec["minLength"]:
        found.append(Problem(path, "FieldValueInvalid",
                             f"{head} be at least {spec['minLength']} chars long"))
    pattern = spec.get("pattern")
    if pattern is not None and not re.search(pattern, value):
        found.append(Problem(path, "FieldValueInvalid", f"{head} match '{pattern}'"))
    return found


def _bound_problems(spec: dict[str, Any], value: float, path: str) -> list[Problem]:
    found, head = [], f"Invalid value: {_quote(value)}: {path} in body should be"
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and (value < low or (spec.get("exclusiveMinimum") and value == low)):
        op = "greater than" if spec.get("exclusiveMinimum") else "greater than or equal to"
        found.append(Problem(path, "FieldValueInvalid",
                             f"{head} {op} {low}"))
    if high is not None and (value > high or (spec.get("exclusiveMaximum") and value == high)):
        op = "less than" if spec.get("exclusiveMaximum") else "less than or equal to"
        found.append(Problem(path, "FieldValueInvalid",
                             f"{head} {op} {high}"))
    return found


def _count_problems(node: Schema, value: list[Any], path: str) -> list[Problem]:
    spec, found = node.node, []
    if spec.get("maxItems") is not None and len(value) > spec["maxItems"]:
        found.append(Problem(path, "FieldValueInvalid", f"Invalid value: {len(value)}: "
                             f"{path} in body should have at most {spec['maxItems']} items"))
    if spec.get("minItems") is not None and len(value) < spec["minItems"]:
        found.append(Problem(path, "FieldValueInvalid", f"Invalid value: {len(value)}: "
                             f"{path} in body should have at least {spec['minItems']} items"))
    return found
