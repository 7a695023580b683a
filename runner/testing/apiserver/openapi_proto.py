"""``/openapi/v2`` in its protobuf form (``application/com.github.proto-openapi.spec.v2@v1.0
+protobuf``), the form kubectl 1.20 asks for (``discovery.OpenAPISchema``, for ``kubectl
explain`` and client-side validation; it has no JSON fallback).

The message is gnostic's ``openapi.v2.Document`` (``openapiv2/OpenAPIv2.proto``: the field
numbers below are that file's), in the protocol buffers wire format (varints,
length-delimited fields). Encoded: ``swagger``, ``info`` (title, version) and
``definitions``, each Schema's ``$ref``, format, title, description, required, type, items,
allOf, properties, additionalProperties and its ``x-`` vendor extensions (as gnostic writes
them: an ``Any`` whose ``yaml`` is the value; JSON is YAML). Not encoded: ``paths`` (the
embedded document has none) and a Schema's other keywords (defaults, enums, bounds), which
kubectl's ``proto.NewOpenAPIData`` does not read. Answered as ``application/octet-stream``, as
kube-openapi's handler does (client-go cannot parse the request's media type as a MIME type).
"""

from __future__ import annotations

import json
from typing import Any

MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

# Schema's string fields by JSON keyword (openapi.v2.Schema)
_SCHEMA_STRINGS = {"$ref": 1, "format": 2, "title": 3, "description": 4}
_SCHEMA_REQUIRED, _SCHEMA_ADDITIONAL, _SCHEMA_TYPE, _SCHEMA_ITEMS = 19, 21, 22, 23
_SCHEMA_ALL_OF, _SCHEMA_PROPERTIES, _SCHEMA_EXTENSION = 24, 25, 31


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2): a string, bytes or an embedded message."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _text(number: int, value: str) -> bytes:
    return _field(number, value.encode())


def _named(name: str, value: bytes) -> bytes:
    """A gnostic Named* entry: {name 1, value 2}."""
    return _text(1, name) + _field(2, value)


def schema_message(node: dict[str, Any]) -> bytes:
    """One OpenAPI v2 Schema object as an ``openapi.v2.Schema`` message."""
    out = bytearray()
    for keyword, number in _SCHEMA_STRINGS.items():
        if isinstance(node.get(keyword), str):
            out += _text(number, node[keyword])
    out += b"".join(_text(_SCHEMA_REQUIRED, str(r)) for r in node.get("required") or ())
    additional = node.get("additionalProperties")
    if isinstance(additional, dict):
        out += _field(_SCHEMA_ADDITIONAL, _field(1, schema_message(additional)))
    elif isinstance(additional, bool):
        out += _field(_SCHEMA_ADDITIONAL, _varint(2 << 3) + _varint(int(additional)))
    kinds = node.get("type")
    for kind in [kinds] if isinstance(kinds, str) else kinds or ():
        out += _field(_SCHEMA_TYPE, _text(1, str(kind)))
    items = node.get("items")
    for item in [items] if isinstance(items, dict) else items or ():
        out += _field(_SCHEMA_ITEMS, _field(1, schema_message(item)))
    out += b"".join(_field(_SCHEMA_ALL_OF, schema_message(s)) for s in node.get("allOf") or ())
    properties = node.get("properties") or {}
    if properties:
        out += _field(_SCHEMA_PROPERTIES, b"".join(
            _field(1, _named(name, schema_message(sub))) for name, sub in properties.items()))
    for key, value in node.items():
        if key.startswith("x-"):
            any_yaml = _text(2, json.dumps(value))      # openapi.v2.Any {yaml 2}
            out += _field(_SCHEMA_EXTENSION, _named(key, any_yaml))
    return bytes(out)


def document_message(doc: dict[str, Any]) -> bytes:
    """The ``/openapi/v2`` document ``doc`` as an ``openapi.v2.Document`` message
    (swagger 1, info 2 {title 1, version 2}, definitions 9 {repeated NamedSchema 1})."""
    info = doc.get("info") or {}
    out = _text(1, str(doc.get("swagger") or "2.0"))
    out += _field(2, _text(1, str(info.get("title") or "")) + _text(2, str(info.get("version")
                                                                         or "")))
    definitions = doc.get("definitions") or {}
    out += _field(9, b"".join(_field(1, _named(name, schema_message(node)))
                              for name, node in definitions.items()))
    return out
