"""kinrun.threads: a background thread that dies is logged with its name and exception and fails
/healthz; every thread kinrun starts is one."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from kinrun import threads
from kinrun.config import load_text
from kinrun.probes import Probes
from kinrun.threads import Deaths, SupervisedThread, SupervisedTimer, health_check

RUNNER = Path(__file__).parents[2] / "runner"


def died(target, name: str, deaths: Deaths) -> None:
    thread = SupervisedThread(target=target, name=name, deaths=deaths)
    thread.start()
    thread.join()


def boom() -> None:
    raise OverflowError("timestamp out of range for platform time_t")


@pytest.mark.parametrize("error", [OverflowError("x"), SystemExit(7), KeyboardInterrupt()],
                         ids=["exception", "system-exit", "keyboard-interrupt"])
def test_a_thread_that_dies_is_logged_with_its_name_and_exception(caplog, error) -> None:
    """The ERROR record names the thread and the exception (SystemExit too, which Python's
    threading.excepthook ignores) and carries the traceback."""
    def target() -> None:
        raise error

    deaths = Deaths()
    with caplog.at_level(logging.ERROR, logger="kinrun.threads"):
        died(target, "workqueue-delay-c", deaths)
    [record] = caplog.records
    assert "thread workqueue-delay-c died" in record.getMessage()
    assert type(error).__name__ in record.getMessage() and record.exc_info is not None
    assert [(d.name, d.error) for d in deaths.since(0)] == [("workqueue-delay-c", type(error).__name__)]


def test_the_health_check_reports_deaths_after_it_was_made() -> None:
    """health_check() fails naming each thread that died since; earlier deaths do not count."""
    deaths = Deaths()
    died(boom, "before", deaths)
    check = health_check(deaths)
    assert check() == []
    died(boom, "reflector-pods", deaths)
    assert check() == ["thread reflector-pods died: OverflowError (see the log)"]


def test_a_timer_that_dies_is_recorded() -> None:
    """SupervisedTimer: a function that raises after the interval is a death too."""
    deaths = Deaths()
    timer = SupervisedTimer(0, boom, name="kinrun-exit-deadline", deaths=deaths)
    timer.start()
    timer.join()
    assert [d.name for d in deaths.since(0)] == ["kinrun-exit-deadline"]


def test_a_thread_that_returns_is_no_death() -> None:
    """A target that returns ends the thread normally: nothing recorded."""
    deaths = Deaths()
    died(lambda: None, "quiet", deaths)
    assert deaths.count() == 0


def test_probes_fail_healthz_while_a_registered_check_fails() -> None:
    """Probes.add_health_check: each failure line is a [-] line of /healthz."""
    probes, deaths = Probes(stuck_reconcile_after=60), Deaths()
    probes.add_health_check(health_check(deaths))
    assert probes.healthz() == (True, "ok\n")
    died(boom, "kinrun-reload", deaths)
    ok, body = probes.healthz()
    assert not ok and "[-]thread kinrun-reload died: OverflowError (see the log)" in body


def test_the_run_registers_the_dead_thread_check(caplog) -> None:
    """The probes kinrun run serves fail once any kinrun thread dies."""
    from kinrun.app import _probes

    config = load_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
                       "informers: {cms: {apiVersion: v1, kind: ConfigMap}}\n"
                       "controllers: [{name: c, for: cms, reconcile: {actions: [{log: hi}]}}]\n"
                       "probes: {port: 0}\n")
    probes = _probes(config)
    assert probes is not None and probes.healthz()[0]
    with caplog.at_level(logging.CRITICAL, logger="kinrun.threads"):
        died(boom, "c-worker-0", threads.DEATHS)
    ok, body = probes.healthz()
    assert not ok and "thread c-worker-0 died" in body


def thread_calls(path: Path) -> list[int]:
    """Lines of ``threading.Thread(...)`` and ``threading.Timer(...)`` calls in a module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr in ("Thread", "Timer")
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "threading"]


ALLOWED: set[str] = set()  # no module may start a bare thread


def test_every_background_thread_is_supervised() -> None:
    """No module of kinrun starts a bare threading.Thread (kinrun.threads supervises them)."""
    bare = {str(p.relative_to(RUNNER)): lines for p in sorted(RUNNER.rglob("*.py"))
            if p.name not in ALLOWED and p.name != "threads.py" and (lines := thread_calls(p))}
    assert bare == {}
