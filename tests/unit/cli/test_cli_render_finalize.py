"""kinrun render for a controller with a finalizer: a live object renders actions, a
terminating one finalize (what kinrun runs while the finalizer holds it), each with the
finalizer patch a run sends (add before the actions, remove after finalize)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[3]
CONFIG = "examples/configs/finalizer.yaml"


def render(tmp_path: Path, extra_meta: str, config: str = CONFIG) -> list[dict]:
    obj = tmp_path / "cm.yaml"
    obj.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: "
                   "default, uid: u1, labels: {example.com/backup: 'true'}" + extra_meta + "}\n")
    result = subprocess.run([sys.executable, "-m", "kinrun.cli", "render", config,
                             "--object", str(obj)], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def test_a_live_object_renders_the_actions(tmp_path: Path) -> None:
    """No deletionTimestamp, no finalizer yet: the finalizer is added (a JSON patch, as the
    run sends it first), then the copy is applied."""
    steps = render(tmp_path, ", resourceVersion: '7'")
    assert [(s["verb"], s["namespace"], s["name"]) for s in steps] == [
        ("patch", "default", "settings"), ("apply", "backups", "default.settings")]
    assert steps[0]["patchType"] == "json" and steps[0]["body"] == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/backup"]}]


def test_a_live_object_with_the_finalizer_renders_no_patch(tmp_path: Path) -> None:
    steps = render(tmp_path, ", finalizers: [other.io/x, example.com/backup]")
    assert [s["verb"] for s in steps] == ["apply"]


def test_a_terminating_object_renders_finalize(tmp_path: Path) -> None:
    """deletionTimestamp set: the copy is deleted, an Event recorded, then the finalizer is
    removed (tested against the list as read)."""
    steps = render(tmp_path, ", deletionTimestamp: '2023-11-14T22:13:20Z', "
                             "finalizers: [other.io/x, example.com/backup]")
    assert [(s["verb"], s["kind"]) for s in steps] == [("delete", "ConfigMap"),
                                                        ("create", "Event"),
                                                        ("patch", "ConfigMap")]
    assert steps[2]["name"] == "settings" and steps[2]["body"] == [
        {"op": "test", "path": "/metadata/finalizers",
         "value": ["other.io/x", "example.com/backup"]},
        {"op": "replace", "path": "/metadata/finalizers", "value": ["other.io/x"]}]


def test_a_finalize_that_asks_a_requeue_keeps_the_finalizer(tmp_path: Path) -> None:
    config = tmp_path / "wait.yaml"
    config.write_text(
        (ROOT / CONFIG).read_text().replace(
            "      finalize:\n", "      finalize:\n        - requeueAfter: 30s\n"))
    steps = render(tmp_path, ", deletionTimestamp: '2023-11-14T22:13:20Z', "
                             "finalizers: [example.com/backup]", str(config))
    assert [s.get("verb", "requeue") for s in steps] == ["requeue", "delete", "create"]
