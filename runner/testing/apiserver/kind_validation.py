"""Per-kind validation of built-in kinds beyond their schemas: the checks of kube-apiserver
1.20's ``pkg/apis/{core,apps}/validation`` that a controller's manifests most often fail,
so that ``kinrun test`` and ``--embedded`` refuse what a cluster refuses:

- a pod spec (a Pod's ``spec``, a workload's or Job's ``spec.template.spec``; not a
  StatefulSet's, as in 1.20): ``containers`` not empty; each container and init
  container has a ``name`` that is an RFC 1123 label, not used twice, and an ``image``
  (``ValidatePodSpec``/``validateContainers``);
- Deployment, ReplicaSet, StatefulSet, DaemonSet: a non-empty ``selector`` that selects the
  template's labels (``ValidateDeploymentSpec`` and its siblings);
- ConfigMap ``data``/``binaryData`` and Secret ``data`` keys (``IsConfigMapKey``);
- Service ports: ``port`` (and ``targetPort``, which defaults to it) in 1..65535, a ``name``
  that is an RFC 1123 label, required when there are several ports, not used twice.

Each problem is a ``(field, reason, message)`` cause with Go's field path and message text
(``spec.template.metadata.labels: Invalid value: map[string]string{"app":"b"}: `selector`
does not match template `labels```), proven by tests/envtest/test_differential_kinds.py. The
rest of kube-apiserver's per-kind validation is not done (docs/embedded.md)."""

from __future__ import annotations

import json
import re
from typing import Any

from kinrun.selectors import (SelectorError, label_key_error, label_selector_from,
                              label_value_error)

Cause = tuple[str, str, str]

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
"""An RFC 1123 label (apimachinery's ``dns1123LabelFmt``), at most 63 characters apart."""
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
LABEL_MESSAGE = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                 "or '-', and must start and end with an alphanumeric character (e.g. "
                 "'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
CONFIG_KEY_MESSAGE = ("a valid config key must consist of alphanumeric characters, '-', '_' or "
                      "'.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                      "validation is '[-._a-zA-Z0-9]+')")
_WORKLOADS = {"Deployment": "deployment", "ReplicaSet": "deployment",
              "StatefulSet": "statefulset", "DaemonSet": "daemonset"}
"""apps/v1 kinds with a selector and the word their empty-selector message uses (ReplicaSet's
validation reuses Deployment's text). A StatefulSet's pod template is not validated in 1.20
(``ValidatePodTemplateSpecForStatefulSet`` leaves it as a TODO)."""


def kind_errors(group: str, kind: str, obj: dict[str, Any]) -> list[Cause]:
    """The causes kube-apiserver 1.20's validation of built-in ``kind`` (of API ``group``;
    "" is core) gives ``obj`` among the checks of this module; [] when none (or another kind).
    ``obj`` is the decoded, defaulted object; values of the wrong type were refused before."""
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    if group == "" and kind == "Pod":
        return pod_spec_errors(spec, "spec")
    if group == "" and kind in ("ConfigMap", "Secret"):
        fields = ("data", "binaryData") if kind == "ConfigMap" else ("data",)
        return [cause for name in fields for cause in _key_errors(obj.get(name), name)]
    if group == "" and kind == "Service":
        return service_port_errors(spec.get("ports") or [])
    if group == "apps" and kind in _WORKLOADS:
        return workload_errors(spec, _WORKLOADS[kind], pod_spec=kind != "StatefulSet")
    if group == "batch" and kind == "Job":
        return pod_spec_errors(_dig(spec, "template", "spec"), "spec.template.spec")
    return []


def _dig(value: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def pod_spec_errors(spec: dict[str, Any], at: str) -> list[Cause]:
    """A pod spec's containers and init containers (as ``validateContainers``, then
    ``validateInitContainers``: names unique across both lists)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for field in ("containers", "initContainers"):
        containers = spec.get(field) or []
        if field == "containers" and not containers:
            causes.append((f"{at}.containers", "FieldValueRequired", "Required value"))
        for index, container in enumerate(containers):
            if isinstance(container, dict):
                causes.extend(_container_errors(container, f"{at}.{field}[{index}]", seen))
    return causes


def _container_errors(container: dict[str, Any], at: str, seen: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = str(container.get("name") or "")
    if not name:
        causes.append((f"{at}.name", "FieldValueRequired", "Required value"))
    elif (why := label_error(name)) is not None:
        causes.append((f"{at}.name", "FieldValueInvalid", f"Invalid value: {json.dumps(name)}: "
                       f"{why}"))
    if name in seen:
        causes.append((f"{at}.name", "FieldValueDuplicate", f"Duplicate value: {json.dumps(name)}"))
    seen.add(name)
    if not container.get("image"):
        causes.append((f"{at}.image", "FieldValueRequired", "Required value"))
    return causes


def label_error(value: str) -> str | None:
    """Why ``value`` is not an RFC 1123 label (``validation.IsDNS1123Label``), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    return None if DNS1123_LABEL.match(value) else LABEL_MESSAGE


def _key_errors(data: Any, field: str) -> list[Cause]:
    causes = []
    for key in sorted(data) if isinstance(data, dict) else ():
        why = ("must be no more than 253 characters" if len(key) > 253 else
               "must not be '.'" if key == "." else "must not be '..'" if key == ".." else
               "must not start with '..'" if key.startswith("..") else
               None if _CONFIG_KEY.match(key) else CONFIG_KEY_MESSAGE)
        if why is not None:
            causes.append((f"{field}[{key}]", "FieldValueInvalid",
                           f"Invalid value: {json.dumps(key)}: {why}"))
    return causes


def service_port_errors(ports: list[Any]) -> list[Cause]:
    """A Service's ports (as ``validateServicePort``; ``targetPort`` defaults to ``port``)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for index, port in enumerate(p for p in ports if isinstance(p, dict)):
        at = f"spec.ports[{index}]"
        name = str(port.get("name") or "")
        if not name and len(ports) > 1:
            causes.append((f"{at}.name", "FieldValueRequired", "Required value"))
        elif name and (why := label_error(name)) is not None:
            causes.append((f"{at}.name", "FieldValueInvalid",
                           f"Invalid value: {json.dumps(name)}: {why}"))
        if name and name in names:
            causes.append((f"{at}.name", "FieldValueDuplicate",
                           f"Duplicate value: {json.dumps(name)}"))
        names.add(name)
        number = port.get("port")
        target = port.get("targetPort") or number  # SetDefaults_Service: 0, "" or none -> port
        for field, value in (("port", number), ("targetPort", target)):
            if isinstance(value, int) and not 1 <= value <= 65535:
                causes.append((f"{at}.{field}", "FieldValueInvalid", f"Invalid value: {value}: "
                               "must be between 1 and 65535, inclusive"))
    return causes


def workload_errors(spec: dict[str, Any], word: str, *, pod_spec: bool = True) -> list[Cause]:
    """An apps/v1 workload's selector against its template's labels, then (``pod_spec``) its
    pod spec. A selector that is itself invalid (a bad label, ``In`` without values, an
    unknown operator) is not matched: kube-apiserver refuses it with its own causes, which
    are not reproduced here."""
    causes: list[Cause] = []
    selector = spec.get("selector")
    labels = _dig(spec, "template", "metadata").get("labels")
    if isinstance(selector, dict):
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            causes.append(("spec.selector", "FieldValueInvalid",
                           f"Invalid value: {_go_selector(selector)}: empty selector is invalid "
                           f"for {word}"))
        else:
            try:
                matched = not _valid_selector(selector) or \
                    label_selector_from(selector).matches(labels or {})
            except SelectorError:
                matched = True  # an operator the schema admits but we cannot read: not judged
            if not matched:
                causes.append(("spec.template.metadata.labels", "FieldValueInvalid",
                               f"Invalid value: {_go_map(labels)}: `selector` does not match "
                               "template `labels`"))
    if not pod_spec:
        return causes
    return causes + pod_spec_errors(_dig(spec, "template", "spec"), "spec.template.spec")


def _valid_selector(selector: dict[str, Any]) -> bool:
    """Whether a metav1.LabelSelector passes ``ValidateLabelSelector``'s label and operator
    checks (keys and values are labels; In/NotIn have values, Exists/DoesNotExist none)."""
    labels = selector.get("matchLabels") or {}
    if any(label_key_error(str(k)) or label_value_error(str(v)) for k, v in labels.items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        if not isinstance(expression, dict) or label_key_error(str(expression.get("key"))):
            return False
        values, operator = expression.get("values") or [], expression.get("operator")
        if operator in ("In", "NotIn") and (not values or any(label_value_error(str(v))
                                                            for v in values)):
            return False
        if operator in ("Exists", "DoesNotExist") and values or operator not in (
                "In", "NotIn", "Exists", "DoesNotExist"):
            return False
    return True


def _go_map(labels: dict[str, Any] | None) -> str:
    """A map[string]string as Go's ``%#v`` prints it (keys sorted; None is a nil map)."""
    if labels is None:
        return "map[string]string(nil)"
    return "map[string]string{" + ", ".join(
        f"{json.dumps(k)}:{json.dumps(labels[k])}" for k in sorted(labels)) + "}"


def _go_selector(selector: dict[str, Any]) -> str:
    """An empty metav1.LabelSelector as Go's ``%#v`` prints it."""
    labels = ("map[string]string(nil)" if selector.get("matchLabels") is None
              else "map[string]string{}")
    expressions = ("[]v1.LabelSelectorRequirement(nil)" if selector.get("matchExpressions")
                   is None else "[]v1.LabelSelectorRequirement{}")
    return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"
