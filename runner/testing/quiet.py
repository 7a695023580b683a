"""A quiet pipeline: how ``kinrun test`` knows a step has had all its effects, without
sleeping for fixed times.

After a step's writes the pipeline is *quiet* when (checked in this order, repeated until the
server's resourceVersion stops moving, since reconciles write too):

1. every reflector's ``last_sync_resource_version`` has reached the server's current global
   resourceVersion. The embedded server runs with a small ``bookmark_interval``, so every
   watch gets BOOKMARKs carrying the global resourceVersion even when nothing it watches
   changed. A reflector moves its resume point only after the informer has stored the event
   and called the (synchronous) enqueue handlers, so reaching the version means every key
   the change maps to is queued;
2. the workqueue clock has settled (:meth:`StepClock.settle`): every delaying-queue thread
   woken by a step of the fake clock has moved the keys that fell due into its queue and
   parked again;
3. every controller's workqueue is idle (``idle()``: nothing queued, nothing processing);
   keys waiting for the fake clock do not count.

Waiting polls these conditions every millisecond or so (none of them signals), bounded by a
deadline: :class:`NotQuiet` says which condition did not hold.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

POLL = 0.001
"""Seconds between two looks at a condition."""
BOOKMARK_INTERVAL = 0.005
"""Seconds between the BOOKMARKs the embedded server sends to each watch in a test run."""


class NotQuiet(Exception):
    """The pipeline did not become quiet before the deadline; the message says what was
    still moving (which informer lagged, which queue was busy)."""


class StepClock:
    """A fake monotonic clock (the ``kinrun.clock.Clock`` protocol) that moves only on
    :meth:`step`, and can tell when every waiter it woke has come back to wait.

    Thread-safety: every method is thread-safe. Invariants: ``_waiters`` maps each thread
    parked with a deadline to (deadline, wakeup); ``_woken`` holds the threads :meth:`step`
    woke that have not yet called :meth:`wait` again.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._cond = threading.Condition()
        self._waiters: dict[int, tuple[float, threading.Event]] = {}
        self._woken: set[int] = set()

    def now(self) -> float:
        """Fake seconds."""
        with self._cond:
            return self._now

    def wait(self, wakeup: threading.Event, timeout: float | None) -> bool:
        """Park until ``wakeup`` is set (by its owner, or by :meth:`step` past the deadline)."""
        me = threading.get_ident()
        with self._cond:
            self._woken.discard(me)
            self._cond.notify_all()
            if wakeup.is_set():
                return True
            if timeout is not None and timeout <= 0:
                return False
            if timeout is not None:
                self._waiters[me] = (self._now + timeout, wakeup)
        try:
            wakeup.wait()
        finally:
            with self._cond:
                self._waiters.pop(me, None)
        return True

    def step(self, seconds: float) -> None:
        """Advance by ``seconds`` and wake every waiter whose deadline passed."""
        with self._cond:
            self._now += seconds
            for ident, (deadline, wakeup) in list(self._waiters.items()):
                if deadline <= self._now:
                    del self._waiters[ident]
                    self._woken.add(ident)
                    wakeup.set()

    def settled(self) -> bool:
        """Whether every waiter woken by a step has called ``wait`` again."""
        with self._cond:
            return not self._woken

    def settle(self, deadline: float) -> bool:
        """Block (real time, until ``deadline`` on ``time.monotonic``) until :meth:`settled`."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._woken,
                                       max(0.0, deadline - time.monotonic()))


def wait_until(condition: Callable[[], bool], deadline: float) -> bool:
    """Poll ``condition`` every :data:`POLL` seconds until it holds (True) or ``deadline``
    (``time.monotonic``) passes (False)."""
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(POLL)
    return True


class Quiet:
    """Waits for a quiet pipeline (module docstring).

    ``server_rv``: the server's global resourceVersion (int); ``reflectors``: (name, informer)
    pairs, each with ``last_sync_resource_version``; ``queues``: (name, queue) pairs, each
    with ``idle()``; ``clock``: the workqueues' StepClock."""

    def __init__(self, server_rv: Callable[[], int], reflectors: Iterable[tuple[str, Any]],
                 queues: Iterable[tuple[str, Any]], clock: StepClock) -> None:
        self.server_rv, self.clock = server_rv, clock
        self.reflectors, self.queues = list(reflectors), list(queues)

    def wait(self, timeout: float) -> None:
        """Return once quiet; NotQuiet after ``timeout`` seconds of real time."""
        deadline = time.monotonic() + timeout
        while True:
            rv = self.server_rv()
            lagging = self._lagging(rv)
            if not wait_until(lambda: not self._lagging(rv), deadline):
                names = ", ".join(f"{n} at {r!r}" for n, r in self._lagging(rv))
                raise NotQuiet(f"informers did not reach resourceVersion {rv} within "
                               f"{timeout:g}s: {names or lagging}")
            if not self.clock.settle(deadline):
                raise NotQuiet(f"the workqueue clock did not settle within {timeout:g}s")
            if not wait_until(lambda: not self._busy(), deadline):
                raise NotQuiet(f"workqueues still busy after {timeout:g}s: "
                               f"{', '.join(self._busy())} (a reconcile that does not end?)")
            if self.server_rv() == rv and self.clock.settled():
                return

    def _lagging(self, rv: int) -> list[tuple[str, str]]:
        return [(name, inf.last_sync_resource_version) for name, inf in self.reflectors
                if _rv(inf.last_sync_resource_version) < rv]

    def _busy(self) -> list[str]:
        return [name for name, queue in self.queues if not queue.idle()]


def _rv(text: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1
