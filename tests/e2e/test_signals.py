"""Real signals to a real ``kinrun CONFIG --embedded``: never a hang, always the documented exit
code, within the documented bound (drain timeout + ``kinrun.app.EXIT_SLACK``).

The loop sends a few hundred signals, in bursts at random moments (fixed seed) of start-up,
cache sync, steady state and drain; a burst stays within the second-signal grace period, so it
is one stop request (exit 0), unless the plan sends one more signal during the drain, after the
grace period (exit 130).
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest

from kinrun.app import EXIT_SLACK
from kinrun.signals import SECOND_SIGNAL_GRACE

from .harness import WAIT, KinrunProcess

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not Path("/proc/self/status").exists(),
                                                  reason="needs /proc (Linux)")]

DRAIN = 4.0
"""--drain-timeout of every run here (seconds)."""

BOUND = DRAIN + EXIT_SLACK
"""The documented bound from the first signal to the exit."""

START_ALLOWANCE = 15.0
"""Seconds a run signalled during start-up may take to reach the point where the bound starts
(imports and config loading; generous: CI shares 2 cores)."""

HOOKS = '''\
import threading
from kinrun.hooks import hookimpl

@hookimpl
def kinrun_reconcile(controller, key, obj, ctx):
    """Take obj.data.seconds seconds (a reconcile busy with the API)."""
    if obj is not None:
        threading.Event().wait(float(obj["data"]["seconds"]))
'''

CONFIG = '''\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
plugins: [./signal_hooks.py]
informers:
  configmaps: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: busy
    for: configmaps
    workers: 1
    reconcile: {hooks: true}
'''


@pytest.fixture
def config(tmp_path: Path) -> Path:
    (tmp_path / "signal_hooks.py").write_text(HOOKS)
    path = tmp_path / "signals.yaml"
    path.write_text(CONFIG)
    return path


def seeds(tmp_path: Path, name: str, seconds: list[float]) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_bytes(b"\n---\n".join(orjson.dumps(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}"},
         "data": {"seconds": str(s)}}) for i, s in enumerate(seconds)))
    return path


def caught_signals(pid: int) -> int:
    """The process's caught-signal mask (``SigCgt`` of /proc/PID/status), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def wait_until_sigterm_is_handled(proc: KinrunProcess) -> None:
    """Block until kinrun has installed its SIGTERM handler (watching its SigCgt mask, which
    changes in the child, so there is no event to wait on here)."""
    bit = 1 << (signal.SIGTERM - 1)
    deadline = time.monotonic() + WAIT
    while not caught_signals(proc.proc.pid) & bit:
        if proc.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"kinrun never handled SIGTERM; log:\n{proc.log()}")
        time.sleep(0.0005)


def wait_exit(proc: KinrunProcess, timeout: float) -> int:
    """The exit code; AssertionError (with the log) when the process outlives ``timeout``."""
    try:
        code = proc.proc.wait(timeout)
    except Exception:  # noqa: BLE001 - TimeoutExpired: the hang this file is about
        proc.kill()
        raise AssertionError(f"kinrun did not exit within {timeout}s of the first signal; "
                             f"log:\n{proc.log()}") from None
    proc._reader.join(5)
    return code


def test_sigterm_as_soon_as_the_handler_exists_stops_before_anything_starts(
        config: Path, tmp_path: Path) -> None:
    """SIGTERM while the config is still being read: exit 0, logged, nothing started.

    The config is a FIFO, so kinrun blocks reading it until the test has sent the signal."""
    fifo = tmp_path / "early.yaml"
    os.mkfifo(fifo)
    proc = KinrunProcess([str(fifo), "--embedded"])
    try:
        wait_until_sigterm_is_handled(proc)
        proc.proc.send_signal(signal.SIGTERM)
        with open(fifo, "w") as writer:  # unblocks kinrun's load
            writer.write(config.read_text().replace("./signal_hooks.py",
                                                    str(tmp_path / "signal_hooks.py")))
        assert wait_exit(proc, START_ALLOWANCE + BOUND) == 0
        assert proc.count(r"SIGTERM received before the run started: stopping$") == 1
        assert proc.count(r"embedded API server at") == 0
    finally:
        proc.kill()


@dataclass
class Plan:
    """One process: where the first burst lands, how many signals, whether a late one follows."""

    phase: str              # start-up | sync | steady | drain
    burst: list[float]      # offsets (s) of the burst's signals, within the grace period
    signals: list[int]
    delay: float            # seconds after the phase's marker before the burst
    second: bool            # one more signal during the drain, after the grace period


PHASES = ("start-up", "sync", "steady", "drain")


def make_plans(rng: random.Random, count: int) -> Iterator[Plan]:
    for i in range(count):
        phase = PHASES[i % len(PHASES)]
        size = rng.randint(15, 45)
        window = 0.3 * SECOND_SIGNAL_GRACE
        yield Plan(phase=phase, burst=sorted(rng.uniform(0, window) for _ in range(size)),
                   signals=[rng.choice((signal.SIGTERM, signal.SIGINT)) for _ in range(size)],
                   delay=rng.uniform(0, 0.4),
                   second=phase in ("steady", "drain") and rng.random() < 0.4)


def run_plan(plan: Plan, config: Path, tmp_path: Path, index: int) -> tuple[int, int, str]:
    """Run one process by ``plan``; returns (expected exit code, exit code, log)."""
    long = plan.second  # a reconcile outliving the drain, so the late signal meets it running
    seed = seeds(tmp_path, f"seeds-{index}", [30.0] if long else [0.2] * 4)
    proc = KinrunProcess([str(config), "--embedded", "--seed", str(seed),
                          "--drain-timeout", f"{DRAIN}s"])
    try:
        if plan.phase == "start-up":
            wait_until_sigterm_is_handled(proc)
        elif plan.phase == "sync":
            proc.wait_for(r"embedded API server at")
        else:
            proc.wait_for(r"kinrun running:")
        time.sleep(plan.delay)  # a random moment of the phase (not a wait for a condition)
        start = time.monotonic()

        def burst() -> None:
            for offset, signum in zip(plan.burst, plan.signals):
                time.sleep(max(0.0, start + offset - time.monotonic()))
                if proc.proc.poll() is None:
                    proc.proc.send_signal(signum)

        sender = threading.Thread(target=burst)
        sender.start()
        if plan.phase == "drain" or plan.second:
            proc.wait_for(r"stopping: draining")
        sender.join()
        expected = 0
        if plan.second:
            time.sleep(max(0.0, start + plan.burst[-1] + SECOND_SIGNAL_GRACE + 0.2
                           - time.monotonic()))
            assert proc.proc.poll() is None, f"exited before the second signal:\n{proc.log()}"
            proc.proc.send_signal(signal.SIGTERM)
            expected = 130
        code = wait_exit(proc, START_ALLOWANCE + BOUND)
        return expected, code, proc.log()
    finally:
        proc.kill()


def test_signals_at_random_moments_always_exit_within_the_bound(config: Path,
                                                                tmp_path: Path) -> None:
    """A few hundred signals over 12 runs: each exits in the bound with 0 (one stop request)
    or 130 (another signal during the drain, after the grace period)."""
    plans = list(make_plans(random.Random(20240611), 12))
    assert sum(len(p.burst) for p in plans) >= 200
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda ip: run_plan(ip[1], config, tmp_path, ip[0]),
                                enumerate(plans)))
    for plan, (expected, code, log) in zip(plans, results):
        assert code == expected, f"{plan}: exit {code}, expected {expected}; log:\n{log}"
        if expected == 0:
            assert "received" in log and "Traceback" not in log, log
