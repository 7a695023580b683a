"""YAML loading that remembers where every value came from.

:class:`MarkedLoader` is a PyYAML ``SafeLoader`` subclass; :func:`load_yaml` composes the
document into nodes and builds plain Python data (dicts, lists, str, int, float, bool, None)
while recording, for every key path, the line/column of the key and of the value
(:class:`NodeMarks`). Schema and reference errors are later located through these marks.

YAML 1.1 surprises are **errors**, never silent (decided for kinrun; documented in the schema
guide and tested):

- a duplicate key in one mapping (PyYAML keeps the last one silently);
- a mapping key that is not a string, in particular a key that loads as a boolean
  (``on:``, ``off:``, ``yes:``, ``no:``, ``true:``) — quote it;
- a plain value ``yes``/``no``/``on``/``off`` (any case), which YAML 1.1 turns into a boolean —
  write ``true``/``false``, or quote it for a string;
- a plain sexagesimal number such as ``1:30`` (YAML 1.1 loads it as 90) — quote it;
- more than one document in the file, or an empty file.

Timestamps stay strings (``2024-01-01`` is not turned into a date). Merge keys (``<<``) and
anchors/aliases work (a local key overrides a merged one, as YAML 1.1 says); recursive aliases, alias bombs and documents nested too deep are errors
(``kinrun.safe_yaml``: its limits apply to every YAML kinrun reads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml
import yaml.reader
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from kinrun import safe_yaml
from kinrun.errors import ConfigError

PathKey = tuple[str | int, ...]

_BOOL_TAG = "tag:yaml.org,2002:bool"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_STR_TAG = "tag:yaml.org,2002:str"


class MarkedLoader(yaml.SafeLoader):
    """SafeLoader with timestamps kept as strings; used only through :func:`load_yaml`.

    Not thread-safe (one instance per document, as every PyYAML loader).
    """


MarkedLoader.add_constructor("tag:yaml.org,2002:timestamp", SafeConstructor.construct_yaml_str)
# A plain ``=`` resolves to YAML 1.1's "value key" type, which SafeLoader cannot construct: it
# is the string "=" to anyone writing a config.
MarkedLoader.add_constructor("tag:yaml.org,2002:value", SafeConstructor.construct_yaml_str)


@dataclass(frozen=True)
class NodeMarks:
    """Where one value sits in the file: 0-based ``line``/``column`` of the value's start,
    ``key_line``/``key_column`` of its mapping key (None for list items and the root), and
    ``style`` of a scalar (None plain, ``'`` ``"`` ``|`` ``>``)."""

    line: int
    column: int
    key_line: int | None = None
    key_column: int | None = None
    style: str | None = None


@dataclass(frozen=True)
class LoadedYaml:
    """Result of :func:`load_yaml`: ``data`` (None when ``errors``), ``marks`` per key path
    (``()`` is the root; ``("controllers", 0, "workers")``), ``text`` (the source), ``file``."""

    data: Any
    marks: dict[PathKey, NodeMarks]
    errors: list[ConfigError]
    text: str
    file: str


def format_path(path: PathKey) -> str:
    """Render a key path as ``controllers[0].reconcile.actions[1].log`` (quoted when unusual)."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def load_yaml(text: str, file: str = "<config>") -> LoadedYaml:
    """Parse one YAML document into plain data plus marks; never raises for bad YAML.

    Every problem found is returned in ``errors`` (ConfigError with file, 1-based line and
    column, key path), sorted by position; ``data`` is None when there are any.
    """
    try:
        safe_yaml.check(text, MarkedLoader)
        loader = MarkedLoader(text)
        root = loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        return LoadedYaml(None, {}, [_yaml_error(exc, file)], text, file)
    except yaml.reader.ReaderError as exc:
        return LoadedYaml(None, {}, [_reader_error(exc, text, file)], text, file)
    if root is None:
        return LoadedYaml(None, {}, [ConfigError("the file is empty", file=file, line=1,
                                                  column=1)], text, file)
    builder = _Builder(loader, file)
    try:
        data = builder.build(root, (), None)
    finally:
        loader.dispose()
    errors = sorted(builder.errors, key=lambda e: (e.line or 0, e.column or 0))
    return LoadedYaml(None if errors else data, builder.marks, errors, text, file)


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str) -> ConfigError:
    before = text[:exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    return ConfigError(f"invalid YAML: character {exc.character:#06x} is not allowed in YAML "
                       f"text", file=file, line=line, column=column)


def _yaml_error(exc: yaml.MarkedYAMLError, file: str) -> ConfigError:
    mark = exc.problem_mark or exc.context_mark
    what = " ".join(p for p in (exc.context, exc.problem) if p)
    if "expected a single document" in what:
        what = "expected a single YAML document, found several (remove the extra '---')"
    return ConfigError(f"invalid YAML: {what}", file=file,
                       line=mark.line + 1 if mark else None,
                       column=mark.column + 1 if mark else None)


class _Builder:
    """Walks composed nodes into plain data, recording marks and YAML 1.1 surprises."""

    def __init__(self, loader: MarkedLoader, file: str) -> None:
        self.loader = loader
        self.file = file
        self.marks: dict[PathKey, NodeMarks] = {}
        self.errors: list[ConfigError] = []
        self._active: set[int] = set()  # ids of collection nodes being built (alias cycles)

    def error(self, node: Node, path: PathKey, message: str) -> None:
        self.errors.append(ConfigError(message, file=self.file, line=node.start_mark.line + 1,
                                       column=node.start_mark.column + 1, path=format_path(path)))

    def build(self, node: Node, path: PathKey, key_node: Node | None) -> Any:
        self.marks[path] = NodeMarks(
            node.start_mark.line, node.start_mark.column,
            key_node.start_mark.line if key_node else None,
            key_node.start_mark.column if key_node else None,
            node.style if isinstance(node, ScalarNode) else None)
        if isinstance(node, ScalarNode):
            return self.scalar(node, path)
        if id(node) in self._active:
            self.error(node, path, "recursive alias")
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.build(child, path + (i,), None) for i, child in enumerate(node.value)]
            return self.mapping(node, path)
        finally:
            self._active.discard(id(node))

    def scalar(self, node: ScalarNode, path: PathKey) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:  # an explicit tag such as !!python/name
            self.error(node, path, f"cannot load {node.value!r}: {exc.problem}")
            return None
        except ValueError:  # an integer of more than 4300 digits (sys.get_int_max_str_digits)
            value = 1 << 64
        if isinstance(value, int) and not isinstance(value, bool) and \
                not -(1 << 63) <= value < (1 << 63):
            shown = node.value if len(node.value) <= 24 else f"{node.value[:20]}..."
            self.error(node, path, f"the integer {shown} is out of range: numbers are 64-bit "
                       f"in kinrun, as in Kubernetes")
            return None
        if node.style is None and node.tag == _BOOL_TAG and node.value.lower() not in ("true", "false"):
            self.error(node, path, f"{node.value!r} loads as the boolean {str(value).lower()} in "
                       f"YAML 1.1: write true/false, or quote it ('{node.value}') for a string")
        elif node.style is None and node.tag in (_INT_TAG, _FLOAT_TAG) and ":" in node.value:
            self.error(node, path, f"{node.value!r} loads as the number {value} in YAML 1.1 "
                       f"(base 60): quote it ('{node.value}')")
        return value

    def mapping(self, node: MappingNode, path: PathKey) -> dict[str, Any]:
        """The mapping's data. Merge keys as YAML 1.1 (yaml.org/type/merge.html): PyYAML's
        ``flatten_mapping`` puts the merged pairs first (of a list of merged mappings, the
        earlier last), so a later pair wins: a local key overrides a merged one. Only a key
        given twice in the mapping itself is a duplicate (an error)."""
        local = {id(k) for k, _v in node.value if k.tag != _MERGE_TAG}
        self.loader.flatten_mapping(node)
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}  # local keys only
        for key_node, value_node in node.value:
            key = self.key(key_node, path)
            if key is None:
                continue
            if key in first_line:
                self.error(key_node, path + (key,),
                           f"duplicate key {key!r} (first at line {first_line[key]})")
                continue
            if id(key_node) in local:
                first_line[key] = key_node.start_mark.line + 1
            out[key] = self.build(value_node, path + (key,), key_node)
        return out

    def key(self, key_node: Node, path: PathKey) -> str | None:
        if not isinstance(key_node, ScalarNode):
            self.error(key_node, path, "a mapping key must be a plain string")
            return None
        if key_node.tag == _BOOL_TAG:
            self.error(key_node, path, f"key {key_node.value!r} loads as a boolean in YAML 1.1: "
                       f"quote it ('{key_node.value}':)")
            return None
        key = self.loader.construct_object(key_node)
        if not isinstance(key, str):
            self.error(key_node, path, f"key {key_node.value!r} is not a string: quote it")
            return None
        return key
