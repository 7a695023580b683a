"""CPU microseconds of one reconcile of a config's first controller, in one thread, no server:
the worker's share of ``run.py``'s events workload without the reflector, the socket and the
thread hand-offs (benchmarks/HISTORY.md, round 11).

Run: ``python benchmarks/reconcile_cost.py [--config examples/configs/pod-logger.yaml]
[--pods 30000] [--repeat 7] [--quiet-logs]``. Not part of the test run.

The config is compiled as ``kinrun CONFIG`` compiles it (``kinrun.plan``); ``--pods`` podgen
Pods are projected as its first informer decodes them and cached; its Reconciler
(``kinrun.bound.reconciler``, with a client object that is never called: a config that
writes would fail) runs under a Controller (``process_next_item``: the workqueue's get and
done, the cause, the result) for every key in turn, with the logs at info going through the
main job's batched handler to a file (``--quiet-logs``: the logger at warning, so a ``log``
action is rendered but not written). Prints the median and the minimum of ``--repeat`` runs;
the cyclic GC is off (its cost is the GC policy's, measured by ``run.py``).
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from podgen import make_pod  # noqa: E402

from kinrun.bound import reconciler  # noqa: E402
from kinrun.cache.lister import Lister  # noqa: E402
from kinrun.cache.thread_safe_store import KeyedIndexer  # noqa: E402
from kinrun.config import load  # noqa: E402
from kinrun.controller import Controller  # noqa: E402
from kinrun.logging_setup import configure_logging  # noqa: E402
from kinrun.plan import plan  # noqa: E402
from kinrun.workqueue import RateLimitingQueue  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


class _UnusedClient:
    """Stands for the cluster's client: present (as in a run), never called."""

    dry_run = False


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--config", default=str(ROOT / "examples" / "configs" / "pod-logger.yaml"))
    p.add_argument("--pods", type=int, default=30000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--quiet-logs", action="store_true")
    a = p.parse_args()
    gc.disable()
    out = tempfile.TemporaryFile("w")
    configure_logging("info", "text", out, batched=True)
    if a.quiet_logs:
        logging.getLogger("kinrun").setLevel(logging.WARNING)
    compiled = plan(load(a.config))
    controller = compiled.controllers[0]
    informer = compiled.informers[controller.spec.primary]
    indexer = KeyedIndexer(indexers=dict(informer.indexers))
    keys = []
    for i in range(a.pods):
        pod = make_pod(i, "default")
        indexer.add(informer.projection.project(pod) if informer.projection else pod)
        keys.append(f"default/{pod['metadata']['name']}")
    rec = reconciler(controller, listers={controller.spec.primary: Lister(indexer)},
                     client=_UnusedClient())
    queue = RateLimitingQueue()
    worker = Controller(controller.name, queue, indexer.get_by_key, rec, causes=True)

    def run() -> float:
        for key in keys:
            queue.add(key)
        t = time.process_time()
        for _ in keys:
            worker.process_next_item()
        return (time.process_time() - t) / len(keys) * 1e6

    run()  # warm-up
    times = [run() for _ in range(a.repeat)]
    print(f"{a.config}: {a.pods} keys; CPU us per reconcile: median "
          f"{statistics.median(times):.2f}, min {min(times):.2f}")


if __name__ == "__main__":
    main()
