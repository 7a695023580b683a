"""Python garbage-collector policy for large informer caches.

A cache of tens of thousands of dicts makes every full (generation 2) collection walk all of
them: pauses of up to a second that stall every thread (measured in BENCHMARKS.md). kinrun's
policy (``manage``), applied by the Manager before its informers start:

  * ``raise_thresholds``: collections run less often (gen0 every 10,000 net allocations);
  * ``freeze_survivors``: after every generation-0 collection, its survivors move to the
    permanent generation (``gc.freeze``), so no collection ever walks the cache again, only
    objects younger than one gen-0 period; pauses stay at a gen-0 collection's size (a few ms);
  * ``freeze`` once the initial lists are cached.

The trade-off: cyclic garbage that outlives one gen-0 period is never collected (frozen objects
are freed by reference counting only). Cached objects are plain acyclic dicts, so they are freed
as usual; reconcile code should not keep reference cycles alive for long. ``unfreeze`` and
``stop_freezing_survivors`` undo the policy. ``GCPauseRecorder`` measures pauses via
``gc.callbacks``.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Any

DEFAULT_THRESHOLDS = (10_000, 20, 100)
"""gen0 allocations, gen1 and gen2 collection counts (CPython's default is (700, 10, 10)).
With gen-0 survivors frozen, a gen-0 collection walks at most ~10,000 young objects: pauses of a
few ms (measured: max 7-11 ms with 10,000 Pods cached, against ~900 ms for a full collection),
and less GC time in all than 50,000 gave."""


def raise_thresholds(thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS) -> tuple[int, ...]:
    """Set ``gc.set_threshold(*thresholds)``; returns the previous thresholds."""
    previous = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return previous


def freeze(collect: bool = False) -> None:
    """Move every tracked object into the permanent generation (``gc.freeze``). ``collect``:
    run a full collection first (a pause proportional to the cache: off by default)."""
    if collect:
        gc.collect()
    gc.freeze()


def _freeze_gen0_survivors(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 0:
        gc.freeze()


def freeze_survivors() -> None:
    """From now on, freeze the survivors of every generation-0 collection (idempotent)."""
    if _freeze_gen0_survivors not in gc.callbacks:
        gc.callbacks.append(_freeze_gen0_survivors)


def freezing_survivors() -> bool:
    """Whether ``freeze_survivors`` is in effect."""
    return _freeze_gen0_survivors in gc.callbacks


def stop_freezing_survivors() -> None:
    """Undo ``freeze_survivors``."""
    if _freeze_gen0_survivors in gc.callbacks:
        gc.callbacks.remove(_freeze_gen0_survivors)


def manage(thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS) -> tuple[int, ...]:
    """kinrun's policy (module docstring): raised thresholds and frozen gen-0 survivors.
    Returns the previous thresholds, for ``unfreeze``."""
    previous = raise_thresholds(thresholds)
    freeze_survivors()
    return previous


def unfreeze(thresholds: tuple[int, ...] = (700, 10, 10)) -> None:
    """Undo: stop freezing survivors, ``gc.unfreeze()`` and restore thresholds."""
    stop_freezing_survivors()
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@dataclass
class GCPauseRecorder:
    """Records every collection's generation and duration (s) through ``gc.callbacks``.

    Use as a context manager. Not thread-safe for concurrent start/stop (the callbacks
    themselves run under the GIL)."""

    pauses: list[tuple[int, float]] = field(default_factory=list)
    _start: float = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append((info.get("generation", -1), time.perf_counter() - self._start))

    def __enter__(self) -> GCPauseRecorder:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def summary(self) -> dict[str, float]:
        """count, total_s, max_s, and full (gen 2) collection count."""
        durations = [d for _, d in self.pauses]
        return {"count": len(durations), "total_s": sum(durations),
                "max_s": max(durations, default=0.0),
                "gen2_count": sum(1 for g, _ in self.pauses if g == 2)}
