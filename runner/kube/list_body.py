"""Decode a LIST body one item at a time: the same document as ``orjson.loads`` of the whole body,
without building a parse of the whole body first.

Why: a reflector's first LIST (``resourceVersion=0``) is answered from kube-apiserver's watch
cache in one piece, whatever the ``limit``: 10,000 Pods are one body of about 100 MB. orjson
parses a body into its own tree before it builds the Python objects, so a 100 MB body costs a
few hundred MB of fresh memory for a moment, which the kernel maps and zeroes page by page, on
top of the cache's own pages. Decoding item by item keeps that transient at the size of one
item: for 10,000 podgen Pods of 9 KB in a fresh process, 148,000 -> 79,000 minor page faults
and 0.54-1.09 -> 0.36-0.40 CPU-s (user + system); 10,000 Pods on kube-apiserver, 149,000 ->
94,000 faults (BENCHMARKS.md, "Round 5"). Watch events are one object each already.

How, and why it is safe. An API server's JSON list is ``{..., "items":[{...},{...}], ...}``.
The first ``"items":[`` of the body is the list's own field: the list's other fields (kind,
apiVersion, ListMeta) hold no key of that name, and a key inside a string is escaped; the text
before it, closed right after an empty array, must decode (it does not when the key sits in a
nested object). Let
``P`` be the first item's text up to and including its first key (``{"metadata":`` for a
built-in kind, ``{"apiVersion":`` for a custom resource); every ``},`` + ``P`` after the
array's opening is a candidate boundary between two items. The bytes ``,{"`` cannot lie inside
a JSON string (an unescaped ``"`` ends a string, and a string's end cannot be followed by a
letter), so a candidate is always a comma between two objects of *some* array, possibly one
nested in an item (a StatefulSet's volumeClaimTemplates). Each item is taken as the bytes from
its start to the next candidate and decoded on its own; a JSON value is self-delimiting, so
those bytes decode only when the candidate is the item's own end. When they do not decode, the
next candidate is tried for the same start (the item continues past a nested one). The last
item ends at one of the last ``]`` of the body (tried from the right). The rest of the body,
with the array emptied, is decoded as the envelope and must give ``"items": []``. Any failure
of these checks (another layout: whitespace between items, a proxy's pretty-printing; too many
nested candidates in one item; invalid JSON) falls back to decoding the whole body, so the
result, and the error for a body that is not JSON, are always the whole-body decode's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

ITEMS = b'"items":['
MAX_TRIES_PER_ITEM = 32
"""Candidates tried for one item before giving up on the item-wise decode (nested arrays of
objects whose first key is the items' first key; more than this is pathological)."""
MAX_LAST_ENDS = 8
"""``]`` tried from the right of the body for the end of the last item."""
MIN_BYTES = 64 * 1024
"""Bodies shorter than this are decoded whole: the transient is small and the search costs."""


def loads_list(data: bytes, loads_item: Callable[[bytes], Any],
               loads_whole: Callable[[bytes], Any], *,
               min_bytes: int = MIN_BYTES) -> Any:
    """The LIST body ``data`` decoded: ``loads_whole(data)``'s document, with ``items`` built by
    ``loads_item`` on each item's bytes (see the module docstring for when).

    ``loads_item``: bytes of one JSON object -> the object (``orjson.loads``, or a loader that
    cuts managedFields); it raises ValueError (``orjson.JSONDecodeError``) for bytes that are
    not one JSON value. ``loads_whole``: bytes -> document, the fallback and the reference
    semantics; its errors (``orjson.JSONDecodeError`` for non-JSON) are what this raises.
    Bodies under ``min_bytes`` bytes go to ``loads_whole`` directly.
    """
    if len(data) < min_bytes:
        return loads_whole(data)
    try:
        doc = _loads_items(data, loads_item, loads_whole)
    except ValueError:
        doc = None
    return loads_whole(data) if doc is None else doc


def _loads_items(data: bytes, loads_item: Callable[[bytes], Any],
                 loads_whole: Callable[[bytes], Any]) -> Any:
    """The item-wise decode, or None when a check fails (ValueError from a loader too)."""
    opening = data.find(ITEMS)
    if opening < 0:
        return None
    orjson.loads(data[:opening] + b'"items":[]}')  # the array is the document's own field
    start = opening + len(ITEMS)
    if data[start:start + 1] != b"{":
        return None  # empty (``[]``), whitespace, or not objects: whole
    colon = data.find(b'":', start)
    if colon < 0 or data[start + 1:start + 2] != b'"':
        return None
    separator = b"}," + data[start:colon + 2]
    items: list[Any] = []
    find, pos = data.find, start
    while True:  # each item but the last: up to the first candidate at which it decodes
        candidate, tries, item = find(separator, pos), 0, None
        while candidate >= 0 and tries < MAX_TRIES_PER_ITEM:
            try:
                item = loads_item(data[pos:candidate + 1])
            except ValueError:
                item = None
            if item is not None:
                break
            tries += 1
            candidate = find(separator, candidate + 1)
        if item is None:
            if candidate >= 0:
                return None  # MAX_TRIES_PER_ITEM nested candidates
            break  # none left: ``pos`` starts the last item
        items.append(item)
        pos = candidate + 2
    closing, item = _last_item(data, pos, loads_item)
    if closing < 0:
        return None
    items.append(item)
    envelope = loads_whole(data[:start] + data[closing:])
    if not isinstance(envelope, dict) or envelope.get("items") != []:
        return None
    envelope["items"] = items
    return envelope


def _last_item(data: bytes, pos: int, loads_item: Callable[[bytes], Any]) -> tuple[int, Any]:
    """(index of the ``]`` that closes the items array, the last item), or (-1, None)."""
    closing = len(data)
    for _ in range(MAX_LAST_ENDS):
        closing = data.rfind(b"]", pos, closing)
        if closing < 0:
            break
        try:
            item = loads_item(data[pos:closing])
        except ValueError:
            continue
        if item is not None:
            return closing, item
    return -1, None
