"""The template budget: time, loop steps and output bound every render; one budget per reconcile
(shared by its actions and ``when:``), one per indexer or key mapper call."""

from __future__ import annotations

import logging
import threading

import pytest
from actions_fakes import RecordingClient

from kinrun.actions import RenderError, compile_actions
from kinrun.actions.errors import BudgetError
from kinrun.clock import FakeClock
from kinrun.controller import Controller
from kinrun.errors import ReconcileError
from kinrun.templating import (
    OUTPUT_BATCH, BudgetExceeded, BudgetLimits, TemplateEngine, compile_index_func,
    compile_key_mapper,
)
from kinrun.workqueue import DelayingQueue, ItemExponentialFailureRateLimiter, RateLimitingQueue

NESTED_LOOPS = ("{% for i in range(10000) %}{% for j in range(10000) %}"
                "{% for k in range(10000) %}{% endfor %}{% endfor %}{% endfor %}")
"""The reproduction: 10^12 iterations, which ran until killed before the budget."""

WAIT = 5.0  # seconds: the bound on every wait; tests never sleep


class TickingClock(FakeClock):
    """A fake clock whose monotonic time moves ``tick`` seconds each time it is read, so time
    passes exactly as fast as the budget looks at it (deterministic, no sleeping)."""

    def __init__(self, tick: float, start: float = 1000.0) -> None:
        super().__init__(start)
        self.tick, self.reads = tick, 0

    def now(self) -> float:
        self.reads += 1
        self.step(self.tick)
        return super().now()


def engine_with(clock=None, **budget) -> TemplateEngine:
    """An engine whose budget has the given config-spelled limits (others: defaults)."""
    return TemplateEngine({"budget": budget}, clock=clock or FakeClock())


def render_error(program, obj) -> RenderError:
    with pytest.raises(RenderError) as info:
        program.render(key="shop/web-1", obj=obj)
    return info.value


# --- loop steps ------------------------------------------------------------------------------


def test_nested_loops_stop_at_the_loop_step_limit(pod):
    """The reproduction ends after exactly maxLoopSteps + 1 steps, as a BudgetError."""
    prog = compile_actions([{"log": NESTED_LOOPS}], controller="web",
                           engine=TemplateEngine(clock=FakeClock()))
    err = render_error(prog, pod)
    assert isinstance(err, BudgetError)
    limit = BudgetLimits().max_loop_steps
    assert (err.exceeded.reason, err.exceeded.used, err.exceeded.limit) == (
        "maxLoopSteps", limit + 1, limit)


def test_budget_error_names_the_action_and_the_setting(pod):
    """The message names controller, action and the config key to raise."""
    prog = compile_actions([{"log": "ok"}, {"name": "spin", "log": NESTED_LOOPS}],
                           controller="web", engine=engine_with(maxLoopSteps=100))
    err = render_error(prog, pod)
    assert (err.index, err.label, err.template_line) == (1, "spin", 1)
    assert ("controller 'web' action [1] (spin): template budget exceeded: more than 100 loop "
            "steps (templates.budget.maxLoopSteps)") in str(err)


def test_budget_error_is_retried_not_permanent(pod):
    """Past the budget is a RenderError (retried with backoff), never a ReconcileError."""
    prog = compile_actions([{"log": NESTED_LOOPS}], controller="web",
                           engine=engine_with(maxLoopSteps=10))
    err = render_error(prog, pod)
    assert isinstance(err, RenderError) and not isinstance(err, ReconcileError)


def test_a_loop_within_the_limit_renders(pod):
    """A loop of exactly maxLoopSteps iterations is allowed."""
    prog = compile_actions([{"log": "{% for i in range(50) %}.{% endfor %}"}], controller="web",
                           engine=engine_with(maxLoopSteps=50))
    assert prog.render(key="k", obj=pod).steps[0].message == "." * 50


@pytest.mark.parametrize("items", [
    pytest.param([1, 2, 3], id="list"), pytest.param((1, 2, 3), id="tuple"),
    pytest.param({"a": 1, "b": 2, "c": 3}, id="dict"), pytest.param("abc", id="str"),
    pytest.param(iter([1, 2, 3]), id="iterator"),
])
def test_small_loops_count_every_iteration(items):
    """Short loops (counted up front, with no cost per step) spend one step per item too."""
    engine = engine_with()
    with engine.budget() as budget:
        engine.template("{% for x in items %}{% endfor %}"
                        "{% for i in range(20) %}{% for x in xs %}{% endfor %}{% endfor %}"
                        ).render({"items": items, "xs": list(range(10))})
    assert budget.steps == 3 + 20 + 20 * 10


def test_recursive_loop_children_are_counted():
    """Items handed to loop(...) of a recursive loop are steps too: 3 + 9 + 27."""
    engine = engine_with()
    template = engine.template("{% for i in range(3) recursive %}{% if loop.depth < 3 %}"
                               "{{ loop(range(3)) }}{% endif %}{% endfor %}")
    with engine.budget() as budget:
        template.render({})
    assert budget.steps == 39


# --- filters and when: -----------------------------------------------------------------------


@pytest.mark.parametrize("source, steps", [
    pytest.param("{{ xs | sort | join(',') }}", 3, id="sort-list"),
    pytest.param("{{ range(4) | map('string') | join }}", 4, id="map-iterator"),
    pytest.param("{{ range(4) | map('string') | list | length }}", 8, id="map-then-list"),
    pytest.param("{{ d | dictsort | length }}", 2, id="dictsort"),
    pytest.param("{{ range(6) | select('odd') | list | length }}", 3 + 3, id="select"),
    pytest.param("{{ range(10) | join }}", 0, id="join-folds-to-text"),
])
def test_filters_that_iterate_count_their_items(source, steps):
    """Each item a filter returns (list, mapping, iterator) is one loop step."""
    engine = engine_with()
    with engine.budget() as budget:
        engine.template(source).render({"xs": [3, 1, 2], "d": {"a": 1, "b": 2}})
    assert budget.steps == steps


def test_filter_items_share_the_limit_with_for_loops(pod):
    """Filter items and loop iterations count together against maxLoopSteps."""
    prog = compile_actions([{"log": "{{ range(30) | map('string') | join }}"
                                    "{% for i in range(30) %}{% endfor %}"}], controller="web",
                           engine=engine_with(maxLoopSteps=50))
    assert render_error(prog, pod).exceeded.reason == "maxLoopSteps"


def test_plugin_filters_are_counted():
    """A plugin filter returning a list spends its items."""
    engine = TemplateEngine({"budget": {"maxLoopSteps": 5}},
                            extra_filters={"explode": lambda v: list(range(v))})
    with pytest.raises(BudgetExceeded) as info:
        engine.template("{{ n | explode | length }}").render({"n": 10})
    assert info.value.used == 10


def test_constant_folding_at_compile_time_is_bounded_too():
    """A filter over literals, folded when compiling, cannot run past a budget either: past it
    the fold is given up and the render spends (and exceeds) its own budget."""
    calls = []
    engine = TemplateEngine({"budget": {"maxLoopSteps": 5}},
                            extra_filters={"explode": lambda v: calls.append(v) or list(range(v))})
    template = engine.template("{{ 10 | explode | length }}")
    with pytest.raises(BudgetExceeded) as info:
        template.render({})
    assert info.value.used == 10 and calls  # tried (and given up) when compiling


def test_when_spends_the_budget(pod):
    """A when: condition's filters count; the failing action is the one with the when."""
    prog = compile_actions([{"log": "hi", "when": "range(50) | list | length > 0"}],
                           controller="web", engine=engine_with(maxLoopSteps=40))
    err = render_error(prog, pod)
    assert isinstance(err, BudgetError) and err.index == 0
    assert err.exceeded.reason == "maxLoopSteps"


# --- time ------------------------------------------------------------------------------------


def test_time_limit_ends_a_loop_when_steps_are_allowed(pod):
    """With steps unbounded in practice, the fake clock's timeout ends the render."""
    clock = TickingClock(tick=0.01)
    prog = compile_actions([{"log": NESTED_LOOPS}], controller="web",
                           engine=engine_with(clock, timeout="1s", maxLoopSteps=10**9))
    err = render_error(prog, pod)
    assert err.exceeded.reason == "timeout"
    assert err.exceeded.used > 1.0
    assert err.exceeded.limit == 1.0
    assert "more than 1s of rendering (templates.budget.timeout)" in err.detail
    assert clock.reads < 200  # the render stopped right after the deadline


def test_time_is_checked_at_calls_without_loops():
    """A macro calling itself twice (2^40 calls, no loop at all) is stopped by the time limit,
    checked at calls."""
    engine = engine_with(TickingClock(tick=0.1), timeout="1s")
    template = engine.template("{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}"
                               "{% endif %}{% endmacro %}{{ f(40) }}")
    with pytest.raises(BudgetExceeded) as info:
        template.render({})
    assert info.value.reason == "timeout"


def test_time_counts_across_the_actions_of_one_reconcile(pod):
    """The clock starts once per reconcile: later actions see the time earlier ones spent."""
    clock = FakeClock()
    engine = TemplateEngine({"budget": {"timeout": "1s"}}, clock=clock,
                            extra_filters={"slow": lambda v: clock.step(0.6) or v})
    prog = compile_actions([{"log": "{{ obj | slow }}"},
                            {"log": "{{ obj | slow }}{% for i in range(100) %}{% endfor %}"}],
                           controller="web", engine=engine)
    err = render_error(prog, pod)
    assert (err.index, err.exceeded.reason) == (1, "timeout")


# --- output ----------------------------------------------------------------------------------


def test_output_over_the_limit_fails(pod):
    """Template output past maxOutputChars fails the render, naming the setting; it stops
    within OUTPUT_BATCH chunks of the limit (here chunks of 1000 characters)."""
    prog = compile_actions([{"log": "{% for i in range(1000) %}{{ 'x' * 1000 }}{% endfor %}"}],
                           controller="web", engine=engine_with(maxOutputChars=50_000))
    err = render_error(prog, pod)
    assert err.exceeded.reason == "maxOutputChars"
    assert err.exceeded.limit == 50_000
    assert 50_000 < err.exceeded.used <= 50_000 + OUTPUT_BATCH * 1000
    assert "(templates.budget.maxOutputChars)" in err.detail


def test_output_at_the_limit_renders(pod):
    """Exactly maxOutputChars characters are allowed."""
    prog = compile_actions([{"log": "{{ 'x' * 100 }}"}], controller="web",
                           engine=engine_with(maxOutputChars=100))
    assert prog.render(key="k", obj=pod).steps[0].message == "x" * 100


# --- one budget per reconcile ----------------------------------------------------------------


LOOP_60 = "{% for i in range(60) %}{% endfor %}"


def test_actions_of_one_reconcile_share_one_budget(pod):
    """Two actions of 60 steps each go over a limit of 100 together; the second one fails."""
    prog = compile_actions([{"log": LOOP_60}, {"name": "second", "log": LOOP_60}],
                           controller="web", engine=engine_with(maxLoopSteps=100))
    err = render_error(prog, pod)
    assert (err.index, err.label, err.exceeded.used) == (1, "second", 101)


def test_output_of_one_reconcile_is_counted_together(pod):
    """Output of all the actions adds up against maxOutputChars."""
    prog = compile_actions([{"log": "{{ 'x' * 60 }}"}, {"log": "{{ 'y' * 60 }}"}],
                           controller="web", engine=engine_with(maxOutputChars=100))
    err = render_error(prog, pod)
    assert (err.index, err.exceeded.reason, err.exceeded.used) == (1, "maxOutputChars", 120)


def test_each_reconcile_gets_a_fresh_budget(pod):
    """Reconciles do not accumulate: the same 60-step program renders again and again."""
    prog = compile_actions([{"log": LOOP_60}], controller="web",
                           engine=engine_with(maxLoopSteps=100))
    for _ in range(3):
        assert len(prog.render(key="k", obj=pod).steps) == 1


def test_a_render_outside_a_reconcile_has_its_own_budget():
    """Template.render with no active budget spends a fresh one per call."""
    template = engine_with(maxLoopSteps=100).template(LOOP_60)
    assert template.render({}) == "" and template.render({}) == ""


# --- indexers and key mappers ----------------------------------------------------------------


@pytest.mark.parametrize("compile_func", [compile_key_mapper, compile_index_func],
                         ids=["key-mapper", "indexer"])
def test_key_mapper_and_indexer_over_budget_give_nothing_and_warn(compile_func, pod, caplog):
    """Past the budget a key mapper/indexer yields no value and logs the reason."""
    func = compile_func("{% for i in range(200) %}{{ i }}\n{% endfor %}",
                        engine=engine_with(maxLoopSteps=100))
    with caplog.at_level(logging.WARNING, logger="kinrun.templating"):
        assert func(pod) == []
    assert "template budget exceeded: more than 100 loop steps" in caplog.text


@pytest.mark.parametrize("compile_func", [compile_key_mapper, compile_index_func],
                         ids=["key-mapper", "indexer"])
def test_key_mapper_and_indexer_have_a_budget_per_call(compile_func, pod):
    """Each call spends its own budget, even inside a reconcile's budget."""
    engine = engine_with(maxLoopSteps=100)
    func = compile_func("{% for i in range(60) %}{% endfor %}{{ obj.metadata.name }}",
                        engine=engine)
    with engine.budget() as outer:
        outer.step(100)  # the surrounding budget is spent: the call must not see it
        assert func(pod) == ["web-1"]
        assert func(pod) == ["web-1"]
    assert outer.steps == 100


# --- through a real Controller ---------------------------------------------------------------


def test_controller_retries_the_key_over_budget_and_reconciles_the_next(pod):
    """A worker whose reconcile goes over budget is free again: the key is retried with backoff
    and the same worker reconciles the next key."""
    clock = FakeClock()
    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0),
                              DelayingQueue(clock=clock))
    engine = TemplateEngine(clock=clock)
    config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "{{ key | replace('/', '-') }}"}}
    prog = compile_actions([{"log": "{% if obj.get('spin') %}" + NESTED_LOOPS + "{% endif %}ok"},
                            {"apply": {"manifest": config_map, "ownerReference": False}}],
                           controller="web", engine=engine)
    objects = {"shop/bad": {**pod, "spin": True}, "shop/good": pod}
    client = RecordingClient()
    reconciled = threading.Event()
    workers: list[str] = []

    def reconcile(key, obj):
        workers.append(threading.current_thread().name)
        try:
            return prog.run(key=key, obj=obj, client=client)
        finally:
            if key == "shop/good":
                reconciled.set()

    ctl = Controller("web", queue, objects.get, reconcile, workers=1, clock=clock)
    ctl.enqueue("shop/bad")
    ctl.enqueue("shop/good")
    ctl.start()
    try:
        assert reconciled.wait(WAIT)
    finally:
        ctl.stop(drain_timeout=WAIT)
    assert [r.name for r in client.requests] == ["shop-good"]  # nothing of the bad key sent
    assert queue.num_requeues("shop/bad") == 1   # retried with backoff
    assert queue.num_requeues("shop/good") == 0
    assert len(workers) == 2 and len(set(workers)) == 1   # one worker did both


@pytest.mark.parametrize("template", [
    pytest.param("{% set ns = namespace(x=[1]) %}{% for i in range(40) %}"
                 "{% set ns.x = ns.x + ns.x %}{% endfor %}{{ ns.x|length }}", id="list-plus"),
    pytest.param("{% set ns = namespace(x='a') %}{% for i in range(40) %}"
                 "{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x|length }}", id="string-concat"),
])
def test_doubling_a_value_in_a_short_loop_is_bounded(pod, template):
    """A list or string doubled 40 times in a 40-step loop stops at maxOutputChars items,
    not at the machine's memory (the budget counts sizes built with +, ~ and *)."""
    prog = compile_actions([{"log": template}], controller="web",
                           engine=engine_with(maxOutputChars=1000))
    err = render_error(prog, pod)
    assert isinstance(err, BudgetError)
    assert "over the limit of 1000 (templates.budget.maxOutputChars)" in str(err)


def test_a_larger_loop_budget_allows_a_larger_range(pod):
    """range() is bounded by maxLoopSteps when that is above the fixed 10,000."""
    prog = compile_actions([{"log": "{% for i in range(20000) %}{% endfor %}ok"}],
                           controller="web", engine=engine_with(maxLoopSteps=1_000_000))
    assert prog.render(key="shop/web-1", obj=pod).log_lines[0].message == "ok"


# --- strings built by one call: str methods, '%', string filters ----------------------------

STRING_BUILDERS = [
    pytest.param("{{ 'x' | center(1000000) | length }}", id="center-filter"),
    pytest.param("{{ ('%1000000s' % 'x') | length }}", id="percent-width"),
    pytest.param("{{ ('%.1000000f' % 1.5) | length }}", id="percent-precision"),
    pytest.param("{{ ('%*s' % (1000000, 'x')) | length }}", id="percent-star"),
    pytest.param("{{ ('%s' * 100) % (('y' * 500,) * 100) }}", id="percent-many-fields"),
    pytest.param("{{ 'x'.zfill(1000000) | length }}", id="zfill"),
    pytest.param("{{ 'x'.ljust(1000000) | length }}", id="ljust"),
    pytest.param("{{ 'x'.rjust(1000000) | length }}", id="rjust"),
    pytest.param("{{ 'x'.center(1000000) | length }}", id="center-method"),
    pytest.param("{{ '{:>1000000}'.format('x') | length }}", id="format-width"),
    pytest.param("{{ '{:>{w}}'.format('x', w=1000000) | length }}", id="format-nested-width"),
    pytest.param("{{ '{x:>1000000}'.format_map({'x': 1}) | length }}", id="format-map"),
    pytest.param("{{ ('\t' * 100).expandtabs(100) | length }}", id="expandtabs"),
    pytest.param("{{ ('x' * 100).replace('x', 'y' * 100) | length }}", id="replace-method"),
    pytest.param("{{ ('x' * 100) | replace('x', 'y' * 100) | length }}", id="replace-filter"),
    pytest.param("{{ ('y' * 100).join(range(100) | map('string')) | length }}", id="join-method"),
    pytest.param("{{ range(100) | join('y' * 100) | length }}", id="join-filter"),
    pytest.param("{{ ('x' * 100).translate({120: 'y' * 100}) | length }}", id="translate"),
    pytest.param("{{ 'x' | indent(1000000, true) | length }}", id="indent-width"),
    pytest.param("{{ ('a\n' * 100) | indent('y' * 100) | length }}", id="indent-string"),
    pytest.param("{{ '%1000000s' | format('x') | length }}", id="format-filter"),
    pytest.param("{{ ('a ' * 100) | wordwrap(1, wrapstring='z' * 100) | length }}",
                 id="wordwrap"),
]


@pytest.mark.parametrize("template", STRING_BUILDERS)
def test_strings_built_by_one_call_are_bounded(pod, template):
    """A str method, '%' or string filter whose arguments make a string longer than
    maxOutputChars fails as a retryable budget error naming the action and the setting."""
    prog = compile_actions([{"name": "big", "log": template}], controller="web",
                           engine=engine_with(maxOutputChars=1000))
    err = render_error(prog, pod)
    assert isinstance(err, BudgetError) and not isinstance(err, ReconcileError)
    assert "controller 'web' action [0] (big): template budget exceeded" in str(err)
    assert "over the limit of 1000 (templates.budget.maxOutputChars)" in str(err)


@pytest.mark.parametrize("template", [
    "{{ 'x' | center(10 ** 12) }}", "{{ '%1000000000000s' % 'x' }}", "{{ 'x'.zfill(10 ** 12) }}",
    "{{ '{:>1000000000000}'.format('x') }}", "{{ 'x' | indent(10 ** 12, true) }}",
])
def test_huge_widths_are_refused_before_the_string_is_built(pod, template):
    """A width of 10^12 characters is refused from the arguments: building it first would be
    a MemoryError (or the machine's memory), not a budget error."""
    prog = compile_actions([{"log": template}], controller="web")
    err = render_error(prog, pod)
    assert isinstance(err, BudgetError), err
    assert "over the limit of" in str(err)


@pytest.mark.parametrize("template, expected", [
    ("{{ '%05d' % 3 }}", "00003"),
    ("{{ '%(a)s-%(b)d' % {'a': 'x', 'b': 2} }}", "x-2"),
    ("{{ '%d' % 5000000000 }}", "5000000000"),
    ("{{ 7 % 3 }}", "1"),
    ("{{ 'ab' | center(6) }}", "  ab  "),
    ("{{ '{:>8}'.format('x') }}", "       x"),
    ("{{ '{}'.format(5000000000) }}", "5000000000"),
    ("{{ '{a}:{b:03d}'.format_map({'a': 'x', 'b': 7}) }}", "x:007"),
    ("{{ 'x'.zfill(3) ~ 'y'.ljust(2) ~ 'z'.rjust(2) }}", "00xy  z"),
    ("{{ 'a\tb'.expandtabs(4) }}", "a   b"),
    ("{{ 'a\nb' | indent(2) }}", "a\n  b"),
    ("{{ [1, 2] | join(',') ~ '-'.join(['a', 'b']) }}", "1,2a-b"),
    ("{{ '%s-%s' | format('a', 'b') }}", "a-b"),
    ("{{ 'aXb' | replace('X', '--') ~ 'aXb'.replace('X', '+') }}", "a--ba+b"),
    ("{{ 'abc' | truncate(5000000) }}", "abc"),
    ("{{ 'a b c' | wordwrap(3) }}", "a b\nc"),
])
def test_normal_string_building_still_works(pod, template, expected):
    """Widths, formats and filters of ordinary size render as before."""
    prog = compile_actions([{"log": template}], controller="web",
                           engine=engine_with(maxOutputChars=1000))
    assert prog.render(key="shop/web-1", obj=pod).log_lines[0].message == expected
