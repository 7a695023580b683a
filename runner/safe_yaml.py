"""YAML loading with bounded alias expansion and nesting depth: every YAML kinrun reads goes here.

PyYAML's safe loaders refuse arbitrary Python objects, but not two cheap denials of service:

- an *alias bomb* ("billion laughs"): ``a: &a [x, x]``, ``b: &b [*a, *a]``, ... is a few hundred
  bytes that PyYAML loads as shared references, and that every consumer walking it as a tree
  (the config's mark recorder, the JSON Schema validator, ``json.dumps``, a template) expands
  to billions of nodes;
- deep nesting (``[[[[...``): the composer and every consumer recurse once per level, so a
  short document ends in RecursionError, or in a C stack overflow (SIGSEGV) in C code.

Before a document is loaded, :func:`check` walks its parser events once (no tree is built, no
recursion) and refuses, with a :class:`YamlLimitError` at the offending position:

- more than :data:`MAX_DEPTH` nested collections, counting what an alias stands for;
- more than :data:`MAX_ALIAS_NODES` nodes reached through aliases in one stream (an alias of a
  collection counts every node of it, nested aliases included; a scalar counts one node per
  started KiB of its text, so a long string aliased many times counts too);
- a recursive alias (an alias of a collection inside that collection): JSON, and so Kubernetes,
  has no cycles.

A document without aliases is never refused for its size: its cost is linear in its length,
bounded by whoever reads it. The limits are written here once and documented in docs/limits.md.
kube-apiserver answers 400 to such documents too (go-yaml, which it decodes YAML with, refuses
"excessive aliasing" and very deep nesting, with its own thresholds).

:func:`load` and :func:`load_all` check, then load with the given loader class (default PyYAML's
C ``CSafeLoader`` when built, else ``SafeLoader``); loaders that build their own tree from nodes
(``kinrun.config.loader``) call :func:`check` first. Every error is a ``yaml.MarkedYAMLError``,
so callers that handle bad YAML handle these too. Thread-safe (no shared state).
"""

from __future__ import annotations

from typing import IO, Any

import yaml
from yaml.events import (AliasEvent, CollectionEndEvent, CollectionStartEvent, DocumentStartEvent,
                         ScalarEvent)

MAX_DEPTH = 256
"""Most nested collections (mappings and sequences) in one document, aliases expanded."""

MAX_ALIAS_NODES = 100_000
"""Most nodes reached through aliases in one YAML stream (all its documents together)."""

_SCALAR_UNIT = 1024
"""A scalar counts one node per started KiB of its text."""

SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""The default loader class: PyYAML's C safe loader when built, else the Python one."""


class ObjectLoader(SAFE_LOADER):  # type: ignore[misc,valid-type]
    """:data:`SAFE_LOADER` reading YAML as Kubernetes reads objects (sigs.k8s.io/yaml: YAML to
    JSON, then JSON): a timestamp stays the string written (``2024-05-01T10:00:00Z``, which a
    safe loader makes a datetime that serialises as ``...+00:00``), and a plain ``=`` is the
    string ``=``. For every Kubernetes object kinrun reads or renders (manifests, test files,
    seed files, the embedded server's bodies). Not thread-safe per instance (as every
    PyYAML loader; :func:`load` makes one per document)."""


ObjectLoader.add_constructor("tag:yaml.org,2002:timestamp",
                             yaml.constructor.SafeConstructor.construct_yaml_str)
ObjectLoader.add_constructor("tag:yaml.org,2002:value",
                             yaml.constructor.SafeConstructor.construct_yaml_str)

_MERGE = "tag:yaml.org,2002:merge"


class StrictObjectLoader(ObjectLoader):
    """:class:`ObjectLoader` refusing a key given twice in one mapping (a ConstructorError at the
    second, naming the first's line), as kubectl's decoding does (sigs.k8s.io/yaml strict:
    ``key "x" already set in map``); PyYAML keeps the last silently, which would apply half
    of what was written. For what kinrun itself reads as objects: rendered manifests and
    patches, test files' ``given: - file:``, ``--seed`` files, ``crds:`` files. Keys merged
    in by ``<<`` may be overridden (YAML's merge). The embedded server's request bodies keep
    :class:`ObjectLoader`: kube-apiserver 1.20 decodes them without the strict check."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[tuple[str, str], int] = {}
        for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE:
                continue
            key = (key_node.tag, key_node.value)
            if key in first:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key_node.value!r} (first at line {first[key]})",
                    key_node.start_mark)
            first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


Source = str | bytes | IO[str] | IO[bytes]


class YamlLimitError(yaml.MarkedYAMLError):
    """A YAML document beyond a limit of this module (``problem`` says which, ``problem_mark``
    where). ``str()``: PyYAML's form, the problem then the position."""


def check(text: str | bytes, loader: type = SAFE_LOADER) -> None:
    """Walk the parser events of ``text`` (every document) with ``loader``'s parser; raise
    YamlLimitError at the first node beyond a limit (see the module docstring). A syntax error
    ends the walk silently: the load that follows reports it where it is."""
    walk = _Walk()
    try:
        for event in yaml.parse(text, Loader=loader):
            walk.step(event)
    except YamlLimitError:
        raise
    except yaml.YAMLError:
        return


def load(source: Source, loader: type = SAFE_LOADER) -> Any:
    """One document, as ``yaml.load(source, Loader=loader)``, after :func:`check`. Raises
    yaml.YAMLError (YamlLimitError beyond a limit)."""
    text = _text(source)
    check(text, loader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - callers pass safe loaders only


def load_all(source: Source, loader: type = SAFE_LOADER) -> list[Any]:
    """Every document (None for an empty one), as ``yaml.load_all``, after :func:`check`.
    Raises yaml.YAMLError (YamlLimitError beyond a limit)."""
    text = _text(source)
    check(text, loader)
    return list(yaml.load_all(text, Loader=loader))  # noqa: S506 - safe loaders only


def _text(source: Source) -> str | bytes:
    return source.read() if hasattr(source, "read") else source  # type: ignore[union-attr,return-value]


class _Walk:
    """The expansion bookkeeping of :func:`check`, one parser event at a time.

    ``_open``: one ``[anchor, nodes, height]`` per collection started and not ended (the
    innermost last); ``_anchors``: anchor -> (nodes, height) of the node it names, for the
    current document; ``_aliased``: nodes reached through aliases so far in the stream.
    """

    def __init__(self) -> None:
        self._open: list[list[Any]] = []
        self._anchors: dict[str, tuple[int, int]] = {}
        self._aliased = 0

    def step(self, event: yaml.Event) -> None:
        if isinstance(event, DocumentStartEvent):
            self._anchors.clear()  # anchors are scoped to their document
        elif isinstance(event, CollectionStartEvent):
            self._check_depth(len(self._open) + 1, event)
            self._open.append([event.anchor, 1, 1])
        elif isinstance(event, CollectionEndEvent):
            anchor, nodes, height = self._open.pop()
            self._add(anchor, nodes, height)
        elif isinstance(event, ScalarEvent):
            self._add(event.anchor, 1 + len(event.value) // _SCALAR_UNIT, 0)
        elif isinstance(event, AliasEvent):
            self._alias(event)

    def _add(self, anchor: str | None, nodes: int, height: int) -> None:
        if anchor is not None:
            self._anchors[anchor] = (nodes, height)
        if self._open:
            parent = self._open[-1]
            parent[1] += nodes
            parent[2] = max(parent[2], height + 1)

    def _alias(self, event: AliasEvent) -> None:
        if any(frame[0] == event.anchor for frame in self._open):
            raise YamlLimitError(None, None, f"recursive alias *{event.anchor} (inside the node "
                                 f"it names): YAML for kinrun has no cycles", event.start_mark)
        nodes, height = self._anchors.get(event.anchor, (1, 0))  # unknown: the load says so
        self._aliased += nodes
        if self._aliased > MAX_ALIAS_NODES:
            raise YamlLimitError(None, None, f"aliases expand to more than {MAX_ALIAS_NODES} "
                                 f"nodes (an alias bomb?): write the values out, or use fewer "
                                 f"aliases", event.start_mark)
        self._check_depth(len(self._open) + height, event)
        self._add(None, nodes, height)

    @staticmethod
    def _check_depth(depth: int, event: yaml.Event) -> None:
        if depth > MAX_DEPTH:
            raise YamlLimitError(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                 event.start_mark)
