"""Load-time template syntax checks: which strings are checked and where errors point."""

from __future__ import annotations

import jinja2
import pytest

from kinrun.config import ConfigErrors, load_text
from kinrun.config.template_syntax import parse_expression

HEAD = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {apiVersion: v1, kind: Pod}
controllers:
  - name: c
    for: pods
"""


def errors_of(tail: str) -> list[str]:
    with pytest.raises(ConfigErrors) as info:
        load_text(HEAD + tail, file="t.yaml")
    return [str(e) for e in info.value.errors]


def test_block_template_error_points_at_the_template_line() -> None:
    """An error on template line 3 of a | block is reported 3 lines below the indicator."""
    tail = ("    reconcile:\n      actions:\n        - patch:\n            patch: |\n"
            "              a: 1\n              b: 2\n              c: {{ x }\n")
    assert errors_of(tail) == [
        "t.yaml:14:15: controllers[0].reconcile.actions[0].patch.patch: template syntax "
        "error: unexpected '}' (line 3 of the template)"]


@pytest.mark.parametrize("field", [
    "watches: [{informer: pods, mapTo: {template: '{{ a'}}]",
    "reconcile: {actions: [{event: {reason: '{{', message: m}}]}",
    "reconcile: {actions: [{delete: {target: {apiVersion: v1, kind: X, name: '{% x %}'}}}]}",
    "reconcile: {actions: [{requeueAfter: '{{ 1 +  }}'}]}",
    "reconcile: {onDelete: [{log: {message: '{{ }}'}}]}",
])
def test_every_template_field_is_checked(field: str) -> None:
    """Templates in watches, event, delete targets, requeueAfter and onDelete are parsed."""
    assert len(errors_of("    " + field + "\n" + ("    reconcile: {hooks: true}\n"
                                                    if "reconcile" not in field else ""))) == 1


def test_plugin_parameters_are_not_templates_checked() -> None:
    """The `with` of a plugin action is the plugin's business: broken braces pass."""
    config = load_text(HEAD + "    reconcile: {actions: [{plugin: x, with: {a: '{{'}}]}\n",
                       file="t.yaml")
    assert config.controllers[0].reconcile.actions[0].kind == "x"


@pytest.mark.parametrize("source", ["obj.metadata.labels.get('a') == 'b'", "{{ obj.x }}",
                                    "[obj.a, obj.b]", "obj.x | default('y')",
                                    "{{ obj.a }}/{{ obj.b }}"])
def test_parse_expression_accepts(source: str) -> None:
    """Plain and wrapped expressions, lists, filters and template-valued ones parse."""
    parse_expression(source)


@pytest.mark.parametrize("source", ["a b", "a ==", "{{ a", "(a", "{{ }}", "x-{{ a"])
def test_parse_expression_rejects(source: str) -> None:
    """Trailing tokens and unfinished expressions are syntax errors."""
    with pytest.raises(jinja2.TemplateSyntaxError):
        parse_expression(source)


DEEP = "obj" + ".a" * 1000


@pytest.mark.parametrize("field", [
    "reconcile: {actions: [{log: '{{ " + DEEP + " }}'}]}",
    "reconcile: {actions: [{log: hi, when: '" + DEEP + "'}]}",
    "reconcile: {vars: {x: '" + DEEP + "'}, actions: [{log: hi}]}",      # not syntax-checked
    "reconcile: {actions: [{stop: '{{ " + "(" * 150 + "obj" + ")" * 150 + " }}'}]}",
])
def test_a_template_nested_too_deeply_is_refused_where_it_is(field: str) -> None:
    """Python compiles nothing nested that deep, and the analyses would pass the recursion
    limit walking it: refused at load, at its place, not a traceback."""
    [error] = errors_of("    " + field + "\n")
    assert error.startswith("t.yaml:8:") and "nested more than 200 levels deep" in error


def test_the_engine_refuses_what_python_cannot_compile_with_a_config_error() -> None:
    """Sources that never went through the loader (a plugin's, a test's): a ConfigError at
    their place for Python's limits (SyntaxError, RecursionError), and a source well within
    them still compiles."""
    from kinrun.errors import ConfigError
    from kinrun.templating import TemplateEngine

    engine = TemplateEngine()
    for depth in (300, 1000):
        with pytest.raises(ConfigError, match="nested too deeply to compile"):
            engine.template("{{ obj" + ".a" * depth + " }}", ("c.yaml", 3, "x"))
        with pytest.raises(ConfigError, match="nested too deeply to compile"):
            engine.expression("obj" + ".a" * depth, ("c.yaml", 3, "x"))
    value = {"a": "leaf"}
    for _ in range(150):
        value = {"a": value}
    assert engine.template("{{ obj" + ".a" * 151 + " }}").render({"obj": value}) == "leaf"
