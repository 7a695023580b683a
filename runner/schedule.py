"""A controller's ``schedule:``: reconcile every cached primary key at fixed times (cron).

Semantics follow batch/v1 CronJob where they apply: ``schedule`` is a standard five-field cron
expression (minute hour day-of-month month day-of-week; ``*/5``, ranges, lists, names such as
``MON``) or one of the macros ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/
``@midnight``, ``@hourly``; times are UTC unless ``timeZone`` names an IANA zone
(``Europe/Berlin``; CronJob ``spec.timeZone``, GA in Kubernetes 1.27), daylight-saving changes
included. ``TZ=``/``CRON_TZ=`` prefixes are refused as CronJob refuses them. Parsing is
croniter's (:mod:`kinrun.cron`); zones are ``zoneinfo``'s (the system's tz database, or ``tzdata``).

A :class:`Scheduler` waits on the one clock abstraction (``kinrun.clock``) until the next fire
time, read on a wall clock (Unix seconds; the plan's, fixed in ``kinrun test``), then queues
every key its primary informer's lister holds with cause ``scheduled``; the workqueue
deduplicates keys already queued. Times missed while the process was busy or the clock jumped
fire once, at the next wake-up (as CronJob with a ``startingDeadlineSeconds`` that allows
one late run); a wall clock that jumps is noticed within :data:`MAX_WAIT` seconds. Besides
``resyncPeriod``, not instead of it. A schedule that cannot give its next fire time (``plan``
refuses one that never fires, so this is defence in depth) logs an error naming the controller
and the schedule and stops firing; the controller and everything else keep running.
"""

from __future__ import annotations

import datetime
import logging
import threading
from collections.abc import Callable, Iterable

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.cron import CronSchedule, ScheduleError
from kinrun.threads import SupervisedThread

MAX_WAIT = 60.0
"""Seconds the scheduler waits at most before it reads the wall clock again (a wall clock that
jumps, e.g. NTP stepping it, moves the next fire time)."""

class Scheduler:
    """Queues every key of one controller each time its :class:`CronSchedule` fires.

    ``name``: the controller (thread name, log lines); ``keys()``: the keys to queue (the
    primary informer's cached keys); ``enqueue(key)``: queue one (the controller's enqueue with
    the ``scheduled`` cause bound); ``clock``: what it waits on (monotonic seconds; a FakeClock
    in tests); ``wall``: the Clock whose ``wall()`` (Unix seconds) the schedule is read in (the
    plan's; None: ``clock``'s).

    Thread-safety: ``start``/``stop`` from one thread; the scheduler's own thread does the rest.
    ``fired`` counts the fire times handled (read by tests). ``_wakeup`` is only a wake-up
    (``kinrun.clock``): ``_stopped`` says why it was set.
    """

    def __init__(self, name: str, schedule: CronSchedule, keys: Callable[[], Iterable[str]],
                 enqueue: Callable[[str], None], *, clock: Clock | None = None,
                 wall: Clock | None = None, logger: logging.Logger | None = None) -> None:
        self.name, self.schedule = name, schedule
        self._keys, self._enqueue = keys, enqueue
        self._clock = clock or REAL_CLOCK
        self._wall = (wall or self._clock).wall
        self.log = logger or logging.getLogger(f"kinrun.controller.{name}")
        self._wakeup = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self.fired = 0

    def start(self) -> None:
        """Start the scheduler's thread (once): the first fire time is the first after now.
        When the schedule has no fire time, no thread starts (``_next_after`` logs why)."""
        if self._thread is not None:
            return
        first = self._next_after(self._wall())
        if first is None:
            return
        self._thread = SupervisedThread(target=self._run, args=(first,),
                                        name=f"{self.name}-schedule", daemon=True)
        self._thread.start()
        self.log.info("%s: schedule %s, next at %s", self.name, self.schedule,
                      _utc(first))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread and join it (at most ``timeout`` real seconds). Idempotent."""
        self._stopped = True
        self._wakeup.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _run(self, next_at: float) -> None:
        while not self._stopped:
            now = self._wall()
            if now >= next_at:
                self.fire()
                following = self._next_after(max(now, next_at))
                if following is None:
                    return
                next_at = following
                continue
            deadline = self._clock.now() + min(next_at - now, MAX_WAIT)
            self._clock.wait_until(self._wakeup, deadline)
            self._wakeup.clear()

    def _next_after(self, unix: float) -> float | None:
        """The schedule's next fire time after ``unix`` (Unix seconds), or None, logged at
        ERROR with the controller and the schedule, when it has none (ScheduleError)."""
        try:
            return self.schedule.next_after(unix)
        except ScheduleError as exc:
            self.log.error("%s: schedule %s stopped: no next fire time (%s); the controller "
                           "keeps running without it", self.name, self.schedule, exc)
            return None

    def fire(self) -> int:
        """Queue every key now; returns how many. A failing ``keys`` is logged, never fatal."""
        try:
            keys = list(self._keys())
            for key in keys:
                self._enqueue(key)
        except Exception:  # noqa: BLE001 - the next fire time must still come
            self.log.exception("%s: scheduled reconcile failed to queue keys", self.name)
            return 0
        finally:
            self.fired += 1
        self.log.info("%s: schedule fired: %d key(s) queued", self.name, len(keys))
        return len(keys)


def _utc(unix: float) -> str:
    return datetime.datetime.fromtimestamp(unix, tz=datetime.timezone.utc).isoformat()


__all__ = ["CronSchedule", "MAX_WAIT", "ScheduleError", "Scheduler"]
