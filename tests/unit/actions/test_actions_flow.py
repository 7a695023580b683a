"""stop and fail: flow decided while rendering. stop ends the reconcile as a success (what came
before is sent, nothing after is rendered or sent, its message logged at info); fail ends it as
a failure (nothing of it is sent; retried with backoff, or permanent)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from actions_fakes import RecordingClient

from kinrun.actions import LogLine, compile_actions
from kinrun.actions.program import ActionFailed, ActionFailedPermanently
from kinrun.config import load_text
from kinrun.errors import ConfigError, PermanentError, TemporaryError
from kinrun.plan import plan
from kinrun.reconcile import Reconciler, Result

SOURCE = ("flow.yaml", 10, "controllers[0].reconcile.actions")
OBJ = {"apiVersion": "v1", "kind": "ConfigMap",
       "metadata": {"name": "cm", "namespace": "ns", "uid": "u1", "labels": {"skip": "yes"}}}
PATCH = {"patch": {"patch": "data: {seen: 'yes'}"}}
BROKEN = {"log": "{{ obj.metadata.nmae }}"}  # would fail if it were rendered


def program(*specs: Any) -> Any:
    return compile_actions(list(specs), controller="c", source=SOURCE)


def test_stop_sends_what_came_before_and_nothing_after():
    """stop: earlier steps are executed, later actions are not even rendered."""
    prog = program(PATCH, {"requeueAfter": "30s"},
                   {"stop": "skipping {{ key }}", "when": "obj.metadata.labels.skip == 'yes'"},
                   BROKEN, {"delete": {}})
    client = RecordingClient()
    delay = prog.run(key="ns/cm", obj=OBJ, client=client, logger=logging.getLogger("t"))
    assert [r.verb for r in client.requests] == ["patch"]
    assert delay == 30.0
    result = prog.render(key="ns/cm", obj=OBJ)
    assert result.steps[-1] == LogLine("info", "skipping ns/cm")


def test_stop_message_is_logged_at_info(caplog):
    """The stop message is one info line on the controller's logger."""
    prog = program({"stop": {"message": "nothing to do for {{ key }}\n"}})
    with caplog.at_level(logging.INFO, logger="t"):
        prog.run(key="ns/cm", obj=OBJ, client=RecordingClient(), logger=logging.getLogger("t"))
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("INFO", "nothing to do for ns/cm")]


def test_a_log_line_is_the_records_message_and_kept_verbatim(caplog):
    """A ``log`` action's record carries the rendered message as ``msg`` with no ``%``
    arguments (what a plugin's handler or filter reads), and a ``%`` in it stays as written
    through kinrun's text formatter."""
    from kinrun.logging_setup import TextFormatter

    prog = program({"log": "100% of {{ key }} %s %(x)d"})
    with caplog.at_level(logging.INFO, logger="t"):
        prog.run(key="ns/cm", obj=OBJ, client=RecordingClient(), logger=logging.getLogger("t"))
    [record] = caplog.records
    assert (record.msg, record.args) == ("100% of ns/cm %s %(x)d", ())
    assert TextFormatter().format(record).endswith("t: 100% of ns/cm %s %(x)d")


def test_stop_whose_when_is_false_lets_the_reconcile_go_on():
    """A stop guarded by a false when: is skipped like any action."""
    prog = program({"stop": "no", "when": "obj.metadata.labels.skip == 'no'"}, PATCH)
    assert [r.verb for r in prog.render(key="ns/cm", obj=OBJ).requests] == ["patch"]


def test_a_stopped_reconcile_is_done():
    """Through the Reconciler, a stop is a success: done (or the earlier requeue)."""
    rec = Reconciler("c", actions=program(PATCH, {"stop": "enough"}, BROKEN),
                     client=RecordingClient())
    assert rec("ns/cm", OBJ).outcome == "done"


def test_fail_sends_nothing_not_even_the_actions_before_it():
    """fail is decided while rendering: nothing of the reconcile is sent."""
    prog = program(PATCH, {"name": "guard", "fail": {"message": "{{ key }} is not ours"}}, BROKEN)
    client = RecordingClient()
    with pytest.raises(ActionFailed) as info:
        prog.run(key="ns/cm", obj=OBJ, client=client)
    assert client.requests == []
    err = info.value
    assert isinstance(err, TemporaryError) and err.delay is None
    assert (err.controller, err.index, err.label, err.detail) == ("c", 1, "guard",
                                                                 "ns/cm is not ours")
    assert str(err) == ("flow.yaml:10: controllers[0].reconcile.actions[1]: controller 'c' "
                        "action [1] (guard): ns/cm is not ours")


def test_fail_is_retried_with_backoff():
    """A fail without permanent is a retry with the rate limiter's delay."""
    rec = Reconciler("c", actions=program({"fail": {"message": "later"}}),
                     client=RecordingClient())
    result = rec("ns/cm", OBJ)
    assert (result.outcome, result.delay) == ("retry", None)
    assert isinstance(result.error, ActionFailed)


def test_permanent_fail_gives_up_until_the_next_change():
    """fail: {permanent: true} is a PermanentError: the permanent outcome."""
    rec = Reconciler("c", actions=program({"fail": {"message": "never", "permanent": True}}),
                     client=RecordingClient())
    result = rec("ns/cm", OBJ)
    assert result.outcome == "permanent"
    assert isinstance(result.error, ActionFailedPermanently)
    assert isinstance(result.error, PermanentError)
    assert Result.failed(result.error).outcome == "permanent"


def test_a_fail_whose_when_is_false_does_nothing():
    """A guarded fail that does not fire leaves the reconcile alone."""
    prog = program({"fail": {"message": "x"}, "when": "false"}, PATCH)
    assert len(prog.render(key="ns/cm", obj=OBJ).requests) == 1


def test_a_stop_in_on_delete_ends_on_delete():
    """onDelete: stop works the same with obj None."""
    prog = program({"log": "first"}, {"stop": "gone: {{ key }}", "when": "obj is none"},
                   {"log": "never"})
    assert [s.message for s in prog.render(key="ns/cm", obj=None).log_lines] == [
        "first", "gone: ns/cm"]


@pytest.mark.parametrize("action,message", [
    pytest.param({"stop": {}}, "stop: message is required", id="stop-without-message"),
    pytest.param({"fail": "no"}, "fail: expected a mapping", id="fail-string"),
    pytest.param({"fail": {"message": "m", "permanent": "yes"}}, "fail.permanent must be",
                 id="fail-permanent-not-bool"),
    pytest.param({"fail": {"message": "m", "retry": 3}}, "unknown field", id="fail-unknown"),
    pytest.param({"stop": "{{ key "}, "template syntax error", id="stop-syntax"),
])
def test_bad_stop_and_fail_are_config_errors(action, message):
    """Bad stop/fail values fail when compiling, at the action."""
    with pytest.raises(ConfigError, match=message) as info:
        program(action)
    assert (info.value.file, info.value.line) == ("flow.yaml", 10)


def test_a_fail_message_syntax_error_fails_the_plan_at_its_line():
    """In a config, a broken fail message is a ConfigError at file:line when planning."""
    text = ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  cms: {apiVersion: v1, kind: ConfigMap}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n      actions:\n"
            "        - log: fine\n"
            "        - fail:\n            message: \"{{ key \"\n")
    with pytest.raises(ConfigError) as info:
        plan(load_text(text, file="flow.yaml"))
    assert (info.value.file, info.value.line) == ("flow.yaml", 11)  # the action, as for others
    assert info.value.path == "controllers[0].reconcile.actions[1].fail.message"
    assert "template syntax error" in info.value.message


def test_stop_and_fail_send_nothing_themselves():
    """Both kinds declare no RBAC verbs."""
    prog = program({"stop": "s"}, {"fail": {"message": "f"}})
    assert [(a.impl.kind, a.impl.VERBS) for a in prog.actions] == [("stop", ()), ("fail", ())]
