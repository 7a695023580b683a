"""Decode API server JSON with orjson, with CPython's cyclic garbage collector paused meanwhile.

Why: orjson builds about 800 container objects (dicts, lists) for one 9 KB Pod. CPython runs a
generation-0 collection every 700 net container allocations, and as the decoded objects
survive (an informer cache keeps them), collections of the older generations follow, each
traversing every live object, the caches included. Measured on a 10,000-pod LIST the decode
costs 3-10x more with the collector running than without (``benchmarks/decode.py``). Decoded
JSON is a tree, never a reference cycle, so collecting during the decode finds nothing: pausing
the collector changes no outcome, it defers the next collection until the decode is done.

Thread-safety: ``loads`` may run on any number of threads at once (the pause,
``kinrun.gc.pause.gc_paused``, re-exported here, is counted; see that module).

Freezing: under kinrun's GC policy (``kinrun.gc.policy``: survivors of gen-0 collections
are frozen), a pause entered with ``freeze=True`` (a whole LIST: ``KubeListerWatcher.list``)
ends with ``gc.freeze()``: the first collection after a 10,000-pod LIST would otherwise walk
every decoded object once (~0.5 s) only to find them alive. Other decodes do not freeze: a
freeze also moves any cyclic garbage of the moment (from plugins, on other threads) out of
the collector's reach for good, so it happens once per LIST, not once per request or watch
event. (Watch events are not decoded under a pause at all: one event is too small for a
deferred collection to matter, measured with ``benchmarks/replay.py``.)
"""

from __future__ import annotations

from typing import Any

import orjson

from kinrun.gc.pause import _PAUSE, gc_paused

__all__ = ["gc_paused", "loads"]


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """``orjson.loads(data)`` with the cyclic GC paused for its duration.

    Raises ``orjson.JSONDecodeError`` (a ValueError) for invalid JSON.
    """
    with _PAUSE:
        return orjson.loads(data)
