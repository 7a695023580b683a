"""Layers import downwards only (kinrun._layers.LAYERS), typing-only imports included."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from kinrun._layers import LAYERS

ROOT = Path(__file__).resolve().parents[2] / "runner"
LAYER_OF = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _unit(module: str) -> str | None:
    """``kinrun.cache.store`` -> ``cache``; None for ``kinrun`` itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "kinrun" else None


def _module_of(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = ["kinrun", *rel.parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str | None = None) -> list[tuple[int, str]]:
    """(line, imported module) of every kinrun import in ``path`` (module ``module``, default
    the one ``path`` is), wherever the import stands."""
    found = []
    module = module or _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("kinrun")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base == "kinrun":  # from kinrun import plugin_manager / __version__
                found += [(node.lineno, f"kinrun.{a.name}") for a in node.names
                          if (ROOT / f"{a.name}.py").exists() or (ROOT / a.name).is_dir()]
            elif base.startswith("kinrun."):
                found.append((node.lineno, base))
    return found


def _violations() -> list[str]:
    bad = []
    for path in sorted(ROOT.rglob("*.py")):
        unit = _unit(_module_of(path))
        if unit is None or unit == "_layers":
            continue
        for line, target in _imports(path):
            other = _unit(target)
            if other is None or other == unit:
                continue
            if LAYER_OF[other] > LAYER_OF[unit]:
                bad.append(f"{path.relative_to(ROOT.parent)}:{line}: {unit} (layer "
                           f"{LAYER_OF[unit]}) imports {target} (layer {LAYER_OF[other]})")
    return bad


def test_every_module_belongs_to_a_layer():
    """Each top-level module or package of kinrun is named in LAYERS."""
    units = {_unit(_module_of(p)) for p in ROOT.rglob("*.py")} - {None, "_layers"}
    assert sorted(units - set(LAYER_OF)) == []


def test_no_module_imports_a_higher_layer():
    """No import (typing-only ones included) goes from a lower layer to a higher one."""
    assert _violations() == []


@pytest.mark.parametrize("source", [
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from kinrun.actions import ActionKind\n",
    "from kinrun import plugin_manager\n",
    "def f():\n    import kinrun.app\n",
])
def test_the_check_sees_typing_only_lazy_and_package_imports(tmp_path, source):
    """The import scan finds TYPE_CHECKING, function-level and `from kinrun import mod` imports."""
    fake = tmp_path / "hooks.py"
    fake.write_text(source)
    targets = [t for _, t in _imports(fake, "kinrun.hooks")]
    assert targets and all(LAYER_OF[_unit(t)] > LAYER_OF["hooks"] for t in targets)


def _module_edges() -> dict[str, set[str]]:
    """kinrun module -> the kinrun modules of its own layer it imports (anywhere in the file):
    ``from kinrun.cache import store`` names the module ``kinrun.cache.store``, ``from
    kinrun.cache import X`` the package ``kinrun.cache``."""
    modules = {_module_of(p): p for p in ROOT.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for module, path in modules.items():
        unit = _unit(module)
        if unit is None or unit == "_layers":
            continue
        for target in _imported_modules(path, module, modules):
            other = _unit(target)
            if other is not None and target != module and LAYER_OF.get(other) == LAYER_OF[unit]:
                edges.setdefault(module, set()).add(target)
    return edges


def _imported_modules(path: Path, module: str, modules: dict[str, Path]) -> set[str]:
    """The kinrun modules ``path`` (module ``module``) imports, each resolved to a module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("kinrun")}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith("kinrun"):
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                          for a in node.names}
    return {m for m in found if m in modules}


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


KNOWN_CIRCLES = [
    # typing only: history names store.Entry, which holds an EventLog (to be untangled by
    # the embedded server's owners: Entry's type belongs beside the EventLog)
    ["kinrun.testing.apiserver.history", "kinrun.testing.apiserver.store"],
]


def test_no_circle_inside_a_layer():
    """No two modules of one layer import each other, directly or round a longer circle."""
    assert [c for c in _circles(_module_edges()) if c not in KNOWN_CIRCLES] == []


def test_the_circle_check_sees_a_circle():
    """A deliberately added circle (plan -> bound -> plan, function-level) is found."""
    edges = _module_edges()
    edges.setdefault("kinrun.bound", set()).add("kinrun.plan")
    assert ["kinrun.bound", "kinrun.plan"] in _circles(edges)


LIBRARIES = {"pluggy": "hooks", "jinja2": "templating", "jsonschema": "config",
             "prometheus_client": "metrics", "croniter": "schedule"}
"""Third-party libraries and the unit whose layer owns them: no unit of a lower layer loads
one (``import kinrun.cache`` loads neither pluggy nor jinja2)."""


def _loaded_by(unit: str) -> list[str]:
    """The LIBRARIES in sys.modules after ``import kinrun.<unit>`` in a fresh interpreter."""
    code = (f"import sys, kinrun.{unit}\n"
            f"print(' '.join(n for n in {sorted(LIBRARIES)!r} if n in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    return out.stdout.split()


LOW_UNITS = [u for layer in LAYERS[:3] for u in layer]


@pytest.mark.parametrize("unit", LOW_UNITS)
def test_a_lower_layer_loads_no_library_of_a_higher_one(unit):
    """Importing a unit of the three lowest layers loads no library a higher layer owns."""
    higher = [lib for lib in _loaded_by(unit) if LAYER_OF[LIBRARIES[lib]] > LAYER_OF[unit]]
    assert higher == []
