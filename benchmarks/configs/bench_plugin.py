"""The benchmark plugin of bench-pods*.yaml: records timings inside a real ``kinrun CONFIG``.

Loaded by kinrun like any plugin file. Its settings come from ``KINRUN_BENCH_ARGS`` (the
contender command line, JSON, set by ``benchmarks/contenders/kinrun_cli.py``); without it the
plugin does nothing (so the config also runs by hand). Its ``kinrun_reconcile`` only records the
call; when the workload is done it prints the result line and ends the process
(``_common.emit``).

For the ``events`` workload it makes the first LIST of kinrun's ListerWatcher answer nothing at
``--since`` (``kinrun.kube.listwatch.KubeListerWatcher.list`` is wrapped in this process), so that
the informer's watch replays the server's history; everything else is kinrun's own code.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import kinrun

_ARGS_JSON = os.environ.get("KINRUN_BENCH_ARGS")
REC = None

if _ARGS_JSON:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "contenders"))
    import _common

    ARGS = _common.parse_args(json.loads(_ARGS_JSON))
    REC, GCMON, RSS0 = _common.start(ARGS)
    name = "kinrun-cli-action" if ARGS.variant == "action" else "kinrun-cli"
    threading.Thread(target=_common.wait_and_emit, args=(name, ARGS, REC, GCMON, RSS0),
                     daemon=True, name="bench-emit").start()

    _common.replay_first_list(REC, ARGS)


@kinrun.hookimpl
def kinrun_reconcile(controller, key, obj, ctx):
    """Record the reconcile of ``obj`` (no-op without KINRUN_BENCH_ARGS)."""
    if REC is not None and obj is not None:
        md = obj["metadata"]
        REC.handled(md["name"], md.get("namespace", ""), md.get("annotations"))
    return None
