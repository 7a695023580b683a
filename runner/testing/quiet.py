"""Running a ``kinrun test`` step until the pipeline is quiet, in one fixed order.

No worker thread runs under ``kinrun test``: the runner's own thread drives the pipeline
step by step, so every run of a case reconciles the same keys in the same order and each
reconcile reads the same cache (as a discrete-event simulation; controller-runtime's envtest
and kopf's test helpers run real workers and so cannot promise this):

1. *deliver*: every watch event up to the server's current resourceVersion goes to its
   informer, lowest resourceVersion first, one at a time (``kinrun.testing.turnstile``); each
   is stored and its handlers have queued their keys (buffered ``mapTo`` templates included)
   before the next. Then the workqueue clock is calm (:meth:`StepClock.calm`: every
   delaying-queue and schedule thread has queued what fell due and waits again, with its
   latest deadline). Repeated while the server's resourceVersion moves;
2. *reconcile one key*: the controllers take turns in the config's order (round robin, the
   first controller first in every step), each turn one key from the head of that
   controller's workqueue (FIFO), reconciled on a thread of its own while the runner waits
   for it (so a reconcile that does not return ends the case at its timeout), exactly as a
   worker does (``Controller.process_next_item``: the object from
   the lister, the Result handled: forget, requeue, rate-limited retry). ``workers: N`` makes
   no difference here: one key at a time;
3. back to 1, until no workqueue has a ready key: the step is *quiet*. Keys waiting for the
   fake clock (a ``requeueAfter``, a retry's backoff) wait for a later ``after:`` step.

So a reconcile never reads a cache older than the writes before it (its own included): a
``create`` after a write of the object's own sees the object it created, a finalizer's patch
and an annotation's are both in the cache for the next reconcile. A step that does not get
quiet fails its case with :class:`NotQuiet`: after :data:`MAX_RECONCILES` reconciles (a write
loop: the same outcome every run) or, as a safety net, ``timeout`` real seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kinrun.clock import REAL_CLOCK, FakeClock
from kinrun.testing.turnstile import NotDelivered, Turnstile
from kinrun.threads import SupervisedThread

POLL = 0.001
"""Real seconds between two looks at a condition that signals nothing."""
BOOKMARK_INTERVAL = 0.005
"""Seconds between the BOOKMARKs the embedded server sends to each watch in a test run: how
soon a watch that saw no event tells the turnstile it is up to date."""
MAX_RECONCILES = 1000
"""Reconciles one step may run before it is declared not quiet (a write loop)."""


class NotQuiet(Exception):
    """The step did not become quiet; the message says what was still moving (a watch that
    lagged, a write loop and its keys)."""


class StepClock(FakeClock):
    """The workqueues' clock in ``kinrun test``: kinrun's one fake clock (``kinrun.clock``)
    that also knows every thread that waits on it, so the runner steps it only when
    :meth:`calm`: a delaying queue woken by its own ``add_after`` (not by a step, so not
    covered by ``settle``) has re-armed its wait with the new deadline before time moves.
    Reads FakeClock's ``_cond``, ``_parked`` and ``_woken`` (same invariants). Thread-safe."""

    def __init__(self, start: float = 1000.0) -> None:
        super().__init__(start)
        self._known: dict[threading.Thread, threading.Event] = {}  # thread -> its wake-up

    def wait_until(self, wakeup: threading.Event, deadline: float | None) -> bool:
        """FakeClock.wait_until, the thread remembered (see :meth:`calm`)."""
        with self._cond:
            self._known[threading.current_thread()] = wakeup
        return super().wait_until(wakeup, deadline)

    def calm(self) -> bool:
        """Every live thread that ever waited on this clock is parked in ``wait`` with its
        wake-up unset, and none a step woke is still running (``settled``)."""
        with self._cond:
            live = [event for thread, event in self._known.items() if thread.is_alive()]
            return (not self._woken and self._parked == len(live)
                    and not any(event.is_set() for event in live))


def wait_until(condition: Callable[[], bool], deadline: float) -> bool:
    """Poll ``condition`` every :data:`POLL` seconds until it holds (True) or ``deadline``
    (``REAL_CLOCK``) passes (False)."""
    while not condition():
        if REAL_CLOCK.now() >= deadline:
            return condition()
        REAL_CLOCK.sleep(POLL)
    return True


class Quiet:
    """Drives the pipeline of one case run (module docstring).

    ``server_rv``: the server's global resourceVersion (int); ``turnstile``: the one every
    informer's lister-watcher goes through; ``informers``: the SharedIndexInformers (each with
    ``handlers_idle()``); ``controllers``: (name, Controller) in the config's order, never
    started (no worker threads); ``clock``: the workqueues' StepClock; ``running``: the
    reconciles under way, named (``Recorder.running``). Used from one thread.
    """

    def __init__(self, server_rv: Callable[[], int], turnstile: Turnstile,
                 informers: Iterable[Any], controllers: Sequence[tuple[str, Any]],
                 clock: StepClock, running: Callable[[], Sequence[str]] = tuple) -> None:
        self.server_rv, self.turnstile, self.clock = server_rv, turnstile, clock
        self.running = running  # "controller c: key default/a" of each reconcile under way
        self.informers, self.controllers = list(informers), list(controllers)
        self._turn = 0  # the controller whose turn is next
        turnstile.idle = self.handlers_idle

    def handlers_idle(self) -> bool:
        """Every informer's buffered handlers have caught up."""
        return all(informer.handlers_idle() for informer in self.informers)

    def wait(self, timeout: float) -> None:
        """Run until quiet (module docstring); NotQuiet after :data:`MAX_RECONCILES`
        reconciles or ``timeout`` real seconds."""
        deadline = REAL_CLOCK.now() + timeout
        ran: list[str] = []
        self._turn = 0  # every step starts with the first controller
        while True:
            self.deliver(deadline)
            picked = self._next()
            if picked is None:
                return
            if len(ran) >= MAX_RECONCILES:
                raise NotQuiet(f"{MAX_RECONCILES} reconciles and still not quiet (a write "
                               f"loop?); the last by {', '.join(ran[-4:])}")
            name, controller = picked
            ran.append(name)
            self._reconcile(name, controller, deadline, timeout)
            if REAL_CLOCK.now() >= deadline:
                raise NotQuiet(f"still reconciling after {timeout:g}s, the last by "
                               f"{', '.join(ran[-4:])}")

    def _reconcile(self, name: str, controller: Any, deadline: float, timeout: float) -> None:
        """Step 2: ``controller.process_next_item()`` on a daemon thread, the runner waiting
        for it until ``deadline`` (real time); one still running then (a hook or a plugin
        filter that does not return) is abandoned, as no thread can be stopped, and NotQuiet
        names it (``running``). The case's server, client and recorder are its own, so the
        abandoned thread can reach no later case's."""
        done, raised = threading.Event(), []

        def run() -> None:
            try:
                controller.process_next_item()
            except BaseException as exc:  # raised on the runner's thread, as before
                raised.append(exc)
            finally:
                done.set()
        SupervisedThread(target=run, name=f"kinrun-test-reconcile-{name}").start()
        if not REAL_CLOCK.wait_until(done, deadline):
            still = ", ".join(self.running()) or f"controller {name}"
            raise NotQuiet(f"still reconciling after {timeout:g}s: {still} (a hook or "
                           "template that did not return; abandoned)")
        if raised:
            raise raised[0]

    def deliver(self, deadline: float) -> None:
        """Step 1 of the module docstring: every event up to the server's resourceVersion
        handled, the clock settled; NotQuiet at ``deadline``."""
        while True:
            rv = self.server_rv()
            try:
                self.turnstile.deliver(rv, deadline)
            except NotDelivered as exc:
                raise NotQuiet(str(exc)) from None
            if not wait_until(self.clock.calm, deadline):
                raise NotQuiet("the workqueue clock did not settle (a queue or schedule "
                               "thread still running)")
            if not wait_until(self.handlers_idle, deadline):
                raise NotQuiet("event handlers still busy")
            if self.server_rv() == rv and self.clock.calm():
                return

    def _next(self) -> tuple[str, Any] | None:
        """The next controller in turn with a ready key, or None (quiet)."""
        count = len(self.controllers)
        for i in range(count):
            name, controller = self.controllers[(self._turn + i) % count]
            if len(controller.queue) > 0:
                self._turn = (self._turn + i + 1) % count
                return name, controller
        return None
