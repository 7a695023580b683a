"""No template changes an object it did not create: every mutating method of every mutable
container is refused, however the template reaches it (issue 26)."""

from __future__ import annotations

import collections
import functools
import re
from typing import Any

import orjson
import pytest

from kinrun.actions import RenderError, compile_actions
from kinrun.hooks import ReconcileContext
from kinrun.templating import TemplateEngine, TemplateRenderError, lookup_functions, mutates

from actions_fakes import FakeLister


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": "7",
                         "labels": {"app": "web"}},
            "data": {"k": "v", "other": "w"}, "items": [1, 2, 3]}


def _snapshot(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=repr)


ISSUE_PAYLOADS = [
    pytest.param("{{ dict.update(get('cms', 'default/b').data, {'injected': 'x'}) }}", id="update"),
    pytest.param("{{ dict.clear(get('cms', 'default/b').metadata) }}", id="clear"),
    pytest.param("{% for o in list('cms') %}{{ dict.pop(o.metadata, 'resourceVersion') }}"
                 "{% endfor %}", id="pop-over-list"),
    pytest.param("{{ dict.setdefault(get('cms', 'default/b').data, 'injected', 'x') }}",
                 id="setdefault"),
    pytest.param("{{ dict.popitem(get('cms', 'default/b').data) }}", id="popitem"),
]


@pytest.mark.parametrize("template", ISSUE_PAYLOADS)
def test_unbound_dict_methods_cannot_change_the_cache(template: str) -> None:
    """The issue's payloads (unbound methods of the ``dict`` global over cached objects) fail
    the render with a sandbox error and leave every cached object byte for byte unchanged."""
    cached = [_configmap("a"), _configmap("b")]
    before = _snapshot(cached)
    ctx = ReconcileContext(controller="w", key="default/a", listers={"cms": FakeLister(cached)})
    prog = compile_actions([{"log": template}], controller="w")
    with pytest.raises(RenderError, match="unsafe|refused"):
        prog.render(key="default/a", obj=cached[0], ctx=ctx)
    assert _snapshot(cached) == before


# --- the fuzz: mutable types x mutating methods x access routes ------------------------------

MUTATING: dict[type, dict[str, str]] = {
    # method -> arguments that would succeed if the call ran
    dict: {"update": "{'injected': 'x'}", "clear": "", "pop": "'k'", "popitem": "",
           "setdefault": "'injected', 'x'"},
    collections.OrderedDict: {"update": "{'injected': 'x'}", "move_to_end": "'k'",
                              "clear": "", "popitem": ""},
    list: {"append": "9", "extend": "[9]", "insert": "0, 9", "pop": "", "remove": "1",
           "reverse": "", "sort": "", "clear": ""},
    set: {"add": "9", "discard": "1", "remove": "1", "pop": "", "clear": "", "update": "[9]",
          "difference_update": "[1]", "intersection_update": "[9]",
          "symmetric_difference_update": "[1]"},
    bytearray: {"append": "65", "extend": "[65]", "insert": "0, 65", "pop": "", "remove": "1",
                "reverse": "", "clear": ""},
    collections.deque: {"append": "9", "appendleft": "9", "extend": "[9]", "extendleft": "[9]",
                        "pop": "", "popleft": "", "rotate": "1", "clear": "", "remove": "1",
                        "reverse": "", "insert": "0, 9"},
}
"""Written out here, not derived from kinrun's allowlist, so the test checks it."""

ROUTES: dict[str, str] = {
    "bound": "{{{{ T.{m}({a}) }}}}",
    "attr-filter": "{{{{ (T | attr('{m}'))({a}) }}}}",
    "set-variable": "{{% set f = T.{m} %}}{{{{ f({a}) }}}}",
    "map-attribute": "{{{{ ([T] | map(attribute='{m}') | first)({a}) }}}}",
    "subscript": "{{{{ T['{m}']({a}) }}}}",
    "dict-global": "{{{{ dict.{m}(T{c}{a}) }}}}",
    "class": "{{{{ T.__class__.{m}(T{c}{a}) }}}}",
    "namespace": "{{% set ns = namespace(x=T) %}}{{{{ ns.x.{m}({a}) }}}}",
    "namespace-method": "{{% set ns = namespace(f=T.{m}) %}}{{{{ ns.f({a}) }}}}",
    "loop": "{{% for v in [T] %}}{{{{ v.{m}({a}) }}}}{{% endfor %}}",
    "tuple-item": "{{{{ (T, 1)[0].{m}({a}) }}}}",
    "format-field": "{{{{ '{{0.{m}}}'.format(T) }}}}",
    "plugin-filter": "{{{{ (T | method_of('{m}'))({a}) }}}}",
}
"""Ways to reach a method; ``T`` is the cached target, ``method_of`` a plugin filter that hands
back ``getattr(value, name)`` (so the call itself must be refused, not only the lookup)."""


def _target(kind: type) -> Any:
    if kind in (dict, collections.OrderedDict):
        return kind(k="v", other="w")
    if kind is bytearray:
        return bytearray(b"\x01AB")
    return kind([1, 2, 3])


def _method_of(value: Any, name: str) -> Any:
    return getattr(value, name)


ENGINE = TemplateEngine(extra_filters={"method_of": _method_of})

def _escape_failure(kind: type, method: str, route: str, via_lookup: bool) -> str | None:
    """Render one payload; None when it was refused and left its target unchanged."""
    args = MUTATING[kind][method]
    source = ROUTES[route].format(m=method, a=args, c=", " if args else "")
    target = _target(kind)
    holder = {"metadata": {"name": "b", "namespace": "default"}, "t": target}
    before = _snapshot(holder)
    if via_lookup:
        source = source.replace("T", "get('cms', 'default/b').t")
        variables = lookup_functions({"cms": FakeLister([holder])})
    else:
        source = source.replace("T", "t")
        variables = {"t": target}
    try:
        ENGINE.template(source).render(variables)
        outcome = "rendered"
    except TemplateRenderError as exc:
        outcome = None if re.search("unsafe|refused", str(exc)) else f"wrong error: {exc}"
    if _snapshot(holder) != before:
        outcome = f"CHANGED the object ({outcome or 'refused'})"
    return None if outcome is None else f"{source}: {outcome}"


def test_no_route_to_a_mutating_method_changes_the_object() -> None:
    """Fuzz corpus, exhaustive: every mutable container type x each of its mutating methods x
    each access route, the target given as a variable or read through ``get()`` (1,144
    payloads): each fails the render with a sandbox error and leaves the object byte for byte
    unchanged."""
    failures = [failure for kind, methods in MUTATING.items() for method in methods
                for route in ROUTES for via_lookup in (False, True)
                if (failure := _escape_failure(kind, method, route, via_lookup))]
    assert not failures, f"{len(failures)} escapes, such as:\n" + "\n".join(failures[:20])


def test_a_mutating_method_handed_back_by_a_filter_is_refused_when_called() -> None:
    """Defence in depth: a bound ``dict.clear`` reached without the sandbox's attribute checks
    (a plugin filter returns it) is refused by the call check, with a message naming it."""
    data = {"k": "v"}
    with pytest.raises(TemplateRenderError,
                       match=r"dict\.clear\(\) is refused: templates may not change objects"):
        ENGINE.template("{{ (d | method_of('clear'))() }}").render({"d": data})
    assert data == {"k": "v"}


@pytest.mark.parametrize("func", [
    dict.update, {}.update, list.append, [].sort, set.add, bytearray.extend,
    collections.OrderedDict().move_to_end, collections.deque().appendleft,
    functools.partial(dict.update, {}), dict.__setitem__, list.__iadd__,
], ids=repr)
def test_the_call_check_refuses_mutating_callables(func: Any) -> None:
    """The sandbox's callable check refuses bound, unbound, slot-wrapper and partial forms."""
    assert not ENGINE._env.is_safe_callable(func)


@pytest.mark.parametrize("func", [
    dict.get, {}.keys, {}.items, list.index, [].count, set.union, frozenset().union,
    dict.fromkeys, str.upper, "x".join, len, _configmap,
], ids=repr)
def test_read_only_callables_stay_callable(func: Any) -> None:
    """Reading methods, str methods, functions stay callable."""
    assert ENGINE._env.is_safe_callable(func)


def test_mutates_is_an_allowlist() -> None:
    """``mutates``: what the immutable counterpart (mappingproxy, tuple, frozenset, bytes) has
    is allowed; anything else of a mutable container is refused, unknown names included."""
    assert mutates({}, "update") and mutates(dict, "setdefault") and mutates([], "sort")
    assert mutates({}, "some_future_method") and mutates(collections.OrderedDict, "move_to_end")
    assert not mutates({}, "get") and not mutates([], "index") and not mutates("", "upper")
    assert not mutates((1,), "count") and not mutates(dict, "fromkeys")


def test_reading_templates_still_work() -> None:
    """Ordinary reads of cached objects keep working: methods that only read, filters, the
    ``dict`` global building a new dict."""
    cm = _configmap("a")
    out = ENGINE.template(
        "{{ cm.data.get('k') }}|{{ cm.data.keys() | sort | join(',') }}|{{ cm['items'].index(2) }}"
        "|{{ dict(cm.metadata.labels, extra='x') | dictsort }}|{{ cm.data | dictsort | first }}"
    ).render({"cm": cm})
    assert out == "v|k,other|1|[('app', 'web'), ('extra', 'x')]|('k', 'v')"
