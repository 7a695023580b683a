"""kinrun render for a controller with a finalizer: a live object renders actions, a
terminating one finalize (what kinrun runs while the finalizer holds it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[3]
CONFIG = "examples/configs/finalizer.yaml"


def render(tmp_path: Path, extra_meta: str) -> list[dict]:
    obj = tmp_path / "cm.yaml"
    obj.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "
                   "default, uid: u1, labels: {example.com/backup: 'true'}" + extra_meta + "}\n")
    result = subprocess.run([sys.executable, "-m", "kinrun.cli", "render", CONFIG,
                             "--object", str(obj)], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_a_live_object_renders_the_actions(tmp_path: Path) -> None:
    """No deletionTimestamp: the copy is applied."""
    steps = render(tmp_path, "")
    assert [(s["verb"], s["namespace"], s["name"]) for s in steps] == [
        ("apply", "backups", "default.settings")]


def test_a_terminating_object_renders_finalize(tmp_path: Path) -> None:
    """deletionTimestamp set: the copy is deleted and an Event recorded."""
    steps = render(tmp_path, ", deletionTimestamp: '2023-11-14T22:13:20Z', "
                             "finalizers: [example.com/backup]")
    assert [(s["verb"], s["kind"]) for s in steps] == [("delete", "ConfigMap"),
                                                        ("create", "Event")]
