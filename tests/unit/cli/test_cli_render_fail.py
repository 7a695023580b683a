"""kinrun render for a reconcile that a ``fail`` ends: what a run carries out is shown (issue
28): the Events and log lines before the fail, the failure, then ``onError`` with the error in
scope, through the run's own Reconciler (not the CLI's copy)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[3]

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - event: {type: Warning, reason: ErrResourceExists, message: "exists {{ obj.metadata.name }}"}
        - fail: {message: "resource {{ obj.metadata.name }} exists", permanent: PERMANENT}
        - log: "never rendered"
      onError:
        - event: {type: Warning, reason: ErrSyncFailed, message: "failed: {{ error.message }}"}
        - log: "failed {{ error.reason }} at {{ error.action }}"
"""


def render(tmp_path: Path, permanent: bool = False, on_error: bool = True) -> list[dict]:
    text = CONFIG.replace("PERMANENT", str(permanent).lower())
    if not on_error:
        text = text[:text.index("      onError:")]
    config = tmp_path / "c.yaml"
    config.write_text(text)
    obj = tmp_path / "cm.yaml"
    obj.write_text("apiVersion: v1\nkind: ConfigMap\n"
                   "metadata: {name: a, namespace: default, uid: u1}\n")
    result = subprocess.run([sys.executable, "-m", "kinrun.cli", "render", str(config),
                             "--object", str(obj)], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def _shape(step: dict) -> str:
    if "fail" in step:
        return "fail"
    if "log" in step:
        return f"log {step['log']}"
    return f"{step['verb']} {step['kind']} {step['body'].get('reason', '')}".strip()


def test_a_fail_shows_the_kept_event_the_failure_and_on_error(tmp_path: Path) -> None:
    steps = render(tmp_path)
    assert [_shape(s) for s in steps] == [
        "create Event ErrResourceExists", "fail", "create Event ErrSyncFailed",
        "log failed ActionFailed at fail"]
    assert steps[1]["fail"]["message"] == "resource a exists"
    assert steps[1]["fail"]["permanent"] is False
    assert steps[1]["fail"]["at"].endswith("controllers[0].reconcile.actions[1]")
    assert steps[2]["body"]["message"] == "failed: resource a exists"
    assert steps[0]["name"] != steps[2]["name"]  # two Events, as a run creates them


def test_a_permanent_fail_says_so(tmp_path: Path) -> None:
    steps = render(tmp_path, permanent=True)
    assert steps[1]["fail"]["permanent"] is True


def test_without_on_error_the_kept_steps_and_the_failure(tmp_path: Path) -> None:
    assert [_shape(s) for s in render(tmp_path, on_error=False)] == [
        "create Event ErrResourceExists", "fail"]
