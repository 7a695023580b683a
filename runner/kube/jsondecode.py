"""Decode API server JSON with orjson, with CPython's cyclic garbage collector paused meanwhile.

Why: orjson builds about 800 container objects (dicts, lists) for one 9 KB Pod. CPython runs a
generation-0 collection every 700 net container allocations, and as the decoded objects
survive (an informer cache keeps them), collections of the older generations follow, each
traversing every live object, the caches included. Measured on a 10,000-pod LIST the decode
costs 3-10x more with the collector running than without (``benchmarks/decode.py``). Decoded
JSON is a tree, never a reference cycle, so collecting during the decode finds nothing: pausing
the collector changes no outcome, it defers the next collection until the decode is done.

Thread-safety: ``loads`` may run on any number of threads at once. A counter under a lock
disables the collector when the first decode starts and re-enables it when the last one ends,
and only if it was enabled when the first one started (a program that turned the collector off
itself keeps it off). While decodes overlap without pause the collector stays off; it runs at
the next allocation outside a decode.

Freezing: under kinrun's GC policy (``kinrun.cache.gc_tuning``: survivors of gen-0 collections
are frozen), a pause entered with ``freeze=True`` (a whole LIST: ``KubeListerWatcher.list``)
ends with ``gc.freeze()``: the first collection after a 10,000-pod LIST would otherwise walk
every decoded object once (~0.5 s) only to find them alive. Other decodes do not freeze: a
freeze also moves any cyclic garbage of the moment (from plugins, on other threads) out of
the collector's reach for good, so it happens once per LIST, not once per request or watch
event. (Watch events are not decoded under a pause at all: one event is too small for a
deferred collection to matter, measured with ``benchmarks/replay.py``.)
"""

from __future__ import annotations

import gc
import threading
from typing import Any

import orjson

from kinrun.cache import gc_tuning

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
                    if _freeze and gc_tuning.freezing_survivors():
                        gc.freeze()  # what was listed survives: freeze it now, walk it never
                    gc.enable()
                _freeze = False


_PAUSE = _GcPause(freeze=False)
_PAUSE_THEN_FREEZE = _GcPause(freeze=True)


def gc_paused(*, freeze: bool = False) -> _GcPause:
    """A context manager pausing the cyclic GC for its block (nestable, any thread; see the
    module docstring). Used around one decode, and (``freeze=True``) around a whole paged LIST
    so that the pages decoded so far are not traversed again by collections triggered between
    pages, and are frozen at the end under kinrun's GC policy."""
    return _PAUSE_THEN_FREEZE if freeze else _PAUSE


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """``orjson.loads(data)`` with the cyclic GC paused for its duration.

    Raises ``orjson.JSONDecodeError`` (a ValueError) for invalid JSON.
    """
    with _PAUSE:
        return orjson.loads(data)
