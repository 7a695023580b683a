"""The cyclic garbage collector paused for a block of code: ``gc_paused()``.

Why: decoding JSON, and the DeltaFIFO's Replace of a whole LIST, allocate many container
objects that all survive (an informer cache keeps them) and never form a reference cycle.
CPython runs a generation-0 collection every so many net container allocations (and older
generations after it), each walking every young object only to find it alive: a 10,000-pod
LIST decodes 3-10x slower with the collector running (``benchmarks/decode.py``), and a
100,000-Pod Replace ran two young collections of 150-180 ms each (benchmarks/HISTORY.md, round 3).
Pausing changes no outcome; it defers the next collection until the block is done.

Thread-safety: the pause may be entered on any number of threads at once, and nested. A
counter under a lock disables the collector when the first pause starts and re-enables it when
the last one ends, and only if it was enabled when the first one started (a program that turned
the collector off itself keeps it off). While pauses overlap without a gap the collector stays
off; it runs at the next allocation outside them.

Freezing: under kinrun's GC policy (``kinrun.gc.policy``: survivors of collections are
frozen), a pause entered with ``freeze=True`` ends with ``gc.freeze()`` when the last
overlapping pause ends (the installed ``kinrun.gc.observer``'s ``pause_ended``; the default
does nothing): what the block made survives, so it is frozen now and walked never.
A freeze also moves any cyclic garbage of the moment (from plugins, on other threads) out of
the collector's reach for good, so it is used once per LIST (``KubeListerWatcher.list``) and
once per Replace (``SharedIndexInformer``'s reflector store), not per request or watch event.
"""

from __future__ import annotations

import gc
import threading

from kinrun.gc import observer

_lock = threading.Lock()
_active = 0          # decodes running now; guarded by _lock
_reenable = False    # the collector was enabled when _active went 0 -> 1; guarded by _lock
_freeze = False      # a pause entered with freeze=True is among the active ones; guarded by _lock


class _GcPause:
    """The pause as a context manager; holds only ``freeze`` (the counters are module-level),
    so two shared instances serve every thread and nesting level without allocating."""

    def __init__(self, freeze: bool) -> None:
        self.freeze = freeze

    def __enter__(self) -> None:
        global _active, _reenable, _freeze
        with _lock:
            if _active == 0:
                _reenable = gc.isenabled()
                if _reenable:
                    gc.disable()
            _active += 1
            _freeze = _freeze or self.freeze

    def __exit__(self, *exc: object) -> None:
        global _active, _freeze
        with _lock:
            _active -= 1
            if _active == 0:
                if _reenable:
                    if _freeze:
                        observer.installed().pause_ended()  # the policy freezes what was listed
                    gc.enable()
                _freeze = False


_PAUSE = _GcPause(freeze=False)
_PAUSE_THEN_FREEZE = _GcPause(freeze=True)


def gc_paused(*, freeze: bool = False) -> _GcPause:
    """A context manager pausing the cyclic GC for its block (nestable, any thread; see the
    module docstring). Used around one decode (``kinrun.kube.jsondecode.loads``), and
    (``freeze=True``) around a whole paged LIST, so that the pages decoded so far are not
    traversed again by collections triggered between pages, and around the DeltaFIFO's
    Replace of a LIST's objects; both are frozen at the end under kinrun's GC policy."""
    return _PAUSE_THEN_FREEZE if freeze else _PAUSE
