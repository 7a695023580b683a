"""Which collections run while kinrun's informer syncs N Pods, and what they walk. Offline: one
process, no server. Not part of the test run.

    .venv/bin/python benchmarks/scale_gc.py --pods 100000
    .venv/bin/python benchmarks/scale_gc.py --pods 100000 --variant replace-paused

The pipeline is the ``kinrun`` contender's (``contenders/kinrun_lib.py``): ``gc_tuning.manage()``,
a ``SharedIndexInformer`` with ``strip_managed_fields``, a synchronous handler enqueuing the key
into a ``Controller`` with one worker (no-op reconcile), ``gc_tuning.freeze()`` once synced. The
ListerWatcher's LIST decodes one JSON PodList of ``--pods`` podgen Pods (the bytes are made
before the clock starts) with kinrun's LIST decoder under the LIST's GC pause and freeze
(``jsondecode.gc_paused(freeze=True)`` around ``listwatch.loads_list_page``, as
``KubeListerWatcher.list``), then its watch blocks until stopped.

Reported: each collection during the sync (generation, wall ms, CPU ms of the collecting
thread), the thread it ran on, and at the longest one what generation 0 held: the count of
young objects, and the young containers with more than 1,000 entries by type and size (what a
young collection has to traverse item by item: each item is a pointer into the cache).

``--variant replace-paused``: the same, with the reflector's ``DeltaFIFO.replace`` run inside
the same pause and freeze as the LIST (patched in this process only: what a change to
``kinrun.cache.reflector`` would do); shows whether the LIST's freeze extended over the Replace
removes the sync's collections.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402

import podgen  # noqa: E402
from replay import QuietWatch  # noqa: E402
from kinrun.cache import ObjectList, SharedIndexInformer, strip_managed_fields  # noqa: E402
from kinrun.gc import policy as gc_tuning  # noqa: E402
from kinrun.cache import delta_fifo  # noqa: E402
from kinrun.controller import Controller, enqueue_own_key  # noqa: E402
from kinrun.gc.pause import gc_paused  # noqa: E402
from kinrun.kube.listwatch import loads_list_page  # noqa: E402
from kinrun.workqueue import RateLimitingQueue  # noqa: E402


class BytesListerWatcher:
    """LIST: decode ``data`` (a PodList's JSON) as kinrun's LIST does; WATCH: block until closed."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.listed_at = 0.0

    def list(self, *, resource_version: str = "") -> ObjectList:
        with gc_paused(freeze=True):
            page = loads_list_page(self.data, drop_managed_fields=True)
            items = page["items"]
            for item in items:
                item["apiVersion"], item["kind"] = "v1", "Pod"
        self.listed_at = time.perf_counter()
        return ObjectList(items=items, resource_version="1", kind="Pod")

    def watch(self, **_: object) -> QuietWatch:
        return QuietWatch()


class Collections:
    """gc.callbacks probe: every collection's generation, wall and thread CPU seconds, thread;
    after the LIST, a census of generation 0 at the start of each collection (outside the
    timing); the census of the collection with the most CPU is kept."""

    def __init__(self, lw: "BytesListerWatcher") -> None:
        self.lw = lw
        self.rows: list[dict] = []
        self.census: dict = {}
        self._t = self._cpu = 0.0
        self._longest = 0.0
        self._pending: dict = {}

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            if self.lw.listed_at and len(self.rows) < 50:  # the sync's first collections
                self._pending = young_census()
            self._t, self._cpu = time.perf_counter(), time.thread_time()
            return
        wall, cpu = time.perf_counter() - self._t, time.thread_time() - self._cpu
        self.rows.append({"t": time.perf_counter(), "gen": info["generation"],
                          "wall_ms": wall * 1e3, "cpu_ms": cpu * 1e3,
                          "thread": threading.current_thread().name,
                          "collected": info.get("collected")})
        if self._pending and cpu > self._longest:
            self._longest = cpu
            self.census = self._pending
        self._pending = {}


def young_census() -> dict:
    """Generation 0 now: object count, and the containers with > 1,000 entries."""
    young = gc.get_objects(generation=0)
    big = Counter()
    sizes = []
    for o in young:
        try:
            n = len(o)
        except TypeError:
            continue
        if n > 1000:
            big[type(o).__name__] += 1
            sizes.append((type(o).__name__, n))
    types = Counter(type(o).__name__ for o in young)
    return {"young": len(young), "types": types.most_common(6),
            "big_containers": sorted(sizes, key=lambda s: -s[1])[:8]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pods", type=int, default=100_000)
    p.add_argument("--variant", choices=["default", "replace-paused"], default="default")
    p.add_argument("--cpu", type=int, default=1)
    args = p.parse_args(argv)
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    pods = [podgen.make_pod(i, namespace="bench") for i in range(args.pods)]
    data = orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "1"}, "items": pods})
    del pods
    gc.collect()
    gc.freeze()  # this script's own objects are not the informer's
    if args.variant == "replace-paused":
        replace = delta_fifo.DeltaFIFO.replace

        def paused_replace(self, objects, resource_version=""):
            with gc_paused(freeze=True):
                return replace(self, objects, resource_version)

        delta_fifo.DeltaFIFO.replace = paused_replace
    done = threading.Event()
    handled = [0]

    def reconcile(key: str, obj: dict | None) -> None:
        handled[0] += 1
        if handled[0] >= args.pods:
            done.set()

    lw = BytesListerWatcher(data)
    probe = Collections(lw)
    informer = SharedIndexInformer(lw, kind="Pod", transform=strip_managed_fields, name="pods")
    ctrl = Controller("bench", RateLimitingQueue(name="bench"), informer.indexer.get_by_key,
                      reconcile, workers=1)
    informer.add_event_handler(enqueue_own_key(ctrl.enqueue), synchronous=True)
    gc_tuning.manage()
    gc.callbacks.append(probe)
    t0, cpu0 = time.perf_counter(), time.process_time()
    informer.start()
    informer.wait_for_sync()
    t_synced = time.perf_counter()
    gc_tuning.freeze()
    ctrl.start()
    done.wait(1800)
    t_end, cpu_end = time.perf_counter(), time.process_time()
    gc.callbacks.remove(probe)
    rows = probe.rows
    out = {"pods": args.pods, "variant": args.variant, "list_bytes": len(data),
           "list_s": lw.listed_at - t0, "synced_s": t_synced - t0, "reconciled_s": t_end - t0,
           "cpu_s": cpu_end - cpu0, "collections": len(rows),
           "by_generation": Counter(r["gen"] for r in rows),
           "longest": sorted(rows, key=lambda r: -r["cpu_ms"])[:5],
           "after_list": [dict(r, t=round(r["t"] - lw.listed_at, 3)) for r in rows
                          if r["t"] > lw.listed_at][:10],
           "census_at_longest": probe.census, "loadavg": os.getloadavg()}
    print(json.dumps(out, default=str, indent=1))
    informer.stop() if hasattr(informer, "stop") else None
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
