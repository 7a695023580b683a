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

kube-apiserver's answer to a server-side apply whose body SMD cannot type is a 500, every
time (:func:`typed_errors`): the embedded API server gives it, and ``kinrun validate`` refuses
such a manifest before it is ever sent (``kinrun.actions.manifest_keys``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from ._schema import Schema, builtin_schemas

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Item:
    """A list item in a field path: ``tag`` "k" (by key fields) or "v" (by value), ``value``
    (the key fields as a dict, or the item), ``text`` (its fieldsV1 JSON). Hashable; equal by
    tag and text."""

    __slots__ = ("tag", "value", "text")

    def __init__(self, tag: str, value: Any) -> None:
        self.tag, self.value = tag, value
        self.text = go_json(value)

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


_GO_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                             "\u2028": "\\u2028", "\u2029": "\\u2029"})


def go_json(value: Any) -> str:
    """``value`` as Go's ``json.Marshal`` writes it in fieldsV1 (keys sorted, compact, the
    HTML characters ``<``, ``>``, ``&`` and U+2028/2029 escaped as ``\\u003c``...)."""
    return _go_string(value).translate(_GO_ESCAPES)


def _go_string(value: Any) -> str:
    """``value`` as compact JSON, keys sorted, unescaped (a path element's label, an order)."""
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


def typed_errors(schema: Schema | None, obj: Any, path: str = "", root: bool = True,
                 opaque: Callable[[Any], bool] | None = None) -> list[str]:
    """Why structured-merge-diff v4 (1.20) cannot read ``obj`` as a typed object, one message
    per problem as its validating walker words them (``typed/validate.go``, ``helpers.go``), map
    keys in sorted order, depth first; [] when it can. Per associative list: an entry with no
    key (``.spec.imagePullSecrets: element 0: associative list with keys has an element that
    omits key field "name" (and doesn't have default value)``), a null entry, an object or
    list in a set - each ends the walk of that list, as SMD bails out -, and two entries of
    one key (``...: duplicate entries for key [name="c"]``). kube-apiserver 1.20 answers an
    apply whose body has any with 500 ``failed to create typed patch object``. ``opaque``: a
    list entry it says True of is skipped (neither checked nor keyed; ``kinrun validate``'s
    entries that a template may still add keys to)."""
    if isinstance(obj, dict) and not atomic_map(schema):
        errors: list[str] = []
        for key in sorted(obj):
            errors += typed_errors(child(schema, key, root), obj[key], f"{path}.{key}", False,
                                   opaque)
        return errors
    keys = list_keys(schema)
    if keys is None or not isinstance(obj, list):
        return []
    return _list_errors(schema, keys, obj, path, opaque)


def _list_errors(schema: Schema | None, keys: tuple[str, ...], entries: list[Any],
                 path: str, opaque: Callable[[Any], bool] | None) -> list[str]:
    """:func:`typed_errors` of one associative list (SMD's ``visitListItems``)."""
    errors: list[str] = []
    seen: set[Item] = set()
    for index, entry in enumerate(entries):
        if opaque is not None and opaque(entry):
            continue
        problem = _entry_problem(schema, keys, entry)
        if problem is not None:
            return [*errors, f"{path}: element {index}: {problem}"]
        item = _element(schema, keys, entry)
        assert item is not None  # _entry_problem said it has one
        if item in seen:
            errors.append(f"{path}: duplicate entries for key {item.label()}")
        seen.add(item)
        errors += typed_errors(item_schema(schema), entry, f"{path}{item.label()}", False, opaque)
    return errors


def _entry_problem(schema: Schema | None, keys: tuple[str, ...], entry: Any) -> str | None:
    """Why an entry of an associative list has no path element (SMD's
    ``keyedAssociativeListItemToPathElement`` / ``setItemToPathElement``), or None."""
    if not keys:
        if isinstance(entry, dict):
            return "associative list without keys has an element that's a map type"
        if isinstance(entry, list):
            return "not supported: associative list with lists as elements"
        return "associative list without keys has an element that's an explicit null" \
            if entry is None else None
    if entry is None:
        return "associative list with keys may not have a null element"
    if not isinstance(entry, dict):
        return "associative list with keys may not have non-map elements"
    items = item_schema(schema)
    for key in keys:
        sub = items.child(key) if items is not None else None
        if entry.get(key) is None and (sub is None or sub.default is None):
            return (f'associative list with keys has an element that omits key field "{key}" '
                    "(and doesn't have default value)")
    return None
