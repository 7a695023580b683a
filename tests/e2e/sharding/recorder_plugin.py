"""The sharding test's kinrun plugin: records every reconcile with the replica that ran it.

Loaded by each kinrun replica under test (config ``plugins: [this file]``). Appends JSON lines
to ``$KINRUN_SHARD_RECORD``: ``{"r": replica, "key", "live": bool, "start", "end"}``, times
from ``time.monotonic()`` (CLOCK_MONOTONIC, one clock for every process of the machine, so the
intervals of different replicas compare). Each reconcile lasts ``$KINRUN_SHARD_HOLD`` seconds
(default 0.005) so that two replicas reconciling one key at once would overlap visibly.

With ``$KINRUN_SHARD_CHILDREN`` (an informer name) each line also carries ``"child"``: whether
that informer's cache on this replica holds the key's child ``<key>-child`` (the owned-children
test, ``test_sharding_children``). A config whose actions write (the children's ``apply``) lists
``- {plugin: recordStart}`` first: then ``start`` is when the reconcile's actions began
rendering, so the interval covers its writes too (the hook runs after the actions).
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from kinrun.hooks import hookimpl

_REPLICA = os.environ["KINRUN_SHARD_ID"]
_HOLD = float(os.environ.get("KINRUN_SHARD_HOLD", "0.005"))
_CHILDREN = os.environ.get("KINRUN_SHARD_CHILDREN")
_lock = threading.Lock()
_began = threading.local()  # (key, start) of the reconcile on this worker thread
_file = open(os.environ["KINRUN_SHARD_RECORD"], "a", buffering=1)  # noqa: SIM115


def _record_start(args: Any, *, obj: Any, ctx: Any) -> list:
    """The ``recordStart`` action kind: note when this reconcile began; sends nothing."""
    _began.mark = (ctx.key, time.monotonic())
    return []


@hookimpl
def kinrun_action_kinds() -> dict:
    """``recordStart`` (see the module docstring)."""
    return {"recordStart": _record_start}


@hookimpl
def kinrun_reconcile(controller: str, key: str, obj: Any, ctx: Any) -> None:
    """Record one reconcile (see the module docstring)."""
    start = time.monotonic()
    mark, _began.mark = getattr(_began, "mark", None), None
    if mark is not None and mark[0] == key:
        start = mark[1]
    time.sleep(_HOLD)
    record = {"r": _REPLICA, "key": key, "live": obj is not None, "start": start,
              "end": time.monotonic()}
    if _CHILDREN is not None:
        record["child"] = ctx.listers[_CHILDREN].get(f"{key}-child") is not None
    line = json.dumps(record) + "\n"
    with _lock:
        _file.write(line)
