"""kinrun test's library: test file errors, -k, containment and pairing, and cases that
exercise requeues, retries and the fake clock on the embedded server."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.errors import ConfigError
from kinrun.testing.casefile import load_test_file
from kinrun.testing.expectations import check_requests, contains
from kinrun.testing.recording import Sent
from kinrun.testing.runner import prepare, run_case, selector

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\n"
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - log: "seen {{ obj.metadata.name }} {{ obj.data.mode }}"
        - requeueAfter: "{{ obj.data.every | default(0) }}"
"""
CM = "{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}, data: %s}"


def write(tmp_path: Path, cases: str, config: str = CONFIG) -> Path:
    (tmp_path / "c.yaml").write_text(config)
    path = tmp_path / "t.test.yaml"
    path.write_text(HEAD + "cases:\n" + cases)
    return path


def run_only(path: Path):
    prepared = prepare(path)
    return [run_case(prepared, case, timeout=10) for case in prepared.tests.cases]


def test_errors_are_located_and_all_reported(tmp_path: Path) -> None:
    """Unknown keys, a step with no kind and a bad regex: file:line:col: path: message each."""
    path = write(tmp_path, "  - name: x\n    wehn: []\n    expect: {logs: ['(']}\n"
                           "  - name: y\n    when: [{later: 1s}]\n    expect: {}\n")
    with pytest.raises(ConfigError) as err:
        load_test_file(path)
    text = str(err.value)
    assert f"{path}:6:5: cases[0].wehn: unknown key 'wehn' (did you mean 'when'?" in text
    assert f"{path}:9:13: cases[1].when[0].later: unknown key 'later'" in text


def test_a_bad_regex_and_an_unknown_controller_are_errors(tmp_path: Path) -> None:
    """Checks after the schema: regexes compile; a case's controller exists in the config."""
    with pytest.raises(ConfigError, match=r"t.test.yaml:6:21: cases\[0\].expect.logs\[0\]: "
                                          r"'\(' is not a regular expression"):
        load_test_file(write(tmp_path, "  - name: x\n    expect: {logs: ['(']}\n"))
    with pytest.raises(ConfigError, match=r"controller 'nope': no such controller"):
        prepare(write(tmp_path, "  - name: x\n    controller: nope\n    expect: {}\n"))


@pytest.mark.parametrize(("expression", "picked"), [
    pytest.param("child", ["applies a child", "deletes the child"], id="substring"),
    pytest.param("child and not delete", ["applies a child"], id="and-not"),
    pytest.param("(label or APPLIES)", ["applies a child", "ignores label"], id="or-case"),
    pytest.param("*the*", ["deletes the child"], id="glob"),
])
def test_k_selects_like_pytest(expression: str, picked: list[str]) -> None:
    """-k: case-insensitive substrings and globs with and/or/not and parentheses."""
    names = ["applies a child", "deletes the child", "ignores label"]
    assert [n for n in names if selector(expression)(n)] == picked


def test_body_containment() -> None:
    """Mappings by given keys, lists item by item with equal length, scalars equal (1 != true)."""
    assert contains({"a": {"b": [1, {"c": 2}]}}, {"a": {"b": [1, {"c": 2, "d": 3}], "e": 4}})
    assert not contains({"a": [1]}, {"a": [1, 2]})
    assert not contains({"a": True}, {"a": 1})
    assert not contains({"a": None}, {})


def _sent(key: str, seq: int, name: str) -> Sent:
    return Sent("c", key, 0, seq, {"verb": "delete", "kind": "ConfigMap", "name": name})


def test_order_is_checked_within_a_key_not_between_keys() -> None:
    """Requests of two keys may be listed interleaved; swapping two of one key fails."""
    sent = [_sent("ns/a", 0, "a1"), _sent("ns/a", 1, "a2"), _sent("ns/b", 0, "b1")]
    assert check_requests([{"name": "b1"}, {"name": "a1"}, {"name": "a2"}], sent) == []
    [failure] = check_requests([{"name": "a2"}, {"name": "a1"}, {"name": "b1"}], sent)
    assert failure.message == "requests: 1 expected request(s) not sent as listed"


def test_requeue_fires_only_when_the_clock_is_stepped(tmp_path: Path) -> None:
    """requeueAfter 30s: no second reconcile until `after: 30s`, then exactly one more."""
    path = write(tmp_path, f"""\
  - name: not yet
    given: [{CM % "{mode: x, every: '30'}"}]
    when: [{{after: 29s}}]
    expect:
      results: {{default/a: {{outcome: requeue, after: 30s}}}}
      logs: ["seen a x", "^(?!seen)"]
  - name: fired
    given: [{CM % "{mode: x, every: '30'}"}]
    when: [{{after: 30s}}]
    expect:
      logs: ["seen a x", "seen a x"]
""")
    first, second = run_only(path)
    assert first.failures and "logs[1]" in first.failures[0].message  # one reconcile only
    assert second.passed, second.failures


def test_a_failing_template_is_retried_after_the_clock_moves(tmp_path: Path) -> None:
    """A reconcile that fails: result retry with its message; the retry waits for `after:`."""
    path = write(tmp_path, f"""\
  - name: fails
    given: [{CM % "{}"}]
    when: [{{after: 1s}}]
    expect:
      requests: []
      results: {{default/a: {{outcome: retry, message: "mode"}}}}
""")
    [outcome] = run_only(path)
    assert outcome.passed, [f.text() for f in outcome.failures]


def test_steps_update_and_delete_with_from(tmp_path: Path) -> None:
    """updated.from creates the object first when absent; deleted ns/name uses the primary kind."""
    path = write(tmp_path, f"""\
  - name: update
    when:
      - updated: {{from: {CM % "{mode: one}"}, to: {CM % "{mode: two}"}}}
      - deleted: default/a
    expect:
      logs: ["seen a one", "seen a two"]
      results: {{default/a: done}}
""")
    [outcome] = run_only(path)
    assert outcome.passed, [f.text() for f in outcome.failures]


def test_a_bad_duration_is_a_located_error(tmp_path: Path) -> None:
    """`after: soon` is refused by the schema at its line and column, not with a traceback."""
    path = write(tmp_path, "  - name: x\n    when: [{after: soon}]\n    expect: {}\n")
    with pytest.raises(ConfigError, match=r"t.test.yaml:6:20: cases\[0\].when\[0\].after: "
                                          r"'soon': A duration"):
        load_test_file(path)


SCHEDULED = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    schedule: "0 * * * *"
    reconcile:
      actions:
        - log: "{{ reason }} {{ key }}"
"""


def test_schedule_fires_when_the_clock_is_stepped_past_the_hour(tmp_path: Path) -> None:
    """The cases' clock starts at 2023-11-14T22:13:20Z: `after: 46m` is before 23:00 (no
    scheduled reconcile), `after: 47m` past it (one)."""
    path = write(tmp_path, f"""\
  - name: before the hour
    given: [{CM % "{}"}]
    when: [{{after: 46m}}]
    expect:
      logs: ["^added default/a$", "^scheduled default/a$"]
  - name: past the hour
    given: [{CM % "{}"}]
    when: [{{after: 47m}}]
    expect:
      logs: ["^added default/a$", "^scheduled default/a$"]
""", SCHEDULED)
    before, past = run_only(path)
    assert before.failures and "logs[1]" in before.failures[0].message
    assert past.passed, past.failures


SLOW = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
templates: {budget: {timeout: 1ms, maxLoopSteps: 1000000}}
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - log: "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}done"
"""
"""A render of a million loop steps (seconds of CPU, never within 1 ms) under a 1 ms timeout."""


def test_the_render_timeout_is_real_time_under_kinrun_test(tmp_path: Path) -> None:
    """kinrun test fixes the clock, but a render's timeout is real time there as in a run: a
    template that a run's budget stops is a retry in a case too, never a pass."""
    path = write(tmp_path, f"""\
  - name: slow
    given: [{CM % "{}"}]
    expect:
      results: {{default/a: {{outcome: retry, message: "templates.budget.timeout"}}}}
""", config=SLOW)
    [outcome] = run_only(path)
    assert outcome.passed, [f.text() for f in outcome.failures]


def test_the_render_timeout_is_real_time_under_kinrun_render(tmp_path: Path) -> None:
    """kinrun render (a fixed clock too) stops the same template at its timeout."""
    import subprocess
    import sys

    (tmp_path / "c.yaml").write_text(SLOW)
    (tmp_path / "cm.yaml").write_text(CM % "{}")
    run = subprocess.run([sys.executable, "-m", "kinrun.cli", "render", str(tmp_path / "c.yaml"),
                          "--object", str(tmp_path / "cm.yaml")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode != 0 and "templates.budget.timeout" in run.stderr, run.stderr
