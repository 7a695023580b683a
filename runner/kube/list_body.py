"""Decode a LIST body one item at a time, as its pieces arrive: the same document as
``orjson.loads`` of the whole body, without the whole body in memory, nor a parse of it.

Why: a reflector's first LIST (``resourceVersion=0``) is answered from kube-apiserver's watch
cache in one piece, whatever the ``limit``: 10,000 Pods are one body of about 100 MB. orjson
parses a body into its own tree before it builds the Python objects, so a 100 MB body costs a
few hundred MB of fresh memory for a moment, which the kernel maps and zeroes page by page, on
top of the cache's own pages. Decoding item by item keeps that transient at the size of one
item: for 10,000 podgen Pods of 9 KB in a fresh process, 148,000 -> 79,000 minor page faults
and 0.54-1.09 -> 0.36-0.40 CPU-s (user + system); 10,000 Pods on kube-apiserver, 149,000 ->
94,000 faults (benchmarks/HISTORY.md, "Round 5"). Decoding the pieces as they are read
(``ListDecoder``, fed by ``Transport.request_pieces``) also leaves out the body itself, which
read whole is one more object of the body's size (benchmarks/HISTORY.md, round 6). Watch
events are one object each already.

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
result, and the error for a body that is not JSON, are the whole-body decode's (two exceptions
below). Read in
pieces, a body whose layout is another is kept whole until its end, and decoded then; when the
check fails after decoded items were dropped (a pathological item, an envelope that does not
check), the body must be read again (``NotItemwise``). The byte before ``"items":[`` must be
``,`` or ``{`` (else the text ends an escaped key, ``"a\\"items":[``), and no ``"items"`` may
follow the array (a second key of that name wins in ``orjson.loads``).

Two differences from the whole-body decode remain, both on bodies no API server sends: an item
nested deeper than orjson's limit (1024) less the list's two levels decodes on its own where the
whole body raises; and with the managedFields cut (``kinrun.kube.managed_fields``), whether an
item's managedFields is cut is decided item by item, where the whole-page cut keeps every
item's when one check fails.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

ITEMS = b'"items":['
ITEMS_KEY = b'"items"'
MAX_TRIES_PER_ITEM = 32
"""Candidates tried for one item before giving up on the item-wise decode (nested arrays of
objects whose first key is the items' first key; more than this is pathological)."""
MAX_LAST_ENDS = 8
"""``]`` tried from the right of the body for the end of the last item."""
MIN_BYTES = 64 * 1024
"""Bodies shorter than this are decoded whole: the transient is small and the search costs."""
PIECE_BYTES = 1 << 18
"""Bytes per piece: what ``Transport.request_pieces`` reads at a time for a LIST, and the
slices ``loads_list`` feeds a body in (256 KB: few reads for a 100 MB body, and a buffer that
glibc's malloc keeps reusing once its first piece was freed)."""

Loads = Callable[[Any], Any]


class NotItemwise(Exception):
    """The body left the layout the item-wise decode reads after some of it was already
    dropped from the buffer (``ListDecoder.feed``/``close``): only a new read of the whole body
    can decode it (``loads_whole`` on all its bytes)."""


class ListDecoder:
    """One LIST body decoded item by item as its pieces arrive (see the module docstring).

    ``feed(piece)`` for each piece of the body in order (bytes-like), then ``close()`` for the
    document. ``loads_item`` and ``loads_whole`` are as for ``loads_list``; ``min_bytes``: a
    body shorter than that is decoded whole at ``close``.

    Memory: while the body keeps the expected layout, the buffer holds the bytes after the last
    item decoded (part of one item plus one piece); the items decoded so far are the only
    other state. A body in another layout stays buffered whole, for ``loads_whole`` at
    ``close``; when that is found after items were taken from the buffer, ``feed`` or ``close``
    raises NotItemwise and the caller must read the body again (``loads_list`` decodes its
    ``data`` whole; ``KubeListerWatcher`` requests the page again).

    Not thread-safe: one reader feeds it.
    """

    def __init__(self, loads_item: Loads, loads_whole: Loads, *, min_bytes: int = MIN_BYTES):
        self._loads_item, self._loads_whole, self._min_bytes = loads_item, loads_whole, min_bytes
        self._buf = bytearray()
        self._items: list[Any] = []
        self._head = b""          # the body's text through ``"items":[``, once checked
        self._separator = b""     # ``},`` + the first item's opening key; b"" until found
        self._pos = 0             # in _buf: where the item being read starts
        self._search = 0          # in _buf: where to look for its next candidate end
        self._tries = 0           # candidates that did not end it
        self._opening = -1        # in _buf: where ITEMS starts, once found
        self._scanned = 0         # in _buf: ITEMS, then the first key's end, is not before this
        self._whole = False       # another layout: keep every byte for loads_whole
        self._dropped = False     # _buf no longer starts at the body's first byte

    @property
    def buffered(self) -> bytearray:
        """The bytes held now (the body's text after the last item decoded)."""
        return self._buf

    def feed(self, piece: Any) -> None:
        """Take the next ``piece`` of the body (bytes-like) and decode every item it completes.
        Raises NotItemwise (see the class docstring)."""
        buf = self._buf
        buf += piece
        if self._whole or (not self._separator and not self._start()):
            return
        self._take_items()
        if self._pos and not self._whole:  # drop what was decoded (a prefix: no copy)
            del buf[:self._pos]
            self._search -= self._pos
            self._pos, self._dropped = 0, True

    def close(self) -> Any:
        """The document: ``loads_whole(body)``'s, with the items decoded one by one. Raises
        what ``loads_whole`` raises for a body that is not JSON, NotItemwise (see the class
        docstring)."""
        buf = self._buf
        if self._whole or not self._separator:
            return self._loads_whole(buf)
        closing, item = _last_item(buf, self._pos, self._loads_item)
        if closing >= 0 and buf.find(ITEMS_KEY, closing) < 0:  # no second ``items`` after it
            try:
                envelope = self._loads_whole(self._head + buf[closing:])
            except ValueError:
                envelope = None
            if isinstance(envelope, dict) and envelope.get("items") == []:
                self._items.append(item)
                envelope["items"] = self._items
                return envelope
        self._give_up()
        return self._loads_whole(buf)

    def _give_up(self) -> None:
        """Another layout: keep buffering for loads_whole, or NotItemwise when bytes were
        dropped."""
        if self._dropped:
            raise NotItemwise("the LIST body is not in the layout read item by item")
        self._whole = True

    def _start(self) -> bool:
        """Find and check the items array's opening and the first item's key; False while
        more bytes are needed or when the layout is another (then ``_whole``)."""
        buf = self._buf
        if len(buf) < self._min_bytes:
            return False
        if self._opening < 0:
            opening = buf.find(ITEMS, max(0, self._scanned - len(ITEMS)))
            if opening < 0:
                self._scanned = len(buf)
                return False
            self._opening, self._scanned = opening, opening + len(ITEMS)
        opening = self._opening
        start = opening + len(ITEMS)
        if len(buf) < start + 2:
            return False
        if buf[start:start + 2] != b'{"':  # empty (``[]``), whitespace, or not objects: whole
            self._whole = True
            return False
        if buf[opening - 1:opening] not in (b",", b"{"):  # a key ending in an escaped quote
            self._whole = True
            return False
        colon = buf.find(b'":', max(start, self._scanned - 1))
        if colon < 0:  # the first key goes on into the next piece
            self._scanned = len(buf)
            return False
        try:  # the array is the document's own field
            orjson.loads(buf[:opening] + b'"items":[]}')
        except ValueError:
            self._whole = True
            return False
        self._head = bytes(buf[:start])
        self._separator = b"}," + bytes(buf[start:colon + 2])
        self._pos = self._search = start
        return True

    def _take_items(self) -> None:
        """Decode each item that ends in the buffer: up to the first candidate at which it
        decodes."""
        buf, separator, loads_item = self._buf, self._separator, self._loads_item
        find = buf.find
        while True:
            candidate = find(separator, self._search)
            if candidate < 0:  # more bytes needed (or ``_pos`` starts the last item)
                self._search = max(self._pos, len(buf) - len(separator) + 1)
                return
            if self._tries >= MAX_TRIES_PER_ITEM:  # nested candidates: pathological
                self._give_up()
                return
            try:
                item = loads_item(buf[self._pos:candidate + 1])
            except ValueError:
                item = None
            if item is None:  # the item goes on past a nested candidate
                self._tries += 1
                self._search = candidate + 1
                continue
            self._items.append(item)
            self._pos = self._search = candidate + 2
            self._tries = 0


def loads_list(data: bytes, loads_item: Loads, loads_whole: Loads, *,
               min_bytes: int = MIN_BYTES) -> Any:
    """The LIST body ``data`` decoded: ``loads_whole(data)``'s document, with ``items`` built by
    ``loads_item`` on each item's bytes (see the module docstring for when).

    ``loads_item``: bytes of one JSON object -> the object (``orjson.loads``, or a loader that
    cuts managedFields); it raises ValueError (``orjson.JSONDecodeError``) for bytes that are
    not one JSON value. ``loads_whole``: bytes -> document, the fallback and the reference
    semantics; its errors (``orjson.JSONDecodeError`` for non-JSON) are what this raises.
    Bodies under ``min_bytes`` bytes go to ``loads_whole`` directly. ``data`` is fed to a
    ``ListDecoder`` in slices of PIECE_BYTES, as a streamed LIST is.
    """
    if len(data) < min_bytes:
        return loads_whole(data)
    decoder = ListDecoder(loads_item, loads_whole, min_bytes=min_bytes)
    view = memoryview(data)
    try:
        for offset in range(0, len(data), PIECE_BYTES):
            decoder.feed(view[offset:offset + PIECE_BYTES])
        return decoder.close()
    except NotItemwise:
        return loads_whole(data)
    finally:
        view.release()


def _last_item(data: Any, pos: int, loads_item: Loads) -> tuple[int, Any]:
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
