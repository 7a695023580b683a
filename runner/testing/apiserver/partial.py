"""Metadata-only answers: PartialObjectMetadata, as kube-apiserver serves them (1.15+).

A client asks with an Accept header naming ``as=PartialObjectMetadata`` (GET, WATCH) or
``as=PartialObjectMetadataList`` (LIST), ``g=meta.k8s.io``, ``v=v1`` (or ``v1beta1``), e.g.
client-go's metadata client::

    application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json

What kube-apiserver 1.20 does, checked against it (``tests/envtest``): the first media type of
the header decides; an object is answered as ``{"kind":"PartialObjectMetadata","apiVersion":
"meta.k8s.io/v1","metadata":{...}}`` (managedFields included), a list as
``PartialObjectMetadataList`` whose items are such objects; asking for the list form on a GET
or the object form on a LIST answers 406 NotAcceptable ("you requested
PartialObjectMetadataList, but the requested object is not a list (...)"); on a WATCH every
event's object is converted, bookmarks included (``metadata`` holding the resourceVersion and a
null creationTimestamp), ERROR Status objects are not. An ``as=`` of another group or kind
(``Table``) is not served here: the next media type of the header is used. The answer's
Content-Type stays ``application/json``.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

from .status import StatusError

PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
API_VERSION = "meta.k8s.io/v1"
_VERSIONS = ("v1", "v1beta1")

Form = Literal["", "object", "list"]
"""What an Accept header asks for: "" whole objects, "object" PartialObjectMetadata, "list"
PartialObjectMetadataList."""


def requested_form(accept: str) -> Form:
    """The metadata form the first usable media type of ``accept`` asks for ("" for none)."""
    for media in accept.split(","):
        parts = [p.strip() for p in media.split(";")]
        if parts[0] not in ("application/json", "*/*", "application/*"):
            continue
        params = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        wanted = params.get("as")
        if wanted is None:
            return ""
        if params.get("g") == "meta.k8s.io" and params.get("v") in _VERSIONS:
            if wanted == PARTIAL:
                return "object"
            if wanted == PARTIAL_LIST:
                return "list"
        # another transformation (Table, ...): not served, try the next media type
    return ""


def not_acceptable(form: Form, go_type: str) -> StatusError:
    """406 NotAcceptable for ``form`` asked of the wrong shape: the list form of an object or
    the object form of a list (``go_type``: the Go type the message names, e.g.
    ``*core.PodList``)."""
    if form == "list":
        message = (f"you requested {PARTIAL_LIST}, but the requested object is not a list "
                   f"({go_type})")
    else:
        message = f"you requested {PARTIAL}, but the requested object is a list ({go_type})"
    return StatusError(406, "NotAcceptable", message)


def partial(obj: dict[str, Any]) -> dict[str, Any]:
    """The PartialObjectMetadata of ``obj`` (its metadata dict is shared)."""
    return {"kind": PARTIAL, "apiVersion": API_VERSION, "metadata": obj.get("metadata") or {}}


def partial_raw(raw: bytes) -> bytes:
    """``partial`` of a serialised object, serialised."""
    return orjson.dumps(partial(orjson.loads(raw)))


def list_head(meta: dict[str, Any]) -> bytes:
    """The start of a PartialObjectMetadataList body, up to (excluding) its closing brace."""
    return orjson.dumps({"kind": PARTIAL_LIST, "apiVersion": API_VERSION, "metadata": meta})[:-1]


def event_line(line: bytes) -> bytes:
    """A watch event line with its object converted (ERROR events unchanged)."""
    event = orjson.loads(line)
    obj = event.get("object")
    if event.get("type") == "ERROR" or not isinstance(obj, dict):
        return line if line.endswith(b"\n") else line + b"\n"
    if event.get("type") == "BOOKMARK":
        meta = dict(obj.get("metadata") or {})
        meta.setdefault("creationTimestamp", None)
        event["object"] = partial({"metadata": meta})
    else:
        event["object"] = partial(obj)
    return orjson.dumps(event) + b"\n"
