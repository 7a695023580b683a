"""The checks of what an action rendered (a ``requeueAfter`` that is not a duration, a
condition's ``status``, ``reason``, ``type``, ``observedGeneration``, a ``status`` that is not
a mapping or a list) may quote the rendered value; the reconciled Secret's values are hidden
in that message where the action's error is made, so the live log, ``kinrun render`` and
``kinrun test`` say the same thing and none of them says the value (docs/secrets.md)."""

from __future__ import annotations

import base64
import json
import logging
import traceback
from pathlib import Path
from typing import Any

import pytest

from kinrun import cli
from kinrun.actions import RenderError, compile_actions
from kinrun.clock import FakeClock
from kinrun.controller import Controller
from kinrun.reconcile import Reconciler
from kinrun.workqueue import RateLimitingQueue

VALUE = 'Top-Secret "V" 42\nline \'two\''
"""Two lines, both quotes: ``repr`` and JSON escape it in a message."""
LONG = "Top-Secret-Value-42-" * 3
"""Longer than a duration error quotes: no cut piece of it may be shown either."""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _secret(value: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db", "namespace": "default", "uid": "u-1"},
            "data": {"password": _b64(value)}}


PW = "{{ obj.data.password | b64decode }}"
TOJSON = "{{ obj.data.password | b64decode | tojson }}"

CHECKS = {
    "requeueAfter": {"requeueAfter": PW},
    "condition-status": {"status": {"conditions": [
        {"type": "Ready", "status": PW, "reason": "Synced"}]}},
    "condition-reason": {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": PW}]}},
    "condition-type": {"status": {"conditions": [
        {"type": PW, "status": "True", "reason": "Synced"}]}},
    "condition-observedGeneration": {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "Synced", "observedGeneration": PW}]}},
    "condition-not-a-mapping": {"status": {"conditions": [PW]}},
    "fields-not-a-mapping": {"status": {"fields": TOJSON}},
    "conditions-not-a-list": {"status": {"conditions": TOJSON}},
}
"""Each fails its check while reconciling the Secret, its message quoting the value."""


def _assert_hidden(text: str, value: str = VALUE) -> None:
    pieces = [*value.splitlines(), json.dumps(value)[1:-1], repr(value)[1:-1], value[:12]]
    leaked = [piece for piece in pieces if piece in text]
    assert not leaked, f"{leaked} in {text!r}"


@pytest.mark.parametrize("action", CHECKS.values(), ids=CHECKS.keys())
def test_a_check_error_hides_the_reconciled_secrets_value(action: dict[str, Any]) -> None:
    """The RenderError names the check and shows <redacted> where it quoted the value (as
    written, repr- or JSON-escaped); its traceback chains no error that quotes it."""
    with pytest.raises(RenderError) as info:
        compile_actions([action], controller="c").render(key="default/db", obj=_secret(VALUE))
    _assert_hidden(str(info.value) + "".join(traceback.format_exception(info.value)))
    assert "<redacted>" in str(info.value)


def test_a_long_value_is_described_not_cut() -> None:
    """A duration error does not quote the first characters of a long rendered value (a
    piece no redaction recognises): it gives its type and size."""
    with pytest.raises(RenderError, match="a str of 60 characters is not a duration") as info:
        compile_actions([{"requeueAfter": PW}], controller="c").render(
            key="default/db", obj=_secret(LONG))
    _assert_hidden(str(info.value), LONG)


def _retry_line(action: dict[str, Any], caplog: pytest.LogCaptureFixture) -> str:
    """The controller's ``will retry`` line after one reconcile of the Secret."""
    reconciler = Reconciler("c", actions=compile_actions([action], controller="c"))
    queue = RateLimitingQueue(clock=FakeClock(), name="c")
    controller = Controller("c", queue, lambda key: _secret(VALUE), reconciler)
    controller.enqueue("default/db")
    with caplog.at_level(logging.WARNING, logger="kinrun.controller"):
        controller.process_next_item()
    queue.shut_down()
    return next(r.getMessage() for r in caplog.records if "will retry" in r.getMessage())


@pytest.mark.parametrize("name", ["requeueAfter", "condition-reason", "conditions-not-a-list"])
def test_the_live_log_hides_the_value(name: str, caplog: pytest.LogCaptureFixture) -> None:
    """The running controller's WARNING line (what the log shows) has <redacted>, not the
    value."""
    line = _retry_line(CHECKS[name], caplog)
    _assert_hidden(line)
    assert "<redacted>" in line


CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  secrets: {apiVersion: v1, kind: Secret}
controllers:
  - name: c
    for: secrets
    reconcile:
      actions:
        - requeueAfter: "{{ obj.data.password | b64decode }}"
"""

TESTS = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: c.yaml
cases:
  - name: retried
    given:
      - {apiVersion: v1, kind: Secret, metadata: {name: db, namespace: default},
         data: {password: %s}}
    expect:
      results: {default/db: {outcome: retry, message: "requeueAfter: '<redacted>' is not"}}
"""


def test_kinrun_render_hides_the_value(tmp_path: Path, capsys) -> None:
    """kinrun render's error (stderr) has <redacted>, not the value."""
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "s.yaml").write_text(json.dumps(_secret("TopSecretValue42")))
    assert cli.main(["render", str(tmp_path / "c.yaml"), "--object",
                     str(tmp_path / "s.yaml")]) != 0
    err = capsys.readouterr().err
    assert "requeueAfter: '<redacted>' is not a duration" in err
    assert "TopSecretValue42" not in err


def test_kinrun_test_sees_the_error_as_the_live_log_shows_it(tmp_path: Path, capsys) -> None:
    """A case's result message is the redacted one (the same text as the live log), so a
    case can expect it: before, the case saw the value and only its report hid it."""
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "c.test.yaml").write_text(TESTS % _b64("TopSecretValue42"))
    assert cli.main(["test", str(tmp_path / "c.test.yaml")]) == 0, capsys.readouterr().out
