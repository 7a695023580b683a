"""Object validation the store applies on every write (a small subset of kube-apiserver's):
names (RFC 1123 subdomain, or label for namespaces), label keys and values, generateName, and
CustomResourceDefinition names. Failures raise 422 Invalid with field causes like
``metadata.name: Invalid value: "X": ...``.
"""

from __future__ import annotations

import random
import re
import secrets
from typing import Any

from .registry import ResourceType
from kinrun.openapi import json_type
from kinrun.selectors import label_key_error, label_value_error
from .status import StatusError, bad_request, invalid

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character")


def generate_name(prefix: str, rng: random.Random | None = None) -> str:
    """``prefix`` (cut to 58 characters) plus 5 random characters from ``rng`` (None: the
    system's secure source), as names.SimpleNameGenerator."""
    choice = rng.choice if rng is not None else secrets.choice
    return prefix[:58] + "".join(choice(_SUFFIX_ALPHABET) for _ in range(5))


def _invalid(rtype: ResourceType, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    return invalid(rtype.kind, rtype.group, name, causes)


def name_error(rtype: ResourceType, name: str) -> str | None:
    """Why ``name`` is not a valid name for ``rtype`` objects, or None."""
    if rtype.kind == "Namespace":
        return None if len(name) <= 63 and _LABEL.match(name) else LABEL_MSG
    if name in (".", "..") or "/" in name or "%" in name:
        return "may not contain '/' or '%' and may not be '.' or '..'"
    if rtype.custom or rtype.kind in ("ConfigMap", "Secret", "Pod", "Deployment", "Lease",
                                      "ServiceAccount", "Node", "CustomResourceDefinition"):
        return None if len(name) <= 253 and _SUBDOMAIN.match(name) else SUBDOMAIN_MSG
    return None


def validate_object(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Check ``obj``'s name and labels (and a CRD's spec); raises 422 Invalid listing every
    problem found."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    causes: list[tuple[str, str, str]] = []
    why = name_error(rtype, name)
    if why:
        causes.append(("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {why}'))
    labels = meta.get("labels") or {}
    if not isinstance(labels, dict):
        causes.append(("metadata.labels", "FieldValueInvalid", "Invalid value: must be a map"))
        labels = {}
    for key, value in labels.items():
        why = label_key_error(str(key))
        if why:
            causes.append(("metadata.labels", "FieldValueInvalid", f'Invalid value: "{key}": {why}'))
        if not isinstance(value, str) or label_value_error(value):
            causes.append(("metadata.labels", "FieldValueInvalid",
                           f'Invalid value: "{value}": {label_value_error(str(value)) or "must be a string"}'))
    if rtype.kind == "CustomResourceDefinition" and rtype.group == "apiextensions.k8s.io":
        causes.extend(crd_errors(obj))
    if causes:
        raise _invalid(rtype, name, causes)


def crd_errors(crd: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The validation problems of a CustomResourceDefinition (names, group, versions, scope)."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group, plural = spec.get("group") or "", names.get("plural") or ""
    causes: list[tuple[str, str, str]] = []
    if not group or "." not in group:
        causes.append(("spec.group", "FieldValueInvalid",
                       f'Invalid value: "{group}": should be a domain with at least one dot'))
    if not plural or not names.get("kind"):
        causes.append(("spec.names", "FieldValueRequired", "Required value: plural and kind"))
    name = (crd.get("metadata") or {}).get("name", "")
    if name != f"{plural}.{group}":
        causes.append(("metadata.name", "FieldValueInvalid",
                       f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("spec.scope", "FieldValueNotSupported",
                       'Unsupported value: supported values: "Cluster", "Namespaced"'))
    versions = spec.get("versions") or []
    if not versions or sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("spec.versions", "FieldValueInvalid",
                       "Invalid value: must have exactly one version marked as storage version"))
    return causes


def undecodable(rtype: ResourceType, version: str, detail: str) -> StatusError:
    """400 BadRequest for a body that cannot be decoded into the kind's type, as kube-apiserver's
    decoder answers (``ConfigMap in version "v1" cannot be handled as a ConfigMap: ...``; the
    detail after the colon is ours, the real one is json-iterator's text)."""
    return bad_request(f'{rtype.kind} in version "{version}" cannot be handled as a '
                       f'{rtype.kind}: {detail}')


def check_decodable(rtype: ResourceType, version: str, obj: dict[str, Any]) -> None:
    """Raise 400 (``undecodable``) when ``obj``'s metadata has the wrong JSON types: metadata
    not an object, or labels/annotations/finalizers not a map/list of strings. Every kind has
    them; kind-specific types are checked against the schema (``kinrun.openapi``)."""
    meta = obj.get("metadata")
    if meta is None:
        return
    if not isinstance(meta, dict):
        raise undecodable(rtype, version, f"metadata: expected an object, got {json_type(meta)}")
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is not None and not (isinstance(value, dict) and
                                      all(isinstance(v, str) for v in value.values())):
            raise undecodable(rtype, version, f"metadata.{key}: expected a map of strings")
    finalizers = meta.get("finalizers")
    if finalizers is not None and not (isinstance(finalizers, list) and
                                       all(isinstance(v, str) for v in finalizers)):
        raise undecodable(rtype, version, "metadata.finalizers: expected a list of strings")
