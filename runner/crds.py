"""CustomResourceDefinitions read from files: a CRD's names and scope without a cluster.

GitOps repositories hold their CRDs next to the controllers that use them. ``kinrun rbac``
and ``kinrun manifests`` must know a custom kind's plural and scope to grant it (an unknown
scope is never guessed: a namespaced resource granted cluster-wide over-grants, a
cluster-scoped one granted in a namespace under-grants). This module reads
``apiextensions.k8s.io/v1`` CustomResourceDefinition documents from files or folders (the
config's ``crds:`` list and the CLI's ``--crd``), and answers "which resource is this
(apiVersion, kind or plural)?" as discovery would for a served CRD.

    CrdSet.load(paths)            files (.yaml/.yml/.json, multi-document) or folders of them
    CrdSet.lookup(av, name) ->    CrdNames | None   (kind, plural, singular or short name)

Semantics as kube-apiserver's: a CRD serves ``group/version`` for each of its ``served``
versions, ``spec.scope`` is ``Namespaced`` or ``Cluster``, and names match case-insensitively
only for the kind (as kubectl's RESTMapper; plurals are lower case by validation).
Other documents in the files (a Namespace, a Deployment) are skipped, so a whole ``deploy/``
folder can be given. Pure after ``load``; :class:`CrdSet` is immutable and thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kinrun import safe_yaml
from kinrun.errors import ConfigError

CRD_API_VERSIONS = ("apiextensions.k8s.io/v1",)
"""What is read: v1beta1 CRDs were removed in Kubernetes 1.22 and kinrun never served them."""

SUFFIXES = (".yaml", ".yml", ".json")
CRD_KIND = "CustomResourceDefinition"
"""The files a folder contributes (others, such as README.md, are skipped)."""


@dataclass(frozen=True)
class CrdNames:
    """One served version of a CRD: ``group``, ``version``, ``kind``, ``plural``,
    ``namespaced`` (``spec.scope == "Namespaced"``), ``source`` (``file#document``), the
    version's ``schema`` (its ``openAPIV3Schema``, or None) and ``status_subresource``."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    source: str
    singular: str = ""
    short_names: tuple[str, ...] = ()
    schema: Mapping[str, Any] | None = None
    status_subresource: bool = False
    """Whether the version serves ``/status`` (``subresources.status``, of the version or, in
    ``apiextensions.k8s.io/v1beta1``, of the whole CRD)."""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def names(self) -> set[str]:
        """Every name ``lookup`` matches (the kind in lower case)."""
        return {self.kind.lower(), self.plural, self.singular, *self.short_names} - {""}


class CrdSet:
    """The CRDs of some files, by (apiVersion, name). Build with :meth:`load`."""

    def __init__(self, versions: Iterable[CrdNames] = ()) -> None:
        self._by_gv: dict[str, list[CrdNames]] = {}
        for names in versions:
            self._by_gv.setdefault(names.api_version, []).append(names)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_gv.values())

    def __iter__(self) -> Iterator[CrdNames]:
        for versions in self._by_gv.values():
            yield from versions

    @classmethod
    def load(cls, paths: Iterable[str | Path], base_dir: Path | None = None) -> CrdSet:
        """Read every CRD in ``paths`` (files or folders, relative ones against ``base_dir``).

        Raises ConfigError naming the file (and document) for a path that does not exist, a
        file that is not YAML/JSON, or a CRD without group, names.kind/plural or scope."""
        found: list[CrdNames] = []
        for path in paths:
            found.extend(_read_path(_resolve(path, base_dir)))
        return cls(found)

    def lookup(self, api_version: str, name: str) -> CrdNames | None:
        """The CRD version serving ``name`` (kind, plural, singular or short name) in
        ``api_version``; None when none of the files defines it."""
        wanted = name.lower()
        for names in self._by_gv.get(api_version, ()):
            if wanted in names.names():
                return names
        return None


def _resolve(path: str | Path, base_dir: Path | None) -> Path:
    p = Path(path).expanduser()
    return p if p.is_absolute() or base_dir is None else base_dir / p


def _read_path(path: Path) -> list[CrdNames]:
    return [names for file in crd_files([path]) for names in _read_file(file)]


def crd_files(paths: Iterable[Path]) -> list[Path]:
    """The files of ``paths`` (a folder gives its .yaml/.yml/.json files, recursively,
    sorted); ConfigError naming a path that does not exist."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        elif not path.exists():
            raise ConfigError("no such CRD file or folder", file=str(path))
        else:
            out.append(path)
    return out


def _read_file(path: Path) -> list[CrdNames]:
    try:
        docs = safe_yaml.load_all(path.read_text(encoding="utf-8"), safe_yaml.StrictObjectLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read CRDs: {type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''}",
                          file=str(path)) from None
    out: list[CrdNames] = []
    for i, doc in enumerate(_flatten(docs)):
        if isinstance(doc, dict) and doc.get("kind") == CRD_KIND \
                and doc.get("apiVersion") in CRD_API_VERSIONS:
            out.extend(_versions(doc, f"{path}#{i}"))
    return out


def _flatten(docs: list[Any]) -> Iterator[Any]:
    """Documents, with a ``kind: List`` (kubectl's ``get -o yaml``) opened up."""
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            yield from doc["items"]
        else:
            yield doc


def _versions(doc: Mapping[str, Any], source: str) -> list[CrdNames]:
    spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
    names = spec.get("names") if isinstance(spec.get("names"), dict) else {}
    group, kind, plural, scope = (spec.get("group"), names.get("kind"), names.get("plural"),
                                  spec.get("scope"))
    for key, value in (("spec.group", group), ("spec.names.kind", kind),
                       ("spec.names.plural", plural)):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"the CustomResourceDefinition has no {key}", file=source)
    if scope not in ("Namespaced", "Cluster"):
        raise ConfigError(f"spec.scope is {scope!r}: a CustomResourceDefinition's scope is "
                          "Namespaced or Cluster", file=source)
    return [CrdNames(group, v["name"], kind, plural, scope == "Namespaced", source,
                     singular=str(names.get("singular") or ""),
                     short_names=tuple(names.get("shortNames") or ()),
                     schema=(v.get("schema") or {}).get("openAPIV3Schema"),
                     status_subresource=isinstance(
                         (v.get("subresources") or spec.get("subresources") or {}).get("status"),
                         dict))
            for v in spec.get("versions") or () if isinstance(v, dict) and v.get("served", True)
            and isinstance(v.get("name"), str)]
