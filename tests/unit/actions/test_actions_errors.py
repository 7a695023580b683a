"""Failures: render errors name their place and send nothing; compile errors are ConfigErrors."""

from __future__ import annotations

from typing import Any

import pytest
from actions_fakes import RecordingClient, load_object

from kinrun.actions import ActionError, LogLine, RenderError, compile_actions, execute
from kinrun.errors import ApiError, ConfigError, PermanentError, TemporaryError
from kinrun.templating import SourceLocation

SOURCE = ("web.yaml", 10, "controllers[0].reconcile.actions")


def program(*specs: Any, **kw: Any):
    kw.setdefault("controller", "web")
    kw.setdefault("source", SOURCE)
    return compile_actions(list(specs), **kw)


GOOD_APPLY = {"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}"}}


def test_undefined_variable_is_an_error_with_location(pod):
    """A typo in a template raises RenderError naming controller, action, file:line, template line."""
    prog = program({"log": "fine"}, {"name": "child", "apply": {"manifest": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ obj.metadata.nmae }}'\n")}})
    with pytest.raises(RenderError) as info:
        prog.render(key="shop/web-1", obj=pod)
    err = info.value
    assert (err.controller, err.index, err.label, err.template_line) == ("web", 1, "child", 4)
    assert err.location == SourceLocation("web.yaml", 10, "controllers[0].reconcile.actions[1]")
    assert str(err) == ("web.yaml:10: controllers[0].reconcile.actions[1]: controller 'web' "
                        "action [1] (child): UndefinedError: 'dict object' has no attribute "
                        "'nmae' (template line 4)")


def test_render_error_is_retried_not_permanent():
    """RenderError is an ActionError, not a PermanentError: the controller retries with backoff."""
    assert issubclass(RenderError, ActionError)
    assert not issubclass(RenderError, PermanentError)


def test_per_action_locations_are_used_when_given(pod):
    """Locations passed per action (e.g. from the config model) appear in the error."""
    loc = SourceLocation("cfg.yaml", 42, "controllers[1].reconcile.onDelete[0]")
    prog = program({"log": "{{ nope }}"}, locations=[loc])
    with pytest.raises(RenderError, match=r"^cfg\.yaml:42: controllers\[1\]\.reconcile\.onDelete"
                                          r"\[0\]: .*'nope' is undefined"):
        prog.render(key="k", obj=pod)


def test_spec_objects_with_raw_and_location_are_accepted(pod):
    """Objects carrying .raw (mapping) and .location (file/line/path) compile like mappings."""
    class Spec:
        raw = {"log": "{{ missing }}"}
        location = SourceLocation("m.yaml", 7, "controllers[0].reconcile.actions[0]")
    with pytest.raises(RenderError, match=r"^m\.yaml:7: "):
        program(Spec()).render(key="k", obj=pod)


@pytest.mark.parametrize("manifest, problem", [
    pytest.param("apiVersion: v1\nmetadata: {name: x}", "kind must be a non-empty string",
                 id="missing-kind"),
    pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata: {}", "name must be a non-empty string",
                 id="missing-name"),
    pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 3}",
                 "name must be a non-empty string", id="name-not-string"),
    pytest.param("kind: ConfigMap\nmetadata: {name: x}", "apiVersion must be a non-empty string",
                 id="missing-apiversion"),
    pytest.param("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x",
                 "rendered YAML is invalid", id="bad-yaml"),
    pytest.param("- a\n- b", "must render to a mapping", id="list"),
    pytest.param("{% if false %}x: 1{% endif %}", "must render to a mapping", id="empty"),
])
def test_bad_manifest_is_refused_before_anything_is_sent(pod, manifest, problem):
    """A rendered manifest failing the checks fails the reconcile; earlier actions are not sent."""
    client = RecordingClient()
    prog = program(GOOD_APPLY, {"apply": {"manifest": manifest}})
    with pytest.raises(RenderError, match=problem):
        prog.run(key="shop/web-1", obj=pod, client=client)
    assert client.requests == []


def test_cross_namespace_owner_is_refused(pod):
    """An owner reference from a namespaced object to another namespace is refused."""
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "x", "namespace": "elsewhere"}}
    with pytest.raises(RenderError, match="cannot own an object in 'elsewhere'"):
        program({"apply": {"manifest": manifest}}).render(key="shop/web-1", obj=pod)


@pytest.mark.parametrize("spec, problem", [
    pytest.param({"type": "json", "patch": "{a: 1}"}, "json patch must render to a non-empty list",
                 id="json-not-list"),
    pytest.param({"type": "json", "patch": "- {path: /a}"}, "needs string op and path",
                 id="json-op-missing"),
    pytest.param({"patch": "- 1"}, "merge patch must render to a non-empty mapping",
                 id="merge-list"),
    pytest.param({"patch": "{a: 1}", "target": {"kind": "ConfigMap", "name": "x"}},
                 "apiVersion must be a non-empty string", id="target-incomplete"),
])
def test_bad_patch_is_refused(pod, spec, problem):
    """A patch whose rendered shape does not fit its type or target is refused."""
    with pytest.raises(RenderError, match=problem):
        program({"patch": spec}).render(key="shop/web-1", obj=pod)


@pytest.mark.parametrize("spec", [
    pytest.param({"delete": {}}, id="delete"),
    pytest.param({"patch": {"patch": {"a": "b"}}}, id="patch"),
    pytest.param({"event": {"reason": "Gone", "message": "m"}}, id="event"),
])
def test_default_target_needs_the_object(spec):
    """In onDelete, actions targeting the reconciled object need an explicit target."""
    with pytest.raises(RenderError, match="no longer exists; give an explicit target"):
        program(spec).render(key="shop/web-1", obj=None)


def test_failed_when_condition_is_a_render_error(pod):
    """A when: condition that fails to evaluate fails the render (no silent skip)."""
    with pytest.raises(RenderError, match="has no attribute 'nosuch'"):
        program({"log": "x", "when": "obj.metadata.nosuch.deeper == 1"}).render(
            key="shop/web-1", obj=pod)


def test_plugin_kind_returning_junk_is_refused(pod):
    """A plugin action kind returning something other than steps fails the render."""
    class Plugins:
        class hook:  # noqa: N801 - mimics pm.hook
            @staticmethod
            def kinrun_action_kinds():
                return [{"junk": lambda args, obj, ctx: ["not a step"]}]

            @staticmethod
            def kinrun_template_filters():
                return []
    with pytest.raises(RenderError, match="the plugin returned str"):
        program({"junk": {}}, plugin_manager=Plugins).render(key="shop/web-1", obj=pod)


def test_execute_stops_at_first_api_error(pod):
    """An ApiError propagates from execute; later requests and log lines are not carried out."""
    client = RecordingClient(fail_at=1)
    prog = program(GOOD_APPLY, {"delete": {}}, {"apply": GOOD_APPLY["apply"]})
    with pytest.raises(ApiError):
        prog.run(key="shop/web-1", obj=pod, client=client)
    assert [r.verb for r in client.requests] == ["apply"]


def test_execute_logs_log_lines_at_their_level(caplog):
    """execute logs LogLines on the given logger at their level."""
    import logging
    logger = logging.getLogger("kinrun.test.execute")
    caplog.set_level("DEBUG", logger=logger.name)
    from kinrun.actions import RenderResult
    execute(RenderResult((LogLine("debug", "d"), LogLine("error", "e"))), None, logger)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [("DEBUG", "d"),
                                                                        ("ERROR", "e")]


# --- compile-time errors -----------------------------------------------------------------------


@pytest.mark.parametrize("spec, message", [
    pytest.param({"log": "{{ obj.metadata.name "}, "template syntax error", id="syntax"),
    pytest.param({"frobnicate": {}}, "unknown action kind 'frobnicate'", id="unknown-kind"),
    pytest.param({"log": "a", "delete": {}}, "exactly one kind", id="two-kinds"),
    pytest.param({"when": "true"}, "exactly one kind", id="no-kind"),
    pytest.param({"patch": {"type": "xml", "patch": "{}"}}, "patch.type must be one of",
                 id="patch-type"),
    pytest.param({"delete": {"propagationPolicy": "Sometimes"}}, "propagationPolicy must be one of",
                 id="propagation"),
    pytest.param({"requeueAfter": "soon"}, "not a duration", id="duration"),
    pytest.param({"apply": {"manifest": "x", "ownerRef": True}}, "unknown field(s) ownerRef",
                 id="unknown-field"),
    pytest.param({"log": "x", "when": "obj.metadata.name =="}, "expression syntax error",
                 id="when-syntax"),
    pytest.param({"event": {"reason": "R"}}, "event: message is required", id="event-message"),
    pytest.param({"log": {"message": "x", "level": "loud"}}, "log.level must be one of",
                 id="log-level"),
])
def test_compile_errors_are_config_errors_with_location(spec, message):
    """Problems visible at start-up raise ConfigError with file:line and the action's path."""
    with pytest.raises(ConfigError) as info:
        program({"log": "ok"}, spec)
    assert message in info.value.message
    assert (info.value.file, info.value.line) == ("web.yaml", 10)
    assert info.value.path.startswith("controllers[0].reconcile.actions[1]")


def test_template_syntax_error_reports_template_line():
    """A syntax error in a multi-line template says which template line."""
    with pytest.raises(ConfigError, match=r"template line 3"):
        program({"apply": {"manifest": "a: 1\nb: 2\nc: {{ x | }}\n"}})


def test_render_error_in_one_program_leaves_others_working(pod):
    """A failing program does not affect another controller's program."""
    bad = program({"log": "{{ typo }}"}, controller="bad")
    good = program({"log": "fine"}, controller="good")
    with pytest.raises(RenderError):
        bad.render(key="shop/web-1", obj=pod)
    assert good.render(key="shop/web-1", obj=load_object("pod-db")).steps == (LogLine("info", "fine"),)


@pytest.mark.parametrize("error", [PermanentError("give up"), TemporaryError("wait", delay=9.0)],
                         ids=lambda e: type(e).__name__)
def test_plugin_kind_can_steer_retry_with_reconcile_errors(pod, error):
    """PermanentError/TemporaryError from a plugin action kind propagate unchanged."""
    def kind(args, *, obj, ctx):
        raise error

    class Plugins:
        class hook:  # noqa: N801 - mimics pm.hook
            @staticmethod
            def kinrun_action_kinds():
                return [{"steer": kind}]

            @staticmethod
            def kinrun_template_filters():
                return []
    with pytest.raises(type(error)) as info:
        program({"steer": {}}, plugin_manager=Plugins).render(key="shop/web-1", obj=pod)
    assert info.value is error


def test_api_error_names_the_action_and_the_request(pod):
    """An API failure's message says which action (file:line: path) sent which request; its
    class is kept, so the controller's retry rules still apply."""
    client = RecordingClient(fail_at=1)
    prog = program(GOOD_APPLY, {"delete": {}})
    with pytest.raises(ApiError) as info:
        prog.run(key="shop/web-1", obj=pod, client=client)
    assert type(info.value) is ApiError
    assert "actions[1]" in str(info.value) and "delete Pod shop/web-1: " in str(info.value)
    assert str(info.value).endswith("boom")
