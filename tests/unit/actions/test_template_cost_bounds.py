"""One C-level operation cannot outrun the template budget: its cost is bounded before it runs
(sizes with shared references, integer bits, indents, widths, YAML aliases) (issue 26).

Not timed: each payload must fail with a BudgetExceeded naming the operation. A payload that
regressed would hang (or eat memory) instead, so the corpus runs in a child process with a
memory limit (a bomb refused only after allocating fails there) and a hard timeout as a
safety net: the timeout is never what the test asserts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from kinrun.clock import FakeClock
from kinrun.actions import BudgetError, RenderError, compile_actions
from kinrun.templating import BudgetExceeded, TemplateEngine, TemplateRenderError

DOUBLING = ("{% set ns = namespace(l=[0]) %}{% for i in range(30) %}"
            "{% set ns.l = [ns.l, ns.l] %}{% endfor %}")
"""A list whose expanded size doubles 30 times: 31 small lists, a thousand million leaves."""

SHARED = "{% set x = [[0] * 1000] * 1000 %}{% set y = [x, x, x, x, x] %}"
"""Five references to a million-leaf list: 5 million leaves, built without ``*`` on y."""


def _aliased_strings() -> str:
    """A few KB of YAML whose aliases repeat a 1,000-character string 5,000 times: 5 MB once
    loaded and walked (few aliased *nodes*: a string counts as one per KiB for the YAML
    reader's own alias limit, but every character for a template's size limit)."""
    return (f'a: &a "{"x" * 1000}"\n' + "b: &b [" + ", ".join(["*a"] * 100) + "]\n"
            + "c: [" + ", ".join(["*b"] * 50) + "]\n")


def _alias_bomb(levels: int = 9) -> str:
    doc = 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * 9)
        doc += f"a{level}: &a{level} [{refs}]\n"
    return doc


CORPUS: list[tuple[str, str, str]] = [
    # id, template, what the error names
    ("sum-start-list", "{% set x = [0] * 1000 %}{% set y = [x] * 1000 %}"
                       "{{ [y, y, y] | sum(start=[]) | length }}", "sum()'s result"),
    ("sum-many-lists", "{{ range(8000) | map('string') | map('list') | list"
                       " | sum(start=[]) | length }}", ""),
    ("to_json-shared", SHARED + "{{ y | to_json | length }}", "to_json's argument"),
    ("tojson-shared", SHARED + "{{ y | tojson | length }}", "tojson's argument"),
    ("sha256-shared", SHARED + "{{ y | sha256 }}", "sha256's argument"),
    ("pprint-shared", SHARED + "{{ y | pprint | length }}", "pprint's argument"),
    ("string-shared", SHARED + "{{ y | string | length }}", "string's argument"),
    ("repeat-nested", "{{ [[[0] * 1000] * 1000] * 1000 | to_json | length }}", "sequence"),
    ("doubling-print", DOUBLING + "{{ ns.l }}", "printed value"),
    ("doubling-to_json", DOUBLING + "{{ ns.l | to_json | length }}", "to_json's argument"),
    ("doubling-concat", DOUBLING + "{{ ns.l ~ '' }}", "joined with '~'"),
    ("doubling-compare", DOUBLING.replace("l=[0]", "l=[0], m=[0]").replace(
        "{% endfor %}", "{% set ns.m = [ns.m, ns.m] %}{% endfor %}") + "{{ ns.l == ns.m }}",
     "compared value"),
    ("doubling-dict-key", DOUBLING.replace("[0]", "(0,)").replace("[ns.l, ns.l]",
                                                                  "(ns.l, ns.l)")
     + "{{ {ns.l: 1} | length }}", "dict key"),
    ("doubling-format", DOUBLING + "{{ '{}'.format(ns.l) | length }}", "argument"),
    ("doubling-percent", DOUBLING + "{{ '%s' % (ns.l,) }}", "format"),
    ("doubling-join", DOUBLING + "{{ ns.l | join(',') }}", "join's argument"),
    ("doubling-plus", "{% set ns = namespace(l=[0]) %}{% for i in range(30) %}"
                      "{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}", "sequence"),
    ("power-tower", "{% set n = 12345 %}{{ ((n ** 128) ** 128) ** 128 }}", "integer power"),
    ("repeated-squaring", "{% set ns = namespace(n=3) %}{% for i in range(64) %}"
                          "{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n }}", "integer product"),
    ("from_yaml-alias-bomb", "{{ obj.data.doc | from_yaml | length }}", "from_yaml"),
    ("from_yaml-aliased-strings", "{{ obj.data.strings | from_yaml | length }}",
     "from_yaml's result"),
    ("to_json-huge-indent", "{{ obj | to_json(indent=3000000000) }}", "indent"),
    ("to_json-indent-string", "{{ obj | to_json(indent='x' * 100000) }}", "indent"),
    ("tojson-huge-indent", "{{ obj | tojson(indent=3000000000) }}", "indent"),
    ("format-width-string", "{{ '{:>{w}}'.format('x', w='2000000000') | length }}",
     "str.format()"),
    ("format-width-sign", "{{ '{:{w}}'.format(1, w='+1000000000') | length }}",
     "str.format()"),
    ("format-width-float", "{{ '{0:{1}}'.format('x', 1e9) | length }}", "str.format()"),
    ("batch-huge", "{{ [1, 2, 3] | batch(1000000000, 'x') | list | length }}", "batch()"),
    ("range-overflow", "{{ range(10 ** 30) | length }}", "range()"),
]


_DATA = {"doc": _alias_bomb(), "strings": _aliased_strings()}
"""The ``obj.data`` the payloads read (a writer of the object controls it)."""

_ERRORS = {"from_yaml-alias-bomb": ("BudgetExceeded", "TemplateRenderError")}
"""Payloads two guards refuse: the classic alias bomb is refused by the YAML reader's own
alias limit (``kinrun.safe_yaml``, a YAML error naming from_yaml) where that reader has one,
else by the size of from_yaml's result (a budget error); either is a render error naming
from_yaml, raised before anything walks the result."""


CHILD_MEMORY = 512 << 20
"""Address space of the child process (bytes; it peaks near 80 MB): a memory bomb refused only
after allocating (gigabytes) fails there with MemoryError instead of passing."""


def test_the_issue_payloads_fail_before_running() -> None:
    """Each payload of the corpus ends with a BudgetExceeded naming its operation, before it
    allocates or runs (a child process with CHILD_MEMORY of address space; its hard timeout is
    a safety net against a regression, not the assertion)."""
    script = textwrap.dedent(f"""
        import json, resource, sys
        resource.setrlimit(resource.RLIMIT_AS, ({CHILD_MEMORY}, {CHILD_MEMORY}))
        from kinrun.templating import TemplateEngine, TemplateRenderError, BudgetExceeded
        corpus, data = json.loads(sys.stdin.read())
        engine = TemplateEngine()
        obj = {{"data": data, "metadata": {{"name": "x"}}}}
        out = {{}}
        for name, source, _ in corpus:
            try:
                engine.template(source).render({{"obj": obj}})
                out[name] = ["rendered", ""]
            except TemplateRenderError as exc:
                out[name] = [type(exc).__name__, str(exc)]
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", script],
                          input=json.dumps([CORPUS, _DATA]),
                          capture_output=True, text=True, timeout=300, check=True)
    results = json.loads(proc.stdout)
    wrong = {name: results[name] for name, _, names in CORPUS
             if name != "sum-many-lists" and (results[name][0] not in _ERRORS.get(name, (
                 "BudgetExceeded",)) or names not in results[name][1])}
    assert not wrong
    assert results["sum-many-lists"] == ["rendered", ""]   # linear now (was quadratic, in C)


IN_PROCESS = ("range-overflow", "doubling-plus", "from_yaml-alias-bomb",
              "from_yaml-aliased-strings", "to_json-indent-string")
"""Payloads cheap to run in this process even if their bound regressed (the others could
hang it)."""


@pytest.mark.parametrize("name, source, names", [c for c in CORPUS if c[0] in IN_PROCESS],
                         ids=[c[0] for c in CORPUS if c[0] in IN_PROCESS])
def test_a_payload_is_a_retryable_budget_error_naming_the_action(name: str, source: str,
                                                                 names: str) -> None:
    """Through the actions: a BudgetError (retried with backoff; for the classic alias bomb
    possibly the YAML reader's error, a RenderError retried the same way) naming the action
    and the operation."""
    prog = compile_actions([{"log": source}], controller="web")
    with pytest.raises(RenderError) as info:
        prog.render(key="default/x", obj={"data": _DATA, "metadata": {"name": "x"}})
    assert isinstance(info.value, BudgetError) or name in _ERRORS
    assert "action [0] (log)" in str(info.value) and names in str(info.value)


def test_range_overflow_is_a_clear_template_error() -> None:
    """``range(10**30)`` is a budget error naming range(), not a bare OverflowError."""
    with pytest.raises(BudgetExceeded, match=r"range\(\) over the limit"):
        TemplateEngine().template("{{ range(10 ** 30) }}").render({})


def test_building_a_list_in_a_loop_stays_linear_and_allowed() -> None:
    """The size bookkeeping does not refuse ordinary templates: appending with ``+`` in a loop,
    flattening with ``sum(start=[])``, serialising a cached object, comparing objects."""
    engine = TemplateEngine()
    source = ("{% set ns = namespace(items=[]) %}{% for i in range(2000) %}"
              "{% set ns.items = ns.items + [{'i': i}] %}{% endfor %}"
              "{{ ns.items | length }}|{{ [[1, 2], [3]] | sum(start=[]) }}|"
              "{{ (obj | to_json(indent=2)).count('\n') }}|{{ obj == obj2 }}")
    obj = {"metadata": {"name": "x", "labels": {"a": "b"}}, "data": {"k": "v" * 100000}}
    out = engine.template(source).render({"obj": obj, "obj2": dict(obj)})
    assert out == "2000|[1, 2, 3]|10|True"


def test_sum_of_mixed_types_is_a_clear_error() -> None:
    """``sum(start=[])`` over items that are not lists names the types, as Python would."""
    with pytest.raises(TemplateRenderError, match="sum: cannot add a str to a list"):
        TemplateEngine().template("{{ [[1], 'x'] | sum(start=[]) }}").render({})


class _Ticking(FakeClock):
    """A fake clock moving ``tick`` seconds at each read of its monotonic time."""

    def __init__(self, tick: float) -> None:
        super().__init__(start=0.0)
        self.tick = tick

    def now(self) -> float:
        value = super().now()
        self.step(self.tick)
        return value


def test_a_costly_operation_reads_the_clock_before_it_runs() -> None:
    """A loop of fewer than CLOCK_EVERY steps, each serialising a large value, stops at the
    timeout instead of running every step: an operation on a value of COSTLY_SIZE or more
    reads the budget's clock first (a fake clock moving 0.4 s per read)."""
    engine = TemplateEngine({"budget": {"timeout": "1s"}}, clock=_Ticking(0.4))
    source = ("{% set x = [0] * 20000 %}"
              "{% for i in range(5) %}{{ x | to_json | length }}{% endfor %}")
    with pytest.raises(BudgetExceeded, match="of rendering"):
        engine.template(source).render({})
