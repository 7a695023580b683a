"""Cron arithmetic (cron_next/cron_prev, croniter as ``schedule:``) and index_keys in templates."""

from __future__ import annotations

import datetime

import pytest

from kinrun.clock import FakeClock
from kinrun.cache.lister import Lister
from kinrun.cache.thread_safe_store import new_indexer
from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.templating import TemplateEngine, TemplateRenderError, lookup_functions

EPOCH = 1_700_000_000.0  # 2023-11-14T22:13:20Z (a Tuesday)


def value(expression: str, now: float = EPOCH, **variables):
    return TemplateEngine(clock=FakeClock(wall=now)).expression(expression).evaluate(variables)


@pytest.mark.parametrize("expression, expected", [
    pytest.param("cron_next('0 * * * *') | isoformat", "2023-11-14T23:00:00Z", id="next-utc"),
    pytest.param("cron_prev('0 * * * *') | isoformat", "2023-11-14T22:00:00Z", id="prev-utc"),
    pytest.param("cron_next('0 9 * * MON', 'Europe/Berlin') | isoformat",
                 "2023-11-20T08:00:00Z", id="next-zone-winter"),
    pytest.param("cron_next('0 9 * * *', 'Europe/Berlin', '2024-03-30T12:00:00Z') | isoformat",
                 "2024-03-31T07:00:00Z", id="next-across-dst"),
    pytest.param("cron_prev('@daily', 'UTC', '2023-11-15T00:00:00Z') | isoformat",
                 "2023-11-15T00:00:00Z", id="prev-includes-the-time-itself"),
    pytest.param("cron_next('@daily', none, '2023-11-15T00:00:00Z') | isoformat",
                 "2023-11-16T00:00:00Z", id="next-strictly-after"),
])
def test_cron_functions_compute_fire_times(expression, expected):
    """cron_next is the first fire time after now() (or the given time), cron_prev the latest at
    or before it, in the given IANA zone, answered in UTC."""
    assert value(expression) == expected


def test_cron_prev_is_the_most_recent_schedule_time_under_a_fixed_clock():
    """With the clock exactly on a fire time, cron_prev is that time (CronJob's "most recent
    scheduled time" includes now)."""
    assert value("cron_prev('*/5 * * * *') | isoformat", now=1_700_000_100.0) == \
        "2023-11-14T22:15:00Z"


@pytest.mark.parametrize("expression, message", [
    pytest.param("cron_next('61 * * * *')", "minute field", id="bad-field"),
    pytest.param("cron_next('0 * * * *', 'Mars/Olympus')", "IANA", id="bad-zone"),
    pytest.param("cron_prev('0 0 30 2 *')", "never fires: no Feb 30", id="never-fires"),
])
def test_cron_functions_refuse_what_schedule_refuses(expression, message):
    """A bad expression or zone is a template error with schedule:'s message."""
    with pytest.raises(TemplateRenderError, match=message):
        value(expression)


CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms:
    apiVersion: v1
    kind: ConfigMap
    indexers:
      byDay: "{{ cron_next(%(index)s) }}"
controllers:
  - name: c
    for: cms
    reconcile:
      vars:
        due: "cron_prev(%(var)s)"
      actions:
        - log: |
            {{ obj.metadata.name }}
            {{ cron_next(%(action)s) }}
"""
GOOD = {"index": "'@daily'", "var": "'*/5 * * * *'", "action": "'0 9 * * MON', 'UTC'"}


def compile_config(**templates: str):
    return plan(load_text(CONFIG % {**GOOD, **templates}, file="cfg.yaml"), new_plugin_manager())


@pytest.mark.parametrize("templates, where, message", [
    pytest.param({"action": "'0 0 30 2 *'"}, "cfg.yaml:16:11: controllers[0].reconcile.actions[0]",
                 "cron_next(...): schedule '0 0 30 2 *' never fires: no Feb 30 (day of month "
                 "'30' never falls in month '2') (template line 2)", id="never-fires"),
    pytest.param({"var": "expression='0 25 * * *'"}, "cfg.yaml:14:14: controllers[0].reconcile."
                 "vars.due", "cron_prev(...): schedule '0 25 * * *': hour field '25' is not "
                 "valid", id="bad-field-keyword"),
    pytest.param({"action": "'@daily', 'Mars/Olympus'"}, "cfg.yaml:16:11:",
                 "timeZone 'Mars/Olympus' is not a known IANA time zone", id="bad-zone"),
    pytest.param({"index": "'0 0 31 4 *'"}, "cfg.yaml:8:14: informers.cms.indexers.byDay",
                 "cron_next(...): schedule '0 0 31 4 *' never fires: no Apr 31", id="indexer"),
])
def test_validate_refuses_a_literal_cron_expression_schedule_would_refuse(templates, where,
                                                                          message):
    """A literal cron_next/cron_prev argument that fails every render is a ConfigError at the
    template's place, with the template line, as validate reports other template problems."""
    with pytest.raises(ConfigError) as caught:
        compile_config(**templates)
    assert str(caught.value).startswith(where), str(caught.value)
    assert message in str(caught.value)


def test_computed_cron_arguments_are_left_to_the_render():
    """An expression or zone that is not a literal is not checked offline (a computed zone
    leaves the literal expression checked in UTC)."""
    compile_config(action="obj.data.cron", var="'0 3 * * *', obj.data.zone")
    with pytest.raises(ConfigError, match="never fires"):
        compile_config(action="'0 0 30 2 *', obj.data.zone")


def _lister() -> Lister:
    indexer = new_indexer(indexers={"byNode": lambda o: [o["spec"]["nodeName"]]})
    for name, node in (("a", "n2"), ("b", "n1"), ("c", "n2")):
        indexer.add({"metadata": {"name": name, "namespace": "ns"}, "spec": {"nodeName": node}})
    return Lister(indexer, "pods")


def test_index_keys_lists_the_values_of_an_index():
    """index_keys('informer', 'index') gives every value the index files objects under, sorted
    and each once (the indexer's list_index_func_values)."""
    functions = lookup_functions({"pods": _lister()})
    assert value("index_keys('pods', 'byNode')", **functions) == ["n1", "n2"]
    assert value("index_keys('pods', 'byNode') | map('string') | map('length') | list",
                 **functions) == [2, 2]


def test_index_keys_of_an_unknown_index_names_the_known_ones():
    """An unknown index is an error naming the informer and its indexes, as by_index."""
    functions = lookup_functions({"pods": _lister()})
    with pytest.raises(TemplateRenderError, match="informer 'pods' has no index 'nope'.*byNode"):
        value("index_keys('pods', 'nope')", **functions)
