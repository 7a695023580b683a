"""Controller ``schedule:`` (kinrun.schedule): cron parsing as batch/v1 CronJob (UTC unless
``timeZone``), the plan's file:line errors, and the Scheduler on a FakeClock: each fire time
queues every key once."""

from __future__ import annotations

import datetime
import queue

import pytest

from kinrun.clock import FakeClock, WallOverride
from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.schedule import MAX_WAIT, CronSchedule, ScheduleError, Scheduler

WAIT = 5.0
EPOCH = datetime.datetime(2024, 3, 30, 23, 59, tzinfo=datetime.timezone.utc).timestamp()
"""Saturday 2024-03-30 23:59 UTC; Europe/Berlin moves to summer time the next night."""


def utc(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix, tz=datetime.timezone.utc).strftime(
        "%Y-%m-%d %H:%M")


# -- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize("expr, after", [
    ("*/15 * * * *", "2024-03-31 00:00"),
    ("0 3 * * *", "2024-03-31 03:00"),
    ("30 12 * * MON", "2024-04-01 12:30"),
    ("@hourly", "2024-03-31 00:00"),
    ("@daily", "2024-03-31 00:00"),
    ("  0  3 * *   * ", "2024-03-31 03:00"),
])
def test_cron_in_utc(expr, after):
    """Five fields or a macro, read in UTC without timeZone."""
    assert utc(CronSchedule(expr).next_after(EPOCH)) == after


def test_time_zone_moves_the_fire_time_and_follows_daylight_saving():
    """03:00 in Europe/Berlin is 01:00 UTC after the switch to summer time (UTC+2) and 02:00
    UTC the day before (UTC+1)."""
    berlin = CronSchedule("0 3 * * *", "Europe/Berlin")
    first = berlin.next_after(EPOCH - 86400)
    assert utc(first) == "2024-03-30 02:00"
    assert utc(berlin.next_after(first)) == "2024-03-31 01:00"


@pytest.mark.parametrize("expr, zone, message", [
    ("61 * * * *", None, "minute field .61. is not valid"),
    ("* * * *", None, "five fields"),
    ("0 * * * * *", None, "five fields"),
    ("@reboot", None, "unknown macro"),
    ("TZ=UTC 0 3 * * *", None, "not as a TZ= prefix"),
    ("0 3 * * *", "Mars/Olympus", "not a known IANA time zone"),
])
def test_bad_schedules_are_refused(expr, zone, message):
    with pytest.raises(ScheduleError, match=message):
        CronSchedule(expr, zone)


@pytest.mark.parametrize("expr, message", [
    ("0 0 30 2 *", "never fires: no Feb 30 (day of month '30' never falls in month '2')"),
    ("0 0 31 4,FEB *", "never fires: no Feb 31 or Apr 31"),
    ("@daily", None), ("0 0 29 2 *", None), ("0 0 31 2 MON", None),
])
def test_a_schedule_that_never_fires_is_refused_when_parsed(expr, message):
    """croniter accepts Feb 30 and fails each next-time search (CroniterBadDateError): the
    parse refuses it and names the missing date; Feb 29, and Feb 31 OR Mondays, do fire."""
    if message is None:
        assert CronSchedule(expr).next_after(EPOCH) > EPOCH
        return
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert str(caught.value).startswith(f"schedule {expr!r} {message}"), str(caught.value)


@pytest.mark.parametrize("expr, message", [
    ("61 * * * *", "minute field '61' is not valid (minute takes 0-59)"),
    ("0 25 * * *", "hour field '25' is not valid (hour takes 0-23)"),
    ("0 0 32 * *", "day of month field '32' is not valid (day of month takes 1-31)"),
    ("0 0 0 * *", "day of month field '0' is not valid (day of month takes 1-31)"),
    ("0 0 * 13 *", "month field '13' is not valid (month takes 1-12 or JAN-DEC)"),
    ("0 0 * * 8", "day of week field '8' is not valid (day of week takes 0-6 or SUN-SAT"),
    ("5-70 * * * *", "minute field '5-70' is not valid"),
    ("*/0 * * * *", "minute field '*/0' is not valid"),
    ("0 0 * * FOO", "day of week field 'FOO' is not valid"),
])
def test_a_bad_field_is_named_with_its_range(expr, message):
    """croniter's "[0 25 * * *] is not acceptable, out of range" does not say which field:
    the error names it and the values it takes."""
    with pytest.raises(ScheduleError) as caught:
        CronSchedule(expr)
    assert str(caught.value).startswith(f"schedule {expr!r}: {message}")


# -- the plan ----------------------------------------------------------------------------------


CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: nightly
    for: cms
%s
    reconcile:
      actions:
        - log: "{{ reason }} {{ key }}"
"""


def compile_config(lines: str):
    return plan(load_text(CONFIG % lines, file="cfg.yaml"), new_plugin_manager())


def test_plan_compiles_schedule_and_zone():
    compiled = compile_config('    schedule: "0 3 * * *"\n    timeZone: Europe/Berlin')
    sched = compiled.controller("nightly").schedule
    assert (sched.expression, sched.time_zone) == ("0 3 * * *", "Europe/Berlin")
    assert compile_config("").controller("nightly").schedule is None


@pytest.mark.parametrize("lines, where, message", [
    ('    schedule: "0 25 * * *"', "cfg.yaml:8:15: controllers[0].schedule", "hour field .25. is not valid"),
    ('    schedule: "0 3 * * *"\n    timeZone: Nowhere/Land',
     "cfg.yaml:9:15: controllers[0].timeZone", "not a known IANA time zone"),
    ("    timeZone: UTC", "cfg.yaml:8:15: controllers[0].timeZone", "timeZone needs a schedule"),
    ('    schedule: "0 0 30 2 *"', "cfg.yaml:8:15: controllers[0].schedule",
     "never fires: no Feb 30"),
])
def test_plan_refuses_bad_schedule_or_zone_at_its_key(lines, where, message):
    """validate (load + plan) names the file:line:column of the key."""
    with pytest.raises(ConfigError, match=message) as caught:
        compile_config(lines)
    assert str(caught.value).startswith(where), str(caught.value)


# -- the scheduler on a fake clock ---------------------------------------------------------------


class Sink:
    def __init__(self) -> None:
        self.keys: queue.Queue[str] = queue.Queue()

    def take(self, n: int) -> list[str]:
        return sorted(self.keys.get(timeout=WAIT) for _ in range(n))


def running(expr: str, keys: list[str], clock: FakeClock, sink: Sink,
            zone: str | None = None) -> Scheduler:
    scheduler = Scheduler("c", CronSchedule(expr, zone), lambda: list(keys), sink.keys.put,
                          clock=clock, wall=WallOverride(clock, lambda: EPOCH + clock.now()))
    scheduler.start()
    assert clock.wait_for_waiters(1, WAIT, timed=True)
    return scheduler


def test_each_fire_time_queues_every_key_once():
    """Stepping the fake clock past the next fire time (00:00) queues each key once; nothing
    more until the following one (00:15)."""
    clock, sink = FakeClock(start=0.0), Sink()
    scheduler = running("*/15 * * * *", ["ns/a", "ns/b", "c"], clock, sink)
    try:
        clock.step(59.0)  # 23:59:59: not yet
        assert clock.settle(_deadline()) and clock.wait_for_waiters(1, WAIT, timed=True)
        assert sink.keys.empty() and scheduler.fired == 0
        clock.step(1.0)   # 00:00
        assert sink.take(3) == ["c", "ns/a", "ns/b"]
        assert clock.settle(_deadline()) and clock.wait_for_waiters(1, WAIT, timed=True)
        assert sink.keys.empty() and scheduler.fired == 1
        for _ in range(int(15 * 60 / MAX_WAIT) - 1):  # waits of MAX_WAIT up to 00:14
            clock.step(MAX_WAIT)
            assert clock.settle(_deadline()) and clock.wait_for_waiters(1, WAIT, timed=True)
        assert sink.keys.empty()
        clock.step(MAX_WAIT)  # 00:15
        assert sink.take(3) == ["c", "ns/a", "ns/b"]
    finally:
        scheduler.stop()


def test_missed_fire_times_fire_once():
    """A step over several fire times (the process was busy, the clock jumped) fires once."""
    clock, sink = FakeClock(start=0.0), Sink()
    scheduler = running("* * * * *", ["k"], clock, sink)
    try:
        clock.step(10 * 60.0)
        assert sink.take(1) == ["k"]
        assert clock.settle(_deadline()) and clock.wait_for_waiters(1, WAIT, timed=True)
        assert sink.keys.empty() and scheduler.fired == 1
    finally:
        scheduler.stop()


def test_stop_ends_the_thread_without_firing():
    clock, sink = FakeClock(start=0.0), Sink()
    scheduler = running("@hourly", ["k"], clock, sink)
    scheduler.stop()
    assert scheduler._thread is not None and not scheduler._thread.is_alive()
    assert sink.keys.empty() and scheduler.fired == 0


class Failing:
    """A schedule whose next fire times are ``times`` (Unix seconds), then none."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)

    def next_after(self, unix: float) -> float:
        if not self.times:
            raise ScheduleError("schedule '0 0 30 2 *': no fire time after then")
        return self.times.pop(0)

    def __repr__(self) -> str:
        return "CronSchedule('0 0 30 2 *' (UTC))"


def test_a_schedule_without_a_first_fire_time_is_logged_and_not_started(caplog):
    """start() does not raise (the manager's start and a reload's switch go on): one ERROR
    names the controller and the schedule, and no thread runs."""
    clock = FakeClock(start=0.0)
    scheduler = Scheduler("nightly", Failing(), list, Sink().keys.put, clock=clock)
    with caplog.at_level("ERROR", logger="kinrun.controller.nightly"):
        scheduler.start()
    [record] = caplog.records
    assert record.getMessage().startswith(
        "nightly: schedule CronSchedule('0 0 30 2 *' (UTC)) stopped: no next fire time")
    assert scheduler._thread is None and scheduler.fired == 0


def test_a_schedule_without_a_later_fire_time_ends_its_thread_logged(caplog):
    """After a fire, a schedule without a next time ends the scheduler's thread normally
    (logged at ERROR, not a thread death): the keys were queued once."""
    clock, sink = FakeClock(start=0.0), Sink()
    scheduler = Scheduler("nightly", Failing(EPOCH + 60.0), lambda: ["k"], sink.keys.put,
                          clock=clock, wall=WallOverride(clock, lambda: EPOCH + clock.now()))
    with caplog.at_level("ERROR"):
        scheduler.start()
        assert clock.wait_for_waiters(1, WAIT, timed=True)
        clock.step(60.0)
        assert sink.take(1) == ["k"]
        scheduler._thread.join(WAIT)
    assert not scheduler._thread.is_alive() and scheduler.fired == 1
    assert [(r.name, r.getMessage()[:36]) for r in caplog.records] == [
        ("kinrun.controller.nightly", "nightly: schedule CronSchedule('0 0 ")]


def _deadline() -> float:
    import time
    return time.monotonic() + WAIT
