"""The pipeline reports to the GC policy through ``kinrun.gc.observer`` only: no module below
the spine (cache, kube, controller, ...) imports ``kinrun.gc.policy``; the main job's Manager
installs it (``policy.manage``)."""

from __future__ import annotations

import ast
from pathlib import Path

from kinrun._layers import LAYERS

ROOT = Path(__file__).resolve().parents[2] / "runner"
SPINE = next(i for i, layer in enumerate(LAYERS) if "spine" in layer)
BELOW_SPINE = {name for layer in LAYERS[:SPINE] for name in layer} - {"gc"}


def _imports_policy(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module == "kinrun.gc":
            if any(alias.name == "policy" for alias in node.names):
                return True
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        if any(n == "kinrun.gc.policy" or n.startswith("kinrun.gc.policy.") for n in names):
            return True
    return False


def test_no_module_below_the_spine_imports_the_gc_policy():
    offenders = [str(p.relative_to(ROOT)) for p in sorted(ROOT.rglob("*.py"))
                 if p.relative_to(ROOT).parts[0].removesuffix(".py") in BELOW_SPINE
                 and _imports_policy(p)]
    assert offenders == []


def test_the_check_sees_an_import_of_the_policy(tmp_path):
    for source in ("from kinrun.gc import policy\n", "import kinrun.gc.policy\n",
                   "def f():\n    from kinrun.gc.policy import decoded\n"):
        path = tmp_path / "m.py"
        path.write_text(source)
        assert _imports_policy(path)
    (tmp_path / "m.py").write_text("from kinrun.gc import observer\n")
    assert not _imports_policy(tmp_path / "m.py")
