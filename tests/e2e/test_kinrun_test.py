"""``kinrun test`` on the shipped test files: they pass, the output is byte-identical run to
run, every case records the same requests, Results and log lines in 20 runs, and each file
catches a one-field change to its example config (it is not trivial)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
TESTS = sorted((ROOT / "examples" / "tests").glob("*.test.yaml"))


def kinrun_test(*args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kinrun.cli", "test", *map(str, args)],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_every_example_config_has_a_test_file() -> None:
    """examples/tests holds <config>.test.yaml for each examples/configs/<config>.yaml."""
    configs = {p.stem for p in (ROOT / "examples" / "configs").glob("*.yaml")}
    assert {p.name.removesuffix(".test.yaml") for p in TESTS} == configs


RUNS = 20


def test_every_example_case_records_the_same_in_20_runs() -> None:
    """Every case of every example test file, run 20 times in one process: each run passes
    and records exactly what the first did (requests, Results, log lines, in order)."""
    from kinrun.testing.recording import Recorder
    from kinrun.testing.runner import prepare, run_case, transcript

    differences = []
    for path in TESTS:
        prepared = prepare(path)
        for case in prepared.tests.cases:
            runs = []
            for _ in range(RUNS):
                recorder = Recorder()
                outcome = run_case(prepared, case, timeout=10, recorder=recorder)
                runs.append((outcome.passed, transcript(recorder)))
            differing = sum(1 for run in runs if run != runs[0])
            if differing or not runs[0][0]:
                differences.append(f"{path.name} :: {case.name}: {differing} of {RUNS} runs "
                                   f"differ from the first (first passed: {runs[0][0]})")
    assert differences == []


def test_example_test_files_pass_twice_with_identical_output(tmp_path: Path) -> None:
    """kinrun test examples/tests/*.yaml exits 0, prints PASS per case, the same bytes twice,
    and writes JUnit XML with one testcase per case."""
    first = kinrun_test(*TESTS, "--junit", tmp_path / "junit.xml")
    assert first.returncode == 0, first.stdout + first.stderr
    second = kinrun_test(*TESTS)
    assert second.returncode == 0, second.stdout + second.stderr
    assert first.stdout == second.stdout
    lines = first.stdout.splitlines()
    assert lines[:-1] and all(line.startswith("PASS ") for line in lines[:-1])
    assert lines[-1] == f"{len(lines) - 1} passed"
    suites = ET.parse(tmp_path / "junit.xml").getroot()
    cases = suites.findall("./testsuite/testcase")
    assert len(cases) == len(lines) - 1 and not suites.findall(".//failure")


MUTATIONS = [
    pytest.param("pod-logger", "configs/pod-logger.yaml",
                 '"Sync/Add/Update for Pod {{', '"Sync/Add/Update of Pod {{',
                 ["logs[0] '^Sync/Add/Update for Pod mypod$' matched no line",
                  "INFO Sync/Add/Update of Pod mypod"], id="pod-logger-log-message"),
    pytest.param("configmap-children", "configs/configmap-children.yaml",
                 '\n                parent: "{{ obj.metadata.name }}"\n',
                 '\n                parent: "{{ obj.metadata.name }}x"\n',
                 ["-      parent: settings", "+      parent: settingsx"],
                 id="configmap-children-manifest-value"),
    pytest.param("configmap-children", "configs/configmap-children.yaml",
                 "name: \"{{ key.split('/')[1] }}-child\"", "name: \"{{ key.split('/')[1] }}-kid\"",
                 ["-  name: settings-child", "+  name: settings-kid"],
                 id="configmap-children-delete-target"),
    pytest.param("secondary-watch", "configs/secondary-watch.yaml",
                 "kinrun.dev/config-hash:", "kinrun.dev/config-sum:",
                 ["-            kinrun.dev/config-hash: 5b3c", "+            kinrun.dev/config-sum: 5b3c"],
                 id="secondary-watch-patch-path"),
    pytest.param("flow", "configs/flow.yaml",
                 'source: "{{ data.source }}"', 'source: "{{ data.source }}x"',
                 ["-      source: blue", "+      source: bluex"], id="flow-manifest-value"),
    pytest.param("children-pruning", "configs/children-pruning.yaml",
                 'name: "{{ child }}"', 'name: "{{ child }}x"',
                 ["-      name: a", "+      name: ax"], id="children-pruning-child-value"),
    pytest.param("children-pruning", "configs/children-pruning.yaml",
                 "as: child", "as: child\n            prune: false",
                 ["FAIL a name removed from the list is pruned", "-  verb: delete"],
                 id="children-pruning-prune-off"),
    pytest.param("secret-to-namespaces", "configs/secret-to-namespaces.yaml",
                 "                name: registry-credentials", "                name: registry-creds",
                 ["-  name: registry-credentials", "+  name: registry-creds"],
                 id="secret-to-namespaces-copy-name"),
    pytest.param("secret-to-namespaces", "configs/secret-to-namespaces.yaml",
                 "{{ [] if initial_list else", "{{ [] if true else",
                 ["FAIL a change of the source updates every copy"],
                 id="secret-to-namespaces-no-fan-out"),
    pytest.param("sharded", "configs/sharded.yaml", "default('5432')", "default('5431')",
                 ["FAIL the port defaults to 5432", "2 expected request(s) not sent as listed"],
                 id="sharded-default-port"),  # a Secret's values are hidden: no diff of them
    pytest.param("sharded", "configs/sharded.yaml",
                 "    watches: [{informer: dsns, mapTo: owner}]\n", "",
                 ["FAIL a deleted Secret is applied again for its owner"],
                 id="sharded-no-owner-watch"),
    pytest.param("pods-by-node", "plugins/pods_by_node.py",
                 'with %d other pod(s)"', 'with %d other pods"',
                 ["matched no line", "INFO Pod default/batch-1 is on node node-b with 0 other pods"],
                 id="pods-by-node-hook-message"),
]


@pytest.mark.parametrize(("example", "target", "old", "new", "shown"), MUTATIONS)
def test_a_changed_field_fails_the_example_test(tmp_path: Path, example: str, target: str,
                                                old: str, new: str, shown: list[str]) -> None:
    """One field of one action (or the hook's message) changed in a copy of the examples:
    its test file exits 1 and the diff names the field."""
    copy = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", copy, ignore=shutil.ignore_patterns("__pycache__"))
    path = copy / target
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} is not once in {target}"
    path.write_text(text.replace(old, new), encoding="utf-8")
    result = kinrun_test(copy / "tests" / f"{example}.test.yaml")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL " in result.stdout
    for line in shown:
        assert line in result.stdout, result.stdout
