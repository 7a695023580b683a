"""docs/templates.md is generated from the code (kinrun.reference) and cannot drift: the page
checked in equals what the generator writes; every name the engine, the action scope, key
mappers and indexers expose is in the registry (and the registry names nothing they lack);
every recipe compiles and does what its text says."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from kinrun.actions import LogLine
from kinrun.actions.program import ActionFailed, ActionFailedPermanently, CompiledAction
from kinrun.cache import Lister
from kinrun.cache.thread_safe_store import KeyedIndexer
from kinrun.config import load_text
from kinrun.hooks import ReconcileContext
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.reference import PAGE, RECIPES, render
from kinrun.templating import (
    BUILTIN_FILTERS, PLACES, TEMPLATE_NAMES, TemplateEngine, compile_index_func,
    compile_key_mapper,
)

ROOT = Path(__file__).resolve().parents[3]


def documented(place: str) -> set[str]:
    return {t.name for t in TEMPLATE_NAMES if place in t.places}


def test_checked_in_page_is_the_generated_one():
    """Regenerate with scripts/gen-reference when this fails."""
    assert (ROOT / PAGE).read_text(encoding="utf-8") == render(), \
        "docs/templates.md is stale: run scripts/gen-reference"


def test_every_engine_global_and_kinrun_filter_is_documented_everywhere():
    engine = TemplateEngine()
    everywhere = {t.name for t in TEMPLATE_NAMES if set(t.places) == set(PLACES)}
    assert set(engine._env.globals) <= everywhere
    assert set(BUILTIN_FILTERS) <= {t.name for t in TEMPLATE_NAMES if t.kind == "filter"}
    assert {t.name for t in TEMPLATE_NAMES if t.kind == "filter"} <= set(engine.filters)


class Capture:
    """Stands in for a compiled value: records the variables it is evaluated with."""

    def __init__(self) -> None:
        self.names: set[str] = set()

    def evaluate(self, variables):
        self.names |= set(variables)
        return []


ACTIONS_CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      vars: {first: "1"}
      actions:
        - {name: one, log: "{{ first }}"}
        - log: "{{ results.one }}"
"""


def test_action_scope_names_are_exactly_the_documented_ones(monkeypatch):
    """What an action's render sees (besides the engine's globals and the vars) is what the
    registry lists for actions; nothing listed is missing from it."""
    seen: set[str] = set()
    render_action = CompiledAction.render

    def spy(self, scope, controller):
        seen.update(scope.variables)
        return render_action(self, scope, controller)
    monkeypatch.setattr(CompiledAction, "render", spy)
    compiled = plan(load_text(ACTIONS_CONFIG), new_plugin_manager())
    compiled.controller("c").actions.render(
        key="ns/a", obj={"metadata": {"name": "a", "namespace": "ns"}},
        ctx=ReconcileContext(controller="c", key="ns/a"))
    globals_ = set(compiled.engine._env.globals) | set(compiled.engine.filters)
    scope = seen - {"first"}
    assert "first" in seen
    assert scope <= documented("actions")
    assert documented("actions") - globals_ - {"<var>", "<item>"} <= scope


def test_key_mapper_and_indexer_names_are_exactly_the_documented_ones(monkeypatch):
    engine = TemplateEngine()
    globals_ = set(engine._env.globals)
    mapper = compile_key_mapper("{{ obj }}", engine=engine).bind({"x": Lister(KeyedIndexer())})
    captured = Capture()
    mapper._value = captured
    mapper({"metadata": {"name": "a"}}, True)
    assert captured.names == documented("mapTo") - globals_ - {t.name for t in TEMPLATE_NAMES
                                                               if t.kind == "filter"}
    indexed = Capture()
    monkeypatch.setattr(TemplateEngine, "value", lambda self, *a, **k: indexed)
    compile_index_func("obj", engine=engine)({"metadata": {"name": "a"}})
    assert indexed.names == documented("indexers") - globals_ - {t.name for t in TEMPLATE_NAMES
                                                                 if t.kind == "filter"}


# -- recipes -----------------------------------------------------------------------------------


def recipe(recipe_id: str):
    found = [r for r in RECIPES if r.id == recipe_id]
    assert found, recipe_id
    return plan(load_text(found[0].config, file=f"{recipe_id}.yaml"), new_plugin_manager())


def test_every_recipe_is_checked_here():
    assert {r.id for r in RECIPES} == {"ownership-var", "fan-out", "schedule", "stop-fail"}


def test_recipe_ownership_var_stops_before_the_apply():
    program = recipe("ownership-var").controller("mirror").actions
    owned = {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "a", "namespace": "ns",
                          "ownerReferences": [{"kind": "X", "name": "o", "controller": True}]},
             "data": {"k": "v"}}
    free = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "uid": "u-1"},
            "data": {"k": "v"}}
    assert program.render(key="ns/a", obj=owned).steps == \
        (LogLine("info", "ns/a belongs to its controller"),)
    steps = program.render(key="ns/a", obj=free).steps
    assert [s.summary() for s in steps] == ["apply ConfigMap ns/a-mirror"]


def test_recipe_fan_out_maps_one_object_to_every_namespace():
    mapper = recipe("fan-out").controller("per-namespace").watches[0].mapper
    indexer = KeyedIndexer()
    for name in ("a", "b"):
        indexer.add({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    bound = mapper.bind({"namespaces": Lister(indexer)})
    settings = {"metadata": {"name": "s", "namespace": "kinrun-system"}}
    assert sorted(bound(settings)) == ["a", "b"]
    assert bound(settings, True) == []


def test_recipe_schedule_fires_at_six_in_berlin_on_weekdays():
    schedule = recipe("schedule").controller("expiry").schedule
    saturday = datetime.datetime(2024, 6, 1, 12, tzinfo=datetime.timezone.utc).timestamp()
    fire = datetime.datetime.fromtimestamp(schedule.next_after(saturday), datetime.timezone.utc)
    assert fire == datetime.datetime(2024, 6, 3, 4, tzinfo=datetime.timezone.utc)  # Mon 06:00 CEST


@pytest.mark.parametrize("data, outcome", [
    ({"mode": "bogus"}, ActionFailedPermanently),
    ({"mode": "skip"}, "ns/j skipped"),
    ({}, ActionFailed),
    ({"input": "x"}, "running ns/j on x"),
])
def test_recipe_stop_fail(data, outcome):
    program = recipe("stop-fail").controller("jobs").actions
    obj = {"metadata": {"name": "j", "namespace": "ns"}, "data": data}
    if isinstance(outcome, str):
        assert program.render(key="ns/j", obj=obj).steps == (LogLine("info", outcome),)
    else:
        with pytest.raises(outcome):
            program.render(key="ns/j", obj=obj)
