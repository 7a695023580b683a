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
