"""Per-kind validation of built-in kinds beyond their schemas: the checks of kube-apiserver
1.20's ``pkg/apis/{core,apps,batch}/validation`` that a controller's manifests most often
fail, so that ``kinrun test`` and ``--embedded`` refuse what a cluster refuses:

- a pod spec (a Pod's ``spec``, a workload's or Job's ``spec.template.spec``; not a
  StatefulSet's, as in 1.20): ``containers`` not empty; each container and init
  container has a ``name`` that is an RFC 1123 label, not used twice, and an ``image``
  (``ValidatePodSpec``/``validateContainers``); a ``restartPolicy`` of ``Always``,
  ``OnFailure`` or ``Never`` (``validateRestartPolicy``); a Pod's images without leading
  or trailing whitespace (``validateContainersOnlyForPod``; a template's may have it);
- a Job's template: ``restartPolicy`` ``OnFailure`` or ``Never``, not the default
  ``Always`` (``ValidateJobSpec``);
- Deployment, ReplicaSet, StatefulSet, DaemonSet: a non-empty ``selector`` that selects the
  template's labels (``ValidateDeploymentSpec`` and its siblings);
- ConfigMap ``data``/``binaryData`` and Secret ``data`` keys (``IsConfigMapKey``), a
  ConfigMap key not in both (``ValidateConfigMap``);
- typed Secrets: the keys (or annotation) their type requires, a docker config's JSON
  (``ValidateSecret``);
- Services: ``ports`` unless headless or ``ExternalName``; ``port`` (and ``targetPort``,
  which defaults to it) in 1..65535, a named ``targetPort`` an IANA_SVC_NAME
  (``IsValidPortName``), a ``name`` that is an RFC 1123 label, required when there are
  several ports, not used twice (``ValidateService``/``validateServicePort``).

Each problem is a ``(field, reason, message)`` cause with Go's field path and message text
(``spec.template.metadata.labels: Invalid value: map[string]string{"app":"b"}: `selector`
does not match template `labels```), proven by tests/envtest/test_differential_kinds.py. The
rest of kube-apiserver's per-kind validation is not done (docs/embedded.md)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from kinrun.selectors import (SelectorError, label_key_error, label_selector_from,
                              label_value_error)

Cause = tuple[str, str, str]


def go_quote(value: str) -> str:
    """``value`` as Go's ``%q`` writes it (how field errors show a string's bad value)."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        else:
            code = ord(ch)
            named = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                     "\t": "\\t", "\v": "\\v"}.get(ch)
            out.append(named or (f"\\x{code:02x}" if code < 0x80 else
                                 f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"))
    return '"' + "".join(out) + '"'


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
RESTART_POLICIES = ("Always", "OnFailure", "Never")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
_PORT_NAME_CHARS = re.compile(r"^[-a-z0-9]+$")
_DOCKER_CONFIGS = {"kubernetes.io/dockerconfigjson": ".dockerconfigjson",
                   "kubernetes.io/dockercfg": ".dockercfg"}
"""The docker config Secret types and their key (1.20 reads its JSON into a
``map[string]interface {}``: any object will do)."""
_GO_JSON_CONTEXTS = {"Expecting value": "looking for beginning of value",
                     "Expecting property name enclosed in double quotes":
                         "looking for beginning of object key string",
                     "Expecting ':' delimiter": "after object key",
                     "Extra data": "after top-level value"}
"""Python's json error messages and encoding/json's words for the same syntax error."""
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
        return pod_spec_errors(spec, "spec", pod=True)
    if group == "" and kind == "ConfigMap":
        return configmap_errors(obj)
    if group == "" and kind == "Secret":
        return _key_errors(obj.get("data"), "data") + secret_type_errors(obj)
    if group == "" and kind == "Service":
        return service_errors(spec)
    if group == "apps" and kind in _WORKLOADS:
        return workload_errors(spec, _WORKLOADS[kind], pod_spec=kind != "StatefulSet")
    if group == "batch" and kind == "Job":
        template = _dig(spec, "template", "spec")
        return pod_spec_errors(template, "spec.template.spec") + job_restart_errors(template)
    return []


def _dig(value: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def pod_spec_errors(spec: dict[str, Any], at: str, *, pod: bool = False) -> list[Cause]:
    """A pod spec's containers and init containers (as ``validateContainers``, then
    ``validateInitContainers``: names unique across both lists) and its ``restartPolicy``
    (``validateRestartPolicy``; absent is ``Always``, the default). ``pod``: the spec is a
    Pod's, whose images must not have leading or trailing whitespace
    (``validateContainersOnlyForPod``; a template's may: " " is a placeholder there)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for field in ("containers", "initContainers"):
        containers = spec.get(field) or []
        if field == "containers" and not containers:
            causes.append((f"{at}.containers", "FieldValueRequired", "Required value"))
        for index, container in enumerate(containers):
            if isinstance(container, dict):
                causes.extend(_container_errors(container, f"{at}.{field}[{index}]", seen))
                causes.extend(_image_space_errors(container, f"{at}.{field}[{index}]", pod))
    policy = spec.get("restartPolicy") or "Always"
    if policy not in RESTART_POLICIES:
        causes.append((f"{at}.restartPolicy", "FieldValueNotSupported",
                       _unsupported(policy, RESTART_POLICIES)))
    return causes


def _unsupported(value: str, supported: tuple[str, ...]) -> str:
    """field.NotSupported's message (values quoted as Go's ``%q``)."""
    shown = go_quote(value) if isinstance(value, str) else json.dumps(value)
    return (f"Unsupported value: {shown}: supported values: "
            + ", ".join(go_quote(v) for v in supported))


def _image_space_errors(container: dict[str, Any], at: str, pod: bool) -> list[Cause]:
    image = container.get("image")
    if not pod or not isinstance(image, str) or not image or image == image.strip():
        return []
    return [(f"{at}.image", "FieldValueInvalid", f"Invalid value: {go_quote(image)}: "
             "must not have leading or trailing whitespace")]


def job_restart_errors(template: dict[str, Any]) -> list[Cause]:
    """A Job's pod template must not restart its containers (``ValidateJobSpec`` in
    ``pkg/apis/batch/validation``): ``Always``, also the default when absent, is a Required
    cause listing the two allowed values; another unknown value is NotSupported."""
    at, policy = "spec.template.spec.restartPolicy", template.get("restartPolicy") or "Always"
    if policy == "Always":
        return [(at, "FieldValueRequired", 'Required value: valid values: "OnFailure", "Never"')]
    if policy not in JOB_RESTART_POLICIES:
        return [(at, "FieldValueNotSupported", _unsupported(policy, JOB_RESTART_POLICIES))]
    return []


def _container_errors(container: dict[str, Any], at: str, seen: set[str]) -> list[Cause]:
    causes: list[Cause] = []
    name = str(container.get("name") or "")
    if not name:
        causes.append((f"{at}.name", "FieldValueRequired", "Required value"))
    elif (why := label_error(name)) is not None:
        causes.append((f"{at}.name", "FieldValueInvalid", f"Invalid value: {go_quote(name)}: "
                       f"{why}"))
    if name in seen:
        causes.append((f"{at}.name", "FieldValueDuplicate", f"Duplicate value: {go_quote(name)}"))
    seen.add(name)
    if not container.get("image"):
        causes.append((f"{at}.image", "FieldValueRequired", "Required value"))
    return causes


def label_error(value: str) -> str | None:
    """Why ``value`` is not an RFC 1123 label (``validation.IsDNS1123Label``), or None."""
    if len(value) > 63:
        return "must be no more than 63 characters"
    return None if DNS1123_LABEL.fullmatch(value) else LABEL_MESSAGE


def configmap_errors(config: dict[str, Any]) -> list[Cause]:
    """A ConfigMap's keys (``ValidateConfigMap``): config keys, and none in both ``data`` and
    ``binaryData`` (the cause names the ``data`` entry)."""
    data = config.get("data") if isinstance(config.get("data"), dict) else {}
    binary = config.get("binaryData") if isinstance(config.get("binaryData"), dict) else {}
    return _key_errors(data, "data") + _key_errors(binary, "binaryData") + [
        (f"data[{key}]", "FieldValueInvalid",
         f"Invalid value: {go_quote(key)}: duplicate of key present in binaryData")
        for key in sorted(binary) if key in data]


def secret_type_errors(secret: dict[str, Any]) -> list[Cause]:
    """The keys a typed Secret must have (``ValidateSecret``; ``stringData`` is merged into
    ``data`` before): a service account token the annotation naming its account; basic-auth
    ``username`` or ``password``; ssh-auth ``ssh-privatekey``; tls ``tls.crt`` and
    ``tls.key``; a docker config its key, holding JSON (:func:`_docker_config_errors`). The
    field paths are Go's, ``data[%s][username]`` included (a format string 1.20 never fills)."""
    kind, data = secret.get("type"), _dig(secret, "data")
    annotation = "kubernetes.io/service-account.name"
    if kind == "kubernetes.io/service-account-token" and \
            not _dig(secret, "metadata", "annotations").get(annotation):
        return [(f"metadata.annotations[{annotation}]", "FieldValueRequired", "Required value")]
    if kind == "kubernetes.io/basic-auth" and "username" not in data and "password" not in data:
        return [(f"data[%s][{key}]", "FieldValueRequired", "Required value")
                for key in ("username", "password")]
    if kind == "kubernetes.io/ssh-auth" and "ssh-privatekey" not in data:
        return [("data[%s][ssh-privatekey]", "FieldValueRequired", "Required value")]
    if kind == "kubernetes.io/tls":
        return [(f"data[{key}]", "FieldValueRequired", "Required value")
                for key in ("tls.crt", "tls.key") if key not in data]
    if kind in _DOCKER_CONFIGS:
        key = _DOCKER_CONFIGS[kind]
        if key not in data:
            return [(f"data[{key}]", "FieldValueRequired", "Required value")]
        return _docker_config_errors(data[key], key)
    return []


def _docker_config_errors(value: Any, key: str) -> list[Cause]:
    """A docker config Secret's value must be JSON that Go's ``json.Unmarshal`` reads into
    a ``map[string]interface {}`` (an object or null)."""
    try:
        raw = base64.b64decode(str(value), validate=True)
    except ValueError:
        return []  # not base64: refused before, as the Go decoder does
    why = go_json_error(raw, "map[string]interface {}")
    return [] if why is None else [(f"data[{key}]", "FieldValueInvalid",
                                    f'Invalid value: "<secret contents redacted>": {why}')]


GO_MAX_DEPTH = 10000
"""encoding/json's ``maxNestingDepth``: deeper input is ``exceeded max depth``."""


class _GoConstant(ValueError):
    """``NaN``/``Infinity``, which Python's json reads and Go's refuses."""


def go_json_error(raw: bytes, go_type: str) -> str | None:
    """encoding/json's error unmarshalling ``raw`` into an object type ``go_type``, or None.
    Go's text for input cut short (``unexpected end of JSON input``), a character no value,
    key or ``:`` may start with (``invalid character 'x' looking for beginning of value``; a
    byte-order mark, ``NaN`` and ``Infinity`` too), data after the value, nesting deeper
    than :data:`GO_MAX_DEPTH` (``exceeded max depth``) and a value that is not an object or
    null; invalid UTF-8 inside a string is taken, as Go takes it. Other syntax errors (a
    literal cut short, ``tru``) get Python's text, not Go's."""
    text = raw.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        return "invalid character 'ï' looking for beginning of value"
    if _nesting_depth(text) > GO_MAX_DEPTH:
        return "exceeded max depth"
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:  # deeper than Python parses, not than Go: the top level decides
        value = {} if text.lstrip(" \t\r\n").startswith("{") else []
    except _GoConstant as exc:
        return str(exc)
    except ValueError as exc:
        return _go_syntax_error(exc)
    if value is None or isinstance(value, dict):
        return None
    kind = ("bool" if isinstance(value, bool) else "number" if isinstance(value, (int, float))
            else "string" if isinstance(value, str) else "array")
    return f"json: cannot unmarshal {kind} into Go value of type {go_type}"


def _refuse_constant(name: str) -> Any:
    if name == "-Infinity":
        raise _GoConstant("invalid character 'I' in numeric literal")
    raise _GoConstant(f"invalid character '{name[0]}' looking for beginning of value")


def _go_syntax_error(exc: ValueError) -> str:
    """Go's text for a syntax error Python's json found (see :func:`go_json_error`)."""
    doc, pos = getattr(exc, "doc", ""), getattr(exc, "pos", -1)
    if not isinstance(doc, str) or pos >= len(doc.rstrip(" \t\r\n")):
        return "unexpected end of JSON input"
    context = _GO_JSON_CONTEXTS.get(getattr(exc, "msg", ""))
    char = doc[pos] if pos >= 0 else ""
    if context is None or context.startswith("looking for beginning of value") \
            and char in '{["-0123456789tfn':
        return f"invalid JSON: {exc}"
    return f"invalid character {_go_char(char)} {context}"


def _nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _go_char(char: str) -> str:
    """A character as encoding/json's ``quoteChar`` writes it: Go's scanner reads bytes, and
    writes a byte as the character of that number, so a character outside ASCII is its UTF-8
    encoding's first byte read as Latin-1 (``'Ã'`` for ``é``), quoted as ``%q``."""
    if char and ord(char) >= 0x80:
        char = chr(char.encode("utf-8", "surrogatepass")[0])
    return "'\\''" if char == "'" else "'\"'" if char == '"' else f"'{go_quote(char)[1:-1]}'"


def _key_errors(data: Any, field: str) -> list[Cause]:
    causes = []
    for key in sorted(data) if isinstance(data, dict) else ():
        why = ("must be no more than 253 characters" if len(key) > 253 else
               "must not be '.'" if key == "." else "must not be '..'" if key == ".." else
               "must not start with '..'" if key.startswith("..") else
               None if _CONFIG_KEY.fullmatch(key) else CONFIG_KEY_MESSAGE)
        if why is not None:
            causes.append((f"{field}[{key}]", "FieldValueInvalid",
                           f"Invalid value: {go_quote(key)}: {why}"))
    return causes


def service_errors(spec: dict[str, Any]) -> list[Cause]:
    """A Service's spec (``ValidateService``): ports are required unless it is headless
    (``type: ClusterIP``, the default, with ``clusterIP: None``) or ``type: ExternalName``;
    then each port (:func:`service_port_errors`)."""
    ports = spec.get("ports") or []
    kind = spec.get("type") or "ClusterIP"
    headless = kind == "ClusterIP" and (spec.get("clusterIP") == "None"
                                        or spec.get("clusterIPs") == ["None"])
    if not ports and not headless and kind != "ExternalName":
        return [("spec.ports", "FieldValueRequired", "Required value")]
    return service_port_errors(ports)


def port_name_errors(name: str) -> list[str]:
    """Why ``name`` is not an IANA_SVC_NAME (``validation.IsValidPortName``), in Go's order:
    at most 15 characters, only ``[-a-z0-9]``, a letter, no ``--``, no ``-`` at either end."""
    return [why for failed, why in (
        (len(name) > 15, "must be no more than 15 characters"),
        (not _PORT_NAME_CHARS.fullmatch(name),
         "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"),
        (not re.search("[a-z]", name), "must contain at least one letter or number (a-z, 0-9)"),
        ("--" in name, "must not contain consecutive hyphens"),
        (name[:1] == "-" or name[-1:] == "-", "must not begin or end with a hyphen")) if failed]


def service_port_errors(ports: list[Any]) -> list[Cause]:
    """A Service's ports (as ``validateServicePort``; ``targetPort`` defaults to ``port``;
    a named ``targetPort`` is an IANA_SVC_NAME, one cause per problem as Go lists them)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for index, port in enumerate(p for p in ports if isinstance(p, dict)):
        at = f"spec.ports[{index}]"
        name = str(port.get("name") or "")
        if not name and len(ports) > 1:
            causes.append((f"{at}.name", "FieldValueRequired", "Required value"))
        elif name and (why := label_error(name)) is not None:
            causes.append((f"{at}.name", "FieldValueInvalid",
                           f"Invalid value: {go_quote(name)}: {why}"))
        if name and name in names:
            causes.append((f"{at}.name", "FieldValueDuplicate",
                           f"Duplicate value: {go_quote(name)}"))
        names.add(name)
        number = port.get("port")
        target = port.get("targetPort") or number  # SetDefaults_Service: 0, "" or none -> port
        for field, value in (("port", number), ("targetPort", target)):
            if isinstance(value, int) and not 1 <= value <= 65535:
                causes.append((f"{at}.{field}", "FieldValueInvalid", f"Invalid value: {value}: "
                               "must be between 1 and 65535, inclusive"))
        if isinstance(target, str):
            causes.extend((f"{at}.targetPort", "FieldValueInvalid",
                           f"Invalid value: {go_quote(target)}: {why}")
                          for why in port_name_errors(target))
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
        f"{go_quote(k)}:{go_quote(labels[k])}" for k in sorted(labels)) + "}"


def _go_selector(selector: dict[str, Any]) -> str:
    """An empty metav1.LabelSelector as Go's ``%#v`` prints it."""
    labels = ("map[string]string(nil)" if selector.get("matchLabels") is None
              else "map[string]string{}")
    expressions = ("[]v1.LabelSelectorRequirement(nil)" if selector.get("matchExpressions")
                   is None else "[]v1.LabelSelectorRequirement{}")
    return f"v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"
