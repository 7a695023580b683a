"""Object validation the store applies on every write (a small subset of kube-apiserver's):
names (RFC 1123 subdomain, or label for namespaces), label keys and values and annotation keys
and size (with apimachinery 1.20's messages, one cause per message), generateName,
CustomResourceDefinition names, and the per-kind checks of :mod:`.kind_validation`. Failures
raise 422 Invalid with field causes like ``metadata.name: Invalid value: "X": ...``.
"""

from __future__ import annotations

import base64
import random
import secrets
from typing import Any

from .kind_validation import DNS1123_LABEL, go_quote, kind_errors
from .registry import ResourceType
from kinrun.openapi import json_type
from kinrun.selectors import DNS1123_SUBDOMAIN, QUALIFIED_NAME
from .status import StatusError, bad_request, invalid

_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                 "characters, '-' or '.', and must start and end with an alphanumeric character")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
             "'-', and must start and end with an alphanumeric character")
_NAME_PART_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                  "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
                  "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                  "[A-Za-z0-9]')")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
                    "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
_SUBDOMAIN_REGEX_MSG = (SUBDOMAIN_MSG + " (e.g. 'example.com', regex used for validation is "
                        r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
TOTAL_ANNOTATION_SIZE = 256 * 1024


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
        return None if len(name) <= 63 and DNS1123_LABEL.fullmatch(name) else LABEL_MSG
    if name in (".", "..") or "/" in name or "%" in name:
        return "may not contain '/' or '%' and may not be '.' or '..'"
    if rtype.custom or rtype.kind in ("ConfigMap", "Secret", "Pod", "Deployment", "Lease",
                                      "ServiceAccount", "Node", "CustomResourceDefinition"):
        return None if len(name) <= 253 and DNS1123_SUBDOMAIN.fullmatch(name) else SUBDOMAIN_MSG
    return None


def validate_object(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Check ``obj``'s name, labels and annotations (and a CRD's spec); raises 422 Invalid listing every
    problem found."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    causes: list[tuple[str, str, str]] = []
    why = name_error(rtype, name)
    if why:
        causes.append(("metadata.name", "FieldValueInvalid", f'Invalid value: "{name}": {why}'))
    causes += metadata_label_errors(meta)
    if not rtype.custom:
        causes.extend(kind_errors(rtype.group, rtype.kind, obj))
    if rtype.kind == "CustomResourceDefinition" and rtype.group == "apiextensions.k8s.io":
        causes.extend(crd_errors(obj))
    if rtype.group == "admissionregistration.k8s.io":
        causes.extend(webhook_configuration_errors(obj, rtype.kind.startswith("Mutating")))
    if causes:
        raise _invalid(rtype, name, causes)


def qualified_name_errors(key: str) -> list[str]:
    """The messages of apimachinery 1.20's ``IsQualifiedName(key)``, in its order (a label
    or annotation key: an optional DNS-1123 subdomain prefix and ``/``, then a name part)."""
    parts = key.split("/")
    if len(parts) > 2:
        return ["a qualified name " + _NAME_PART_MSG
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix.encode()) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not DNS1123_SUBDOMAIN.fullmatch(prefix):
                errors.append("prefix part " + _SUBDOMAIN_REGEX_MSG)
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part must be no more than 63 characters")
    if not QUALIFIED_NAME.fullmatch(name):
        errors.append("name part " + _NAME_PART_MSG)
    return errors


def label_value_errors(value: str) -> list[str]:
    """The messages of apimachinery 1.20's ``IsValidLabelValue(value)``, in its order."""
    errors = ["must be no more than 63 characters"] if len(value.encode()) > 63 else []
    if value and not QUALIFIED_NAME.fullmatch(value):
        errors.append(_LABEL_VALUE_MSG)
    return errors


def _string_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def metadata_label_errors(meta: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The causes of 1.20's ``ValidateLabels`` and ``ValidateAnnotations`` for ``meta``: one
    per message of each bad key (then value), in the map's order (Go's is random), then the
    annotations' total size (at most 256 KiB of keys and values)."""
    causes: list[tuple[str, str, str]] = []
    for key, value in _string_map(meta.get("labels")).items():
        causes += [("metadata.labels", "FieldValueInvalid", f"Invalid value: {go_quote(key)}: {m}")
                   for m in qualified_name_errors(key)]
        causes += [("metadata.labels", "FieldValueInvalid",
                    f"Invalid value: {go_quote(value)}: {m}") for m in label_value_errors(value)]
    annotations = _string_map(meta.get("annotations"))
    for key in annotations:
        causes += [("metadata.annotations", "FieldValueInvalid",
                    f"Invalid value: {go_quote(key)}: {m}")
                   for m in qualified_name_errors(key.lower())]
    if sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items()) > \
            TOTAL_ANNOTATION_SIZE:
        causes.append(("metadata.annotations", "FieldValueTooLong",
                       f"Too long: must have at most {TOTAL_ANNOTATION_SIZE} bytes"))
    return causes


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


_WEBHOOK_ENUMS = {"sideEffects": ("None", "NoneOnDryRun"), "failurePolicy": ("Fail", "Ignore"),
                  "matchPolicy": ("Equivalent", "Exact")}
_OPERATIONS = ("*", "CREATE", "UPDATE", "DELETE", "CONNECT")


def webhook_configuration_errors(config: dict[str, Any], mutating: bool
                                 ) -> list[tuple[str, str, str]]:
    """The problems of a Validating/MutatingWebhookConfiguration that kube-apiserver 1.20's
    validation refuses (``pkg/apis/admissionregistration/validation``): duplicate webhook
    names, a clientConfig without exactly one of ``url``/``service``, a URL that is not
    https, a ``caBundle`` that is not base64, values outside the enums, ``timeoutSeconds``
    outside 1-30, no ``v1``/``v1beta1`` review version, unknown operations and selector
    operators. Messages follow the real ones; not every check of the real validation."""
    causes: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for i, hook in enumerate(config.get("webhooks") or []):
        at = f"webhooks[{i}]"
        if hook.get("name") in seen:
            causes.append((f"{at}.name", "FieldValueDuplicate",
                           f'Duplicate value: "{hook.get("name")}"'))
        seen.add(hook.get("name"))
        causes += _webhook_errors(at, hook, mutating)
    return causes


def _webhook_errors(at: str, hook: dict[str, Any], mutating: bool
                    ) -> list[tuple[str, str, str]]:
    causes = _client_config_errors(f"{at}.clientConfig", hook.get("clientConfig") or {})
    enums = dict(_WEBHOOK_ENUMS, **({"reinvocationPolicy": ("IfNeeded", "Never")}
                                     if mutating else {}))
    for field, allowed in enums.items():
        if field in hook and hook[field] not in allowed:
            supported = ", ".join(f'"{v}"' for v in allowed)
            causes.append((f"{at}.{field}", "FieldValueNotSupported",
                           f'Unsupported value: "{hook[field]}": supported values: '
                           f"{supported}"))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        causes.append((f"{at}.timeoutSeconds", "FieldValueInvalid",
                       f"Invalid value: {timeout}: the timeout value must be between 1 "
                       "and 30 seconds"))
    versions = hook.get("admissionReviewVersions") or []
    if not {"v1", "v1beta1"} & set(versions):
        causes.append((f"{at}.admissionReviewVersions", "FieldValueInvalid",
                       f"Invalid value: {versions}: must include at least one of v1, "
                       "v1beta1"))
    for j, rule in enumerate(hook.get("rules") or []):
        for op in rule.get("operations") or []:
            if op not in _OPERATIONS:
                causes.append((f"{at}.rules[{j}].operations", "FieldValueNotSupported",
                               f'Unsupported value: "{op}": supported values: '
                               + ", ".join(f'"{o}"' for o in _OPERATIONS)))
    for field in ("namespaceSelector", "objectSelector"):
        causes += _selector_errors(f"{at}.{field}", hook.get(field) or {})
    return causes


def _client_config_errors(at: str, client: dict[str, Any]) -> list[tuple[str, str, str]]:
    causes = []
    if ("url" in client) == ("service" in client):
        causes.append((at, "FieldValueRequired",
                       "Required value: exactly one of url or service is required"))
    url = client.get("url")
    if isinstance(url, str) and not url.startswith("https://"):
        scheme = url.split("://", 1)[0] if "://" in url else ""
        causes.append((f"{at}.url", "FieldValueInvalid",
                       f"Invalid value: \"{scheme}\": 'https' is the only allowed URL scheme; "
                       "desired format: https://host[/path]"))
    bundle = client.get("caBundle")
    if isinstance(bundle, str):
        try:
            base64.b64decode(bundle, validate=True)
        except ValueError:
            causes.append((f"{at}.caBundle", "FieldValueInvalid",
                           "Invalid value: the caBundle is not base64"))
    return causes


def _selector_errors(at: str, selector: dict[str, Any]) -> list[tuple[str, str, str]]:
    causes = []
    for k, expr in enumerate(selector.get("matchExpressions") or []):
        op, values = expr.get("operator"), expr.get("values") or []
        where = f"{at}.matchExpressions[{k}]"
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            causes.append((f"{where}.operator", "FieldValueInvalid",
                           f'Invalid value: "{op}": not a valid selector operator'))
        elif op in ("In", "NotIn") and not values:
            causes.append((f"{where}.values", "FieldValueRequired",
                           "Required value: must be specified when `operator` is 'In' or "
                           "'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            causes.append((f"{where}.values", "FieldValueForbidden",
                           "Forbidden: may not be specified when `operator` is 'Exists' or "
                           "'DoesNotExist'"))
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
