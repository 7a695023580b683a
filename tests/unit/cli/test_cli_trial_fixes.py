"""What a fresh-user trial of the CLI found: one-line errors instead of tracebacks, render
checking the object against the controller, exit 5 for no selected case, typo'd commands,
the command list matching the parsers."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).parents[3]
CONFIG = ROOT / "examples" / "configs" / "secondary-watch.yaml"
TEST_FILE = ROOT / "examples" / "tests" / "pod-logger.test.yaml"
PLACEHOLDER = "00000000-0000-0000-0000-000000000000"

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


def kinrun(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinrun.cli", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    return line


# -- 1. manifests -o and test --junit: one line, exit 2 ----------------------------------------


def test_manifests_into_an_existing_file_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("x")
    result = kinrun("manifests", CONFIG, "-o", target)
    assert result.returncode == 2
    assert one_line(result) == f"kinrun manifests: -o {target}: exists and is not a directory"
    assert target.read_text() == "x"


def test_manifests_into_an_unwritable_place_is_one_line() -> None:
    result = kinrun("manifests", CONFIG, "-o", "/proc/nope")
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith("kinrun manifests: -o /proc/nope: cannot write"), line


@pytest.mark.parametrize("where", ["missing-dir", "a-dir"])
def test_junit_path_is_checked_before_any_case_runs(tmp_path: Path, where: str) -> None:
    junit = tmp_path / "nope" / "j.xml" if where == "missing-dir" else tmp_path
    result = kinrun("test", TEST_FILE, "--junit", junit)
    assert result.returncode == 2
    reason = "No such file or directory" if where == "missing-dir" else "Is a directory"
    assert one_line(result) == f"kinrun test: --junit {junit}: {reason}"
    assert result.stdout == ""  # no case ran


def test_junit_check_leaves_no_file_behind_and_the_report_is_written(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    result = kinrun("test", TEST_FILE, "--junit", junit, "-k", "nothing-matches-this")
    assert result.returncode == 5
    assert junit.read_bytes().startswith(b"<?xml")


# -- 5. -k selecting nothing: exit 5 -----------------------------------------------------------


def test_k_selecting_no_case_exits_5() -> None:
    result = kinrun("test", TEST_FILE, "-k", "nothing-matches-this")
    assert result.returncode == 5
    assert result.stderr.splitlines() == ["kinrun test: no case selected"]
    assert "deselected" in result.stdout


def test_exit_5_is_documented() -> None:
    help_text = kinrun("test", "--help").stdout
    assert re.search(r"^\s+5\s+no case selected", help_text, re.M), help_text
    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    [line] = [ln for ln in reference.splitlines() if ln.strip().startswith("kinrun test TESTFILE")]
    assert "5" in line.split("exit", 1)[1]


# -- 6. a mistyped command ---------------------------------------------------------------------


def test_mistyped_command_suggests_the_command() -> None:
    result = kinrun("valdiate", "x.yaml")
    assert result.returncode == 2
    assert one_line(result) == "kinrun: unknown command 'valdiate' (did you mean 'validate'?)"


def test_an_existing_file_named_like_a_typo_is_still_a_run(tmp_path: Path) -> None:
    (tmp_path / "valdiate").write_text("not: a config\n")
    result = subprocess.run([sys.executable, "-m", "kinrun.cli", "valdiate"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "unknown command" not in result.stderr


# -- 3, 4. render checks the object against the controller; reason; placeholder uid ------------


def _config(tmp_path: Path, informer: str, actions: str) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + f"informers: {{pods: {{{informer}}}}}\ncontrollers:\n"
                    f"  - name: c\n    for: pods\n    reconcile:\n{actions}")
    return path


REASON_LOG = ("      actions:\n        - log: {message: 'reason={{ reason }}'}\n"
              "      onDelete:\n        - log: {message: 'reason={{ reason }}'}\n")


def _object(tmp_path: Path, text: str, name: str = "o.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: u1}\n"


def test_render_refuses_another_kind(tmp_path: Path) -> None:
    config = _config(tmp_path, "apiVersion: v1, kind: Pod", REASON_LOG)
    secret = _object(tmp_path, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: default}\n")
    result = kinrun("render", config, "--object", secret)
    assert result.returncode == 2
    line = one_line(result)
    assert line.startswith(f"kinrun render: --object {secret}: v1 Secret is not what") \
        and "(v1 Pod)" in line, line


def test_render_refuses_an_unwatched_namespace(tmp_path: Path) -> None:
    config = _config(tmp_path, "apiVersion: v1, kind: Pod, namespaces: [default]", REASON_LOG)
    pod = _object(tmp_path, POD.replace("default", "kube-system"))
    result = kinrun("render", config, "--object", pod)
    assert result.returncode == 2
    line = one_line(result)
    assert "namespace 'kube-system' is not watched" in line and "default" in line, line


def test_render_refuses_an_object_the_selector_does_not_match(tmp_path: Path) -> None:
    config = _config(tmp_path, "apiVersion: v1, kind: Pod, labelSelector: app=web", REASON_LOG)
    result = kinrun("render", config, "--object", _object(tmp_path, POD))
    assert result.returncode == 2
    assert "does not match the selectors" in one_line(result)
    labelled = _object(tmp_path, POD.replace("uid: u1", "uid: u1, labels: {app: web}"), "l.yaml")
    assert kinrun("render", config, "--object", labelled).returncode == 0


@pytest.mark.parametrize("extra, reason", [
    ((), "added"), (("--old", "OBJ"), "updated"), (("--deleted",), "deleted"),
    (("--deleted", "--reason", "left"), "left"), (("--deleted", "--reason", "unknown"), "unknown"),
])
def test_render_reason(tmp_path: Path, extra: tuple[str, ...], reason: str) -> None:
    config = _config(tmp_path, "apiVersion: v1, kind: Pod", REASON_LOG)
    pod = _object(tmp_path, POD)
    args = [str(pod) if a == "OBJ" else a for a in extra]
    result = kinrun("render", config, "--object", pod, *args, "-o", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [{"log": f"reason={reason}", "level": "info"}]


def test_render_reason_needs_deleted(tmp_path: Path) -> None:
    config = _config(tmp_path, "apiVersion: v1, kind: Pod", REASON_LOG)
    result = kinrun("render", config, "--object", _object(tmp_path, POD), "--reason", "left")
    assert result.returncode == 2
    assert "--reason needs --deleted" in result.stderr


def test_render_gives_an_object_without_uid_a_placeholder(tmp_path: Path) -> None:
    parent = _object(tmp_path, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gen, "
                     "namespace: team, labels: {kinrun.dev/generate: 'true'}}\n")
    result = kinrun("render", ROOT / "examples/configs/configmap-children.yaml", "--object", parent)
    assert result.returncode == 0, result.stderr
    assert one_line(result) == \
        f"kinrun render: --object {parent} has no metadata.uid: using {PLACEHOLDER}"
    [step] = yaml.safe_load(result.stdout)
    [owner] = step["body"]["metadata"]["ownerReferences"]
    assert (owner["name"], owner["uid"]) == ("gen", PLACEHOLDER)


# -- 7. the command list matches the parsers (and the CLI reference, docs/cli.md) --------------


def _options(command: str) -> list[tuple[str, ...]]:
    """The option strings of each option of ``command`` (but --help and the log flags)."""
    from kinrun import cli

    parser = cli._parser(command)
    return [tuple(action.option_strings) for action in parser._actions if action.option_strings
            and not {"--help", "--log-level", "--log-format"} & set(action.option_strings)]


@pytest.mark.parametrize("command", ["validate", "schema", "plugins", "render", "rbac",
                                     "manifests", "test"])
def test_commands_help_and_readme_list_every_option(command: str) -> None:
    from kinrun import cli

    def entry(text: str, start: str) -> str:
        """The lines of ``text`` from the one starting with ``start`` to the next command's."""
        lines = text.splitlines()
        at = next(i for i, ln in enumerate(lines) if ln.strip().startswith(start))
        out = [lines[at]]
        for ln in lines[at + 1:]:
            if re.match(r"\s*(kinrun )?(validate|schema|plugins|render|rbac|manifests|test)\b", ln):
                break
            out.append(ln)
        return "\n".join(out)

    reference = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## Exit codes")[0]
    for text, start in ((cli.COMMANDS_HELP, command), (reference, f"kinrun {command}")):
        block = entry(text, start)
        missing = [opts for opts in _options(command) if not any(
            re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", block) for opt in opts)]
        assert not missing, (start, missing, block)


# -- 2, 8. the schema: a bound on workers; what probes.port 0 does ------------------------------


def test_validate_refuses_more_than_1000_workers(tmp_path: Path) -> None:
    config = _config(tmp_path, "apiVersion: v1, kind: Pod",
                     "      actions:\n        - log: x\n").read_text()
    path = tmp_path / "w.yaml"
    path.write_text(config.replace("    for: pods\n", "    for: pods\n    workers: 100000\n"))
    result = kinrun("validate", path)
    assert result.returncode == 2
    assert one_line(result).endswith("controllers[0].workers: 100000 is greater than 1000")


def test_probes_port_0_description_says_what_it_does() -> None:
    from kinrun.probes import Probes

    schema = json.loads((ROOT / "schemas" / "kinrun.schema.json").read_text(encoding="utf-8"))
    text = json.dumps(schema)
    [desc] = re.findall(r'"TCP port for /healthz and /readyz[^"]*"', text)
    assert "free port" in desc and "does not turn probes off" in desc
    probes = Probes(stuck_reconcile_after=600.0)
    try:
        assert probes.serve(0, "127.0.0.1") > 0  # what the description says: a free port
    finally:
        probes.close()
