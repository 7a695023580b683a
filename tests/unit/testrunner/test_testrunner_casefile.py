"""kinrun test's case file checks that need the whole case: a log entry's ``step`` is one the
case has, and no two ``given`` objects are the same object. Both are errors of the test file
(exit 2), located, found when it is loaded, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.errors import ConfigError
from kinrun.testing.casefile import load_test_file

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\ncases:\n"
CM = "{apiVersion: v1, kind: ConfigMap, metadata: {name: s, namespace: default}, data: %s}"


def _write(tmp_path: Path, cases: str) -> Path:
    (tmp_path / "c.yaml").write_text("apiVersion: kinrun.dev/v1alpha1\n")  # not loaded here
    path = tmp_path / "t.test.yaml"
    path.write_text(HEAD + cases)
    return path


def test_a_log_step_the_case_does_not_have_is_a_located_error(tmp_path: Path) -> None:
    """One `when` step: steps 0 and 1 exist; `step: 2` (absent or match) is refused at its
    `step` key's value, every such entry, with what the case has."""
    path = _write(tmp_path, f"""\
  - name: one step
    given: [{CM % "{a: '1'}"}]
    when:
      - updated: {{key: default/s, merge: {{data: {{a: "2"}}}}}}
    expect:
      logs:
        - {{absent: "a=2", step: 2}}
        - {{match: "a=1", step: 0}}
        - {{match: "a=2", step: 1}}
  - name: no steps
    expect:
      logs: [{{match: x, step: 7}}]
""")
    with pytest.raises(ConfigError) as err:
        load_test_file(path)
    lines = str(err.value).splitlines()
    assert [line for line in lines if "step" in line] == [
        f"{path}:11:33: cases[0].expect.logs[0].step: the case has no step 2: step 0 is the "
        f"start, 1 its when step",
        f"{path}:16:31: cases[1].expect.logs[0].step: the case has no step 7: step 0 is the "
        f"start, and it has no when steps",
    ], lines


def test_log_steps_the_case_has_are_accepted(tmp_path: Path) -> None:
    """Steps 0 to N (N when steps) load."""
    path = _write(tmp_path, """\
  - name: two steps
    when: [{after: 1s}, {after: 1s}]
    expect:
      logs: [{match: x, step: 0}, {absent: y, step: 2}, "z"]
""")
    [case] = load_test_file(path).cases
    assert [e.step for e in case.expect.logs] == [0, 2, None]


def test_two_given_objects_with_one_identity_are_a_located_error(tmp_path: Path) -> None:
    """The same apiVersion, kind, namespace and name twice in `given` (inline or from a
    `file:`) is refused at the second entry, naming the first's line: the server would hold
    only the last, as an `added:` step of an existing object is refused."""
    (tmp_path / "seed.yaml").write_text(CM % "{a: '3'}" + "\n")
    path = _write(tmp_path, f"""\
  - name: twice
    given:
      - {CM % "{a: '1'}"}
      - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: s, namespace: other}}}}
      - {CM % "{a: '2'}"}
      - file: seed.yaml
    expect: {{}}
""")
    with pytest.raises(ConfigError) as err:
        load_test_file(path)
    assert str(err.value).splitlines() == [
        f"{path}:9:9: cases[0].given[2]: ConfigMap default/s is given twice: given[0] (line "
        f"7) and given[2] (line 9); the server would hold only the last: give it once",
        f"{path}:10:15: cases[0].given[3].file: ConfigMap default/s is given twice: given[0] "
        f"(line 7) and given[3] (line 10); the server would hold only the last: give it once",
    ]


def test_given_objects_that_differ_in_one_part_of_their_identity_load(tmp_path: Path) -> None:
    """Another kind, apiVersion, namespace or name is another object."""
    path = _write(tmp_path, """\
  - name: distinct
    given:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: s, namespace: default}}
      - {apiVersion: v1, kind: Secret, metadata: {name: s, namespace: default}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: s, namespace: other}}
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: t, namespace: default}}
      - {apiVersion: example.com/v1, kind: ConfigMap, metadata: {name: s, namespace: default}}
    expect: {}
""")
    [case] = load_test_file(path).cases
    assert len(case.given) == 5


def test_one_file_holding_an_object_twice_is_a_located_error(tmp_path: Path) -> None:
    """Two documents of one `given` file with one identity: the error names that entry."""
    (tmp_path / "seed.yaml").write_text(CM % "{a: '1'}" + "\n---\n" + CM % "{a: '2'}" + "\n")
    path = _write(tmp_path, "  - name: twice\n    given: [{file: seed.yaml}]\n    expect: {}\n")
    with pytest.raises(ConfigError, match=r"t.test.yaml:6:20: cases\[0\].given\[0\].file: "
                                          r"ConfigMap default/s is given twice: given\[0\] \(line "
                                          r"6\), in two of its documents;"):
        load_test_file(path)
