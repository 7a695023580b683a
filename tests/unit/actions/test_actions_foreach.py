"""forEach + as on every action kind: the action rendered once per item (its when per item),
inside the reconcile's template budget; results of a looping action are the list of answers."""

from __future__ import annotations

import logging
import textwrap
from typing import Any

import pytest
from actions_fakes import FakeLister, RecordingClient

from kinrun.actions import BudgetError, compile_actions
from kinrun.config import ConfigErrors, load_text
from kinrun.errors import ConfigError
from kinrun.hooks import ReconcileContext
from kinrun.plan import plan
from kinrun.templating import BudgetLimits, TemplateEngine, TemplateOptions

CRON = {"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "backup", "namespace": "ns", "uid": "u-cron"}}


def job(name: str, done: bool) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"},
            "status": {"succeeded": 1} if done else {}}


JOBS = FakeLister([job("old-1", True), job("running", False), job("old-2", True)])


def context() -> ReconcileContext:
    return ReconcileContext(controller="c", key="ns/backup", listers={"jobs": JOBS})


def test_delete_loops_over_a_list_with_when_per_item():
    """History cleanup in one reconcile: one delete per finished Job; when sees the item."""
    prog = compile_actions([{"delete": {"target": {"apiVersion": "batch/v1", "kind": "Job",
                                                   "name": "{{ job.metadata.name }}"}},
                             "forEach": "list('jobs')", "as": "job",
                             "when": "job.status.succeeded | default(0) > 0"}],
                           controller="c")
    client = RecordingClient()
    prog.run(key="ns/backup", obj=CRON, ctx=context(), client=client)
    assert [(r.verb, r.namespace, r.name) for r in client.requests] == [
        ("delete", "ns", "old-1"), ("delete", "ns", "old-2")]


@pytest.mark.parametrize("action, kind", [
    pytest.param({"patch": {"patch": "metadata: {labels: {'{{ item }}': 'x'}}"}}, "patch",
                 id="patch"),
    pytest.param({"event": {"reason": "Saw", "message": "{{ item }}"}}, "EventRequest",
                 id="event"),
    pytest.param({"create": {"manifest": "{apiVersion: v1, kind: ConfigMap, metadata: "
                                         "{generateName: '{{ item }}-'}}"}},
                 "create", id="create"),
    pytest.param({"log": "{{ item }}"}, "LogLine", id="log"),
    pytest.param({"requeueAfter": "{{ item }}s"}, "RequeueAfter", id="requeue"),
])
def test_every_kind_takes_for_each(action, kind):
    """patch, event, create, log and requeueAfter render once per item (default name: item)."""
    prog = compile_actions([{**action, "forEach": "['1', '2']"}], controller="c")
    steps = prog.render(key="ns/backup", obj=CRON).steps
    assert [getattr(s, "verb", None) if kind in ("patch", "create") else type(s).__name__
            for s in steps] == [kind, kind]


def test_a_mapping_loops_over_its_pairs_and_an_empty_list_renders_nothing():
    """forEach over a mapping gives [key, value] pairs; [] gives no step."""
    prog = compile_actions([{"log": "{{ item[0] }}={{ item[1] }}", "forEach": "{'a': 1}"},
                            {"log": "never", "forEach": "[]"}], controller="c")
    assert [s.message for s in prog.render(key="ns/backup", obj=CRON).steps] == ["a=1"]


def test_loop_items_spend_the_template_budget():
    """Each item is one loop step of the reconcile's budget: a long list goes over it."""
    engine = TemplateEngine(TemplateOptions(budget=BudgetLimits(max_loop_steps=50)))
    prog = compile_actions([{"log": "x", "forEach": "range(40)"},
                            {"log": "y", "forEach": "range(40)"}], controller="c",
                           engine=engine)
    with pytest.raises(BudgetError) as info:
        prog.render(key="ns/backup", obj=CRON)
    assert info.value.index == 1


def test_the_results_of_a_looping_action_are_a_list_of_answers(caplog):
    """results.NAME of a looping action is the list of its answers, even for one item."""
    prog = compile_actions([{"name": "made", "forEach": "['a']",
                             "apply": {"manifest": "{apiVersion: v1, kind: ConfigMap, "
                                                   "metadata: {name: '{{ item }}'}}"}},
                            {"log": "{{ results.made | map(attribute='metadata.name') "
                                    "| join(',') }}"}], controller="c")
    client = RecordingClient()
    with caplog.at_level(logging.INFO, logger="kinrun.test.loop"):
        prog.run(key="ns/backup", obj=CRON, client=client, logger=logging.getLogger(
            "kinrun.test.loop"))
    assert [r.name for r in client.requests] == ["a"]
    assert caplog.messages[-1] == "a"


def test_a_bad_for_each_value_is_a_render_error_naming_for_each():
    """forEach giving a string is a RenderError at the action."""
    prog = compile_actions([{"log": "x", "forEach": "'abc'"}], controller="c")
    with pytest.raises(Exception, match="forEach must give a list, got str"):
        prog.render(key="ns/backup", obj=CRON)


def config(action: str) -> str:
    return ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  cms: {apiVersion: v1, kind: ConfigMap}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n      actions:\n"
            + textwrap.indent(textwrap.dedent(action), " " * 8))


def test_a_config_loops_through_the_schema_and_plan():
    """forEach/as pass the schema and reach the compiled action."""
    controller = plan(load_text(config("""\
        - delete: {target: {apiVersion: v1, kind: ConfigMap, name: "{{ n }}"}}
          forEach: "['x', 'y']"
          as: n
        """), file="f.yaml")).controllers[0]
    steps = controller.actions.render(key="ns/cm", obj=None).steps
    assert [(s.verb, s.name) for s in steps] == [("delete", "x"), ("delete", "y")]


@pytest.mark.parametrize("action, message", [
    pytest.param("- log: x\n  as: n\n", "forEach", id="as-without-for-each"),
    pytest.param("- applySet: {manifests: []}\n  forEach: '[1]'\n", "applySet.forEach",
                 id="applyset"),
    pytest.param("- stop: done\n  forEach: '[1]'\n", "stop ends the whole reconcile",
                 id="stop"),
    pytest.param("- log: x\n  forEach: '[1]'\n  as: obj\n", "as must be a variable name",
                 id="shadows-obj"),
    pytest.param("- log: x\n  forEach: '[1'\n", "f.yaml:11:.*forEach", id="syntax"),
])
def test_bad_loops_are_refused_when_compiling(action, message):
    """as without forEach, a loop on applySet or stop, an as hiding obj, a forEach that does not
    parse: config errors."""
    with pytest.raises((ConfigError, ConfigErrors), match=message):
        plan(load_text(config(action), file="f.yaml"))
