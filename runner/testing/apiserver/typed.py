"""How server-side apply sees the shape of an object, as structured-merge-diff v4 does.

kube-apiserver 1.20 builds its SMD schema from the OpenAPI (kube-openapi ``schemaconv``):

- a list with ``x-kubernetes-list-type: map`` is associative, its items keyed by
  ``x-kubernetes-list-map-keys``; ``set``: associative by the item's value; ``atomic``: a leaf;
- a list without a list type but with ``x-kubernetes-patch-strategy`` ``merge`` (built-in
  kinds: containers, env, volumes...) is associative, keyed by ``x-kubernetes-patch-merge-key``
  (by value without one, e.g. ``metadata.finalizers``);
- any other list (a CRD list without ``x-kubernetes-list-type``, a list outside the schema) is
  atomic; an object with ``x-kubernetes-map-type: atomic`` (a ``LabelSelector``) is a leaf.

The ``metadata`` of every object is typed by the built-in ``ObjectMeta`` (custom resources
too). A list item is named in a field path by an ``Item``: ``k:{"name":"c"}`` (its key
fields, sorted, as compact JSON; a missing key takes its schema ``default``) or ``v:"x"``.
When an item of an associative list has no key (not an object, a key missing without a
default) the whole list is treated as atomic here (SMD refuses such an object). Pure
functions; schemas are ``kinrun.openapi.Schema`` or None (nothing known: granular maps,
atomic lists).
"""

from __future__ import annotations

import functools
import json
from typing import Any

from kinrun.openapi import Schema, builtin_schemas

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Item:
    """A list item in a field path: ``tag`` "k" (by key fields) or "v" (by value), ``value``
    (the key fields as a dict, or the item), ``text`` (its fieldsV1 JSON). Hashable; equal by
    tag and text."""

    __slots__ = ("tag", "value", "text")

    def __init__(self, tag: str, value: Any) -> None:
        self.tag, self.value = tag, value
        self.text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Item) and (self.tag, self.text) == (other.tag, other.text)

    def __hash__(self) -> int:
        return hash((self.tag, self.text))

    def __repr__(self) -> str:
        return f"{self.tag}:{self.text}"

    def fields_key(self) -> str:
        """The member name in fieldsV1: ``k:{"name":"c"}`` or ``v:"x"``."""
        return f"{self.tag}:{self.text}"

    def label(self) -> str:
        """As fieldpath.PathElement.String: ``[name="c"]``, ``[port=80,protocol="TCP"]``,
        ``[="x"]``."""
        if self.tag == "v":
            return f"[={_go_string(self.value)}]"
        return "[" + ",".join(f"{k}={_go_string(self.value[k])}"
                              for k in sorted(self.value)) + "]"

    def order(self) -> tuple[Any, ...]:
        """Sort key among items of one list (SMD's PathElement order: keys before values)."""
        if self.tag == "v":
            return (2, _value_order(self.value))
        return (1, tuple((k, _value_order(self.value[k])) for k in sorted(self.value)))


def _go_string(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _value_order(value: Any) -> tuple[Any, ...]:
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, (int, float)):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, _go_string(value))


def part_order(part: str | Item) -> tuple[Any, ...]:
    """Sort key of a path element: field names (sorted) before key items before value items."""
    return (0, part) if isinstance(part, str) else part.order()


def parse_member(name: str) -> str | Item | None:
    """The path element of a fieldsV1 member name (``f:x``, ``k:{...}``, ``v:...``); None for
    ``.`` or anything unreadable."""
    if name.startswith("f:"):
        return name[2:]
    if name[:2] in ("k:", "v:"):
        try:
            value = json.loads(name[2:])
        except ValueError:
            return None
        if name[0] == "k" and not isinstance(value, dict):
            return None
        return Item(name[0], value)
    return None


@functools.lru_cache(maxsize=1)
def object_meta() -> Schema:
    """The built-in ``ObjectMeta`` schema (every object's ``metadata``)."""
    definitions = builtin_schemas().definitions
    return Schema(definitions, definitions[OBJECT_META], OBJECT_META)


def child(schema: Schema | None, key: str, root: bool = False) -> Schema | None:
    """The schema of field ``key`` of an object typed ``schema`` (``root``: the object itself,
    whose ``metadata`` is ObjectMeta)."""
    if root and key == "metadata":
        return object_meta()
    if schema is None:
        return None
    return schema.child(key) or schema.additional


def item_schema(schema: Schema | None) -> Schema | None:
    """The schema of the items of a list typed ``schema`` (None when unknown)."""
    return schema.items if schema is not None else None


def atomic_map(schema: Schema | None) -> bool:
    """Whether an object typed ``schema`` is one leaf (``x-kubernetes-map-type: atomic``)."""
    return schema is not None and schema.node.get("x-kubernetes-map-type") == "atomic"


def list_keys(schema: Schema | None) -> tuple[str, ...] | None:
    """How a list typed ``schema`` is merged: None atomic, ``()`` a set (items by value),
    else its key fields (see module docstring)."""
    if schema is None or schema.items is None:
        return None
    kind = schema.list_type
    if kind == "map":
        return schema.list_map_keys or None
    if kind == "set":
        return ()
    if kind:
        return None
    strategy = str(schema.node.get("x-kubernetes-patch-strategy") or "")
    if "merge" not in strategy.split(","):
        return None
    key = schema.node.get("x-kubernetes-patch-merge-key")
    return (key,) if isinstance(key, str) else ()


def elements(schema: Schema | None, value: Any) -> list[Item] | None:
    """The Item of each entry of list ``value`` typed ``schema``, in order; None when the list
    is atomic (or an entry has no key, or two share one)."""
    keys = list_keys(schema)
    if keys is None or not isinstance(value, list):
        return None
    out = []
    for entry in value:
        item = _element(schema, keys, entry)
        if item is None:
            return None
        out.append(item)
    return out if len(set(out)) == len(out) else None


def _element(schema: Schema | None, keys: tuple[str, ...], entry: Any) -> Item | None:
    """The Item of one list entry (None: it has no key)."""
    if not keys:
        return Item("v", entry) if entry is not None else None
    if not isinstance(entry, dict):
        return None
    items = item_schema(schema)
    found = {}
    for key in keys:
        value = entry.get(key)
        if value is None:
            sub = items.child(key) if items is not None else None
            value = sub.default if sub is not None else None
        if value is None:
            return None
        found[key] = value
    return Item("k", found)


def duplicate_item(schema: Schema | None, obj: Any, path: str = "",
                   root: bool = True) -> str | None:
    """The first associative list of ``obj`` (keys in sorted order, depth first) with two items
    of one key, as SMD's validation of an applied object names it
    (``.spec.template.spec.containers: duplicate entries for key [name="c"]``), or None.
    kube-apiserver 1.20 answers such an apply with 500 ``failed to create typed patch object``."""
    if isinstance(obj, dict) and not atomic_map(schema):
        for key in sorted(obj):
            found = duplicate_item(child(schema, key, root), obj[key], f"{path}.{key}", False)
            if found is not None:
                return found
        return None
    keys = list_keys(schema)
    if keys is None or not isinstance(obj, list):
        return None
    seen: set[Item] = set()
    for index, entry in enumerate(obj):
        item = _element(schema, keys, entry)
        if item is None:
            continue
        if item in seen:
            return f"{path}: duplicate entries for key {item.label()}"
        seen.add(item)
        found = duplicate_item(item_schema(schema), entry, f"{path}{item.label()}", False)
        if found is not None:
            return found
    return None
