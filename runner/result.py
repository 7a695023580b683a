"""What one reconcile came to, and why its key was queued: pure data, no I/O.

``Result`` is the typed outcome the workers act on (as controller-runtime's
``reconcile.Result`` plus its error); ``Cause`` says why a key was queued; plugin hooks may
return a Result too (``kinrun.hooks.kinrun_reconcile``). :func:`smallest_delay` is the one
place requeue delays combine ("the smallest requeue delay wins", as several
``RequeueAfter`` answers do in controller-runtime).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, get_args

from kinrun.errors import PermanentError, TemporaryError, never_succeeds

# -- why a key was queued ---------------------------------------------------------------------

ADDED = "added"
"""The primary object appeared (a watch ADDED, or the initial list)."""
UPDATED = "updated"
"""The primary object changed (an update that passed the predicates)."""
RESYNC = "resync"
"""A resync replayed the cached object (no change)."""
DELETION = "deletion"
"""The primary object was deleted or left the informer's view (see the deletion reasons).
The cause a key is queued with, never the reason of a live reconcile: one that finds the object
in the cache again says ``added`` (created again) or ``updated`` (it came back)
(``kinrun.reconcile``, "Reasons")."""
MAPPED = "mapped"
"""A watched secondary object changed and mapped to this key (``Cause.informer`` says which)."""
REQUEUED = "requeued"
"""A requeue asked for by the previous reconcile (``requeueAfter``, TemporaryError(delay))."""
RETRIED = "retried"
"""A rate-limited retry after a failed reconcile."""
SCHEDULED = "scheduled"
"""The controller's ``schedule`` (cron) fired: every cached primary key is queued
(``kinrun.schedule``)."""

CAUSES = (ADDED, UPDATED, RESYNC, DELETION, MAPPED, REQUEUED, RETRIED, SCHEDULED)

@dataclass(frozen=True, slots=True)
class Cause:
    """Why a key was queued: ``kind`` one of :data:`CAUSES`; ``informer`` the watched informer
    for ``mapped`` (else the primary's name, or "" when unknown); ``initial_list``: an
    ``added`` that came from the primary informer's first list (or the cache replayed to a
    handler added later), not a real creation (client-go ``OnAdd(obj, isInInitialList)``,
    1.27+); templates see it as ``initial_list``. The first cause since the key was last
    taken by a worker is kept (the workqueue coalesces the rest)."""

    kind: str
    informer: str = ""
    initial_list: bool = False

    def __str__(self) -> str:
        return f"{self.kind} from {self.informer}" if self.kind == MAPPED else self.kind


# -- the typed result -------------------------------------------------------------------------

Outcome = Literal["done", "requeue", "retry", "permanent"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


class Result:
    """What one reconcile came to, for the controller to act on (as controller-runtime's
    ``reconcile.Result`` plus its error, made one value).

    ``outcome``: ``done`` (forget the key), ``requeue`` (forget, then add again after ``delay``
    seconds), ``retry`` (``add_rate_limited``, or add after ``delay`` seconds when given:
    ``TemporaryError(delay=...)``, not counted as a failure), ``permanent`` (forget and log;
    the key waits for its next change). ``error``: the exception of a retry or permanent
    failure; ``cause``: why the key was queued (None when the caller did not record it).
    Another ``outcome`` raises ValueError; a hook's answer whose delay is not a finite number
    of seconds fails its reconcile (:func:`hook_delay`).

    Immutable by contract (nothing sets an attribute after construction); a slotted class with
    a plain ``__init__`` rather than a frozen dataclass, because one is made per reconcile and
    a frozen dataclass costs about 1.3 us more to build (``object.__setattr__`` per field).
    Compares by value.
    """

    __slots__ = ("outcome", "delay", "error", "cause")

    def __init__(self, outcome: Outcome, delay: float | None = None,
                 error: BaseException | None = None, cause: Cause | None = None) -> None:
        if outcome not in OUTCOMES:  # a plugin's Result("whatever") is its own bug, said here
            raise ValueError(f"Result outcome {outcome!r} is not one of {', '.join(OUTCOMES)}")
        self.outcome, self.delay, self.error, self.cause = outcome, delay, error, cause

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        return (self.outcome, self.delay, self.error, self.cause) == \
            (other.outcome, other.delay, other.error, other.cause)

    def __hash__(self) -> int:
        return hash((self.outcome, self.delay, id(self.error), self.cause))

    def __repr__(self) -> str:
        return (f"Result(outcome={self.outcome!r}, delay={self.delay!r}, "
                f"error={self.error!r}, cause={self.cause!r})")

    @classmethod
    def after(cls, delay: float | None, cause: Cause | None = None) -> Result:
        """``requeue`` after ``delay`` seconds when it is positive, else ``done``."""
        if delay is not None and delay > 0:
            return cls("requeue", float(delay), cause=cause)
        return cls("done", cause=cause)

    @classmethod
    def failed(cls, error: BaseException, cause: Cause | None = None) -> Result:
        """The result of a reconcile that raised ``error``: PermanentError, or an API answer
        that no retry can change (``kinrun.errors.never_succeeds``: 400, 422 naming a field, an
        applied body its schema refuses)
        -> ``permanent``; TemporaryError -> ``retry`` after its ``delay`` (None: with
        backoff); else ``retry``."""
        if isinstance(error, PermanentError) or never_succeeds(error):
            return cls("permanent", error=error, cause=cause)
        delay = error.delay if isinstance(error, TemporaryError) else None
        return cls("retry", delay, error=error, cause=cause)


def smallest_delay(delays: Iterable[float | None]) -> float | None:
    """The smallest of ``delays`` (seconds), the None ones left out; None when none is left.
    Every "take the smallest requeue delay" of kinrun goes through here (the actions' own
    ``requeueAfter`` steps, several plugins' answers, actions and hooks together)."""
    smallest: float | None = None
    for delay in delays:
        if delay is not None and (smallest is None or delay < smallest):
            smallest = delay
    return smallest


def hook_delay(value: object) -> float | None:
    """A plugin's ``kinrun_reconcile`` answer as a requeue delay in seconds (None: done).

    Accepted: None; a finite number of seconds >= 0 (the original form, kept for
    compatibility);
    a :class:`Result`: ``done`` -> None, ``requeue`` -> its delay, ``retry``/``permanent`` ->
    its error raised (TemporaryError(delay) / PermanentError when it carries none), so a hook
    may return a failure instead of raising it. Raises ValueError for anything else (NaN and
    infinite delays too)."""
    if isinstance(value, Result):
        if value.delay is not None and not math.isfinite(value.delay):
            raise ValueError(f"kinrun_reconcile returned {value!r}; a delay is a finite "
                             "number of seconds")
        if value.outcome in ("done", "requeue"):
            return value.delay if value.outcome == "requeue" else None
        if value.error is not None:
            raise value.error
        if value.outcome == "permanent":
            raise PermanentError("kinrun_reconcile returned a permanent failure")
        raise TemporaryError("kinrun_reconcile asked for a retry", delay=value.delay)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
            or not math.isfinite(value):
        raise ValueError(f"kinrun_reconcile returned {value!r}; expected None, seconds >= 0 "
                         f"or a kinrun.Result")
    return float(value)
