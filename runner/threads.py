"""Supervised background threads: a thread that dies is logged and fails ``/healthz``.

Every long-lived thread of kinrun (a workqueue's delaying thread, reflectors, listeners,
workers, resync, Lease renewals, the reload watcher, ...) does one job for the life of the
process, and nothing waits for it: when its target raises, Python's ``threading.excepthook``
prints a traceback to stderr (not to the log, and nothing at all for ``SystemExit``), the
thread ends, and the job stops for good while every probe stays 200. A delaying queue whose
thread died never fires a requeue or a retry again.

:class:`SupervisedThread` is a ``threading.Thread`` whose target is watched: an exception of
any kind (``BaseException``: ``SystemExit`` and ``KeyboardInterrupt`` too) ending it is logged
at ERROR on ``kinrun.threads`` with the thread's name, the exception and its traceback, and
recorded in :data:`DEATHS`. :func:`health_check` gives a ``/healthz`` check
(``kinrun.probes.Probes.add_health_check``) that fails, naming each thread, once any thread
died after the check was made. Nothing is restarted: the state a thread worked on is unknown
after it died, so a restart of the process (the kubelet's, after ``/healthz`` fails) is the
safe repair, as for a wedged reflector. A target that returns ends the thread normally.

Thread-safety: :class:`Deaths` is thread-safe (one lock around its list and counter).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_log = logging.getLogger("kinrun.threads")

KEPT_DEATHS = 100
"""Most deaths :class:`Deaths` remembers (the oldest are forgotten; the count goes on)."""


@dataclass(frozen=True)
class Death:
    """One thread that died: its ``name``, ``error`` (the exception's type name: the message,
    which may quote data, goes to the log only) and ``seq`` (1 for the first death of the
    process, then 2, ...)."""

    name: str
    error: str
    seq: int


class Deaths:
    """The threads that died in this process, in order (the last :data:`KEPT_DEATHS`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: list[Death] = []
        self._count = 0  # deaths ever recorded; Death.seq of the latest

    def record(self, name: str, error: BaseException) -> Death:
        """Remember that thread ``name`` died of ``error``; returns the record."""
        with self._lock:
            self._count += 1
            death = Death(name, type(error).__name__, self._count)
            self._kept = [*self._kept[-(KEPT_DEATHS - 1):], death]
        return death

    def count(self) -> int:
        """Deaths recorded so far (informational)."""
        with self._lock:
            return self._count

    def since(self, seq: int) -> list[Death]:
        """The remembered deaths after the ``seq``-th, oldest first."""
        with self._lock:
            return [d for d in self._kept if d.seq > seq]


DEATHS = Deaths()
"""Every SupervisedThread's death in this process."""


class SupervisedThread(threading.Thread):
    """``threading.Thread`` (same arguments; ``daemon`` defaults to True) whose death is logged
    and recorded in ``deaths`` (default :data:`DEATHS`); see the module docstring. ``name`` is
    required: it is what the log line and ``/healthz`` show."""

    def __init__(self, *, target: Callable[..., Any], name: str, args: Iterable[Any] = (),
                 kwargs: Mapping[str, Any] | None = None, daemon: bool = True,
                 deaths: Deaths | None = None) -> None:
        super().__init__(target=target, name=name, args=tuple(args), kwargs=dict(kwargs or {}),
                         daemon=daemon)
        self._deaths = deaths if deaths is not None else DEATHS

    def run(self) -> None:
        """The target, watched: an exception ending it is logged and recorded, not raised."""
        _watched(self.name, super().run, self._deaths)


class SupervisedTimer(threading.Timer):
    """``threading.Timer(interval, function, args, kwargs)`` (seconds) with a ``name``, whose
    death is logged and recorded as a SupervisedThread's (``cancel()`` as Timer's)."""

    def __init__(self, interval: float, function: Callable[..., Any],
                 args: Iterable[Any] | None = None, kwargs: Mapping[str, Any] | None = None, *,
                 name: str, deaths: Deaths | None = None) -> None:
        super().__init__(interval, function, args, kwargs)
        self.name = name
        self._deaths = deaths if deaths is not None else DEATHS

    def run(self) -> None:
        """Wait, then the function, watched (see SupervisedThread.run)."""
        _watched(self.name, super().run, self._deaths)


def _watched(name: str, run: Callable[[], None], deaths: Deaths) -> None:
    try:
        run()
    except BaseException as exc:  # noqa: BLE001 - every death is reported, SystemExit too
        deaths.record(name, exc)
        _log.error("thread %s died: %s: %s (what it did has stopped: /healthz fails until "
                   "kinrun restarts)", name, type(exc).__name__, exc, exc_info=exc)


def health_check(deaths: Deaths | None = None) -> Callable[[], list[str]]:
    """A ``/healthz`` check: ``check()`` returns one failure line per thread that died after
    this call (``thread NAME died: TypeName (see the log)``), [] while none did. Deaths before it
    (an earlier run in the same process, such as a test) do not count."""
    source = deaths if deaths is not None else DEATHS
    start = source.count()

    def check() -> list[str]:
        return [f"thread {d.name} died: {d.error} (see the log)" for d in source.since(start)]
    return check
