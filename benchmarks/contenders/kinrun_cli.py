"""Contender: the real main job, ``kinrun CONFIG``, as a user runs it.

Execs ``kinrun benchmarks/configs/bench-pods.yaml --kubeconfig K --namespace NS --log-level
warning`` (``--variant action``: ``bench-pods-action.yaml``) in this process, pinned to
``--cpu`` (the affinity survives the exec). The config's plugin ``bench_plugin.py`` records the
timings and prints the result line; it reads this command line from ``KINRUN_BENCH_ARGS``.
``run.py`` starts ``kinrun CONFIG`` itself the same way (``run.kinrun_argv``), so that this
wrapper's own interpreter start is not in the figures; the wrapper is for running the
contender by hand.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import _common

ARGS = _common.parse_args()
_common.pin(ARGS.cpu)
CONFIGS = Path(__file__).resolve().parent.parent / "configs"
config = CONFIGS / ("bench-pods-action.yaml" if ARGS.variant == "action" else "bench-pods.yaml")
os.environ["KINRUN_BENCH_ARGS"] = json.dumps(sys.argv[1:])
kinrun = str(Path(sys.executable).parent / "kinrun")
os.execv(kinrun, [kinrun, str(config), "--kubeconfig", ARGS.kubeconfig, "--namespace",
                  ARGS.namespace, "--log-level", "warning"])
