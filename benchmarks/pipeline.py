"""Benchmark of the informer pipeline: throughput, memory per cached object, GC pauses.

Run: ``python benchmarks/pipeline.py [--events N] [--pods N]``. Prints a table and writes
``benchmarks/results/pipeline.json``. Not part of the test run.

1. Throughput: an in-memory watch stream of realistic ~9 KB Pod dicts (with managedFields,
   already decoded: JSON decoding is the kube layer's cost, see benchmarks/decode.py) goes
   through reflector -> DeltaFIFO (transform strips managedFields) -> indexer -> handler ->
   workqueue -> one worker with a no-op reconcile. Timed from the first event until the last
   event's key is reconciled (the queue is FIFO with one worker, so everything before it is
   done). Reported as events/s, with the number of reconciles (the queue coalesces).
2. Memory: 10,000 Pods listed (decoded from JSON per object, as from the wire), managedFields
   stripped, cached. Per object: tracemalloc's traced bytes and the RSS growth, divided by N.
3. GC: the throughput run over a cache of ``--pods`` objects, with CPython's default GC and
   with kinrun's policy (``kinrun.gc.policy.manage`` before the informer starts, then
   ``gc.freeze`` after the initial list, as the Manager does); pauses via gc.callbacks.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from podgen import make_pod  # noqa: E402

from kinrun.cache import ObjectList, SharedIndexInformer, WatchEvent, strip_managed_fields  # noqa: E402
from kinrun.gc import policy as gc_tuning  # noqa: E402
from kinrun.controller import Controller, enqueue_own_key  # noqa: E402
from kinrun.workqueue import RateLimitingQueue  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "pipeline.json"


class StreamWatch:
    """Yields pre-built events, then blocks until closed."""

    def __init__(self, events: list[WatchEvent]) -> None:
        self.events = events
        self.closed = threading.Event()

    def __iter__(self):
        yield from self.events
        self.closed.wait()

    def close(self) -> None:
        self.closed.set()


class StreamListerWatcher:
    """LIST returns ``listed`` (bytes decoded per call, as from the wire); the first WATCH
    streams ``events``; later watches are quiet."""

    def __init__(self, listed: list[bytes], events: list[WatchEvent]) -> None:
        self.listed, self.events = listed, events
        self.watches: list[StreamWatch] = []
        self.start = threading.Event()

    def list(self, *, resource_version: str = "") -> ObjectList:
        return ObjectList([orjson.loads(b) for b in self.listed], "1")

    def watch(self, *, resource_version: str, timeout_seconds=None, allow_bookmarks=True):
        self.start.wait()
        watch = StreamWatch(self.events if not self.watches else [])
        self.watches.append(watch)
        return watch


def build_events(n_events: int, n_keys: int) -> list[WatchEvent]:
    """Updates cycling over ``n_keys`` decoded pods, each with a fresh resourceVersion, then a
    sentinel ADDED pod last."""
    bases = [orjson.loads(orjson.dumps(make_pod(i))) for i in range(n_keys)]
    events = []
    for j in range(n_events - 1):
        base = bases[j % n_keys]
        meta = dict(base["metadata"])
        meta["resourceVersion"] = str(100_000 + j)
        events.append(WatchEvent("MODIFIED", {**base, "metadata": meta}))
    sentinel = make_pod(10**7)
    sentinel["metadata"]["resourceVersion"] = str(100_000 + n_events)
    events.append(WatchEvent("ADDED", sentinel))
    return events


def run_throughput(n_events: int, n_cached: int, *, tuned: bool) -> dict[str, Any]:
    """One full-pipeline run; returns events/s, reconciles, GC pause summary."""
    listed = [orjson.dumps(make_pod(i)) for i in range(n_cached)]
    sentinel_key = f"default/{make_pod(10**7)['metadata']['name']}"
    lw = StreamListerWatcher(listed, [])
    done = threading.Event()
    reconciles = [0]

    def reconcile(key, obj):
        reconciles[0] += 1
        if key == sentinel_key:
            done.set()
    previous = gc_tuning.manage() if tuned else None  # kinrun's policy, as the Manager applies it
    informer = SharedIndexInformer(lw, kind="Pod", transform=strip_managed_fields, name="bench")
    queue = RateLimitingQueue()
    controller = Controller("bench", queue, informer.lister.get, reconcile, workers=1)
    informer.add_event_handler(enqueue_own_key(controller.enqueue), synchronous=True)
    informer.start()
    controller.start()
    informer.wait_for_sync()
    while len(queue) or reconciles[0] < n_cached and not done.is_set():
        time.sleep(0.01)  # benchmark only: let the initial adds drain
    if tuned:
        gc_tuning.freeze()
    else:
        gc.collect()
    # built after the tuning step, so in both runs the events are young, not frozen, objects
    lw.events = build_events(n_events, max(1, min(n_cached, 2000)))
    reconciles[0] = 0
    with gc_tuning.GCPauseRecorder() as pauses:
        t0, c0 = time.perf_counter(), time.process_time()
        lw.start.set()
        done.wait()
        elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    controller.stop(10)
    informer.stop()
    if tuned:
        gc_tuning.unfreeze(previous)
    return {"events": n_events, "cached": n_cached, "seconds": elapsed, "cpu_seconds": cpu,
            "events_per_s": n_events / elapsed, "events_per_cpu_s": n_events / cpu,
            "reconciles": reconciles[0],
            "gc": pauses.summary()}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_memory(n_pods: int, *, trace: bool) -> dict[str, Any]:
    """Cache ``n_pods`` stripped Pods; bytes per object: traced (``trace``) or RSS growth.
    RSS is measured in a run without tracemalloc (its own bookkeeping would count)."""
    listed = [orjson.dumps(make_pod(i)) for i in range(n_pods)]
    lw = StreamListerWatcher(listed, [])
    gc.collect()
    rss0 = rss_bytes()
    if trace:
        tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    informer = SharedIndexInformer(lw, kind="Pod", transform=strip_managed_fields, name="mem")
    informer.start()
    informer.wait_for_sync()
    gc.collect()
    traced = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    rss = rss_bytes() - rss0
    assert len(informer.lister.list()) == n_pods
    json_size = sum(len(orjson.dumps(o)) for o in informer.lister.list()[:100]) / 100
    informer.stop()
    out = {"pods": n_pods, "stripped_json_bytes": json_size,
           "with_managed_fields_json_bytes": sum(len(b) for b in listed[:100]) / 100}
    out["traced_bytes_per_object" if trace else "rss_bytes_per_object"] = (traced if trace else rss) / n_pods
    return out


def run_memory_both(n_pods: int) -> dict[str, Any]:
    """Traced bytes here; RSS growth in a fresh interpreter."""
    import subprocess
    traced = run_memory(n_pods, trace=True)
    child = subprocess.run([sys.executable, __file__, "--rss-child", str(n_pods)], check=True,
                           capture_output=True, text=True)
    return {**traced, **json.loads(child.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--rss-child", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        print(json.dumps(run_memory(args.rss_child, trace=False)))
        return
    memory = run_memory_both(args.pods)
    small = run_throughput(args.events, 1000, tuned=False)
    default_gc = run_throughput(args.events, args.pods, tuned=False)
    tuned_gc = run_throughput(args.events, args.pods, tuned=True)
    results = {"python": platform.python_version(), "machine": platform.machine(),
               "cpus": os.cpu_count(), "load_average_at_end": os.getloadavg(), "memory": memory, "throughput_1k_cached": small,
               "throughput_default_gc": default_gc, "throughput_tuned_gc": tuned_gc}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print_table(results)


def print_table(r: dict[str, Any]) -> None:
    m = r["memory"]
    print(f"Pod JSON: {m['with_managed_fields_json_bytes']:.0f} B with managedFields, "
          f"{m['stripped_json_bytes']:.0f} B stripped")
    print(f"{'run':34} {'events/s':>10} {'ev/cpu-s':>9} {'reconciles':>10} {'gc n':>6} {'gen2':>5} {'gc total ms':>11} {'gc max ms':>9}")
    for label, key in (("pipeline, 1k cached, default GC", "throughput_1k_cached"),
                       (f"pipeline, {r['memory']['pods']} cached, default GC", "throughput_default_gc"),
                       (f"pipeline, {r['memory']['pods']} cached, frozen GC", "throughput_tuned_gc")):
        t = r[key]
        g = t["gc"]
        print(f"{label:34} {t['events_per_s']:>10.0f} {t['events_per_cpu_s']:>9.0f} {t['reconciles']:>10} {g['count']:>6} "
              f"{g['gen2_count']:>5} {g['total_s'] * 1000:>11.1f} {g['max_s'] * 1000:>9.2f}")
    d, f = r["throughput_default_gc"], r["throughput_tuned_gc"]
    print(f"GC policy (gc_tuning.manage + gc.freeze after the initial list, thresholds {gc_tuning.DEFAULT_THRESHOLDS}): "
          f"collections {d['gc']['count']} -> {f['gc']['count']}, pause total "
          f"{d['gc']['total_s'] * 1000:.0f} -> {f['gc']['total_s'] * 1000:.0f} ms, max "
          f"{d['gc']['max_s'] * 1000:.1f} -> {f['gc']['max_s'] * 1000:.1f} ms, events per CPU-second "
          f"{d['events_per_cpu_s']:.0f} -> {f['events_per_cpu_s']:.0f}")
    print(f"memory per cached Pod ({m['pods']} pods, managedFields stripped): "
          f"{m['traced_bytes_per_object'] / 1024:.1f} KiB traced, {m['rss_bytes_per_object'] / 1024:.1f} KiB RSS")
    print(f"load average at end: {r['load_average_at_end'][0]:.1f} on {r['cpus']} CPUs "
          "(a shared machine makes events/s noisy; events per CPU-second is steadier)")
    print(f"written: {RESULTS}")


if __name__ == "__main__":
    main()
