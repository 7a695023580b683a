"""Time in templates: now() reads the engine's wall clock (the plan's; fixed in tests) as an
aware UTC datetime; to_datetime parses RFC 3339, isoformat writes it, duration reads "1h"."""

from __future__ import annotations

import datetime

import pytest

from kinrun.clock import FakeClock
from kinrun.actions import compile_actions
from kinrun.config import load_text
from kinrun.plan import plan
from kinrun.templating import TemplateEngine, TemplateRenderError, isoformat, to_datetime

EPOCH = 1_700_000_000.0  # 2023-11-14T22:13:20Z
UTC = datetime.timezone.utc


class FakeWallClock(FakeClock):
    """A fake clock whose wall is Unix seconds that move only when told (``seconds``),
    counting its reads."""

    def __init__(self, now: float = EPOCH) -> None:
        super().__init__()
        self.seconds = now
        self.reads = 0

    def wall(self) -> float:
        self.reads += 1
        return self.seconds


def render(source: str, clock: FakeWallClock | None = None, **variables) -> str:
    engine = TemplateEngine(clock=clock or FakeWallClock())
    return engine.template(source).render(variables)


def test_now_is_an_aware_utc_datetime_from_the_wall_clock():
    """now() is the injected wall clock's time, in UTC, with a time zone."""
    engine = TemplateEngine(clock=FakeWallClock(EPOCH + 0.25))
    value = engine.expression("now()").evaluate({})
    assert value == datetime.datetime(2023, 11, 14, 22, 13, 20, 250000, tzinfo=UTC)
    assert value.utcoffset() == datetime.timedelta(0)


def test_now_reads_the_clock_at_each_call():
    """now() follows the clock: move it, and the next render sees the new time."""
    clock = FakeWallClock()
    engine = TemplateEngine(clock=clock)
    template = engine.template("{{ now() | isoformat }}")
    assert template.render({}) == "2023-11-14T22:13:20Z"
    clock.seconds += 3600
    assert template.render({}) == "2023-11-14T23:13:20Z"
    assert clock.reads == 2


@pytest.mark.parametrize("text,expected", [
    pytest.param("2023-11-14T22:13:20Z", datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC),
                 id="z"),
    pytest.param("2023-11-14T23:13:20+01:00",
                 datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC), id="offset"),
    pytest.param("2023-11-14T22:13:20.123456789Z",
                 datetime.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC),
                 id="nanoseconds-cut"),
])
def test_to_datetime_parses_rfc3339(text, expected):
    """RFC 3339 timestamps (Z, offsets, fractions) become aware UTC datetimes."""
    value = to_datetime(text)
    assert value == expected and value.tzinfo == UTC


@pytest.mark.parametrize("text", ["2023-11-14T22:13:20", "yesterday", "2023-11-14", ""])
def test_to_datetime_refuses_what_is_not_rfc3339(text):
    """No offset, no time or no timestamp at all: an error, never a guess."""
    with pytest.raises(ValueError, match="RFC 3339"):
        to_datetime(text)
    with pytest.raises(TemplateRenderError, match="RFC 3339"):
        render("{{ ts | to_datetime }}", ts=text)


def test_isoformat_writes_kubernetes_time():
    """isoformat: whole seconds with Z (metav1.Time), or microseconds when asked."""
    clock = FakeWallClock(EPOCH + 0.5)
    assert render("{{ now() | isoformat }}", clock) == "2023-11-14T22:13:20Z"
    assert render("{{ now() | isoformat('microseconds') }}", clock) == \
        "2023-11-14T22:13:20.500000Z"
    assert isoformat("2023-11-14T23:13:20+01:00") == "2023-11-14T22:13:20Z"
    with pytest.raises(ValueError):
        isoformat("2023-11-14T22:13:20Z", "hours")


@pytest.mark.parametrize("created,older", [("2023-11-14T21:13:19Z", True),
                                           ("2023-11-14T21:13:21Z", False)])
def test_older_than_an_hour_can_be_written(created, older):
    """now() - creationTimestamp | to_datetime > "1h" | duration reads as it should."""
    obj = {"metadata": {"creationTimestamp": created}}
    expr = "now() - obj.metadata.creationTimestamp | to_datetime > '1h' | duration"
    engine = TemplateEngine(clock=FakeWallClock())
    assert engine.expression(expr).evaluate({"obj": obj}) is older


def test_now_is_sandboxed():
    """The datetime now() returns exposes no internals."""
    with pytest.raises(TemplateRenderError):
        render("{{ now().__class__ }}")


def test_the_plans_clock_is_the_templates_now():
    """plan(config, clock=...) hands its wall clock to the engine: renders are reproducible."""
    text = ("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
            "informers:\n  cms: {apiVersion: v1, kind: ConfigMap}\n"
            "controllers:\n  - name: c\n    for: cms\n    reconcile:\n"
            "      vars:\n        stamp: now() | isoformat\n"
            "      actions:\n        - log: \"{{ stamp }} {{ now().year }}\"\n")
    outputs = []
    for _ in range(2):
        compiled = plan(load_text(text, file="t.yaml"), clock=FakeWallClock())
        result = compiled.controllers[0].actions.render(key="ns/cm", obj={"metadata": {}})
        outputs.append(result.describe())
    assert outputs[0] == outputs[1] == [{"log": "2023-11-14T22:13:20Z 2023", "level": "info"}]


def test_compile_actions_engines_default_to_the_real_clock():
    """Without a clock, now() is the real time (an engine built by compile_actions)."""
    prog = compile_actions([{"log": "{{ now().year >= 2024 }}"}], controller="c")
    assert [s.message for s in prog.render(key="k", obj={}).log_lines] == ["True"]


def test_compile_actions_hands_its_clock_to_the_engine_it_builds():
    """One clock (issue 27): ``compile_actions(clock=...)`` without an engine times its
    templates' now() on that clock, as its Events are."""
    prog = compile_actions([{"log": "{{ now() | isoformat }}"}], controller="c",
                           clock=FakeWallClock())
    assert [s.message for s in prog.render(key="k", obj={}).log_lines] == [
        "2023-11-14T22:13:20Z"]
