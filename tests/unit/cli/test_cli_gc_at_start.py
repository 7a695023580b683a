"""The main job raises the GC thresholds before its heavy imports (start-up time, issue 27);
other commands leave the process's GC settings alone."""

from __future__ import annotations

import gc

import pytest

from kinrun import cli
from kinrun.gc.policy import DEFAULT_THRESHOLDS


@pytest.fixture
def thresholds_seen(monkeypatch):
    seen: list[tuple[int, ...]] = []
    before = gc.get_threshold()
    monkeypatch.setattr(cli, "_main", lambda command, args: seen.append(gc.get_threshold()) or 0)
    yield seen
    gc.set_threshold(*before)


def test_the_main_job_starts_with_the_policys_thresholds(thresholds_seen) -> None:
    gc.set_threshold(700, 10, 10)
    assert cli.main(["config.yaml"]) == 0
    assert thresholds_seen == [DEFAULT_THRESHOLDS]
    assert gc.get_threshold() == (700, 10, 10)  # an in-process caller's are given back


def test_other_commands_leave_the_gc_alone(thresholds_seen) -> None:
    gc.set_threshold(700, 10, 10)
    assert cli.main(["validate", "config.yaml"]) == 0
    assert thresholds_seen == [(700, 10, 10)]
