"""The kinrun command as a user runs it: a subprocess, checking stdout, stderr and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[3]
EXAMPLES = sorted((ROOT / "examples" / "configs").glob("*.yaml"))
BAD = ROOT / "tests" / "data" / "bad-configs"


POD_CONFIG = ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
              "informers: {pods: {apiVersion: v1, kind: Pod}}\ncontrollers:\n")
"""The head of a Pod config for render tests; each test appends its controllers."""


def kinrun(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinrun.cli", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def expected(name: str) -> list[str]:
    """The corpus messages for tests/data/bad-configs/NAME.yaml, as loaded by its path."""
    text = (BAD / f"{name}.expected").read_text(encoding="utf-8")
    return text.replace("{dir}", str(BAD.resolve())).replace(f"{name}.yaml:", f"{BAD / name}.yaml:").splitlines()


@pytest.fixture
def pod_file(tmp_path: Path) -> Path:
    path = tmp_path / "pod.yaml"
    path.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, namespace: default, uid: u1}\n")
    return path


def test_validate_examples_prints_ok_per_file() -> None:
    """validate exits 0 and prints 'FILE: ok' for each valid file, nothing on stderr."""
    result = kinrun("validate", *EXAMPLES)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line for line in lines if line.endswith(": ok")] == [f"{p}: ok" for p in EXAMPLES]
    # a sharded example (sharded.yaml) also says which informers its ring shards
    assert [line for line in lines if not line.endswith(": ok")] == [
        f"{ROOT / 'examples/configs/sharded.yaml'}: sharding databases: informer {name}: {what}"
        for name, what in (("databases", "sharded (primary: by its own namespace/name)"),
                           ("dsns", "sharded (owned children: with their controller, "
                                    "databases)"))]
    assert result.stderr == ""


def test_validate_reports_every_error_and_exits_2() -> None:
    """A bad file among good ones: exit 2, ok lines for the good, every error of the bad."""
    good, bad = EXAMPLES[0], BAD / "many-errors.yaml"
    result = kinrun("validate", good, bad)
    assert result.returncode == 2
    assert result.stdout.splitlines() == [f"{good}: ok"]
    assert result.stderr.splitlines() == expected("many-errors")


def test_validate_relative_path_names_the_file_as_given() -> None:
    """Errors name the file exactly as the user typed it."""
    result = kinrun("validate", "tests/data/bad-configs/negative-workers.yaml")
    assert result.returncode == 2
    assert result.stderr == ("tests/data/bad-configs/negative-workers.yaml:9:14: "
                             "controllers[0].workers: -1 is less than 1\n")


def test_validate_without_files_is_a_usage_error() -> None:
    """validate needs at least one file (exit 2, usage on stderr)."""
    result = kinrun("validate")
    assert result.returncode == 2
    assert "usage: kinrun validate" in result.stderr


def test_schema_prints_the_schema_file() -> None:
    """schema prints exactly schemas/kinrun.schema.json, which parses as JSON."""
    result = kinrun("schema")
    assert result.returncode == 0
    assert result.stdout == (ROOT / "schemas" / "kinrun.schema.json").read_text(encoding="utf-8")
    assert json.loads(result.stdout)["title"] == "kinrun ControllerConfig"


def test_help_lists_commands_and_exit_codes() -> None:
    """--help exits 0 and documents the subcommands and exit codes."""
    result = kinrun("--help")
    assert result.returncode == 0
    for word in ("validate CONFIG", "schema", "plugins CONFIG", "render CONFIG", "exit codes",
                 "130", "--embedded", "--seed FILE", "--log-format"):
        assert word in result.stdout


def test_no_arguments_prints_help_and_exits_2() -> None:
    """Bare `kinrun` is a usage error showing the help."""
    result = kinrun()
    assert result.returncode == 2
    assert "usage: kinrun" in result.stderr and "exit codes" in result.stderr


def test_run_with_invalid_config_exits_2_before_starting() -> None:
    """`kinrun CONFIG` with a bad file prints its errors and exits 2."""
    result = kinrun(BAD / "dangling-informer.yaml")
    assert result.returncode == 2
    assert result.stderr.splitlines() == expected("dangling-informer")


def test_run_seed_without_embedded_is_a_usage_error(tmp_path: Path) -> None:
    """--seed only makes sense with --embedded."""
    seed = tmp_path / "seed.yaml"
    seed.write_text("[]\n")
    result = kinrun(EXAMPLES[0], "--seed", seed)
    assert result.returncode == 2
    assert "--seed needs --embedded" in result.stderr


def test_unknown_option_is_a_usage_error() -> None:
    """An unknown flag exits 2 with argparse's message."""
    result = kinrun(EXAMPLES[0], "--bogus")
    assert result.returncode == 2
    assert "unrecognized arguments: --bogus" in result.stderr


def test_render_prints_the_log_lines_of_pod_logger(pod_file: Path) -> None:
    """render shows what pod-logger would log for a Pod, as YAML, and sends nothing."""
    result = kinrun("render", ROOT / "examples/configs/pod-logger.yaml", "--object", pod_file)
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == [
        {"log": "Sync/Add/Update for Pod web-1", "level": "info"}]


def test_render_deleted_uses_on_delete_and_json(pod_file: Path) -> None:
    """--deleted renders onDelete with the object's key; -o json prints JSON."""
    result = kinrun("render", ROOT / "examples/configs/pod-logger.yaml", "--object", pod_file,
                    "--deleted", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        {"log": "Pod default/web-1 does not exist anymore", "level": "info"}]


def test_render_apply_with_owner_reference(tmp_path: Path) -> None:
    """configmap-children renders one server-side apply of <name>-child owned by the parent."""
    parent = tmp_path / "cm.yaml"
    parent.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gen, namespace: team, "
                      "uid: u2, labels: {kinrun.dev/generate: 'true'}}\n")
    result = kinrun("render", ROOT / "examples/configs/configmap-children.yaml", "--object", parent)
    assert result.returncode == 0, result.stderr
    [step] = yaml.safe_load(result.stdout)
    assert (step["verb"], step["kind"], step["name"], step["namespace"]) == \
        ("apply", "ConfigMap", "gen-child", "team")
    [owner] = step["body"]["metadata"]["ownerReferences"]
    assert (owner["name"], owner["uid"], owner["controller"]) == ("gen", "u2", True)


def test_render_template_failure_exits_1(tmp_path: Path, pod_file: Path) -> None:
    """A template that fails for this object is a runtime error naming the config location."""
    config = tmp_path / "c.yaml"
    config.write_text(POD_CONFIG +
                      "  - name: c\n    for: pods\n    reconcile:\n      actions:\n"
                      "        - log: \"{% set k = 'nmae' %}{{ obj.metadata[k].upper() }}\"\n")
    result = kinrun("render", config, "--object", pod_file)
    assert result.returncode == 1
    assert f"{config}:9: controllers[0].reconcile.actions[0]" in result.stderr
    assert "nmae" in result.stderr


def test_render_rejects_a_file_that_is_not_an_object(tmp_path: Path) -> None:
    """--object must hold a Kubernetes object (exit 2)."""
    obj = tmp_path / "x.yaml"
    obj.write_text("- 1\n")
    result = kinrun("render", ROOT / "examples/configs/pod-logger.yaml", "--object", obj)
    assert result.returncode == 2
    assert "not a Kubernetes object" in result.stderr


def test_plugins_lists_hooks_of_a_file_plugin() -> None:
    """plugins names each plugin, where it came from, and its hooks."""
    result = kinrun("plugins", ROOT / "examples/configs/pods-by-node.yaml")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("./../plugins/pods_by_node.py  (file ")
    assert "kinrun_reconcile" in lines[1] and "kinrun_index_funcs" in lines[1]


def test_render_needs_controller_when_there_are_several(tmp_path: Path, pod_file: Path) -> None:
    """With two controllers, render asks for --controller, and rejects an unknown one."""
    config = tmp_path / "two.yaml"
    config.write_text(POD_CONFIG +
                      "  - {name: a, for: pods, reconcile: {actions: [{log: a}]}}\n"
                      "  - {name: b, for: pods, reconcile: {actions: [{log: b}]}}\n")
    missing = kinrun("render", config, "--object", pod_file)
    assert missing.returncode == 2 and "give --controller (a, b)" in missing.stderr
    unknown = kinrun("render", config, "--object", pod_file, "--controller", "c")
    assert unknown.returncode == 2 and "no controller 'c' (known: a, b)" in unknown.stderr
    chosen = kinrun("render", config, "--object", pod_file, "--controller", "b")
    assert chosen.returncode == 0 and yaml.safe_load(chosen.stdout) == [{"log": "b", "level": "info"}]


def test_render_sees_an_empty_cache_for_lookups(tmp_path: Path) -> None:
    """render of an action that looks up an informer's index works (empty cache, no cluster)."""
    obj = tmp_path / "deployment.yaml"
    obj.write_text("apiVersion: apps/v1\nkind: Deployment\n"
                   "metadata: {name: web, namespace: default, generation: 3, uid: u-1}\n")
    done = kinrun("render", ROOT / "examples/configs/secondary-watch.yaml", "--object", obj,
                  "-o", "json")
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)
    patch = next(s for s in steps if s.get("verb") == "patch")
    assert "kinrun.dev/config-hash" in patch["body"]["spec"]["template"]["metadata"]["annotations"]


def test_validate_refuses_hooks_that_no_plugin_implements(tmp_path: Path) -> None:
    """validate: reconcile.hooks with no plugin implementing kinrun_reconcile is an error (exit 2)."""
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
                      "informers:\n  pods: {apiVersion: v1, kind: Pod}\n"
                      "controllers:\n  - {name: c, for: pods, reconcile: {hooks: true}}\n")
    done = kinrun("validate", config)
    assert done.returncode == 2
    assert f"{config}:6:5: controllers[0].reconcile.hooks: " in done.stderr
    assert "kinrun_reconcile" in done.stderr


def test_validate_refuses_a_plugin_that_fails_to_import(tmp_path: Path) -> None:
    """validate imports plugins: one raising at import is an error at the plugin's
    file:line:column in the config."""
    (tmp_path / "bad.py").write_text("raise RuntimeError('boom at import')\n")
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
                      "plugins: [./bad.py]\n"
                      "informers:\n  pods: {apiVersion: v1, kind: Pod}\n"
                      "controllers:\n  - {name: c, for: pods, reconcile: {hooks: true}}\n")
    done = kinrun("validate", config)
    assert done.returncode == 2
    assert f"{config}:3:11: plugins[0]: " in done.stderr and "boom at import" in done.stderr


def test_render_deleted_gives_the_object_as_old(tmp_path: Path, pod_file: Path) -> None:
    """As at run time, an onDelete template sees the deleted object's final state as ``old``."""
    config = tmp_path / "c.yaml"
    config.write_text(POD_CONFIG +
                      "  - name: c\n    for: pods\n    reconcile:\n      onDelete:\n"
                      "        - log: {message: 'gone: {{ old.metadata.name }}'}\n")
    result = kinrun("render", config, "--object", pod_file, "--deleted", "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"log": "gone: web-1", "level": "info"}]


def test_render_object_that_is_not_yaml_names_file_line_and_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("metadata:\n  name: [x\n")
    result = kinrun("render", ROOT / "examples/configs/pod-logger.yaml", "--object", bad)
    assert result.returncode == 2
    assert f"--object {bad}:3:1: not YAML/JSON" in result.stderr
