"""One clock (issue 27): below ``kinrun.clock`` nothing in the library reads or waits on time by
itself; every component takes a ``kinrun.clock.Clock`` (``REAL_CLOCK`` by default), so a
FakeClock given to the run reaches all of them.

A scan of the syntax tree of every module of ``runner/`` (the ``kinrun`` package), so a
docstring that names ``time.monotonic`` does not count; ``kinrun.clock`` itself and the test
harness (``kinrun.testing``, which drives real servers in real time) are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "runner"

TIME_READS = {"time": {"time", "time_ns", "monotonic", "monotonic_ns", "sleep", "perf_counter",
                       "perf_counter_ns"},
              "datetime": {"now", "utcnow", "today"}}
"""Module (or class) name -> the attributes that read or wait on the real time."""

EXEMPT = {"clock.py", "testing"}
"""What is allowed to: the clock module itself, and the test harness."""

MEASURES = {("gc/policy.py", "time.perf_counter"), ("metrics.py", "time.perf_counter")}
"""Reads allowed where they only measure the process's own work for a metric (a collection's
pause, a reconcile's run time) on the high-resolution counter: they never decide when anything
happens or what is written, so no test needs to step them."""


def _reads(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in TIME_READS:
            for alias in node.names:
                if alias.name in TIME_READS[node.module]:
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        if isinstance(node, ast.Attribute) and node.attr in TIME_READS.get(
                getattr(node.value, "id", getattr(node.value, "attr", "")), ()):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_reads_the_real_time_by_itself() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in EXEMPT:
            continue
        for line, what in _reads(ast.parse(path.read_text(), str(path))):
            if (rel.as_posix(), what) not in MEASURES:
                offenders.append(f"runner/{rel}:{line}: {what}")
    assert offenders == [], "read time through a kinrun.clock.Clock:\n" + "\n".join(offenders)


def test_the_scan_finds_a_direct_read() -> None:
    """The scan is not blind: each form it refuses is found in a sample."""
    sample = ("import time, datetime\nfrom time import monotonic\n"
              "a = time.monotonic()\nb = datetime.datetime.now()\ntime.sleep(1)\n")
    assert [what for _, what in _reads(ast.parse(sample))] == [
        "from time import monotonic", "time.monotonic", "datetime.datetime.now", "time.sleep"]


REAL_TIME_BOUNDS = {
    ("controller.py", "stop"): "joins the workers' real threads within a drain timeout",
    ("manager.py", "_wait_for_sync"): "the start's sync timeout; the informers' threads are real",
    ("manager.py", "stop_pipeline"): "joins the workers' real threads within a drain timeout",
    ("cache/shared_informer.py", "wait_for_sync"): "a caller's real-time sync timeout",
    ("cache/shared_informer.py", "wait_for_cache_sync"): "a caller's real-time sync timeout",
    ("signals.py", "_on_signal"): "two OS signals within a grace: signals come in real time",
    ("metrics.py", "config_loaded"): "a Prometheus timestamp of the process (to move onto the "
                                      "run's clock: the metrics are not given one yet)",
}
"""(module, function) -> why it calls ``REAL_CLOCK`` itself rather than the clock it was given:
it bounds a wait on real threads, or stamps a process metric. Anything else takes a ``Clock``
(``REAL_CLOCK`` only as a default), so a FakeClock given to the run reaches it."""


def _real_clock_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, enclosing function) of each ``REAL_CLOCK.<method>`` read (not the bare name,
    which is how a default is written)."""
    found = []
    for func in ast.walk(tree):
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(func):
                if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == \
                        "REAL_CLOCK":
                    found.append((node.lineno, func.name))
    return sorted(set(found))


def test_real_clock_is_only_a_default_outside_the_listed_real_time_bounds() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in EXEMPT:
            continue
        for line, func in _real_clock_calls(ast.parse(path.read_text(), str(path))):
            if (rel.as_posix(), func) not in REAL_TIME_BOUNDS:
                offenders.append(f"runner/{rel}:{line}: REAL_CLOCK.* in {func}()")
    assert offenders == [], ("take the run's Clock (REAL_CLOCK as the default only):\n"
                             + "\n".join(offenders))


def test_the_real_clock_scan_finds_a_call_but_not_a_default() -> None:
    sample = ("def f(clock=REAL_CLOCK):\n    return clock.now()\n"
              "def g():\n    return REAL_CLOCK.wall()\n")
    assert _real_clock_calls(ast.parse(sample)) == [(4, "g")]
