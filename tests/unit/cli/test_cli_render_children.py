"""kinrun render for applySet (the planned writes, prune included) and for results of earlier
actions (placeholders: render has no server)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).parents[3]


def kinrun(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinrun.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


def test_render_children_pruning_shows_parent_patch_applies_and_prune(tmp_path: Path) -> None:
    parent = tmp_path / "team.yaml"
    parent.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: team, namespace: default,"
                      " uid: u1, labels: {kinrun.dev/children: 'true'}}\ndata: {names: 'a b'}\n")
    result = kinrun("render", "examples/configs/children-pruning.yaml", "--object", parent)
    assert result.returncode == 0, result.stderr
    steps = yaml.safe_load(result.stdout)
    assert [s.get("verb", next(iter(s))) for s in steps] == ["patch", "apply", "apply", "prune"]
    assert [s.get("name") for s in steps[1:3]] == ["team-a", "team-b"]
    assert steps[3]["prune"]["keep"] == ["ConfigMap default/team-a", "ConfigMap default/team-b"]


def test_render_shows_a_placeholder_for_a_result(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - name: make-job
          create:
            manifest: |
              apiVersion: batch/v1
              kind: Job
              metadata: {generateName: "{{ obj.metadata.name }}-"}
        - log: "created {{ results['make-job'].metadata.name }}"
""")
    obj = tmp_path / "cm.yaml"
    obj.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: d, uid: u}\n")
    result = kinrun("render", config, "--object", obj)
    assert result.returncode == 0, result.stderr
    steps = yaml.safe_load(result.stdout)
    assert steps[0]["verb"] == "create" and steps[0]["body"]["metadata"]["generateName"] == "cm-"
    assert steps[1]["log"] == "created <result of action 'make-job' at metadata.name>"


def test_render_graph_draws_the_children_graph() -> None:
    """--graph mermaid|dot: a node per child with its kind, an edge per dependency (from
    children.NAME reads and dependsOn), includeWhen children dashed; no --object needed."""
    config = "examples/configs/web-application.yaml"
    mermaid = kinrun("render", config, "--graph", "mermaid")
    assert mermaid.returncode == 0, mermaid.stderr
    lines = mermaid.stdout.splitlines()
    assert lines[0] == "flowchart LR" and '  deployment["deployment: Deployment"]' in lines
    assert [l.strip() for l in lines if "-->" in l] == [
        "config --> deployment", "deployment --> service", "service --> ingress"]
    assert "  class ingress conditional" in lines
    dot = kinrun("render", config, "--graph", "dot")
    assert '"ingress" [label="ingress\\nIngress", style=dashed];' in dot.stdout
    assert '  "config" -> "deployment";' in dot.stdout.splitlines()
    missing = kinrun("render", config)
    assert missing.returncode != 0 and "--object" in missing.stderr


def test_render_shows_each_childs_state(tmp_path: Path) -> None:
    """A render of a new WebApplication applies the ConfigMap and lists the graph: the
    Deployment waits for it, the Ingress for the Service."""
    app = tmp_path / "app.yaml"
    app.write_text("apiVersion: example.com/v1alpha1\nkind: WebApplication\nmetadata: {name: shop, "
                   "namespace: default, uid: u1}\nspec: {image: nginx, replicas: 1, port: 80, "
                   "ingress: {enabled: true, host: h}}\n")
    result = kinrun("render", "examples/configs/web-application.yaml", "--object", app)
    assert result.returncode == 0, result.stderr
    steps = yaml.safe_load(result.stdout)
    graph = next(s["children"] for s in steps if "children" in s)
    assert {n: s["state"] for n, s in graph.items()} == {
        "config": "not-ready", "deployment": "waiting", "service": "waiting", "ingress": "waiting"}
    assert [s["kind"] for s in steps if s.get("verb") == "apply"] == ["ConfigMap"]


def test_a_var_read_only_by_include_when_is_evaluated(tmp_path: Path) -> None:
    """A var a child's includeWhen (an expression, no {{ }}) reads is evaluated for it: it
    was left out, so every render failed with 'wanted' is undefined."""
    config = tmp_path / "c.yaml"
    config.write_text("""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      vars:
        wanted: "obj.data.color == 'blue'"
      actions:
        - children:
            resources:
              - name: cfg
                includeWhen: "wanted"
                manifest:
                  apiVersion: v1
                  kind: ConfigMap
                  metadata: {name: "{{ obj.metadata.name }}-child"}
                  data: {a: b}
""")
    obj = tmp_path / "cm.yaml"
    obj.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: d, uid: u}\n"
                   "data: {color: blue}\n")
    result = kinrun("render", config, "--object", obj)
    assert result.returncode == 0, result.stderr
    assert "cm-child" in result.stdout
