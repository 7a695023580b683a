"""Python garbage-collector tuning for large informer caches.

A cache of tens of thousands of dicts makes every full (generation 2) collection walk all of
them: pauses of tens of milliseconds that stall every thread. Once the initial list is cached,
``freeze_after_initial_list`` moves everything alive into the permanent generation (``gc.freeze``)
so later collections skip it, and raises the thresholds so collections run less often. Objects
stored later are collected normally; the frozen ones are only freed by reference counting
(dicts have no cycles, so that is enough). ``GCPauseRecorder`` measures pauses via
``gc.callbacks``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

DEFAULT_THRESHOLDS = (50_000, 20, 100)
"""gen0 allocations, gen1 and gen2 collection counts (CPython's default is (700, 10, 10);
3.12+ uses 2000 for gen0)."""


class _Syncable(Protocol):
    def wait_for_sync(self, timeout: float | None = None) -> bool: ...


def raise_thresholds(thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS) -> tuple[int, ...]:
    """Set ``gc.set_threshold(*thresholds)``; returns the previous thresholds."""
    previous = gc.get_threshold()
    gc.set_threshold(*thresholds)
    return previous


def freeze() -> None:
    """Collect once, then move every surviving object into the permanent generation."""
    gc.collect()
    gc.freeze()


def freeze_after_initial_list(informers: Iterable[_Syncable], *, timeout: float | None = None,
                              thresholds: tuple[int, int, int] = DEFAULT_THRESHOLDS) -> bool:
    """Wait for every informer's initial list (``timeout`` s each), then ``freeze`` and
    ``raise_thresholds``. Returns whether all synced (the tuning is applied either way)."""
    synced = all([inf.wait_for_sync(timeout) for inf in informers])
    freeze()
    raise_thresholds(thresholds)
    return synced


def unfreeze(thresholds: tuple[int, ...] = (700, 10, 10)) -> None:
    """Undo: ``gc.unfreeze()`` and restore thresholds."""
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
