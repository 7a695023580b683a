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


ORDER_CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap, labelSelector: role=src}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - log: "a={{ obj.data.a }}"
        - apply: {ownerReference: false, manifest: "{apiVersion: v1, kind: ConfigMap, metadata: {name: one}}"}
        - apply: {ownerReference: false, manifest: "{apiVersion: v1, kind: ConfigMap, metadata: {name: two}}"}
        - apply: {ownerReference: false, manifest: "{apiVersion: v1, kind: ConfigMap, metadata: {name: three}}"}
"""
SOURCE = ("{apiVersion: v1, kind: ConfigMap, metadata: {name: s, namespace: default, "
          "labels: {role: src}}, data: {a: '%s'}}")
TEST_HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\ncases:\n"


def test_a_log_step_the_case_lacks_and_a_twice_given_object_exit_2(tmp_path: Path) -> None:
    """A `step:` over the case's steps and two `given` objects of one identity are errors of
    the test file: exit 2, each at its line, before any case runs (no PASS, no FAIL)."""
    (tmp_path / "c.yaml").write_text(ORDER_CONFIG)
    path = tmp_path / "t.test.yaml"
    path.write_text(TEST_HEAD + f"""\
  - name: absent in a step that does not exist
    given: [{SOURCE % 1}]
    when: [{{updated: {{key: default/s, merge: {{data: {{a: "2"}}}}}}}}]
    expect: {{logs: [{{absent: "a=2", step: 2}}, {{match: "a=1", step: 0}}]}}
  - name: given twice
    given:
      - {SOURCE % 1}
      - {SOURCE % 2}
    expect: {{}}
""")
    result = kinrun_test(path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "PASS" not in result.stdout and "FAIL" not in result.stdout
    assert f"{path}:8:43: cases[0].expect.logs[0].step: the case has no step 2" in result.stderr
    assert (f"{path}:12:9: cases[1].given[1]: ConfigMap default/s is given twice: given[0] "
            f"(line 11) and given[1] (line 12)") in result.stderr


def test_an_unexpected_request_in_the_middle_is_the_one_the_failure_names(tmp_path: Path) -> None:
    """Sent one, two, three; expected one, three: exit 1, `two` sent but not expected, in
    its place, and nothing expected is missing."""
    (tmp_path / "c.yaml").write_text(ORDER_CONFIG)
    path = tmp_path / "t.test.yaml"
    path.write_text(TEST_HEAD + f"""\
  - name: skip the middle one
    given: [{SOURCE % 1}]
    expect:
      requests: [{{verb: apply, name: one}}, {{verb: apply, name: three}}]
""")
    result = kinrun_test(path)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert "requests: 1 request(s) sent but not expected" in lines
    marker = lines.index("+# sent but not expected:")
    assert lines[marker - 1:marker] == ["name: one"] and "+  name: two" in lines[marker:]
    assert lines[-3:-1] == ["- verb: apply", "name: three"]
    removed = [line for line in result.stdout.splitlines() if line.startswith("    -")]
    assert removed == ["    --- expected requests"], result.stdout


ADMISSION_CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {deployments: {apiVersion: apps/v1, kind: Deployment}}
controllers: [{name: noop, for: deployments, reconcile: {actions: [{log: "{{ key }}"}]}}]
admission:
  webhooks:
    - name: replicas.apps.example.com
      type: validating
      rules: [{apiGroups: [apps], apiVersions: [v1], resources: [deployments],
               operations: [CREATE, DELETE]}]
      validate:
        - {when: "operation == 'CREATE' and object.spec.replicas > 10", deny: too many replicas}
        - {when: "operation == 'DELETE' and object is not none", deny: "an object on DELETE"}
"""
WEB = ("{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, namespace: default}, "
       "spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, "
       "spec: {containers: [{name: c, image: nginx}]}}}}")


def test_admission_cases_send_what_kube_apiserver_sends(tmp_path: Path) -> None:
    """A Deployment without replicas arrives defaulted (replicas 1, as --embedded and a
    cluster send it), a DELETE sends oldObject and a null object: exit 0."""
    (tmp_path / "c.yaml").write_text(ADMISSION_CONFIG)
    path = tmp_path / "t.test.yaml"
    path.write_text(TEST_HEAD + f"""\
  - name: created without replicas
    admission: {{object: {WEB}}}
    expect: {{admission: {{allowed: true, object: {{spec: {{replicas: 1}}}}}}}}
  - name: deleted
    admission: {{operation: DELETE, oldObject: {WEB}}}
    expect: {{admission: {{allowed: true}}}}
""")
    result = kinrun_test(path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_delete_case_with_an_object_exits_2(tmp_path: Path) -> None:
    """DELETE sends no object: an error of the test file at the object, exit 2."""
    (tmp_path / "c.yaml").write_text(ADMISSION_CONFIG)
    path = tmp_path / "t.test.yaml"
    path.write_text(TEST_HEAD + f"""\
  - name: deleted
    admission: {{operation: DELETE, object: {WEB}}}
    expect: {{admission: {{allowed: true}}}}
""")
    result = kinrun_test(path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{path}:6:16: cases[0].admission: DELETE needs 'oldObject'" in result.stderr
    assert "cases[0].admission.object: DELETE sends no object (kube-apiserver sends object: " \
        "null): give the object being deleted as oldObject" in result.stderr
