"""Protobuf request bodies (``application/vnd.kubernetes.protobuf``) for the kinds kubectl's
typed clients send them for: ``kubectl create namespace|configmap|secret`` and ``kubectl auth
can-i`` (SelfSubjectAccessReview, SelfSubjectRulesReview).

The format, as documented in apimachinery (``runtime/serializer/protobuf``): the 4 bytes
``k8s\\x00``, then a ``runtime.Unknown`` message (``typeMeta`` 1 {apiVersion 1, kind 2}, ``raw``
2, ``contentEncoding`` 3, ``contentType`` 4) whose ``raw`` is the object's message in the
protocol buffers wire format (varints, length-delimited fields; a map is a repeated
{key 1, value 2} entry). The field numbers below are those of k8s.io/api's ``generated.proto``
files (facts of the API, like field names); only the fields these kinds' requests use are
listed, others are skipped. Answers stay JSON (clients decode by the answer's Content-Type).
A body of another kind, or one that does not parse, is 415 / 400 as before.
"""

from __future__ import annotations

import base64
from typing import Any

from . import status as st

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"

# message -> field number -> (json name, type); "*" marks a repeated field
SCHEMAS: dict[str, dict[int, tuple[str, str]]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {1: ("name", "string"), 2: ("generateName", "string"),
                   3: ("namespace", "string"), 11: ("labels", "map:string"),
                   12: ("annotations", "map:string"), 14: ("finalizers", "*string")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "*string")},
    "ConfigMap": {1: ("metadata", "ObjectMeta"), 2: ("data", "map:string"),
                  3: ("binaryData", "map:bytes"), 4: ("immutable", "bool")},
    "Secret": {1: ("metadata", "ObjectMeta"), 2: ("data", "map:bytes"), 3: ("type", "string"),
               4: ("stringData", "map:string"), 5: ("immutable", "bool")},
    "SelfSubjectAccessReview": {1: ("metadata", "ObjectMeta"),
                                2: ("spec", "SelfSubjectAccessReviewSpec")},
    "SelfSubjectAccessReviewSpec": {1: ("resourceAttributes", "ResourceAttributes"),
                                    2: ("nonResourceAttributes", "NonResourceAttributes")},
    "ResourceAttributes": {1: ("namespace", "string"), 2: ("verb", "string"),
                           3: ("group", "string"), 4: ("version", "string"),
                           5: ("resource", "string"), 6: ("subresource", "string"),
                           7: ("name", "string")},
    "NonResourceAttributes": {1: ("path", "string"), 2: ("verb", "string")},
    "SelfSubjectRulesReview": {1: ("metadata", "ObjectMeta"),
                               2: ("spec", "SelfSubjectRulesReviewSpec")},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "string")},
}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of one message: varints as ints, length-delimited
    fields as bytes; fixed 32/64-bit fields are skipped. ValueError on malformed data."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            out.append((number, data[pos:pos + size]))
            pos += size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return out


def _scalar(kind: str, value: int | bytes) -> Any:
    if kind == "bool":
        return bool(value)
    if kind == "bytes":
        return base64.b64encode(value).decode() if isinstance(value, bytes) else ""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    """Message ``name`` (a key of SCHEMAS) as its JSON form; bytes fields as base64."""
    schema = SCHEMAS[name]
    out: dict[str, Any] = {}
    for number, value in fields(data):
        if number not in schema:
            continue
        key, kind = schema[number]
        if kind.startswith("map:") and isinstance(value, bytes):
            entry = dict(fields(value))
            out.setdefault(key, {})[_scalar("string", entry.get(1, b""))] = _scalar(
                kind[4:], entry.get(2, b""))
        elif kind.startswith("*"):
            out.setdefault(key, []).append(_scalar(kind[1:], value))
        elif kind in SCHEMAS and isinstance(value, bytes):
            out[key] = decode_message(kind, value)
        else:
            out[key] = _scalar(kind, value)
    return out


def decode_body(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the object's JSON form (apiVersion and kind included).
    415 for kinds not listed in SCHEMAS; 400 when the body does not parse."""
    if not body.startswith(MAGIC):
        raise st.bad_request("the protobuf body does not start with the k8s magic bytes")
    try:
        unknown = decode_message("Unknown", body[len(MAGIC):])
        type_meta = unknown.get("typeMeta") or {}
        kind = str(type_meta.get("kind") or "")
        if kind not in SCHEMAS or kind in ("Unknown", "TypeMeta", "ObjectMeta"):
            raise st.unsupported_media_type(MEDIA_TYPE, ["application/json", "application/yaml"])
        obj = decode_message(kind, base64.b64decode(unknown.get("raw") or ""))
    except (ValueError, UnicodeDecodeError) as exc:
        raise st.bad_request(f"the object provided is unrecognized: {exc}") from None
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
