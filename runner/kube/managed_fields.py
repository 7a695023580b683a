"""Decode API server JSON without ``metadata.managedFields``: the array is cut from the raw bytes
before ``orjson.loads``, so it is never built (nor freed).

Why: managedFields is about a third of a Pod's JSON and a larger share of its decoded
containers (fieldsV1 is a deep tree of small dicts). kinrun strips it by default anyway
(``kinrun.cache.strip_managed_fields``); not building it cuts decode plus free time per event by
about a quarter (``benchmarks/replay.py``: ~16 us of ~60 us for a 9 KB Pod).

How, and why it is safe. Each occurrence of the key text ``"managedFields":`` must be followed
by ``[``, and the first ``]`` after it must come before any other ``[`` (fieldsV1 holds objects
only, so a plain managedFields array has no nested one). That array is replaced by a marker string
(``CUT``, which no API server sends as managedFields: the field is an array) and the result
decoded; the decode is accepted only if it is valid JSON and every marker turned up as
``metadata.managedFields`` of one of the objects the caller names (the watch
event's object, a LIST's items), which are then removed. A key inside a JSON string is escaped
(``\\"managedFields\\":``) and never matches. If that first ``]`` sat inside a string (a
fieldsV1 key quoting a value with ``]``), the cut would resume mid-string and the text after it
would be read with strings and syntax swapped: the next fieldsV1 key (``f:...``, ``k:...``,
``v:...``) is then a bare word, which is invalid JSON, so such a cut never decodes. Anything
that fails a check (whitespace after the colon, a nested ``[``, a managedFields that is not an
object's own, invalid JSON) falls back to decoding the original bytes in full; the informer's
transform then strips the field as before. The result is the same dict either way, with one
exception: the cut bytes are never parsed, so invalid JSON inside a managedFields array goes
unnoticed (it is dropped unread). The checks are ``find`` calls and one join: ~2 us per 9 KB
Pod, no counting pass over the bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

KEY = b'"managedFields":'
CUT = "\u0000kinrun:cut"
"""What a cut array decodes to, before it is removed (its JSON is ``_CUT_JSON``)."""
_CUT_JSON = orjson.dumps(CUT)

ObjectsOf = Callable[[Any], Iterable[Any]]
"""Given the decoded document, the objects whose ``metadata.managedFields`` may be dropped."""


def loads_without_managed_fields(data: bytes, objects_of: ObjectsOf,
                                 limit: int | None = None) -> Any:
    """``orjson.loads(data)``, with ``metadata.managedFields`` absent from every object
    ``objects_of(document)`` yields when the fast path applies (see the module docstring);
    otherwise the full document, managedFields included. ``limit``: cut at most this many
    arrays (1 for a watch event: its object has one; the search for a second would scan the
    rest of the bytes for nothing); None = all (a LIST page).

    Raises ``orjson.JSONDecodeError`` (a ValueError) when ``data`` is not JSON (outside the
    cut arrays, which are not parsed)."""
    cut, count = cut_managed_fields(data, limit)
    if count:
        try:
            doc = orjson.loads(cut)
        except orjson.JSONDecodeError:
            doc = None
        if doc is not None and _drop_cut(objects_of(doc)) == count:
            return doc
    return orjson.loads(data)


def cut_managed_fields(data: bytes, limit: int | None = None) -> tuple[bytes, int]:
    """(``data`` with each managedFields array replaced by ``CUT``, how many were replaced);
    ``(data, 0)`` when any occurrence of the key does not pass the checks. ``limit``: stop
    after that many (None = every occurrence)."""
    start = data.find(KEY)
    if start < 0:
        return data, 0
    parts: list[bytes] = []
    pos = 0
    while start >= 0:
        opening = start + len(KEY)
        closing = _array_end(data, opening)
        if closing < 0:
            return data, 0
        parts.append(data[pos:opening])
        parts.append(_CUT_JSON)
        pos = closing + 1
        if limit is not None and len(parts) // 2 >= limit:
            break
        start = data.find(KEY, pos)
    parts.append(data[pos:])
    return b"".join(parts), len(parts) // 2


def _array_end(data: bytes, opening: int) -> int:
    """Index of the first ``]`` after the ``[`` at ``opening``, or -1 when there is no ``[``
    there, no ``]``, or another ``[`` before it."""
    if data[opening:opening + 1] != b"[":
        return -1
    closing = data.find(b"]", opening)
    if closing < 0 or data.find(b"[", opening + 1, closing) >= 0:
        return -1
    return closing


def _drop_cut(objects: Iterable[Any]) -> int:
    """Delete ``metadata.managedFields`` where it is ``CUT``; returns how many were deleted."""
    dropped = 0
    for obj in objects:
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        if isinstance(meta, dict) and meta.get("managedFields") == CUT:
            del meta["managedFields"]
            dropped += 1
    return dropped


def event_object(event: Any) -> Iterable[Any]:
    """``objects_of`` for a watch event line: its ``object``."""
    return (event.get("object"),) if isinstance(event, dict) else ()


def the_object(doc: Any) -> Iterable[Any]:
    """``objects_of`` for one object's bytes (a LIST item decoded on its own): the object."""
    return (doc,) if isinstance(doc, dict) else ()


def list_items(page: Any) -> Iterable[Any]:
    """``objects_of`` for a LIST page: its ``items``."""
    items = page.get("items") if isinstance(page, dict) else None
    return items if isinstance(items, list) else ()
