"""Jinja2's filters with an async variant (``map``, ``join``, ``select``...) are registered as
their sync functions (kinrun's environment is never async), and give what Jinja2's own
sandbox gives."""

from __future__ import annotations

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from kinrun.templating import TemplateEngine

ASYNC_VARIANTS = sorted(name for name, func in jinja2.Environment().filters.items()
                        if getattr(func, "jinja_async_variant", False))

DATA = {"items": [{"name": "b", "image": "x:1", "n": 2}, {"name": "a", "image": "y:2", "n": 1},
                  {"name": "b", "image": "x:1", "n": 3}],
        "words": ["b", "a", "b", ""], "numbers": [3, 1, 2]}
TEMPLATES = [
    "{{ items | map(attribute='image') | join(',') }}",
    "{{ items | map(attribute='missing', default='-') | list }}",
    "{{ words | join }}", "{{ words | first }}", "{{ numbers | sum }}",
    "{{ items | sum(attribute='n') }}", "{{ words | unique | list }}",
    "{{ words | select | list }}", "{{ words | reject | list }}",
    "{{ items | selectattr('n', 'gt', 1) | map(attribute='name') | join }}",
    "{{ items | rejectattr('n', 'gt', 1) | map(attribute='name') | join }}",
    "{% for g in items | groupby('name') %}{{ g.grouper }}={{ g.list | length }};{% endfor %}",
    "{{ numbers | slice(2) | list }}", "{{ words | list }}",
]


def test_the_async_variants_are_the_sync_functions():
    filters = TemplateEngine()._env.filters
    assert ASYNC_VARIANTS    # Jinja2 has them: the test would pass vacuously otherwise
    assert [name for name in ASYNC_VARIANTS
            if getattr(filters[name], "jinja_async_variant", False)] == []


@pytest.mark.parametrize("source", TEMPLATES)
def test_they_render_as_jinja2s_sandbox_does(source):
    want = ImmutableSandboxedEnvironment().from_string(source).render(DATA)
    assert TemplateEngine().template(source).render(DATA) == want
