"""Secrets stay secret: what kinrun prints of a core/v1 Secret, with its values replaced.

As ``kubectl describe secret`` shows each key with its size only (``password: 8 bytes``), what
kinrun prints or logs of a Secret keeps its keys and replaces each value of ``data`` and
``stringData`` with ``<redacted: N bytes>`` (N: the decoded size of a ``data`` value, the UTF-8
size of a ``stringData`` one), and the ``kubectl.kubernetes.io/last-applied-configuration``
annotation (which holds a copy of the data) with ``<redacted>``. That covers:

* requests as ``kinrun render``, dry-run and ``kinrun test`` show them
  (:func:`redact_request`: the body of a create, apply or update of a Secret, a merge or
  strategic patch of one, the values of JSON patch operations on those paths);
* objects (:func:`redact_object`) and any value that may hold them (:func:`redact_value`: the
  JSON log formatter's extra fields);
* text that may quote values (:func:`redact_text`): a ``log``, ``stop``, ``fail`` or ``event``
  message rendered while reconciling a Secret, and an action's error (a check quoting what
  was rendered: ``kinrun.actions.program``), has every value of that Secret's data (as stored,
  base64, and decoded) replaced by ``<redacted>``, and so has every string of what ``kinrun
  render`` prints for it and of what a failed ``kinrun test`` case's diffs show
  (:func:`redact_strings`, on the data before it is dumped: a value copied into a ConfigMap
  too). A value is found inside a longer string, escaped and with its whitespace folded
  (:func:`value_pattern`). Only the reconciled object's own values (``obj`` and ``old``) are
  known there: a Secret read with ``get()`` from a cache and printed by a template is not
  recognised (do not log it).

* server answers to a write (:func:`redact_echoes`, applied by ``kinrun.kube.http_errors``
  where the ApiError is built): every value of the request body that the server quotes back
  in its Status message or causes is replaced by ``<redacted>``, field by field (the field
  path, reason and code stay), whatever the object and wherever the value came from; the
  object's own kind, name and namespace stay, as the request line names them anyway.

``kinrun render --show-secrets`` and ``kinrun test --show-secrets`` print the values. Pure data,
no I/O; every function returns a new value (or the given one when there is nothing to hide)
and never changes its argument.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
"""The annotation ``kubectl apply`` keeps the applied object in (Secret data included)."""
REDACTED = "<redacted>"
"""What replaces a value quoted in text, and the last-applied annotation."""
MIN_QUOTED = 4
"""Values shorter than this many characters are not searched for in text (a value such as
``1`` would blank out every digit of a line); their keys are still redacted in objects."""

_SECRET_FIELDS = ("data", "stringData")
_NO_VALUES: frozenset[str] = frozenset()


def is_secret(api_version: Any, kind: Any) -> bool:
    """Whether (apiVersion, kind) is the core/v1 Secret."""
    return kind == "Secret" and api_version == "v1"


def _size(value: Any, encoded: bool) -> str:
    if not isinstance(value, str):
        return REDACTED
    if encoded:
        try:
            return f"<redacted: {len(base64.b64decode(value, validate=True))} bytes>"
        except (binascii.Error, ValueError):
            pass
    return f"<redacted: {len(value.encode())} bytes>"


def _hide_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` (a Secret, or a patch of one) with data, stringData and the last-applied
    annotation redacted."""
    out = dict(body)
    for name in _SECRET_FIELDS:
        values = body.get(name)
        if isinstance(values, Mapping):
            out[name] = {k: _size(v, name == "data") for k, v in values.items()}
        elif values is not None:
            out[name] = REDACTED
    meta = body.get("metadata")
    if isinstance(meta, Mapping) and isinstance(meta.get("annotations"), Mapping) \
            and LAST_APPLIED in meta["annotations"]:
        out["metadata"] = {**meta, "annotations": {**meta["annotations"],
                                                   LAST_APPLIED: REDACTED}}
    return out


def redact_object(obj: Any) -> Any:
    """A core/v1 Secret dict with its values redacted (module docstring); any other value as
    it is."""
    if isinstance(obj, Mapping) and is_secret(obj.get("apiVersion"), obj.get("kind")):
        return _hide_fields(obj)
    return obj


def redact_value(value: Any) -> Any:
    """``value`` with every Secret in it redacted, looking into mappings and lists (a List of
    objects, a watch event, an ``extra=`` field)."""
    if isinstance(value, Mapping):
        if is_secret(value.get("apiVersion"), value.get("kind")):
            return _hide_fields(value)
        if not any(isinstance(v, (Mapping, list, tuple)) for v in value.values()):
            return value
        return {k: redact_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(v) for v in value]
    return value


def _secret_path(path: Any) -> bool:
    if not isinstance(path, str):
        return False
    return (path.split("/")[1:2] in (["data"], ["stringData"])
            or path.startswith("/metadata/annotations/kubectl.kubernetes.io~1last-applied"))


def redact_request(described: Mapping[str, Any]) -> Mapping[str, Any]:
    """An ``ApiRequest.describe()`` dict with the Secret values of its body redacted: the body
    of any request about a core/v1 Secret (a manifest or a merge/strategic patch: data,
    stringData, last-applied annotation; a JSON patch: the ``value`` of each operation on those
    paths), and any Secret inside the body of another request."""
    body = described.get("body")
    if body is None:
        return described
    if is_secret(described.get("apiVersion"), described.get("kind")):
        if isinstance(body, Mapping):
            hidden: Any = _hide_fields(body)
        elif isinstance(body, list):
            hidden = [({**op, "value": REDACTED} if isinstance(op, Mapping) and "value" in op
                       and _secret_path(op.get("path")) else op) for op in body]
        else:
            hidden = REDACTED
    else:
        hidden = redact_value(body)
    return described if hidden is body else {**described, "body": hidden}


def redact_steps(steps: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``RenderResult.describe()`` output with every request redacted (:func:`redact_request`);
    log lines and requeues as they are."""
    return [redact_request(s) if "verb" in s else s for s in steps]


def secret_values(*objs: Any) -> frozenset[str]:
    """The values to look for in text: each value of ``data`` of the given objects that are
    Secrets, as stored (base64) and decoded (when UTF-8 text), and each ``stringData`` value;
    shorter than :data:`MIN_QUOTED` characters left out. Called for every message rendered
    while reconciling (``kinrun.actions.kinds.unsecret``): an object that is not a Secret costs
    one check, and no Secret gives the shared empty set."""
    found: set[str] = set()
    for obj in objs:
        if obj is None or (obj.__class__ is dict and obj.get("kind") != "Secret"):
            continue  # most objects: one lookup
        if not (isinstance(obj, Mapping) and is_secret(obj.get("apiVersion"), obj.get("kind"))):
            continue
        for name in _SECRET_FIELDS:
            values = obj.get(name)
            if not isinstance(values, Mapping):
                continue
            for value in values.values():
                if not isinstance(value, str):
                    continue
                found.add(value)
                if name == "data":
                    try:
                        found.add(base64.b64decode(value, validate=True).decode())
                    except (binascii.Error, ValueError):
                        pass
    return frozenset(v for v in found if len(v) >= MIN_QUOTED) if found else _NO_VALUES


def redact_strings(value: Any, values: frozenset[str]) -> Any:
    """``value`` (a described step, any JSON-like value) with :func:`redact_text` applied to
    every string in it, mapping keys included: ``kinrun render`` hides the reconciled
    Secret's values wherever a template copied them (a ConfigMap, a label)."""
    if not values:
        return value
    if isinstance(value, str):
        return redact_text(value, values)
    if isinstance(value, Mapping):
        return {redact_strings(k, values): redact_strings(v, values) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_strings(v, values) for v in value]
    return value


def redact_text(text: str, values: Iterable[str]) -> str:
    """``text`` with every occurrence of each of ``values`` replaced by :data:`REDACTED`
    (longest first, so a value containing another is hidden whole), in any of the forms in
    which kinrun's own steps may have turned it (:func:`value_pattern`)."""
    pattern = value_pattern(frozenset(values))
    return pattern.sub(REDACTED, text) if pattern is not None else text


_GAP = r"(?:\s|\\[nrt])+"
"""A run of whitespace, written or escaped (a line break as JSON and ``repr`` write it)."""


@functools.lru_cache(maxsize=64)
def value_pattern(values: frozenset[str]) -> re.Pattern[str] | None:
    """One regular expression finding each of ``values`` (None for none), wherever it stands
    in a longer text, as written, JSON-escaped (``ensure_ascii`` on or off), ``repr``-escaped
    (an error message quoting a rendered mapping) or in YAML single quotes (``''``), and with
    each run of whitespace inside it matching any other run (written or escaped): YAML folds a
    multi-line value, both when a template writes it into a double-quoted scalar (each line
    break becomes a space) and when a dumper wraps a long line. Leading and trailing
    whitespace of a value is not searched, nor a value of fewer than :data:`MIN_QUOTED` other
    characters. Compiled once per set of
    values (the last 64 sets kept: a reconcile of the same Secret reuses it)."""
    forms: set[str] = set()
    for value in values:
        for form in (value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1],
                     repr(value)[1:-1], value.replace("'", "''")):
            words = [w for w in re.split(_GAP, form) if w]
            if sum(map(len, words)) >= MIN_QUOTED:  # as secret_values: no blanked-out digits
                forms.add(_GAP.join(map(re.escape, words)))
    if not forms:
        return None
    return re.compile("|".join(sorted(forms, key=len, reverse=True)))


_IDENTITY = (("apiVersion",), ("kind",), ("metadata", "name"), ("metadata", "namespace"))
"""Body fields not redacted in server answers: the request line and the log line name them."""


def redact_echoes(answer: Mapping[str, Any], sent: Any, *,
                  shown: Iterable[str] = ()) -> Mapping[str, Any]:
    """A metav1.Status ``answer`` to a request whose body was ``sent`` (decoded JSON, or a
    str), with every value of the body that the server echoes replaced by :data:`REDACTED`,
    field by field: in ``message`` and in each ``details.causes[].message`` and ``.field``;
    reasons, codes and the field paths of the body's structure stay. Looked for (see
    :func:`echo_forms`): each string value quoted (``"v"``, as kube-apiserver's field errors
    print values, or ``'v'``), and unquoted when at least :data:`MIN_QUOTED` characters long;
    numbers of that many digits; map keys quoted or in brackets (``data[key]``). Not
    redacted: the
    body's apiVersion, kind, name and namespace, and the strings of ``shown`` (the request
    path's segments). Returns ``answer`` itself when nothing was echoed."""
    forms = echo_forms(sent, shown=shown)
    if not forms:
        return answer
    out = dict(answer)
    if isinstance(answer.get("message"), str):
        out["message"] = _replace_forms(answer["message"], forms)
    details = answer.get("details")
    if isinstance(details, Mapping) and isinstance(details.get("causes"), list):
        out["details"] = {**details, "causes": [_redact_cause(c, forms)
                                                for c in details["causes"]]}
    return answer if out == answer else out


def _redact_cause(cause: Any, forms: list[tuple[str, str]]) -> Any:
    if not isinstance(cause, Mapping):
        return cause
    return {k: (_replace_forms(v, forms) if k in ("message", "field") and isinstance(v, str)
                else v) for k, v in cause.items()}


def echo_forms(sent: Any, *, shown: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(text, replacement) pairs for the values of a request body ``sent`` that a server may
    quote back (see :func:`redact_echoes`), longest text first; empty when there is none."""
    keep = set(shown) | _identity_values(sent)
    forms: dict[str, str] = {}
    for value, is_key in _body_strings(sent):
        if not value or value in keep:
            continue
        forms[f'"{value}"'] = f'"{REDACTED}"'
        forms[f"'{value}'"] = f"'{REDACTED}'"
        forms[json.dumps(value, ensure_ascii=False)] = f'"{REDACTED}"'
        if is_key:
            forms[f"[{value}]"] = f"[{REDACTED}]"
        elif len(value) >= MIN_QUOTED:
            forms[value] = REDACTED
    return sorted(forms.items(), key=lambda pair: len(pair[0]), reverse=True)


def _identity_values(sent: Any) -> set[str]:
    found: set[str] = set()
    for path in _IDENTITY:
        value: Any = sent
        for name in path:
            value = value.get(name) if isinstance(value, Mapping) else None
        if isinstance(value, str):
            found.add(value)
    return found


def _body_strings(value: Any) -> Iterable[tuple[str, bool]]:
    """(string, is a mapping key) for every string, mapping key and number in ``value``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item, False
        elif isinstance(item, Mapping):
            for key, child in item.items():
                yield str(key), True
                stack.append(child)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, (int, float)) and not isinstance(item, bool) \
                and len(str(item)) >= MIN_QUOTED:
            yield str(item), False


_FIELD_ERROR_WORDS = ("Invalid value", "Unsupported value", "Duplicate value",
                      "Required value", "Not found", "Forbidden", "Too long", "Too many",
                      "Internal error", "is invalid")
"""The words of kube-apiserver's field errors (apimachinery ``validation/field`` ErrorType
strings) and of its 422 message (``<Kind> "<name>" is invalid``): a sent value inside one of
them (``value``) is not replaced there, so the message keeps its shape."""

_FIELD_ERROR_SPLIT = re.compile("(" + "|".join(map(re.escape, _FIELD_ERROR_WORDS)) + ")")


def _replace_forms(text: str, forms: list[tuple[str, str]]) -> str:
    for form, replacement in forms:
        if form not in text:
            continue
        if any(form in words for words in _FIELD_ERROR_WORDS):
            parts = _FIELD_ERROR_SPLIT.split(text)  # odd items: the words, kept
            text = "".join(part if i % 2 else part.replace(form, replacement)
                           for i, part in enumerate(parts))
        else:
            text = text.replace(form, replacement)
    return text


def redact_echoed_text(text: str, sent: Any, *, shown: Iterable[str] = ()) -> str:
    """``text`` (a server answer that is not a Status) with the values of ``sent`` it quotes
    replaced, as :func:`redact_echoes` does for a Status message."""
    forms = echo_forms(sent, shown=shown)
    return _replace_forms(text, forms) if forms else text
