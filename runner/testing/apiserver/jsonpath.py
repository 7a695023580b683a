"""The JSONPath subset a CRD's ``additionalPrinterColumns`` use, evaluated as client-go's
``util/jsonpath`` does for apiextensions-apiserver 1.20's tableconvertor (missing keys
allowed; a column shows the first result).

Steps: ``.field``, ``[index]`` and filters ``[?(@.a.b)]`` (the element has the field),
``[?(@.a OP literal)]`` with ``==``/``!=`` (strings, numbers, booleans) and ``<``, ``<=``,
``>``, ``>=`` (numbers). A filter applies to each element of a list (or to a map's values),
so ``.status.conditions[?(@.type=="Ready")].status`` is the Ready condition's status. Other
steps (wildcards, slices, recursive descent) are not understood and find nothing.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Iterator
from typing import Any

MISSING: Any = object()
"""What :func:`find` returns when the path matches nothing (a null value is None)."""

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]|\[\?\(\s*@((?:\.[^.\[\]\s=!<>()]+)+)\s*"
                   r"(?:(==|!=|<=|>=|<|>)\s*(\"[^\"]*\"|'[^']*'|[^\s)]+)\s*)?\)\]")
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
    ">": operator.gt, ">=": operator.ge}


def find(obj: Any, path: str) -> Any:
    """The first value ``path`` (``.spec.a[0].b``, ``.c[?(@.type=="Ready")].status``) finds
    in ``obj``, or :data:`MISSING`."""
    return next(_results([obj], path), MISSING)


def _results(values: list[Any], path: str) -> Iterator[Any]:
    for match in _STEP.finditer(path):
        key, index, field, op, literal = match.groups()
        if key is not None:
            values = [v[key] for v in values if isinstance(v, dict) and key in v]
        elif index is not None:
            values = [v[int(index)] for v in values
                      if isinstance(v, list) and int(index) < len(v)]
        else:
            keep = _filter(field, op, literal)
            values = [item for v in values for item in _elements(v) if keep(item)]
    return iter(values)


def _elements(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return list(value.values()) if isinstance(value, dict) else []


def _filter(field: str, op: str | None, literal: str | None) -> Callable[[Any], bool]:
    """Whether an element passes ``[?(@field op literal)]`` (``[?(@field)]``: has it)."""
    if op is None or literal is None:
        return lambda item: find(item, field) is not MISSING
    expected = _literal(literal)
    compare = _COMPARE[op]
    numeric = op not in ("==", "!=")

    def keep(item: Any) -> bool:
        value = find(item, field)
        if value is MISSING:
            return False
        if _number(value) and _number(expected):
            return compare(value, expected)
        return not numeric and type(value) is type(expected) and compare(value, expected)
    return keep


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _literal(text: str) -> Any:
    """A filter's right side: a quoted string, a number, true/false (else the bare text)."""
    if text[0] in "\"'":
        return text[1:-1]
    try:
        return json.loads(text)
    except ValueError:
        return text
