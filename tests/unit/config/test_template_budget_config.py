"""``templates.budget``: validated by the schema, defaults written only there, and the
TemplatesSpec is all a TemplateEngine needs to apply it."""

from __future__ import annotations

import pytest

from kinrun.config import ConfigErrors, load_schema, load_text
from kinrun.durations import parse_duration
from kinrun.templating import BudgetLimits, TemplateEngine

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
{templates}
informers:
  cms: {{apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile: {{actions: [{{log: hi}}]}}
"""


def budget_of(templates: str) -> BudgetLimits:
    """The budget the config builder makes from a ``templates:`` line (or none)."""
    return load_text(CONFIG.format(templates=templates), file="c.yaml").templates.budget


def schema_defaults() -> dict:
    props = load_schema()["$defs"]["templates"]["properties"]["budget"]["properties"]
    return {name: prop["default"] for name, prop in props.items()}


def test_defaults_are_the_schemas():
    """Without templates.budget the limits are the schema's defaults (1s, 100000, 1 MiB)."""
    defaults = schema_defaults()
    expected = BudgetLimits(parse_duration(defaults["timeout"]), defaults["maxLoopSteps"],
                            defaults["maxOutputChars"])
    assert budget_of("") == expected == BudgetLimits()
    assert expected == BudgetLimits(1.0, 100_000, 1 << 20)


@pytest.mark.parametrize("templates, expected", [
    pytest.param("templates: {budget: {timeout: 250ms}}", {"timeout": 0.25}, id="timeout"),
    pytest.param("templates: {budget: {timeout: 2}}", {"timeout": 2.0}, id="timeout-seconds"),
    pytest.param("templates: {budget: {maxLoopSteps: 500}}", {"max_loop_steps": 500},
                 id="steps"),
    pytest.param("templates: {allowEnv: true, budget: {maxOutputChars: 4096}}",
                 {"max_output_chars": 4096}, id="output-beside-allow-env"),
    pytest.param("templates: {budget: {}}", {}, id="empty"),
])
def test_given_keys_apply_and_the_others_keep_their_defaults(templates, expected):
    """Each key given sets its limit; the others stay at their defaults."""
    defaults = BudgetLimits()
    want = BudgetLimits(**{"timeout": defaults.timeout, "max_loop_steps": defaults.max_loop_steps,
                           "max_output_chars": defaults.max_output_chars, **expected})
    assert budget_of(templates) == want


@pytest.mark.parametrize("templates, message", [
    pytest.param("templates: {budget: {maxLoopSteps: 0}}", "maxLoopSteps", id="zero-steps"),
    pytest.param("templates: {budget: {maxOutputChars: -1}}", "maxOutputChars",
                 id="negative-output"),
    pytest.param("templates: {budget: {maxLoopSteps: many}}", "maxLoopSteps", id="not-int"),
    pytest.param("templates: {budget: {timeout: soon}}", "is not a duration", id="bad-duration"),
    pytest.param("templates: {budget: {maxSteps: 5}}", "unknown key 'maxSteps'",
                 id="unknown-key"),
    pytest.param("templates: {budget: 5}", "templates.budget", id="not-a-mapping"),
])
def test_bad_budget_values_are_positioned_config_errors(templates, message):
    """Bad budget values fail loading with an error at the key."""
    with pytest.raises(ConfigErrors) as info:
        budget_of(templates)
    text = str(info.value)
    assert message in text and "c.yaml:3:" in text


def test_engine_built_from_the_templates_spec_applies_the_budget():
    """TemplateEngine(config.templates), as the Manager builds it, renders with those limits."""
    config = load_text(CONFIG.format(templates="templates: {budget: {maxLoopSteps: 7}}"),
                       file="c.yaml")
    engine = TemplateEngine(config.templates)
    assert engine.options.budget == config.templates.budget
    assert engine.budget().limits.max_loop_steps == 7


@pytest.mark.parametrize("kwargs", [
    pytest.param({"timeout": -1.0}, id="negative-timeout"),
    pytest.param({"max_loop_steps": 0}, id="zero-steps"),
    pytest.param({"max_output_chars": "big"}, id="text-output"),
    pytest.param({"max_loop_steps": True}, id="bool-steps"),
])
def test_budget_limits_refuse_out_of_range_values_given_in_code(kwargs):
    """Limits given in code (not through the schema) are checked too: ValueError."""
    with pytest.raises(ValueError, match="templates.budget"):
        BudgetLimits(**kwargs)
