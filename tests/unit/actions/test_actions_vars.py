"""reconcile.vars: named expressions evaluated once per reconcile, in order, visible to later
vars, to every when and template (onDelete too), inside the reconcile's budget; errors name
the var and its file:line (ConfigError when compiling, VarError when evaluating)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from actions_fakes import RecordingClient

from kinrun.actions import BudgetError, RenderError, compile_actions
from kinrun.actions.program import RESERVED_VAR_NAMES, VarBudgetError, VarError
from kinrun.config import ConfigErrors, load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.templating import BudgetLimits, TemplateEngine, TemplateOptions

OWNED = {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "cm", "namespace": "ns", "uid": "u1",
                      "ownerReferences": [{"kind": "Deployment", "name": "web",
                                           "controller": True}]}}
LOOSE = {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "free", "namespace": "ns", "uid": "u2"}}
IS_OWNED = ("(obj.metadata.ownerReferences | default([]) | selectattr('controller') | list "
            "| length) > 0")


def config_text(reconcile: str) -> str:
    return ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  cms: {apiVersion: v1, kind: ConfigMap}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n"
            + textwrap.indent(textwrap.dedent(reconcile), " " * 6))


def compiled(reconcile: str) -> Any:
    return plan(load_text(config_text(reconcile), file="v.yaml")).controllers[0]


def logs(result: Any) -> list[str]:
    return [line.message for line in result.log_lines]


def test_vars_are_seen_by_later_vars_when_and_templates():
    """A var sees the earlier ones; when: and action templates see them all."""
    prog = compile_actions([{"log": "{{ owner }} owns {{ label }}", "when": "owned"},
                            {"log": "not owned", "when": "not owned"}], controller="c",
                           vars={"owned": IS_OWNED,
                                 "owner": "obj.metadata.ownerReferences[0].name if owned",
                                 "label": "{{ owner }}/{{ obj.metadata.name }}"})
    assert logs(prog.render(key="ns/cm", obj=OWNED)) == ["web owns web/cm"]
    assert logs(prog.render(key="ns/free", obj=LOOSE)) == ["not owned"]


def test_vars_are_evaluated_once_per_reconcile_in_order():
    """Each var is evaluated once per render, before the actions, in the order written."""
    seen: list[str] = []

    def note(value: Any, name: str) -> Any:
        seen.append(name)
        return value
    engine = TemplateEngine(extra_filters={"note": note})
    prog = compile_actions([{"log": "{{ b }}"}, {"log": "{{ a }} {{ b }}", "when": "a"}],
                           controller="c", engine=engine,
                           vars={"b": "1 | note('b')", "a": "b + 1 | note('a')"})
    assert logs(prog.render(key="ns/cm", obj=OWNED)) == ["1", "2 1"]
    assert seen == ["b", "a"]


def test_vars_run_in_on_delete_with_obj_none():
    """In onDelete obj is None and old is the final state: vars see both."""
    prog = compile_actions([{"log": "{{ name }} gone ({{ gone }})"}], controller="c",
                           vars={"gone": "obj is none", "name": "old.metadata.name"})
    assert logs(prog.render(key="ns/cm", obj=None, old=OWNED)) == ["cm gone (True)"]


def test_a_failing_var_fails_the_render_naming_the_var_and_its_line():
    """A var that fails raises VarError (a RenderError) at the var's file:line; nothing sent."""
    controller = compiled("""\
        vars:
          owned: obj.metadata.labels.team == 'a'
        actions:
          - patch: {patch: 'data: {x: "1"}'}
            when: owned
        """)
    client = RecordingClient()
    with pytest.raises(VarError) as info:
        controller.actions.run(key="ns/free", obj=LOOSE, client=client)
    err = info.value
    assert isinstance(err, RenderError) and err.var == "owned"
    assert str(err) == ("v.yaml:10: controllers[0].reconcile.vars.owned: controller 'c' var "
                        "'owned': UndefinedError: 'dict object' has no attribute 'labels'")
    assert client.requests == []


def test_an_undefined_var_value_is_an_error_not_empty():
    """A var whose value is undefined (a typo) is an error, as in a template."""
    prog = compile_actions([{"log": "{{ name }}"}], controller="c", vars={"name": "obj.metdata"})
    with pytest.raises(VarError, match="has no attribute 'metdata'"):
        prog.render(key="ns/cm", obj=OWNED)


def test_vars_spend_the_reconcile_budget():
    """Vars and actions share one budget: each alone fits, together they go over."""
    engine = TemplateEngine(TemplateOptions(budget=BudgetLimits(max_loop_steps=150)))
    loops = "{% for i in range(100) %}{% endfor %}"
    alone = compile_actions([{"log": loops}], controller="c", engine=engine)
    alone.render(key="ns/cm", obj=OWNED)
    both = compile_actions([{"log": loops + "{{ n }}"}], controller="c", engine=engine,
                           vars={"n": "range(100) | list | length"})
    with pytest.raises(BudgetError) as info:
        both.render(key="ns/cm", obj=OWNED)
    assert info.value.label == "log"


def test_a_var_over_budget_is_a_budget_error_naming_the_var():
    """A var alone over the budget raises VarBudgetError (a BudgetError) naming it."""
    engine = TemplateEngine(TemplateOptions(budget=BudgetLimits(max_loop_steps=10)))
    prog = compile_actions([{"log": "{{ many | length }}"}], controller="c", engine=engine,
                           vars={"many": "range(100) | list"})
    with pytest.raises(VarBudgetError) as info:
        prog.render(key="ns/cm", obj=OWNED)
    assert isinstance(info.value, BudgetError) and info.value.var == "many"
    assert "var 'many': template budget exceeded" in str(info.value)


def test_a_var_syntax_error_is_a_config_error_at_its_line():
    """A var that does not parse fails the plan with file:line of the var."""
    with pytest.raises(ConfigError) as info:
        compiled("""\
            vars:
              fine: obj.metadata.name
              broken: "obj.metadata.name |"
            actions:
              - log: "{{ fine }}"
            """)
    assert (info.value.file, info.value.line) == ("v.yaml", 11)
    assert info.value.path == "controllers[0].reconcile.vars.broken"


@pytest.mark.parametrize("name", ["obj", "key", "now", "get", "reason"])
def test_a_var_may_not_shadow_a_template_name(name):
    """Var names of the template variables and functions are refused when compiling."""
    assert name in RESERVED_VAR_NAMES
    with pytest.raises(ConfigError, match="would shadow"):
        compile_actions([{"log": "x"}], controller="c", vars={name: "1"})


@pytest.mark.parametrize("name", ["not", "true", "in"])
def test_a_jinja_keyword_is_not_a_var_name(name):
    """A Jinja2 keyword could not be referenced: refused when compiling."""
    with pytest.raises(ConfigError, match="not a valid var name"):
        compile_actions([{"log": "x"}], controller="c", vars={name: "1"})


def test_the_schema_refuses_a_var_name_that_is_not_an_identifier():
    """vars keys must be identifiers (schema, with the key's file:line)."""
    with pytest.raises(ConfigErrors) as info:
        load_text(config_text("""\
            vars:
              team-name: obj.metadata.name
            actions:
              - log: x
            """), file="v.yaml")
    assert "v.yaml:10:" in str(info.value) and "is not a valid var name" in str(info.value)


def test_vars_keep_their_file_order_and_reach_both_programs():
    """The loader keeps the mapping's order; actions and onDelete get the same vars."""
    controller = compiled("""\
        vars:
          zeta: "'z'"
          alpha: zeta ~ 'a'
        actions:
          - log: "{{ alpha }}"
        onDelete:
          - log: "{{ alpha }} gone"
        """)
    assert [v.name for v in controller.actions.vars] == ["zeta", "alpha"]
    assert [v.name for v in controller.on_delete.vars] == ["zeta", "alpha"]
    assert logs(controller.on_delete.render(key="ns/cm", obj=None)) == ["za gone"]


def test_a_var_mentioning_old_keeps_old():
    """keepOld's default counts the vars: a var reading old keeps the last version."""
    assert compiled("""\
        vars:
          changed: old is not none and old.data != obj.data
        actions:
          - log: "{{ changed }}"
        """).keep_old is True


def test_initial_list_tells_the_first_list_from_a_real_add():
    """``initial_list`` is the ``added`` cause's flag (client-go isInInitialList); False for
    any other cause and without a context; it is a reserved var name."""
    from kinrun.actions import LogLine, compile_actions
    from kinrun.hooks import ReconcileContext
    from kinrun.reconcile import ADDED, RESYNC, Cause

    program = compile_actions([{"log": "{{ reason }} initial={{ initial_list }}"}],
                              controller="c")
    obj = {"metadata": {"name": "x", "namespace": "ns"}}

    def line(cause):
        ctx = ReconcileContext(controller="c", key="ns/x", reason=str(cause or ""), cause=cause)
        return program.render(key="ns/x", obj=obj, ctx=ctx).steps[0]
    assert line(Cause(ADDED, initial_list=True)) == LogLine("info", "added initial=True")
    assert line(Cause(ADDED)) == LogLine("info", "added initial=False")
    assert line(Cause(RESYNC)) == LogLine("info", "resync initial=False")
    assert line(None) == LogLine("info", " initial=False")
    with pytest.raises(ConfigError, match="would shadow the template name 'initial_list'"):
        compile_actions([{"log": "x"}], controller="c", vars={"initial_list": "1"})


def test_a_list_evaluates_only_the_vars_it_reads():
    """Vars are evaluated lazily per list: onDelete (obj None) does not evaluate a var only the
    actions read, and a var is evaluated when a read var needs it (transitively)."""
    controller = compiled("""\
        vars:
          team: obj.metadata.labels.team
          greeting: "'hello ' ~ team"
          gone: "'bye ' ~ old.metadata.name"
        actions:
          - log: "{{ greeting }}"
        onDelete:
          - log: "{{ gone }}"
        """)
    assert [v.name for v in controller.actions.vars] == ["team", "greeting"]
    assert [v.name for v in controller.on_delete.vars] == ["gone"]
    assert logs(controller.on_delete.render(key="ns/cm", obj=None, old=LOOSE)) == ["bye free"]
    labelled = {**LOOSE, "metadata": {**LOOSE["metadata"], "labels": {"team": "a"}}}
    assert logs(controller.actions.render(key="ns/free", obj=labelled)) == ["hello a"]

