"""Plain templates (``kinrun.plain_templates``): literal text and ``{{ }}`` paths rendered
without Jinja2 give exactly what Jinja2 gives, or Jinja2 renders. Differential: every template
below is rendered both ways over the same variables (values of every shape, missing keys,
non-dict steps, dict subclasses, values over the budget), and the texts, or the errors, must
be equal."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from kinrun.templating import BudgetLimits, RenderBudget, Template, TemplateEngine

ENGINE = TemplateEngine()

PLAIN = [
    "Sync/Add/Update for Pod {{ obj.metadata.name }}",
    "{{ obj['metadata']['name'] }}!",
    "{{ obj.metadata['labels'].app }} in {{ obj.metadata.namespace }}",
    "{{- obj.metadata.name -}}  trimmed\n",
    "line one\n{{ key }}\n",
    "{{ obj.spec }} / {{ obj.spec.replicas }}",
    "{{ obj }}",
    "{{ obj.metadata.name }}",
    "{{ now }} {{ obj.metadata.name }}",           # a global: Jinja2 renders it
    "{{ missing.name }}",
]
NOT_PLAIN = [
    "{{ obj.metadata.name | upper }}", "{{ obj.items }}", "{{ obj.spec.containers[0] }}",
    "{% if obj %}{{ obj.metadata.name }}{% endif %}", "no path at all", "{{ self }}",
    "{{ obj.metadata.name ~ 'x' }}", "{{ 'a' }}",
]


class Projected(dict):
    """A dict subclass, as some objects handed to templates are: Jinja2 renders it."""


class Short(list):
    """A list printed short: only the size check of ``finalize`` refuses it whole."""

    def __str__(self) -> str:
        return "short"


SHAPES: list[Any] = ["web-1", "", 0, 3, 2.5, True, None, ["a", 1], {"x": {"y": 1}}, Projected(a=1),
                     "x" * 2000, "y" * 1500, list(range(3000)),
          Short(range(2000))]


def variable_sets() -> list[dict[str, Any]]:
    sets: list[dict[str, Any]] = [{}, {"key": "ns/a"}, {"obj": None}, {"obj": "text"},
                                  {"obj": {"metadata": "not a dict"}},
                                  {"obj": Projected(metadata={"name": "p"})}]
    for name, labels, spec in itertools.product(SHAPES, (SHAPES[0], {"app": "web"}), SHAPES):
        sets.append({"key": "ns/a", "obj": {"metadata": {"name": name, "namespace": "ns",
                                                          "labels": labels},
                                             "spec": spec}})
    sets.append({"key": "k", "obj": {"metadata": {"name": "n"}, "items": "shadowed"}})
    sets.append({"key": "k" * 1600, "obj": {"metadata": {"name": "n" * 1490}}})
    return sets


def outcome(template: Template, variables: dict[str, Any]) -> tuple[str, str, int]:
    """(text or error type, error message, output characters spent) under a small budget."""
    budget = RenderBudget(BudgetLimits(max_output_chars=1500))
    try:
        with budget:
            return "ok", template.render(variables), budget.output_chars
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return type(exc).__name__, str(exc), budget.output_chars


@pytest.mark.parametrize("source", PLAIN)
def test_a_plain_template_renders_what_jinja2_renders(source):
    fast = ENGINE.template(source)
    assert fast._plain is not None
    slow = Template(fast._template, fast.source, fast._budgets)   # Jinja2 only
    for variables in variable_sets():
        assert outcome(fast, variables) == outcome(slow, variables), variables


@pytest.mark.parametrize("source", NOT_PLAIN)
def test_any_other_template_is_left_to_jinja2(source):
    assert ENGINE.template(source)._plain is None


def test_a_plain_render_takes_no_jinja2_render():
    """The plain form is what renders while each path lands on a plain dict (Jinja2's
    template is not touched); else Jinja2 renders."""
    fast = ENGINE.template("Pod {{ obj.metadata.name }}")
    real, used = fast._template, []

    class Watched:
        def __getattr__(self, name: str) -> Any:
            used.append(name)
            return getattr(real, name)

    fast._template = Watched()
    assert fast.render({"obj": {"metadata": {"name": "web"}}}) == "Pod web"
    assert used == []
    assert fast.render({"obj": Projected(metadata={"name": "web"})}) == "Pod web"
    assert used


def test_more_parts_than_a_batch_have_no_plain_form():
    """Past OUTPUT_BATCH chunks Jinja2 stops at the first batch over the budget."""
    from kinrun.templating import OUTPUT_BATCH

    assert ENGINE.template("{{ a }}" * (OUTPUT_BATCH // 2))._plain is not None
    assert ENGINE.template("{{ a }}" * (OUTPUT_BATCH + 1))._plain is None


def test_a_text_over_the_budget_is_never_joined():
    """Jinja2 measures a batch's chunks before it joins them; so does the plain form: 20 paths
    to a 5 MB string under the default 1 MB budget fail with no 100 MB text built."""
    import tracemalloc

    fast = ENGINE.template("{{ obj.blob }}" * 20)
    blob = "x" * 5_000_000
    tracemalloc.start()
    try:
        with pytest.raises(Exception, match="characters of output"):
            fast.render({"obj": {"blob": blob}})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000


def test_a_value_is_printed_once_when_a_later_path_is_missing():
    printed = []

    class Loud:
        def __str__(self) -> str:
            printed.append(1)
            return "loud"

    fast = ENGINE.template("{{ o.a }}{{ missing }}")
    slow = Template(fast._template, fast.source, fast._budgets)
    for template in (fast, slow):
        printed.clear()
        with pytest.raises(Exception, match="missing"):
            template.render({"o": {"a": Loud()}})
        assert len(printed) == 1


class Hidden(dict):
    """A dict subclass whose ``get`` disagrees with what Jinja2 reads (``**``)."""

    def get(self, *_args: Any) -> Any:
        return {"a": "from get"}


def test_variables_other_than_a_plain_dict_go_to_jinja2():
    fast = ENGINE.template("{{ obj.a }}")
    assert fast.render(Hidden(obj={"a": "stored"})) == "stored"
