"""Objects put into the embedded API server before a run, one code path for ``kinrun CONFIG
--embedded`` and ``kinrun test``: first the config's ``crds:`` (their
CustomResourceDefinitions only: other documents of a ``deploy/`` folder are not seeds), then
the seeds (``--seed`` files, a test case's ``given``), a CRD already served from ``crds:``
skipped (loaded once, as written under ``crds:``).

    crd_seeds(paths)            -> [(file, [CRD objects])]   the crds: files (folders expanded)
    served_crds(seeds)          -> {CRD name}                what crd_seeds installs
    without_served(objs, names) -> objs less those CRDs
    load_objects(server, file, objs, stop) -> how many were loaded (admitted, as a create)

Loading is a create through the server's admission (defaults, validation), so a CRD served
this way has its schema defaulting, pruning and status subresource from the first request,
as on kube-apiserver once ``kubectl apply`` of the CRD is established.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from kinrun import safe_yaml
from kinrun.crds import CRD_KIND, crd_files
from kinrun.errors import ConfigError


def crd_seeds(paths: Iterable[Path]) -> list[tuple[Path, list[dict]]]:
    """The CustomResourceDefinitions of the resolved ``crds:`` ``paths``, file by file.
    ConfigError naming a path that does not exist or a file that is not objects."""
    return [(path, [o for o in load_seed_file(path) if o.get("kind") == CRD_KIND])
            for path in crd_files(paths)]


def served_crds(seeds: Iterable[tuple[Path, list[dict]]]) -> set[str]:
    """The names (``plural.group``) of the CRDs in ``seeds``."""
    return {o["metadata"]["name"] for _path, objects in seeds for o in objects}


def without_served(objects: Iterable[dict], served: set[str]) -> list[dict]:
    """``objects`` less the CRDs named in ``served`` (already loaded from ``crds:``)."""
    return [o for o in objects
            if not (o.get("kind") == CRD_KIND and o["metadata"]["name"] in served)]


def load_objects(server: Any, path: Path | str, objects: list[dict],
                 stop: threading.Event | None = None) -> int:
    """Load one seed file's objects into the embedded server (none more once ``stop`` is set);
    ``path``: where they come from, for the error;
    returns how many were loaded. ConfigError naming the file and document when the server
    refuses one (unknown kind, invalid object)."""
    for index, obj in enumerate(objects):
        if stop is not None and stop.is_set():
            return index
        try:
            server.load([obj], admit=True)
        except Exception as exc:  # noqa: BLE001 - the server's StatusError, whatever its code
            raise ConfigError(f"cannot load {obj.get('kind')} {obj['metadata'].get('name')!r}: "
                              f"{exc}", file=str(path), path=f"document[{index}]") from None
    return len(objects)


def load_seed_file(path: Path) -> list[dict]:
    """The objects of a multi-document YAML (or JSON) file; ``kind: List`` documents are
    flattened. Raises ConfigError naming the file (and line) for bad YAML or a document that
    is not an object with apiVersion, kind and metadata.name."""
    try:
        docs = safe_yaml.load_all(Path(path).read_text(), safe_yaml.StrictObjectLoader)
    except OSError as exc:
        raise ConfigError(f"cannot read seed file: {exc.strerror}", file=str(path)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(path),
                          line=mark.line + 1 if mark else None,
                          column=mark.column + 1 if mark else None) from exc
    objects = []
    for index, doc in enumerate(d for d in docs if d is not None):
        items = doc.get("items", []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
        for obj in items:
            if not (isinstance(obj, dict) and obj.get("apiVersion") and obj.get("kind")
                    and isinstance(obj.get("metadata"), dict) and obj["metadata"].get("name")):
                raise ConfigError("each object needs apiVersion, kind and metadata.name",
                                  file=str(path), path=f"document[{index}]")
            objects.append(obj)
    return objects
