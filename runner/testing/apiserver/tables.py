"""Server-side Tables (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``), the form
``kubectl get`` asks for, as kube-apiserver 1.20 builds them.

Built-in kinds get the columns and cells of kube-apiserver 1.20's printers
(``printers.columns``: NAME and the rest in 1.20's order, ``priority: 1`` columns only shown
with ``-o wide``, descriptions from ``printer_docs``);
custom resources get NAME, their CRD version's ``additionalPrinterColumns`` (the JSONPaths of
``jsonpath``: ``.a.b``, ``.a[0].b``, filters ``.a[?(@.type=="Ready")].b``), or AGE when it
declares none,
with the definitions (descriptions, formats) and cells of apiextensions-apiserver 1.20's
tableconvertor (a ``date`` cell is an age, a ``string`` cell prints any value as jsonpath
does, other types take their own or null); a kind without either NAME and AGE. Ages are written as
``duration.HumanDuration`` writes them. Each row
carries its object as PartialObjectMetadata (``includeObject=Metadata``, the default), whole
(``Object``) or not at all (``None``). On a watch each event's object is a one-row Table.
"""

from __future__ import annotations

import calendar
import datetime
import decimal
import math
import re
import time
from collections.abc import Callable
from typing import Any, Union

from kinrun.openapi.typed import object_meta

from .jsonpath import MISSING, find

Obj = dict[str, Any]
Cell = Callable[[Obj, float], Any]
Column = Union[tuple[str, str, int, Cell], tuple[str, str, int, Cell, Obj]]
"""(header, type, priority, cell(obj, now)[, more of the column's definition])."""
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")
_GO_ZERO_TIME = datetime.datetime(1, 1, 1, tzinfo=datetime.timezone.utc)


def wants_table(accept: str) -> bool:
    """Whether the first usable media type of ``accept`` asks for a meta.k8s.io Table."""
    for media in accept.split(","):
        parts = [p.strip() for p in media.split(";")]
        if parts[0] not in ("application/json", "*/*", "application/*"):
            continue
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        return (params.get("as") == "Table" and params.get("g") == "meta.k8s.io"
                and params.get("v") in ("v1", "v1beta1"))
    return False


def human_duration(seconds: float) -> str:
    """``5m``, ``2m30s``, ``3h``, ``4d12h`` as apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m, h, d = s // 60, s // 3600, s // 86400
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{d}d{h % 24}h" if h % 24 else f"{d}d"
    if h < 24 * 365 * 2:
        return f"{d}d"
    y = d // 365
    return f"{y}y{d % 365}d" if y < 8 and d % 365 else f"{y}y"


def _epoch(timestamp: Any) -> float | None:
    try:
        return float(calendar.timegm(time.strptime(str(timestamp), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def age(obj: Obj, now: float) -> str:
    """The AGE cell: time since creationTimestamp (``<unknown>`` without one)."""
    created = _epoch((obj.get("metadata") or {}).get("creationTimestamp"))
    return "<unknown>" if created is None else human_duration(now - created)


def _get(obj: Any, path: str) -> Any:
    """The value at a JSONPath (``.spec.a[0].b``), or None (:func:`jsonpath.find`)."""
    value = find(obj, path)
    return None if value is MISSING else value


def meta_description(field: str) -> str:
    """The swagger doc of ObjectMeta's ``field`` (``name``: the Name column's description;
    ``creationTimestamp``: a custom resource's default Age column's), as 1.20 sends it, read
    from the shipped OpenAPI."""
    return str(object_meta().node["properties"][field]["description"])


def crd_columns(columns: list[Obj]) -> list[Column]:
    """A CRD version's ``additionalPrinterColumns`` as apiextensions-apiserver 1.20's
    tableconvertor makes them (with their format and description; Age of type date when
    there are none)."""
    if not columns:
        columns = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
                    "description": meta_description("creationTimestamp")}]
    out: list[Column] = []
    for column in columns:
        kind, path = str(column.get("type") or "string"), str(column.get("jsonPath") or "")
        description = str(column.get("description") or "Custom resource definition column "
                          f"(in JSONPath format): {path}")
        out.append((str(column.get("name")), kind, int(column.get("priority") or 0),
                    _crd_cell(kind, path),
                    {"format": str(column.get("format") or ""), "description": description}))
    return out


def _crd_cell(kind: str, path: str) -> Cell:
    """A printer column's cell as the tableconvertor fills it: a missing value is null; a
    ``string`` column prints the value as jsonpath does (Go's ``%v``, JSON for lists and maps,
    ``<no value>`` for null); other types take a value of their type (an integer column
    truncates a number) or null, and a date column shows the age of an RFC 3339 string."""
    def cell(obj: Obj, now: float) -> Any:
        value = find(obj, path)
        if value is MISSING:
            return None
        if kind == "string":
            return go_text(value)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if kind == "integer" and number:
            return int(value)
        if kind == "number" and number or kind == "boolean" and isinstance(value, bool):
            return value
        if kind == "date" and isinstance(value, str):
            return date_cell(value, now)
        return None
    return cell


def date_cell(value: str, now: float) -> str:
    """A date column's cell for an RFC 3339 string: its age (``<invalid>`` when it does not
    parse, ``<unknown>`` for Go's zero time), as ``ConvertToHumanReadableDateType``."""
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        return "<invalid>"
    if moment.tzinfo is None or not _RFC3339.fullmatch(value):
        return "<invalid>"
    if moment == _GO_ZERO_TIME:
        return "<unknown>"
    return human_duration(now - moment.timestamp())


def go_text(value: Any) -> str:
    """``value`` as client-go's jsonpath prints one result: lists and maps as Go's
    ``json.Marshal``, other values as Go's ``%v`` (null as ``<no value>``)."""
    if value is None:
        return "<no value>"
    if isinstance(value, (dict, list)):
        return go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value, json_form=False)
    return str(value)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                 "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                 "\u2029": "\\u2029"}


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it (sorted keys, HTML characters escaped)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{go_json(str(k))}:{go_json(value[k])}"
                              for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + "".join(_JSON_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if ord(c) < 0x20 else c)
                             for c in value) + '"'
    if isinstance(value, float):
        return _go_float(value, json_form=True)
    return "null" if value is None else go_text(value)


def _go_float(value: float, json_form: bool) -> str:
    """A float as Go's ``%v`` (shortest digits; exponent form below 1e-4 or from 1e6) or,
    ``json_form``, as ``json.Marshal`` (exponent form below 1e-6 or from 1e21, ``e-7``)."""
    if math.isnan(value) or math.isinf(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    if value == 0:
        return sign + "0"
    parts = decimal.Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, parts.digits))
    point = len(digits) + int(parts.exponent)
    exponent = point - 1
    if (abs(value) < 1e-6 or abs(value) >= 1e21) if json_form else not -4 <= exponent < 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        width = 1 if json_form else 2
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):0{width}d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _row_object(obj: Obj, include: str) -> Obj | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata") or {}}


def table(columns: list[Column] | None, objs: list[Obj], now: float,
          list_meta: Obj, include: str = "Metadata",
          conditions: Callable[[Obj], list[Obj] | None] | None = None) -> Obj:
    """The meta.k8s.io/v1 Table of ``objs``: NAME then ``columns`` (None: AGE), or
    ``columns`` alone when they hold a column of format ``name`` (a built-in kind's); a row
    has the ``conditions`` its object is given, if any."""
    cols: list[Column] = [("Name", "string", 0, lambda o, _: (o.get("metadata") or {}).get(
        "name"), {"format": "name", "description": meta_description("name")})]
    if columns is not None and any(len(c) > 4 and c[4].get("format") == "name"  # type: ignore[misc]
                                   for c in columns):
        cols = columns  # a built-in kind's own (printers.columns), NAME anywhere
    else:
        cols += columns if columns is not None else [("Age", "string", 0, age)]
    definitions = [{"name": col[0], "type": col[1], "format": "", "description": "",
                    **(col[4] if len(col) > 4 else {}), "priority": col[2]}  # type: ignore[misc]
                   for col in cols]
    rows = []
    for obj in objs:
        row: Obj = {"cells": [col[3](obj, now) for col in cols]}
        row_conditions = conditions(obj) if conditions is not None else None
        if row_conditions:
            row["conditions"] = row_conditions
        row_object = _row_object(obj, include)
        if row_object is not None:
            row["object"] = row_object
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta,
            "columnDefinitions": definitions, "rows": rows}
