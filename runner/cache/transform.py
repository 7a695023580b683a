"""Transforms applied to objects before they are cached (as client-go ``TransformFunc``,
``SharedIndexInformer.SetTransform``): stripping ``metadata.managedFields`` and pruning listed
fields.

A transform receives the object the reflector decoded (a plain dict the informer owns) and
returns the object to cache. These transforms never mutate their argument: they copy the
dicts along the paths they change (a shallow copy each) and share every other value, so a
caller holding the decoded object (a test, a fake lister) still sees it unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable

from kinrun.cache.listwatch import Obj

STRIP_MANAGED_FIELDS = "stripManagedFields"
"""The transform id (for ``InformerKey.transform``) of ``strip_managed_fields``."""

PROTECTED_PATHS = frozenset({
    ("apiVersion",), ("kind",), ("metadata",), ("metadata", "name"),
    ("metadata", "namespace"), ("metadata", "uid"), ("metadata", "resourceVersion")})
"""Paths ``FieldPruner`` refuses: what keys, the DeltaFIFO's resourceVersion comparison and
the reflector's kind check read."""

Path = tuple[str, ...]


def strip_managed_fields(obj: Obj) -> Obj:
    """``obj`` without ``metadata.managedFields``: a new top-level dict and metadata dict; every
    other value is shared (no deep copy). Returns ``obj`` itself when there is nothing to strip."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return obj
    new_meta = dict(meta)
    del new_meta["managedFields"]
    new = dict(obj)
    new["metadata"] = new_meta
    return new


def parse_path(text: str) -> Path:
    """``("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")`` from
    ``metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration``: dots separate
    map keys, a backslash takes the next character literally.

    Raises ValueError for an empty key (``a..b``, a leading or trailing dot), a trailing
    backslash, or a protected path (``PROTECTED_PATHS``)."""
    keys: list[str] = []
    current: list[str] = []
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ".":
            keys.append("".join(current))
            current = []
        else:
            current.append(char)
    if escaped:
        raise ValueError(f"{text!r} ends with a backslash")
    keys.append("".join(current))
    if any(not key for key in keys):
        raise ValueError(f"{text!r} has an empty key (two dots, or a dot at an end)")
    path = tuple(keys)
    if path in PROTECTED_PATHS:
        raise ValueError(f"{text!r} cannot be dropped: keys and resourceVersions are read from it")
    return path


class FieldPruner:
    """A transform dropping ``paths`` (tuples of map keys, see ``parse_path``) from each object,
    after stripping ``metadata.managedFields`` when ``strip_managed_fields``.

    A path that is absent, or runs into a value that is neither a dict nor a list, is ignored.
    Where a path meets a list, the rest of the path applies to each dict in it
    (``spec.containers.env`` drops every container's ``env``). Paths are grouped into a tree
    once, so each object is walked once however many paths share a prefix.

    ``id``: a stable string naming this transform (for ``InformerKey.transform``): two
    pruners with the same paths and flag have the same id. Immutable; thread-safe.
    """

    __slots__ = ("_tree", "_strip", "id")

    def __init__(self, paths: Iterable[Path], *, strip_managed_fields: bool = True) -> None:
        tree: dict[str, dict] = {}
        for path in paths:
            if not path or tuple(path) in PROTECTED_PATHS:
                raise ValueError(f"cannot drop {'.'.join(path) or 'the whole object'}")
            node = tree
            for key in path[:-1]:
                child = node.get(key)
                if child is None:
                    child = node[key] = {}
                elif not child:
                    break  # a shorter path drops the whole subtree already
                node = child
            else:
                node[path[-1]] = {}  # a leaf: dropped, whatever was below it
        self._tree = tree
        self._strip = strip_managed_fields
        spelled = sorted(_spell(path) for path in paths)
        self.id = ((STRIP_MANAGED_FIELDS + "+" if strip_managed_fields else "")
                   + "drop:" + ",".join(spelled))

    def __repr__(self) -> str:
        return f"FieldPruner({self.id!r})"

    def __call__(self, obj: Obj) -> Obj:
        """``obj`` without the listed fields (a copy along the changed paths; ``obj`` itself
        when nothing was there)."""
        if self._strip:
            obj = strip_managed_fields(obj)
        return _prune(obj, self._tree)


def _spell(path: Path) -> str:
    return ".".join(key.replace("\\", "\\\\").replace(".", "\\.") for key in path)


def _prune(value: object, tree: dict[str, dict]) -> object:
    """``value`` with ``tree``'s leaves dropped (a leaf is an empty dict in the tree)."""
    if isinstance(value, dict):
        new = None
        for key, sub in tree.items():
            if key not in value:
                continue
            if not sub:
                if new is None:
                    new = dict(value)
                del new[key]
                continue
            old_child = value[key]
            child = _prune(old_child, sub)
            if child is not old_child:
                if new is None:
                    new = dict(value)
                new[key] = child
        return value if new is None else new
    if isinstance(value, list):
        items = [_prune(item, tree) for item in value]
        if any(a is not b for a, b in zip(items, value)):
            return items
    return value
