"""The sharding test's kinrun plugin: records every reconcile with the replica that ran it.

Loaded by each kinrun replica under test (config ``plugins: [this file]``). Appends JSON lines
to ``$KINRUN_SHARD_RECORD``: ``{"r": replica, "key", "live": bool, "start", "end"}``, times
from ``time.monotonic()`` (CLOCK_MONOTONIC, one clock for every process of the machine, so the
intervals of different replicas compare). Each reconcile lasts ``$KINRUN_SHARD_HOLD`` seconds
(default 0.005) so that two replicas reconciling one key at once would overlap visibly.
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
_lock = threading.Lock()
_file = open(os.environ["KINRUN_SHARD_RECORD"], "a", buffering=1)  # noqa: SIM115


@hookimpl
def kinrun_reconcile(controller: str, key: str, obj: Any, ctx: Any) -> None:
    """Record one reconcile (see the module docstring)."""
    start = time.monotonic()
    time.sleep(_HOLD)
    line = json.dumps({"r": _REPLICA, "key": key, "live": obj is not None, "start": start,
                       "end": time.monotonic()}) + "\n"
    with _lock:
        _file.write(line)
