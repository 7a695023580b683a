"""Drive ``kinrun`` as a user does: a subprocess whose log lines a test waits on.

``KinrunProcess`` starts ``kinrun ARGS`` and reads its merged stdout/stderr on a thread;
``wait_for(pattern)`` blocks on a condition until a matching line arrives (bounded; the
failure message carries the whole log). ``ObjectWaiter`` waits for an object state through a
WATCH (no polling loop).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kinrun.errors import ExpiredError, NotFoundError
from kinrun.kube import Client

ROOT = Path(__file__).resolve().parents[2]
KINRUN = [sys.executable, "-m", "kinrun.cli"]
WAIT = 60.0
"""Seconds any single wait may take before the test fails (generous: CI shares 2 cores)."""


class KinrunProcess:
    """``kinrun *args`` in a subprocess (cwd: the repo), its output collected line by line.
    ``argv`` replaces the whole command line (e.g. a README command through bash)."""

    def __init__(self, args: Sequence[str] = (), *, env: dict[str, str] | None = None,
                 argv: Sequence[str] | None = None) -> None:
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        argv = list(argv) if argv is not None else [*KINRUN, *args]
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=full_env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def log(self) -> str:
        """Everything kinrun printed so far."""
        with self._cond:
            return "\n".join(self.lines)

    def count(self, pattern: str) -> int:
        """How many lines so far match ``pattern`` (a regex, searched)."""
        rx = re.compile(pattern)
        with self._cond:
            return sum(1 for line in self.lines if rx.search(line))

    def wait_for(self, pattern: str, *, count: int = 1, timeout: float = WAIT) -> str:
        """Block until ``count`` lines match ``pattern``; returns the last match's line.
        AssertionError (with the log) on timeout or when kinrun exits first."""
        rx = re.compile(pattern)
        with self._cond:
            def ready() -> bool:
                return (sum(1 for ln in self.lines if rx.search(ln)) >= count
                        or self.proc.poll() is not None and not self._reader.is_alive())
            self._cond.wait_for(ready, timeout)
            matches = [ln for ln in self.lines if rx.search(ln)]
        if len(matches) < count:
            state = "exited %s" % self.proc.returncode if self.proc.poll() is not None else "running"
            raise AssertionError(f"kinrun ({state}) did not log {pattern!r} x{count} within "
                                 f"{timeout}s; log:\n{self.log()}")
        return matches[count - 1]

    def kubeconfig(self) -> str:
        """The path from the ``export KUBECONFIG=...`` line of ``--embedded``."""
        line = self.wait_for(r"^export KUBECONFIG=")
        return line.split("=", 1)[1].strip()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = WAIT) -> int:
        """Send ``sig`` once and wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"kinrun did not exit within {timeout}s of {sig}; "
                                 f"log:\n{self.log()}") from None
        self._reader.join(5)
        return code

    def kill(self) -> None:
        """End the process (test clean-up)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_for_object(client: Client, api_version: str, kind: str, name: str, namespace: str | None,
                    check: Callable[[dict[str, Any] | None], bool], *, timeout: float = WAIT
                    ) -> dict[str, Any] | None:
    """Wait, through a LIST + WATCH of the object's collection, until ``check(obj)`` holds
    (``obj`` None: absent). Returns the object (or None). AssertionError on timeout."""
    ref = client.resolve(api_version, kind)
    lw = client.lister_watcher(ref, namespace=namespace, field_selector=f"metadata.name={name}")
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    last: dict[str, Any] | None = None
    try:
        while not deadline.is_set():
            listed = lw.list()
            last = listed.items[0] if listed.items else None
            if check(last):
                return last
            watch = lw.watch(resource_version=listed.resource_version,
                             timeout_seconds=max(1, int(timeout)))
            closer = threading.Timer(timeout, watch.close)
            closer.start()
            try:
                for event in watch:
                    if event.type in ("ADDED", "MODIFIED"):
                        last = event.object
                    elif event.type == "DELETED":
                        last = None
                    else:
                        continue
                    if check(last):
                        return last
            except ExpiredError:
                continue
            finally:
                closer.cancel()
                watch.close()
    finally:
        timer.cancel()
    raise AssertionError(f"{kind} {namespace}/{name} never reached the expected state; "
                         f"last seen: {last}")


def get_or_none(client: Client, api_version: str, kind: str, name: str,
                namespace: str | None) -> dict[str, Any] | None:
    """The object, or None when it does not exist."""
    try:
        return client.get(api_version, kind, name, namespace)
    except NotFoundError:
        return None
