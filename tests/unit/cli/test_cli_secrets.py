"""Secrets stay secret: a Secret's value never shows in ``kinrun render``, ``kinrun test`` (a
passing and a failing case), the controller's log lines or its Events, unless
``--show-secrets`` asks for it (then render and the test diff show it)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from kinrun import cli

PLAIN = "hunter2-s3cret"
ENCODED = "aHVudGVyMi1zM2NyZXQ="  # base64 of PLAIN
WRONG = "d3JvbmctdmFsdWU="  # base64 of "wrong-value"

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  secrets: {apiVersion: v1, kind: Secret, labelSelector: copy=me}
controllers:
  - name: copier
    for: secrets
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: Secret
              metadata: {name: "{{ obj.metadata.name }}-copy"}
              data: {password: "{{ obj.data.password }}"}
        - apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-leak"}
              data: {copy: "{{ obj.data.password | b64decode }}"}
        - log: "copied {{ obj.metadata.name }} with {{ obj.data.password }} ({{ obj.data.password | b64decode }})"
        - event: {reason: Copied, message: "password is {{ obj.data.password | b64decode }}"}
"""

SECRET = f"""\
apiVersion: v1
kind: Secret
metadata: {{name: db, namespace: default, uid: 0b7d5f0e-0000-4000-8000-000000000001, labels: {{copy: me}}}}
data: {{password: {ENCODED}}}
"""

TESTS = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: copier.yaml
cases:
  - name: copies the secret
    given:
      - apiVersion: v1
        kind: Secret
        metadata: {name: db, namespace: default, labels: {copy: me}}
        data: {password: %(value)s}
    expect:
      requests:
        - {key: default/db, verb: apply, kind: Secret, name: db-copy, body: {data: {password: %(expected)s}}}
        - {key: default/db, verb: apply, kind: ConfigMap, name: db-leak, body: {data: {copy: %(copied)s}}}
        - {key: default/db, verb: create, kind: Event, body: {message: "password is <redacted>"}}
      logs: ["^copied db with <redacted> \\\\(<redacted>\\\\)$"]
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "copier.yaml").write_text(CONFIG)
    (tmp_path / "secret.yaml").write_text(SECRET)
    return tmp_path


def _assert_hidden(text: str) -> None:
    assert ENCODED not in text and PLAIN not in text, text


def test_render_shows_sizes_and_redacted_messages(files: Path, capsys) -> None:
    """render: the apply body shows the size, the log line and the Event message say
    <redacted>; --show-secrets prints the value in the request (messages stay redacted, as
    they would be logged)."""
    args = ["render", str(files / "copier.yaml"), "--object", str(files / "secret.yaml")]
    assert cli.main(args) == 0
    out = capsys.readouterr()
    _assert_hidden(out.out + out.err)
    assert "password: '<redacted: 14 bytes>'" in out.out
    assert "copied db with <redacted> (<redacted>)" in out.out
    assert "password is <redacted>" in out.out
    assert "copy: <redacted>" in out.out  # copied into a ConfigMap: still the Secret's value

    assert cli.main([*args, "--show-secrets"]) == 0
    shown = capsys.readouterr().out
    assert f"password: {ENCODED}" in shown and f"copy: {PLAIN}" in shown
    assert "copied db with <redacted> (<redacted>)" in shown


def test_kinrun_test_passing_and_failing_cases_hide_the_value(files: Path, capsys,
                                                                caplog) -> None:
    """A passing case prints nothing secret and logs nothing secret (caplog: every record of
    the run, the Event's message checked in the case); a failing case's diff shows sizes on
    both sides of the Secret, and <redacted> for the value a template copied into a
    ConfigMap; with --show-secrets the diff shows the sent values."""
    test_file = files / "copier.test.yaml"
    test_file.write_text(TESTS % {"value": ENCODED, "expected": ENCODED, "copied": PLAIN})
    caplog.set_level(logging.DEBUG)
    assert cli.main(["test", str(test_file)]) == 0
    out = capsys.readouterr()
    assert "PASS copies the secret" in out.out
    _assert_hidden(out.out + out.err)
    messages = [r.getMessage() for r in caplog.records]
    assert any("copied db with <redacted>" in m for m in messages)
    for message in messages:
        _assert_hidden(message)

    test_file.write_text(TESTS % {"value": ENCODED, "expected": WRONG, "copied": "other"})
    assert cli.main(["test", str(test_file)]) == 1
    out = capsys.readouterr()
    assert "FAIL copies the secret" in out.out
    _assert_hidden(out.out + out.err)
    assert WRONG not in out.out and "<redacted: 14 bytes>" in out.out
    assert "copy: <redacted>" in out.out  # the ConfigMap's copy of the value, sent

    assert cli.main(["test", str(test_file), "--show-secrets"]) == 1
    out = capsys.readouterr().out
    assert ENCODED in out and WRONG in out and f"copy: {PLAIN}" in out
