"""Helpers for the hook tests: plugin files, a fake installed distribution, a fake lister."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any


def write_plugin(folder: Path, relpath: str, source: str) -> Path:
    """Write a plugin module (dedented) at folder/relpath and return its path."""
    path = folder / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


def make_distribution(site: Path, dist: str, entry_points: dict[str, str],
                      modules: dict[str, str]) -> None:
    """Lay out an installed distribution in ``site`` (a sys.path entry): its modules and a
    ``<dist>-1.0.dist-info`` declaring ``entry_points`` in the ``kinrun`` group."""
    info = site / f"{dist}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[kinrun]\n{lines}")
    for module, source in modules.items():
        write_plugin(site, module.replace(".", "/") + ".py", source)


class FakeLister:
    """A lister over a fixed list of objects with named index functions."""

    def __init__(self, objs: list[dict[str, Any]], indexers: dict[str, Any]) -> None:
        self._objs = objs
        self._indexers = indexers

    def get(self, key: str) -> dict[str, Any] | None:
        return None

    def list(self) -> list[dict[str, Any]]:
        return list(self._objs)

    def by_index(self, index_name: str, value: str) -> list[dict[str, Any]]:
        return [o for o in self._objs if value in self._indexers[index_name](o)]


def pod(name: str, node: str | None, namespace: str = "default") -> dict[str, Any]:
    """A minimal Pod dict."""
    spec = {"nodeName": node} if node else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": "1"},
            "spec": spec}
