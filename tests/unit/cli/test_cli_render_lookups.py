"""kinrun render --lookup fills the caches that get/list/by_index read, and a hook
controller's render shows the kinrun_reconcile call a run would make."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]

FOO = """\
apiVersion: samplecontroller.k8s.io/v1alpha1
kind: Foo
metadata: {name: example-foo, namespace: default, uid: u1}
spec: {deploymentName: example-foo, replicas: 1}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: example-foo
  namespace: default
  uid: d1
  ownerReferences: [{apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo, name: example-foo,
                     uid: u1, controller: true}]
spec: {replicas: 1}
status: {availableReplicas: 1}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: default}
"""


def render(tmp_path: Path, config: str, obj: str, *lookups: str) -> list[dict]:
    (tmp_path / "obj.yaml").write_text(obj)
    args = [sys.executable, "-m", "kinrun.cli", "render", str(ROOT / config), "--object",
            str(tmp_path / "obj.yaml")]
    for i, text in enumerate(lookups):
        (tmp_path / f"l{i}.yaml").write_text(text)
        args += ["--lookup", str(tmp_path / f"l{i}.yaml")]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    return yaml.safe_load(run.stdout)


def status_of(steps: list[dict]) -> dict:
    (patch,) = [s for s in steps if s.get("subresource") == "status"]
    return patch["body"]["status"]


def test_lookups_see_the_objects_given(tmp_path: Path) -> None:
    """sample-controller reads its Deployment with get(): without --lookup the status says 0
    available, with it the Deployment's 1; the unrelated ConfigMap goes to no informer."""
    config = "examples/configs/sample-controller.yaml"
    assert status_of(render(tmp_path, config, FOO))["availableReplicas"] == 0
    assert status_of(render(tmp_path, config, FOO, DEPLOYMENT))["availableReplicas"] == 1


def test_a_hook_controller_shows_the_hook_call(tmp_path: Path) -> None:
    """pods-by-node reconciles through a hook: render shows kinrun_reconcile with the plugin,
    the key, the reason and the object's reference."""
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: x}\n"
    (step,) = [s for s in render(tmp_path, "examples/configs/pods-by-node.yaml", pod)
               if "hook" in s]
    assert step["hook"] == "kinrun_reconcile" and step["key"] == "default/p"
    assert step["reason"] == "added" and step["obj"]["name"] == "p"
    assert any("pods_by_node" in p for p in step["plugins"])
