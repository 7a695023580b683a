"""What a metadata-only informer's objects lack, and the templates that read it anyway.

A ``metadataOnly: true`` informer caches PartialObjectMetadata: ``apiVersion``, ``kind`` and
``metadata`` per object (``kinrun.kube.listwatch``). A template that reads ``obj.spec`` of such
an object would render ``spec`` as undefined at every reconcile, so ``validate`` refuses it
up front: :func:`non_metadata_reads` finds the fields a Jinja2 source reads directly from the
object variables (``obj.spec``, ``obj["status"]``, ``obj.get("data")``). Reads through an alias
(``{% set o = obj %}{{ o.spec }}``) or through lookups (``get``, ``list``) are not followed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import jinja2
from jinja2 import nodes

METADATA_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
"""The top-level fields a PartialObjectMetadata holds."""

_ENV = jinja2.Environment(extensions=["jinja2.ext.loopcontrols", "jinja2.ext.do"])


def non_metadata_reads(source: str, names: Iterable[str] = ("obj", "old"),
                       expression: bool = False) -> list[str]:
    """The top-level fields other than ``METADATA_FIELDS`` that ``source`` reads from the
    variables ``names`` (sorted, each once, spelled ``obj.spec``). ``expression``: ``source``
    is a bare expression (indexers, ``when``, vars) unless it holds ``{{``. A source that does
    not parse gives [] (its own compile reports the syntax error)."""
    text = source
    if "{{" not in source and "{%" not in source:
        if not expression:
            return []
        text = "{{ " + source + " }}"
    try:
        tree = _ENV.parse(text)
    except jinja2.TemplateSyntaxError:
        return []
    wanted = frozenset(names)
    found = set()
    for name, field in _reads(tree):
        if name in wanted and field not in METADATA_FIELDS:
            found.add(f"{name}.{field}")
    return sorted(found)


def _reads(tree: nodes.Node) -> Iterator[tuple[str, str]]:
    """(variable, field) for each ``v.f``, ``v["f"]`` and ``v.get("f")`` in ``tree``."""
    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Call)):
        if isinstance(node, nodes.Call):
            target = node.node
            if (isinstance(target, nodes.Getattr) and target.attr == "get"
                    and isinstance(target.node, nodes.Name) and node.args
                    and isinstance(node.args[0], nodes.Const)
                    and isinstance(node.args[0].value, str)):
                yield target.node.name, node.args[0].value
            continue
        if not isinstance(node.node, nodes.Name):
            continue
        if isinstance(node, nodes.Getattr):
            if node.attr not in ("get", "items", "keys", "values"):
                yield node.node.name, node.attr
        elif isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            yield node.node.name, node.arg.value


def strings_in(value: object) -> Iterator[str]:
    """Every string in a nested structure of mappings, lists and tuples (keys included)."""
    if isinstance(value, str):
        yield value
    elif hasattr(value, "items"):
        for key, item in value.items():  # type: ignore[union-attr]
            yield from strings_in(key)
            yield from strings_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_in(item)
