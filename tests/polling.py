"""Waiting for a condition in tests that drive real worker threads: ``wait_until``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def wait_until(condition: Callable[[], object], what: str, timeout: float = 60.0,
               interval: float = 0.02) -> None:
    """Return once ``condition()`` is truthy, checking every ``interval`` seconds; raise
    AssertionError naming ``what`` after ``timeout`` seconds (a bound, never a timing goal)."""
    deadline, pause = time.monotonic() + timeout, threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        pause.wait(interval)
