"""Indexer expressions and mapTo key templates compiled from the config."""

from __future__ import annotations

import logging
import re

import pytest
from actions_fakes import load_object

from kinrun.clock import FakeClock
from kinrun.errors import ConfigError
from kinrun.templating import (
    RateLimitedWarner, SourceLocation, TemplateEngine, compile_index_func, compile_key_mapper,
    index_values, split_expression,
)

LOC = SourceLocation("cfg.yaml", 9, "informers.pods.indexers.byNode")


@pytest.mark.parametrize("expr", [
    pytest.param("{{ obj.spec.nodeName }}", id="wrapped"),
    pytest.param("obj.spec.nodeName", id="bare"),
    pytest.param("  {{obj.spec.nodeName}}  ", id="wrapped-spaces"),
])
def test_index_expression_with_or_without_braces(expr):
    """An indexer expression works with or without surrounding {{ }}."""
    func = compile_index_func(expr, LOC)
    assert func(load_object("pod-web")) == ["node-a"]


@pytest.mark.parametrize("expr, expected", [
    pytest.param("obj.spec.nodeName", [], id="undefined-is-none"),
    pytest.param("none", [], id="none"),
    pytest.param("''", [], id="empty-string"),
    pytest.param("[obj.metadata.namespace, obj.metadata.labels.app, none, '']",
                 ["jobs", "batch"], id="list"),
    pytest.param("obj.spec.containers | map(attribute='image') | list", ["busybox:1.36"],
                 id="filtered-list"),
    pytest.param("obj.metadata.namespace ~ '/' ~ obj.metadata.labels.app", ["jobs/batch"],
                 id="concatenation"),
    pytest.param("{{ obj.metadata.namespace }}-{{ obj.metadata.labels.app }}", ["jobs-batch"],
                 id="mixed-template"),
    pytest.param("obj.spec.containers | length", ["1"], id="number"),
])
def test_index_values_map_to_string_lists(expr, expected):
    """Results map str -> [str], list -> [str...], None/"" -> [] (pending pod fixture)."""
    assert compile_index_func(expr, LOC)(load_object("pod-pending")) == expected


def test_index_evaluation_error_gives_no_values_and_rate_limited_warning(caplog):
    """A failing index expression files the object nowhere and warns at most once a minute."""
    clock = FakeClock(start=0.0)
    logger = logging.getLogger("kinrun.test.indexers")
    func = compile_index_func("obj.spec.missing.deeper", LOC, logger=logger, clock=clock)
    caplog.set_level("WARNING", logger=logger.name)
    pods = [load_object("pod-web"), load_object("pod-db"), load_object("pod-pending")]
    assert [func(p) for p in pods] == [[], [], []]
    assert len(caplog.records) == 1
    assert "cfg.yaml:9: informers.pods.indexers.byNode: indexer" in caplog.records[0].getMessage()
    assert "shop/web-1" in caplog.records[0].getMessage()
    clock.step(61.0)
    assert func(pods[0]) == []
    assert len(caplog.records) == 2
    assert "(2 similar warnings suppressed)" in caplog.records[1].getMessage()


def test_index_returning_mapping_is_an_evaluation_error(caplog):
    """A mapping is not an index value: no values, one warning."""
    caplog.set_level("WARNING", logger="kinrun.templating")
    assert compile_index_func("obj.metadata.labels", LOC)(load_object("pod-web")) == []
    assert "expected a string or a list of strings" in caplog.text


def test_index_syntax_error_is_config_error():
    """A syntax error in an indexer is a ConfigError at its location."""
    with pytest.raises(ConfigError) as info:
        compile_index_func("{{ obj.spec. }}", LOC)
    assert (info.value.file, info.value.line, info.value.path) == (
        "cfg.yaml", 9, "informers.pods.indexers.byNode")


def test_index_cannot_escape_sandbox(caplog):
    """Index expressions run in the same sandbox: internals give no values."""
    caplog.set_level("WARNING", logger="kinrun.templating")
    assert compile_index_func("obj.__class__.__name__", LOC)(load_object("pod-web")) == []
    assert "unsafe" in caplog.text


def test_key_mapper_renders_one_or_several_keys():
    """mapTo templates render one key, several (one per line), or none ("")."""
    secret = {"metadata": {"namespace": "shop", "name": "s", "labels": {"app": "web"}}}
    one = compile_key_mapper("{{ obj.metadata.namespace }}/{{ obj.metadata.labels.app }}")
    several = compile_key_mapper("{% for s in ['a', 'b'] %}{{ obj.metadata.namespace }}/{{ s }}\n"
                                 "{% endfor %}")
    none = compile_key_mapper("{{ '' if obj.metadata.labels.app == 'web' else 'x/y' }}")
    listed = compile_key_mapper("{{ ['shop/a', 'shop/b'] }}")
    assert one(secret) == ["shop/web"]
    assert several(secret) == ["shop/a", "shop/b"]
    assert none(secret) == []
    assert listed(secret) == ["shop/a", "shop/b"]


def test_key_mapper_error_gives_no_key(caplog):
    """A key template that fails yields no key and a warning, never an exception."""
    caplog.set_level("WARNING", logger="kinrun.templating")
    mapper = compile_key_mapper("{{ obj.metadata.labels.app }}", ("cfg.yaml", 30, "watches[0]"))
    assert mapper({"metadata": {"name": "x"}}) == []
    assert "cfg.yaml:30: watches[0]: key mapper" in caplog.text


def test_engine_filters_from_plugins_are_usable_in_indexers():
    """A shared engine with extra filters serves indexers too."""
    engine = TemplateEngine(extra_filters={"shout": lambda s: s.upper()})
    func = compile_index_func("obj.spec.nodeName | shout", LOC, engine=engine)
    assert func(load_object("pod-web")) == ["NODE-A"]


def test_extra_filter_clashing_with_existing_name_is_config_error():
    """A plugin filter may not replace an existing filter."""
    with pytest.raises(ConfigError, match="'to_yaml' is already defined"):
        TemplateEngine(extra_filters={"to_yaml": str})


@pytest.mark.parametrize("source, expected", [
    ("{{ a }}", "a"), ("a.b", "a.b"), ("{{ a }}-{{ b }}", None), ("{% if a %}x{% endif %}", None),
    ("x-{{ a }}", None), ("{{- a -}}", "a"), ("{{ -1 }}", "-1"), ("{{- -1 }}", "-1"),
])
def test_split_expression(source, expected):
    """Only a whole single {{ }} (or no braces at all) is treated as an expression; Jinja2's
    whitespace control (``{{-``, ``-}}``) is no part of it, a minus sign is."""
    assert split_expression(source) == expected


@pytest.mark.parametrize("compile_", [lambda e: e.template("{{ x | defualt(1) }}"),
                                      lambda e: e.expression("x | defualt(1)")])
def test_an_unknown_filter_names_the_closest_one(compile_):
    """A misspelt filter is a ConfigError that says which filter was meant."""
    with pytest.raises(ConfigError, match="No filter named 'defualt'; did you mean 'default'"):
        compile_(TemplateEngine())


def test_index_values_rejects_non_string_types():
    """index_values raises TypeError for mappings."""
    with pytest.raises(TypeError):
        index_values({"a": 1})


def test_rate_limited_warner_counts_suppressed(caplog):
    """The warner logs once per interval and reports how many it held back."""
    clock = FakeClock(start=0.0)
    logger = logging.getLogger("kinrun.test.warner")
    caplog.set_level("WARNING", logger=logger.name)
    warner = RateLimitedWarner(logger, interval=10.0, clock=clock)
    for _ in range(5):
        warner.warn("w")
    clock.step(10.0)
    warner.warn("w")
    assert [r.getMessage() for r in caplog.records] == ["w", "w (4 similar warnings suppressed)"]


@pytest.mark.parametrize("source,said", [
    ("{% if x %}{{ x | nosuch }}{% endif %}", "No filter named 'nosuch'"),
    ("{{ x | map('regex_replace', 'a') | list }}", "No filter named 'regex_replace'"),
    ("{{ x | select('nosuchtest') | list }}", "No test named 'nosuchtest'"),
    ("{{ x | selectattr('name', 'search', 'y') | list }}", "No test named 'search'"),
    ("{{ x | reject('definedd') | list }}", "No test named 'definedd'; did you mean 'defined'"),
    ("{% if x is strng %}a{% endif %}", "No test named 'strng'; did you mean 'string'"),
    ("{{ x | map(attribute='name') | select('string') | map('upper') | list }}", None),
    ("{{ x | selectattr('name') | rejectattr('a', 'equalto', 1) | list }}", None),
])
def test_filters_and_tests_are_known_where_jinja2_looks_them_up_late(source, said):
    """Jinja2 looks up a filter inside an ``if`` branch, and one given by name to ``map`` or
    ``select``, only when the line runs: compiling checks them all, so validate refuses what
    every render would."""
    engine = TemplateEngine()
    if said is None:
        engine.template(source)
        return
    with pytest.raises(ConfigError, match=re.escape(said)):
        engine.template(source)
