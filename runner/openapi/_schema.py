"""Schema nodes over one OpenAPI document (v2 ``definitions`` or a CRD's ``openAPIV3Schema``).

A ``Schema`` is a read-only view of one node with ``$ref`` resolved on access; ``Schemas`` maps
GVKs to their root nodes. Nothing here validates (see ``_check``); nothing copies the document.
"""

from __future__ import annotations

import functools
import gzip
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import orjson

DATA_FILE = "kube-openapi-v2.json.gz"
"""The shipped document (``scripts/openapi-snapshot`` writes it from the envtest
kube-apiserver): the OpenAPI v2 ``definitions`` of kube-apiserver 1.20.2's built-in kinds."""
KUBERNETES_VERSION = "1.20.2"
"""The kube-apiserver release ``DATA_FILE`` was fetched from."""
_REF = "#/definitions/"
_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d*)\]")

Node = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class GVK:
    """A group/version/kind (``group`` "" for core)."""

    group: str
    version: str
    kind: str


class Schema:
    """One schema node: ``type`` ("object", "array", "string", "integer", "number",
    "boolean", or "" when any JSON value is allowed), ``properties`` (name -> Schema),
    ``items``, ``additional`` (additionalProperties), ``required``, ``default`` (None when
    none), ``list_type`` ("atomic", "set", "map" or ""), ``list_map_keys``, ``name`` (the
    definition's name, "" inside a CRD schema), ``node`` (the raw dict; do not modify).
    Children are built once and kept (``_kids``), so walking an object reuses the tree."""

    __slots__ = ("_defs", "node", "name", "_kids")

    def __init__(self, definitions: Mapping[str, Node], node: Node, name: str = "") -> None:
        self._kids: dict[str, Schema | None] = {}
        while isinstance(node.get("$ref"), str):   # a v2 property that is only a reference
            name = str(node["$ref"]).removeprefix(_REF)
            node = definitions.get(name, {})
        self._defs, self.node, self.name = definitions, node, name

    def _wrap(self, node: Any) -> Schema | None:
        return Schema(self._defs, node) if isinstance(node, Mapping) else None

    @property
    def type(self) -> str:
        return str(self.node.get("type") or "")

    @property
    def format(self) -> str:
        return str(self.node.get("format") or "")

    @property
    def properties(self) -> dict[str, Schema]:
        return {k: Schema(self._defs, v) for k, v in (self.node.get("properties") or {}).items()}

    def child(self, name: str) -> Schema | None:
        """The schema of property ``name``, or None when the object does not declare it."""
        key = "p:" + name
        if key not in self._kids:
            self._kids[key] = self._wrap((self.node.get("properties") or {}).get(name))
        return self._kids[key]

    @property
    def items(self) -> Schema | None:
        if "items" not in self._kids:
            self._kids["items"] = self._wrap(self.node.get("items"))
        return self._kids["items"]

    @property
    def additional(self) -> Schema | None:
        if "additional" not in self._kids:
            self._kids["additional"] = self._wrap(self.node.get("additionalProperties"))
        return self._kids["additional"]

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(self.node.get("required") or ())

    @property
    def default(self) -> Any:
        return self.node.get("default")

    @property
    def list_type(self) -> str:
        return str(self.node.get("x-kubernetes-list-type") or "")

    @property
    def list_map_keys(self) -> tuple[str, ...]:
        return tuple(self.node.get("x-kubernetes-list-map-keys") or ())

    @property
    def preserves_unknown(self) -> bool:
        """``x-kubernetes-preserve-unknown-fields: true`` (or a v2 node without properties
        whose additionalProperties allow anything)."""
        return bool(self.node.get("x-kubernetes-preserve-unknown-fields"))

    def at(self, path: str) -> Schema | None:
        """The schema at a dotted ``path`` (``spec.template.spec.containers[].image``; an
        index in brackets is ignored, ``[]`` steps into list items; a map's values are reached
        by any key: ``metadata.labels.app``). None when the path leaves the schema."""
        node: Schema | None = self
        for match in _SEGMENT.finditer(path):
            if node is None:
                return None
            if match.group(1) is not None:
                node = node.child(match.group(1)) or (
                    node.additional if node.type == "object" else None)
            else:
                node = node.items
        return node

    def field_exists(self, path: str) -> bool:
        """Whether ``path`` (as ``at``) names a field the schema declares."""
        return self.at(path) is not None


class Schemas:
    """GVK -> root ``Schema`` for one document's kinds (``x-kubernetes-group-version-kind``)
    plus any added CRD versions. Immutable after ``with_crd``-style copies; thread-safe."""

    def __init__(self, definitions: Mapping[str, Node]) -> None:
        self.definitions = definitions
        self._by_gvk: dict[GVK, Schema] = {}
        for name, node in definitions.items():
            for gvk in node.get("x-kubernetes-group-version-kind") or ():
                key = GVK(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
                self._by_gvk.setdefault(key, Schema(definitions, node, name))

    def for_gvk(self, group: str, version: str, kind: str) -> Schema | None:
        """The schema of ``group/version`` ``kind``, or None when the document lacks it."""
        return self._by_gvk.get(GVK(group, version, kind))

    def gvks(self) -> Iterator[GVK]:
        """Every GVK with a schema."""
        return iter(self._by_gvk)


IN_PROCESS_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
}
"""(definition, property) -> default: the ``+default`` markers of 1.20's Go types, which
kube-apiserver's own schema (the one server-side apply merges with) carries and its
``/openapi/v2`` document leaves out. A container port without ``protocol`` is so keyed
``{"containerPort": 80, "protocol": "TCP"}`` and applied (a Service port, without a marker in
1.20, is refused with 500); differential test ``test_container_port_without_protocol``."""


@functools.lru_cache(maxsize=1)
def builtin_schemas() -> Schemas:
    """The shipped schemas of kube-apiserver 1.20.2's built-in kinds (loaded once, ~0.1 s),
    with :data:`IN_PROCESS_DEFAULTS`. Raises OSError if the package data is missing (a broken
    install)."""
    data = resources.files(__package__).joinpath(DATA_FILE).read_bytes()
    definitions = orjson.loads(gzip.decompress(data))["definitions"]
    for (name, prop), default in IN_PROCESS_DEFAULTS.items():
        definitions[name]["properties"][prop]["default"] = default
    return Schemas(definitions)


def builtin_document() -> dict[str, Any]:
    """The shipped OpenAPI v2 document (``swagger``, ``info``, ``definitions``) as a fresh dict."""
    data = resources.files(__package__).joinpath(DATA_FILE).read_bytes()
    return orjson.loads(gzip.decompress(data))


def crd_schema(version: Mapping[str, Any]) -> Schema | None:
    """The ``Schema`` of one entry of a CRD's ``spec.versions`` (its
    ``schema.openAPIV3Schema``), or None when it declares none."""
    node = (version.get("schema") or {}).get("openAPIV3Schema")
    return Schema({}, node) if isinstance(node, Mapping) else None
