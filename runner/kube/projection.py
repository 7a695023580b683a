"""Projection: decode only the fields a config reads, straight from the raw JSON.

A ``Projection`` names the paths an informer's readers need (``kinrun.kept_paths`` works them
out from every template, hook ``reads:``, index and selector of a config). Its loaders turn
the bytes of a watch event, a LIST item or a LIST page into plain dicts holding those paths
only: every other field is skipped by the parser (``msgspec`` decoding into ``TypedDict``
types built once from the paths), never built as a Python object and never freed. The
result is the same ``dict``/``list``/``str`` tree ``orjson.loads`` gives, minus what was not
asked for, so listers, templates and hooks read it as before.

Always kept: ``apiVersion``, ``kind`` and the ``metadata`` fields kinrun itself reads
(``METADATA_KEPT``: name, namespace, uid, resourceVersion, generation, labels,
ownerReferences, finalizers, deletionTimestamp and its grace period: what keys, the
DeltaFIFO, selectors, owner mapping, sharding, finalizers and Events read). Other metadata
fields (``annotations``, ``creationTimestamp``, ...) are kept when a path names them
(``metadata.annotations``; a path below one keeps it whole), all of them (but
``managedFields``) when a path is ``metadata`` itself. A path keeps the whole value at its
end; ``[]`` in a path stands for every item of a list (``spec.containers.[].image``; a map
found where a ``[]`` step goes is kept whole, since iterating it gives its keys). Where a
path expects a map and the object holds a scalar or a list instead, that value is kept as it
is, so a projection never fails to decode what ``orjson.loads`` decodes, and a value a path
ends on is identical to the whole decode's (one exception: an integer beyond 64 bits stays
an ``int``, where orjson gives a ``float``).

An ERROR watch event (a ``Status``) is decoded whole again, so its message survives.

Strings repeated from object to object (``apiVersion``, ``kind``, the namespace, label values,
owners' apiVersion and kind) are shared: each decoded object points at one copy of each
(:meth:`Projection.share`, a table of at most ``SHARED_STRINGS`` strings per projection), so
a cached Pod's metadata costs about 1.4 KB instead of 1.8 (``benchmarks/replay.py --bytes``)
for about 1 us per object.

A hook with ``reads:`` is given its projected objects as :class:`ProjectedObject` (a dict);
kinrun's client refuses to write one whole (:func:`refuse_whole_write`): a PUT, create or
apply of it would drop every field not decoded. Templates never write an object whole
without reading it whole (``obj | to_json`` is a whole read: no projection).

Immutable; the loaders are thread-safe. Equal paths give equal (and equally hashed)
projections, so an ``InformerKey`` holding one shares the informer.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from typing import Any, Union

import msgspec
import orjson

from kinrun.errors import PermanentError

Path = tuple[str, ...]

ITEMS = "[]"
"""The path step that stands for every item of a list."""
_INNER = None
"""The key that marks an inner node of a path tree (no field is named None)."""

OBJECT_META_FIELDS = (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "clusterName")
"""ObjectMeta's fields in kube-apiserver 1.20 but ``managedFields`` (``kinrun.openapi``'s
``io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta``): what a projection keeps of a
``metadata`` read whole (the API server sends no other ``metadata`` field: it drops unknown
ones, custom resources' too)."""

METADATA_KEPT = (
    "name", "namespace", "uid", "resourceVersion", "generation", "labels", "ownerReferences",
    "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds")
"""The ``metadata`` fields every projection keeps (module docstring)."""

_ALWAYS: tuple[Path, ...] = (("apiVersion",), ("kind",))


SHARED_STRINGS = 16384
"""The most strings one projection's table shares (then it only looks up): hostile label values
never grow it without bound (about 1 MB at most)."""


class Projection:
    """The fields of each object to decode: ``paths`` (tuples of map keys, ``ITEMS`` for list
    items; a path keeps the whole value it ends on, a shorter path covers a longer one) on top
    of ``apiVersion``, ``kind`` and ``metadata`` (without ``managedFields`` unless
    ``keep_managed_fields``). ``paths`` is the normalised set (covered paths dropped); ``id`` a
    stable string naming it. Raises ValueError for an empty path."""

    __slots__ = ("paths", "keep_managed_fields", "id", "_object", "_event", "_page", "_strings")

    def __init__(self, paths: Iterable[Path], *, keep_managed_fields: bool = False) -> None:
        tree = _tree([*_ALWAYS, *paths])
        self.paths = frozenset(_leaves(tree))
        self.keep_managed_fields = keep_managed_fields
        self._strings: dict[str, str] = {}
        self.id = "projection:" + orjson.dumps(sorted(self.paths)).decode() + (
            ";managedFields" if keep_managed_fields else "")
        obj = _object_type(tree, keep_managed_fields)
        self._object = msgspec.json.Decoder(obj)
        self._event = msgspec.json.Decoder(
            typing.TypedDict("WatchEvent", {"type": Any, "object": obj}, total=False))
        self._page = msgspec.json.Decoder(typing.TypedDict(
            "ObjectList", {"apiVersion": Any, "kind": Any, "metadata": Any,
                           "items": Union[list[obj], None]}, total=False))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Projection) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Projection({sorted(shown(p) for p in self.paths)})"

    def loads_object(self, data: bytes) -> Any:
        """One object (a LIST item) projected. Raises orjson.JSONDecodeError (a ValueError) for
        bytes that are not one JSON object."""
        return self.share(_decode(self._object, data))

    def loads_event(self, data: bytes) -> Any:
        """One watch event line: ``{"type": ..., "object": projected}``; an ERROR event's
        ``Status`` whole. Raises orjson.JSONDecodeError as :meth:`loads_object`."""
        event = _decode(self._event, data)
        if event.get("type") == "ERROR":
            return orjson.loads(data)
        self.share(event.get("object"))
        return event

    def loads_page(self, data: bytes) -> Any:
        """A whole LIST page: ``{"apiVersion", "kind", "metadata", "items": [projected]}``.
        Raises orjson.JSONDecodeError as :meth:`loads_object`."""
        page = _decode(self._page, data)
        for item in page.get("items") or ():
            self.share(item)
        return page

    def project(self, obj: Mapping[str, Any]) -> Any:
        """``obj`` (a decoded object) as :meth:`loads_object` would have decoded its JSON: a
        new tree sharing nothing with ``obj`` (tests, fake lister-watchers, ``render``);
        ``obj`` itself where orjson cannot encode it (an integer beyond 64 bits, nesting
        deeper than 254 levels: such an object never came from a decode)."""
        try:
            data = orjson.dumps(obj)
        except TypeError:
            return obj
        return self.share(_decode(self._object, data))

    def share(self, obj: Any) -> Any:
        """``obj`` (a freshly decoded object, changed in place) with its repeated strings
        replaced by the table's copy of each (module docstring); equal values, fewer bytes."""
        if obj.__class__ is not dict:
            return obj
        strings = self._strings
        one = strings.setdefault if len(strings) < SHARED_STRINGS else strings.get
        for key in ("apiVersion", "kind"):
            value = obj.get(key)
            if value.__class__ is str:
                obj[key] = one(value, value)
        meta = obj.get("metadata")
        if meta.__class__ is not dict:
            return obj
        value = meta.get("namespace")
        if value.__class__ is str:
            meta["namespace"] = one(value, value)
        labels = meta.get("labels")
        if labels.__class__ is dict:
            for key, value in labels.items():
                if value.__class__ is str:
                    labels[key] = one(value, value)
        for owner in meta.get("ownerReferences") or ():
            if owner.__class__ is dict:
                for key in ("apiVersion", "kind"):
                    value = owner.get(key)
                    if value.__class__ is str:
                        owner[key] = one(value, value)
        return obj


def shown(path: Path) -> str:
    """A path as templates write it: ``spec.containers[].image``; a step that holds a dot or
    a bracket as a subscript (``metadata.annotations['a.b/c']``)."""
    out = ""
    for step in path:
        if step == ITEMS:
            out += "[]"
        elif "." in step or "[" in step or "]" in step or not step:
            out += f"[{step!r}]"
        else:
            out += ("." if out else "") + step
    return out


class ProjectedObject(dict):  # type: ignore[type-arg]
    """A projected object as a hook is given it (a private copy): a plain ``dict`` in every
    way but one, kinrun's client refuses to write it whole (:func:`refuse_whole_write`)."""

    __slots__ = ()


def refuse_whole_write(body: Any, verb: str) -> None:
    """Raise PermanentError when ``body`` is a :class:`ProjectedObject`: writing it whole
    (``verb``: update, create, apply) would drop every field the projection did not decode."""
    if isinstance(body, ProjectedObject):
        meta = body.get("metadata") or {}
        raise PermanentError(
            f"{verb} of {body.get('kind')} {meta.get('namespace', '')}/{meta.get('name')}: the "
            "object is projected (only the fields of the controller's reads: were decoded), "
            "so writing it whole would drop every other field; patch the fields you change, "
            "or set projection: off on its informer")


def _decode(decoder: msgspec.json.Decoder, data: bytes) -> Any:
    """``decoder``'s answer; bytes nested deeper than it recurses decoded whole by orjson
    (more fields than asked for, never fewer: the informer still caches the object)."""
    try:
        return decoder.decode(data)
    except msgspec.DecodeError as exc:  # ValidationError too: not an object where one goes
        raise orjson.JSONDecodeError(str(exc), data[:200].decode("utf-8", "replace"),
                                     0) from None
    except RecursionError:
        return orjson.loads(data)


def _tree(paths: Iterable[Path]) -> dict[Any, Any]:
    """Nested dicts of the path steps; ``{}`` marks a kept (whole) value, ``_INNER`` a node
    with kept steps below it."""
    tree: dict[Any, Any] = {}
    for path in sorted(set(map(tuple, paths)), key=len):
        if not path:
            raise ValueError("a projection path cannot be empty (that is the whole object)")
        if len(path) > 1 and path[0] == "metadata":
            if path[1] in METADATA_KEPT:
                continue  # always kept whole
            # a metadata field is kept whole (a map of strings at most); metadata iterated
            # (``obj.metadata | map(...)`` gives its keys): all of it
            path = ("metadata",) if path[1] == ITEMS else path[:2]
        node = tree
        for step in path[:-1]:
            child = node.setdefault(step, {_INNER: True})  # an inner node, not yet a leaf
            if _INNER not in child:
                break  # a shorter path keeps this whole already
            node = child
        else:
            if path[-1] not in node or _INNER in node[path[-1]]:
                node[path[-1]] = {}
    return tree


def _leaves(tree: Mapping[str, Any], prefix: Path = ()) -> Iterable[Path]:
    for step, child in tree.items():
        if step is _INNER:
            continue
        if _INNER in child:
            yield from _leaves(child, (*prefix, step))
        else:
            yield (*prefix, step)


def _object_type(tree: Mapping[Any, Any], keep_managed_fields: bool) -> Any:
    """The TypedDict of a whole object: the tree's top-level fields, and ``metadata``."""
    fields = {step: _value_type(child, step) for step, child in tree.items()
              if step is not _INNER}
    meta = tree.get("metadata")
    if keep_managed_fields:
        fields["metadata"] = Any
    elif meta is not None and _INNER not in meta:  # read whole: ObjectMeta but managedFields
        fields["metadata"] = typing.TypedDict(
            "ObjectMeta", dict.fromkeys(OBJECT_META_FIELDS, Any), total=False)
    else:  # what kinrun reads, and the fields read
        names = (*METADATA_KEPT, *(step for step in (meta or {})
                                   if step is not _INNER and step not in METADATA_KEPT))
        fields["metadata"] = typing.TypedDict("ObjectMeta", dict.fromkeys(names, Any),
                                              total=False)
    return typing.TypedDict("Object", fields, total=False)


def _value_type(node: Mapping[Any, Any], name: str) -> Any:
    """Any for a kept value; else a map of the kept steps or, for a value of another JSON
    type, that value as it is (a list: its items as the ``[]`` step says). A map where a
    ``[]`` step goes is kept whole: iterating a map gives its keys (``x | map(attribute=...)``
    reads every key of a map ``x``), and a subscript by number finds nothing in one anyway."""
    if _INNER not in node:
        return Any
    if ITEMS in node:
        return Union[dict[str, Any], list[_value_type(node[ITEMS], ITEMS)],  # type: ignore[misc]
                     str, int, float, bool, None]
    fields = {step: _value_type(child, step) for step, child in node.items()
              if step is not _INNER}
    mapping = typing.TypedDict(f"Projected_{_safe(name)}", fields, total=False)
    return Union[mapping, list[Any], str, int, float, bool, None]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "items"

