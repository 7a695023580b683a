"""A quiet pipeline: how ``kinrun test`` knows a step has had all its effects, without
sleeping for fixed times.

After a step's writes the pipeline is *quiet* when (checked in this order, repeated until the
server's resourceVersion stops moving, since reconciles write too):

1. every reflector's ``last_sync_resource_version`` has reached the server's current global
   resourceVersion. The embedded server runs with a small ``bookmark_interval``, so every
   watch gets BOOKMARKs carrying the global resourceVersion even when nothing it watches
   changed. A reflector moves its resume point only after the informer has stored the event
   and called the synchronous enqueue handlers (and buffered the others' notifications), so
   reaching the version means every key the change maps to is queued or being mapped;
2. the workqueue clock has settled (:meth:`StepClock.settle`): every delaying-queue thread
   woken by a step of the fake clock has moved the keys that fell due into its queue and
   parked again;
3. every informer's buffered handlers have caught up (``handlers_idle()``: a ``mapTo``
   template runs on a listener thread of its own, after the reflector moved on) and every
   controller's workqueue is idle (``idle()``: nothing queued, nothing processing); keys
   waiting for the fake clock do not count.

Waiting polls these conditions every millisecond or so (none of them signals), bounded by a
deadline: :class:`NotQuiet` says which condition did not hold.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from kinrun.clock import FakeClock

POLL = 0.001
"""Seconds between two looks at a condition."""
BOOKMARK_INTERVAL = 0.005
"""Seconds between the BOOKMARKs the embedded server sends to each watch in a test run."""


class NotQuiet(Exception):
    """The pipeline did not become quiet before the deadline; the message says what was
    still moving (which informer lagged, which queue was busy)."""


StepClock = FakeClock
"""The workqueues' clock in ``kinrun test``: kinrun's one fake clock (``kinrun.clock``), whose
``settle`` tells when every queue thread a step woke has moved its due keys and waits again."""


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
    pairs (SharedIndexInformers), each with ``last_sync_resource_version`` and
    ``handlers_idle()``; ``queues``: (name, queue) pairs, each
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
        handlers = [f"handlers of {name}" for name, inf in self.reflectors
                    if not inf.handlers_idle()]
        return handlers + [name for name, queue in self.queues if not queue.idle()]


def _rv(text: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        return -1
