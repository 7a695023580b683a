"""Conditional finalizers (``finalizer: {name, when}``): only selected live objects get the
finalizer; one that carries it but stops matching is finalized (finalize on the live object)
and released (the finalizer removed), as Metacontroller's DecoratorController does."""

from __future__ import annotations

import textwrap

import pytest
from test_reconcile_finalizers import KEY, NAME, Client, cm, summary

from kinrun.actions import compile_actions
from kinrun.actions.finalizer import FinalizerCondition
from kinrun.config import ConfigErrors, load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.reconcile import Reconciler
from kinrun.templating import SourceLocation, TemplateEngine

WHEN = "obj.metadata.annotations['example.com/hold'] | default('') == 'yes'"


def reconciler(client: Client, when: str = WHEN) -> Reconciler:
    loc = SourceLocation("f.yaml", 9, "controllers[0].finalizer.when")
    condition = FinalizerCondition(TemplateEngine().value(when, loc), loc, "c")
    return Reconciler(
        "c", client=client, finalizer=NAME, finalizer_when=condition,
        actions=compile_actions([{"patch": {"patch": {"data": {"a": "b"}}}}], controller="c"),
        finalize=compile_actions([{"delete": {"target": {"apiVersion": "v1", "kind": "Secret",
                                                         "name": "ext"}}}], controller="c"))


def test_a_selected_object_gets_the_finalizer():
    """when holds: the finalizer is added before the actions, as without when."""
    client = Client()
    reconciler(client)(KEY, cm(**{"example.com/hold": "yes"}))
    assert summary(client) == [f"patch ConfigMap {[NAME]}", "patch ConfigMap"]


def test_an_object_not_selected_gets_no_finalizer():
    """when is false and the object has no finalizer: only the actions run."""
    client = Client()
    reconciler(client)(KEY, cm())
    assert summary(client) == ["patch ConfigMap"]


def test_an_object_that_stops_matching_is_finalized_and_released():
    """It carries ours but when is now false: finalize runs (not the actions), then ours is
    removed (others kept)."""
    client = Client()
    result = reconciler(client)(KEY, cm(finalizers=("other.io/x", NAME)))
    assert result.outcome == "done"
    assert summary(client) == ["delete Secret", "patch ConfigMap ['other.io/x']"]


def test_a_terminating_object_is_finalized_whatever_when_says():
    """Deletion wins: a terminating object with ours runs finalize, selected or not."""
    client = Client()
    reconciler(client)(KEY, cm(finalizers=(NAME,), terminating=True))
    assert summary(client) == ["delete Secret", "patch ConfigMap []"]


def test_a_failing_condition_fails_the_reconcile_naming_finalizer_when():
    """An error in when is a retried failure at finalizer.when; nothing is sent."""
    client = Client()
    result = reconciler(client, "obj.metadata.nope.x")(KEY, cm())
    assert result.outcome == "retry"
    assert "f.yaml:9: controllers[0].finalizer.when" in str(result.error)
    assert client.sent == []


def config(finalizer: str) -> str:
    return textwrap.dedent("""\
        apiVersion: kinrun.dev/v1alpha1
        kind: ControllerConfig
        informers:
          cms: {apiVersion: v1, kind: ConfigMap}
        controllers:
          - name: c
            for: cms
        """) + textwrap.indent(finalizer, "    ") + textwrap.indent(textwrap.dedent("""\
            reconcile:
              actions: [{log: x}]
              finalize: [{log: bye}]
            """), "    ")


def test_the_config_takes_the_mapping_form():
    """finalizer: {name, when} passes the schema and reaches the plan."""
    controller = plan(load_text(config(f"finalizer:\n  name: {NAME}\n  when: \"{WHEN}\"\n"),
                                file="f.yaml")).controllers[0]
    assert controller.finalizer == NAME
    assert controller.finalizer_when(cm(**{"example.com/hold": "yes"})) is True
    assert controller.finalizer_when(cm()) is False


@pytest.mark.parametrize("finalizer, message", [
    pytest.param("finalizer: {when: 'true'}\n", "name", id="no-name"),
    pytest.param(f"finalizer: {{name: {NAME}, when: '(('}}\n", "f.yaml:8", id="syntax"),
    pytest.param("finalizer: {name: cleanup, when: 'true'}\n", "domain prefix", id="bad-name"),
])
def test_bad_mapping_forms_are_refused(finalizer, message):
    """A mapping without name, a when that does not parse, a bare name: config errors."""
    with pytest.raises((ConfigError, ConfigErrors), match=message):
        plan(load_text(config(finalizer), file="f.yaml"))
