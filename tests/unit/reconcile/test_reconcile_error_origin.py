"""A hook's unexpected error is logged with where it was raised in the hook's own code
(``KeyError: 'spec' (at FILE:LINE in FUNCTION)``): frames of kinrun, the standard library and
installed packages are skipped; kinrun's own errors keep their message alone."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from kinrun.clock import FakeClock
from kinrun.controller import Controller
from kinrun.errors import ConflictError
from kinrun.workqueue import RateLimitingQueue


def _retry_line(reconcile: Any, caplog: pytest.LogCaptureFixture) -> str:
    queue = RateLimitingQueue(clock=FakeClock(), name="c")
    controller = Controller("c", queue, lambda key: {"metadata": {}}, reconcile)
    controller.enqueue("default/a")
    with caplog.at_level(logging.WARNING, logger="kinrun.controller"):
        controller.process_next_item()
    queue.shut_down()
    return next(r.getMessage() for r in caplog.records if "will retry" in r.getMessage())


def test_a_hook_error_names_its_line(caplog: pytest.LogCaptureFixture) -> None:
    def kinrun_reconcile(key: str, obj: Any) -> None:
        obj["spec"]["replicas"]  # noqa: B018 - the hook's bug
    line = kinrun_reconcile.__code__.co_firstlineno + 1
    assert _retry_line(kinrun_reconcile, caplog).endswith(
        f"KeyError: 'spec' (at tests/unit/reconcile/test_reconcile_error_origin.py:{line} "
        "in kinrun_reconcile)")


def test_a_library_error_names_the_hook_line_that_called_it(
        caplog: pytest.LogCaptureFixture) -> None:
    def kinrun_reconcile(key: str, obj: Any) -> None:
        json.loads("{")
    line = kinrun_reconcile.__code__.co_firstlineno + 1
    assert f"error_origin.py:{line} in kinrun_reconcile)" in _retry_line(kinrun_reconcile, caplog)


def test_kinrun_errors_keep_their_message(caplog: pytest.LogCaptureFixture) -> None:
    def kinrun_reconcile(key: str, obj: Any) -> None:
        raise ConflictError("the object has been modified")
    said = _retry_line(kinrun_reconcile, caplog)
    assert "the object has been modified" in said and " (at " not in said
