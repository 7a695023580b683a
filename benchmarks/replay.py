"""The events workload offline: per-event CPU cost of kinrun's pipeline against the floor, in one
process, without a server. For A/B comparisons while optimising (less noise than run.py).

Run: ``python benchmarks/replay.py [--pods 3000] [--updates 10] [--repeat 5] [--variants ...]``.
Not part of the test run; nothing is written.

The input is what the embedded server sends for the ``events`` workload of ``run.py``: ``pods``
creations then ``updates - 1`` rounds of one annotation change per Pod (podgen Pods with
managedFields), as watch event lines framed as HTTP chunks, one chunk per event (as
kube-apiserver does). Each variant consumes the same bytes from memory:

- ``bare``: split lines, ``orjson.loads``, a dict of objects (the cyclic GC off): the floor;
- ``floor``: ``bare`` with kinrun's decode (managedFields cut first) into the dict of cached
  objects: decoding an update and freeing the cached version it replaces (cold in the CPU
  cache), before any pipeline step;
- ``frames``: kinrun's ``StreamWatch`` reading and de-chunking the bytes into event lines,
  nothing decoded (the socket-read step);
- ``stream``: kinrun's ``StreamWatch`` (chunked decoding, batched decode), objects dropped;
- ``informer``: ``SharedIndexInformer`` over it (reflector, DeltaFIFO, strip managedFields,
  indexer) and a synchronous no-op handler; the GC policy as the Manager applies it;
- ``controller``: ``informer`` plus the enqueue handler, workqueue and one worker thread with a
  no-op reconcile (the ``kinrun`` contender of run.py);
- ``reconciler``: ``controller`` with the main job's reconcile (``kinrun.reconcile.Reconciler``:
  the cause of each queued key, a ``ReconcileContext``, the pluggy call, a typed Result) and
  its primary handler (deletions recorded), with a plugin whose ``kinrun_reconcile`` does
  nothing (what the ``kinrun-cli`` contender runs);
- ``reconciler-action``: ``reconciler`` compiled from ``configs/bench-pods-action.yaml``
  (``kinrun.plan``: the templated ``log`` action rendered in full at level debug with the
  logger at WARNING, the no-op hook, ``keepOld`` as the config implies): what the
  ``kinrun-cli-action`` contender runs;
- ``reconciler-metadata``: ``reconciler`` over a metadata-only watch (the same events as
  PartialObjectMetadata, as ``metadataOnly: true`` receives them).

``--steps`` prints where each microsecond of an event goes, as differences between the
variants' medians (frames; decode and free = stream - frames; reflector, DeltaFIFO, transform,
indexer and a synchronous handler = informer - stream; enqueue, workqueue, worker wake-up and a
no-op reconcile = controller - informer; the main job's reconcile = reconciler - controller;
the templated action = reconciler-action - reconciler).

``--socket`` feeds the watch's bytes through a socket written by another process on another
CPU: each read then releases the GIL, so the reflector and the worker hand the CPU to each
other as they do against a server (from memory a read never does, and run.py's figures are
higher); ``bare`` reads from memory either way.

Reports the median and the minimum over ``--repeat`` runs of CPU microseconds per event
(``time.process_time``, every thread), the variants interleaved run by run. The process is
pinned to one CPU (``--cpu``, default 1), as ``run.py`` pins its contenders: unpinned, the
reflector and the worker run on two cores and the figures also measure how their threads
hand over the GIL (``--cpu -1``; benchmarks/HISTORY.md "Round 4").
"""

from __future__ import annotations

import argparse
import gc
import io
import os
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from podgen import make_pod  # noqa: E402

from kinrun.cache import ObjectList, SharedIndexInformer, strip_managed_fields  # noqa: E402
from kinrun.gc import policy as gc_tuning  # noqa: E402
from kinrun.controller import Controller, enqueue_own_key  # noqa: E402
from kinrun.kube.listwatch import StreamWatch, event_object  # noqa: E402
from kinrun.kube.managed_fields import loads_without_managed_fields  # noqa: E402
from kinrun.workqueue import RateLimitingQueue  # noqa: E402


def history(pods: int, updates: int, metadata_only: bool = False) -> tuple[bytes, int]:
    """(the chunked body of the watch, number of events); ``metadata_only``: the objects as a
    metadata-only watch receives them (PartialObjectMetadata: kind, apiVersion, metadata)."""
    objs = [orjson.loads(orjson.dumps(make_pod(i, namespace="ev"))) for i in range(pods)]
    if metadata_only:
        objs = [{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                 "metadata": o["metadata"]} for o in objs]
    rv = 1000
    chunks = []
    for u in range(updates):
        for obj in objs:
            rv += 1
            obj["metadata"]["resourceVersion"] = str(rv)
            if u:
                obj["metadata"].setdefault("annotations", {})["bench/generation"] = str(u)
            line = orjson.dumps({"type": "MODIFIED" if u else "ADDED", "object": obj}) + b"\n"
            chunks.append(b"%x\r\n%s\r\n" % (len(line), line))
    chunks.append(b"0\r\n\r\n")
    return b"".join(chunks), pods * updates


class _Fp:
    def __init__(self, data: bytes) -> None:
        self.fp = io.BufferedReader(io.BytesIO(data), 1 << 16)


class _SocketFp:
    """``fp`` of a response whose bytes come through a socket: a child process (pinned to
    another CPU than this one, as run.py's server) writes ``data`` into it as fast as it is
    read. Socket reads release the GIL, as a real watch's do, so the pipeline's threads hand
    over the CPU as they do in run.py (from memory they do not)."""

    def __init__(self, data: bytes) -> None:
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:  # the writer
            mine.close()
            cpus = os.sched_getaffinity(0)
            others = set(range(os.cpu_count() or 1)) - cpus
            if others:
                os.sched_setaffinity(0, others)
            theirs.sendall(data)
            theirs.close()
            os._exit(0)
        theirs.close()
        self.fp = mine.makefile("rb")
        self._pid, self._sock = pid, mine

    def __del__(self) -> None:
        self._sock.close()
        os.waitpid(self._pid, 0)


SOCKET = False  # --socket: the watch's bytes come through a socket (_SocketFp)


class FakeResponse:
    """What StreamWatch uses of a urllib3 response, over bytes in memory (or, with
    ``--socket``, through a socket)."""

    headers = {"transfer-encoding": "chunked"}

    def __init__(self, data: bytes) -> None:
        self._fp = _SocketFp(data) if SOCKET else _Fp(data)

    def read1(self, n: int) -> bytes:  # the non-raw path (unused: the body is chunked)
        raise NotImplementedError

    def shutdown(self) -> None: ...

    def close(self) -> None: ...

    def release_conn(self) -> None: ...


class QuietWatch:
    """A watch with no events that ends when closed."""

    def __init__(self) -> None:
        self._closed = threading.Event()

    def __iter__(self):
        self._closed.wait()
        return iter(())

    def close(self) -> None:
        self._closed.set()


class ReplayListerWatcher:
    """An empty LIST, then one watch replaying ``data``; later watches are quiet."""

    def __init__(self, data: bytes, metadata_only: bool = False,
                 projection: Any = None) -> None:
        self.data, self.watched, self.metadata_only = data, False, metadata_only
        self.projection = projection

    def list(self, *, resource_version: str = "") -> ObjectList:
        return ObjectList(items=[], resource_version="1000", kind="PodList")

    def watch(self, **_: Any) -> Any:
        if self.watched:
            return QuietWatch()
        self.watched = True
        data = METADATA_DATA if self.metadata_only else self.data
        return StreamWatch(FakeResponse(data), api_version="v1", kind="Pod",
                           drop_managed_fields=True, metadata_only=self.metadata_only,
                           projection=self.projection)


def run_bare(data: bytes, n: int,
             decode: Callable[[bytes], Any] = orjson.loads) -> float:
    """Split lines, ``decode`` each event line, keep a dict of the objects (each replacing the
    version decoded one round earlier, cold in the CPU cache); the cyclic GC off."""
    enabled = gc.isenabled()
    gc.disable()
    t = time.process_time()
    cache: dict[str, Any] = {}
    reader = io.BytesIO(data)
    rest = b""
    while chunk := reader.read(1 << 16):
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.startswith(b"{"):
                obj = decode(line)["object"]
                md = obj["metadata"]
                cache[f"{md['namespace']}/{md['name']}"] = obj
    dt = time.process_time() - t
    assert len(cache) * (n // len(cache)) == n
    del cache
    if enabled:
        gc.enable()
    return dt


def run_floor(data: bytes, n: int) -> float:
    """``bare`` with kinrun's decode (managedFields cut before orjson): what caching an update
    costs before any pipeline step, freeing the cached version it replaces included."""
    return run_bare(data, n, lambda line: loads_without_managed_fields(line, event_object, 1))


def run_frames(data: bytes, n: int) -> float:
    watch = StreamWatch(FakeResponse(data), api_version="v1", kind="Pod")
    t = time.process_time()
    count = sum(len(lines) for lines in watch._line_batches())
    dt = time.process_time() - t
    assert count == n, count
    return dt


def run_stream(data: bytes, n: int, projection: Any = None) -> float:
    t = time.process_time()
    count = sum(1 for _ in StreamWatch(FakeResponse(data), api_version="v1", kind="Pod",
                                       projection=projection))
    dt = time.process_time() - t
    assert count == n, count
    return dt


class _Counter:
    def __init__(self, n: int) -> None:
        self.n, self.count, self.done = n, 0, threading.Event()

    def tick(self, *_: Any) -> None:
        self.count += 1
        if self.count >= self.n:
            self.done.set()

    on_add = on_update = on_delete = tick


class _Counting:
    """An event handler that passes every notification to ``inner``, then ticks ``counter``:
    the events a controller variant handled, counted where they arrive (the workqueue merges
    updates of a key that is still queued, so reconciles can be fewer than events)."""

    def __init__(self, inner: Any, counter: _Counter) -> None:
        self.inner, self.counter = inner, counter

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.inner.on_add(obj, is_in_initial_list)
        self.counter.tick()

    def on_update(self, old: Any, new: Any) -> None:
        self.inner.on_update(old, new)
        self.counter.tick()

    def on_delete(self, obj: Any) -> None:
        self.inner.on_delete(obj)
        self.counter.tick()


def main_job_reconcile(informer: SharedIndexInformer, tick: Callable[[], None]) -> Any:
    """``kinrun.reconcile.Reconciler`` for one controller whose hook plugin only calls ``tick``,
    with the primary handler the main job wires (``kinrun.bound.RecordDeletions``, causes)."""
    import types

    import kinrun
    from kinrun import plugin_manager
    from kinrun.reconcile import Reconciler

    plugin = types.ModuleType("replay_plugin")

    @kinrun.hookimpl
    def kinrun_reconcile(controller: str, key: str, obj: Any, ctx: Any) -> None:
        if CYCLES:  # --cycles: a reference cycle per reconcile, garbage when it returns
            parent: dict[str, Any] = {"key": key, "children": []}
            for i in range(CYCLES):
                parent["children"].append({"parent": parent, "i": i})
        tick()

    plugin.kinrun_reconcile = kinrun_reconcile  # type: ignore[attr-defined]
    pm = plugin_manager.new_plugin_manager()
    pm.register(plugin, name="replay")
    return Reconciler("replay", hooks=plugin_manager.reconcile_caller(pm, True),
                      listers={"pods": informer.lister}, indexers={"pods": informer.indexer})


CONFIGS = Path(__file__).resolve().parent / "configs"
ROOT = Path(__file__).resolve().parent.parent


def compiled_config(config: str) -> Any:
    """The Plan of ``config`` (a file of ``configs/``, or a path from the repository's root),
    as ``kinrun CONFIG`` compiles it."""
    from kinrun.config import load
    from kinrun.plan import plan

    path = CONFIGS / config if (CONFIGS / config).exists() else ROOT / config
    return plan(load(str(path)))


def config_reconcile(informer: SharedIndexInformer, tick: Callable[[], None],
                     compiled: Any) -> Any:
    """The Reconciler ``kinrun CONFIG`` builds for the first controller of ``compiled`` (a
    bench plugin's hook does nothing without KINRUN_BENCH_ARGS), calling ``tick`` after each
    reconcile; returns (reconcile, reconciler)."""
    import logging

    from kinrun.reconcile import Reconciler

    logging.getLogger("kinrun").setLevel(logging.WARNING)
    cp = compiled.controllers[0]
    reconciler = Reconciler(cp.spec.name, actions=cp.actions, on_delete=cp.on_delete,
                            hooks=cp.hooks, keep_old=cp.keep_old,
                            listers={"pods": informer.lister}, indexers={"pods": informer.indexer})

    def reconcile(*args: Any) -> Any:
        result = reconciler(*args)
        tick()
        return result
    return reconcile, reconciler


class GcPauses:
    """Longest collection in wall and in the collecting thread's CPU time, and their count,
    through ``gc.callbacks`` (the GC policy measured, not guessed)."""

    def __init__(self) -> None:
        self.max_wall = self.max_cpu = self.total_cpu = 0.0
        self.count = 0
        self.longest_generation = -1
        self._t = self._c = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t, self._c = time.perf_counter(), time.thread_time()
            return
        cpu = time.thread_time() - self._c
        if cpu > self.max_cpu:
            self.longest_generation = info.get("generation", -1)
        self.max_wall = max(self.max_wall, time.perf_counter() - self._t)
        self.max_cpu = max(self.max_cpu, cpu)
        self.total_cpu += cpu
        self.count += 1


GC: dict[str, list[GcPauses]] = {}
GC_THRESHOLDS: tuple[int, int, int] | None = None  # --gc-threshold: gc_tuning.manage's
CYCLES = 0  # --cycles: children in the reference cycle each reconcile's hook leaves behind
LEAKED: dict[str, list[int]] = {}  # variant -> objects a full collection found after each run


METADATA_DATA = b""  # the metadata-only history, made by main() when a variant needs it


def run_informer(data: bytes, n: int, *, controller: bool, main_job: bool = False,
                 config: str = "", name: str = "", metadata_only: bool = False,
                 whole: bool = False, projected: bool = False) -> float:
    """One run of a pipeline variant over ``data`` (``n`` events); CPU seconds. ``config``:
    the reconcile and the projection (unless ``whole``) ``kinrun CONFIG`` compiles for it;
    ``projected``: the pod-logger example's projection without its reconcile."""
    compiled = compiled_config(config) if config else None
    projection = None if whole or compiled is None else compiled.informers["pods"].projection
    if projected:
        projection, compiled = pod_logger_projection(), None
    counter = _Counter(n)
    previous = gc_tuning.manage(*([GC_THRESHOLDS] if GC_THRESHOLDS else []))
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    GC.setdefault(name, []).append(pauses)
    t = time.process_time()
    informer = SharedIndexInformer(ReplayListerWatcher(data, metadata_only, projection),
                                   kind="Pod", transform=strip_managed_fields, name="replay")
    ctrl = None
    reconciles = _Counter(1 << 62)  # counts reconciles; the run ends on events and a drain
    if controller:
        recorder = None
        if config:
            reconcile, recorder = config_reconcile(informer, reconciles.tick, compiled)
        else:
            reconcile = (main_job_reconcile(informer, reconciles.tick) if main_job
                         else lambda key, obj: reconciles.tick())
            recorder = reconcile if main_job else None
        ctrl = Controller("replay", RateLimitingQueue(), informer.indexer.get_by_key,
                          reconcile, workers=1, causes=main_job)
        handler = enqueue_own_key(ctrl.enqueue, causes=main_job)
        if main_job:
            from kinrun.bound import RecordDeletions
            handler = RecordDeletions(handler, recorder, None)
        informer.add_event_handler(_Counting(handler, counter), synchronous=True)
        ctrl.start()
    else:
        informer.add_event_handler(counter, synchronous=True)
    informer.start()
    if not counter.done.wait(300):
        raise RuntimeError(f"only {counter.count} of {n} events handled")
    if ctrl is not None and not ctrl.queue.shut_down_with_drain(300):  # every queued key done
        raise RuntimeError(f"the workqueue did not drain ({reconciles.count} reconciles)")
    dt = time.process_time() - t
    informer.stop()
    if ctrl is not None:
        ctrl.stop(drain_timeout=5)  # drained already: the workers exit at once
    gc.callbacks.remove(pauses)
    gc_tuning.unfreeze(previous)
    LEAKED.setdefault(name, []).append(gc.collect())  # cyclic garbage the policy had frozen
    gc.collect()
    return dt


def pod_logger_projection() -> Any:
    """The projection ``kinrun examples/configs/pod-logger.yaml`` decodes its Pods with."""
    return compiled_config("examples/configs/pod-logger.yaml").informers["pods"].projection


VARIANTS: dict[str, Callable[[bytes, int], float]] = {
    "bare": run_bare,
    "floor": run_floor,
    "frames": run_frames,
    "stream": run_stream,
    "informer": lambda d, n: run_informer(d, n, controller=False, name="informer"),
    "controller": lambda d, n: run_informer(d, n, controller=True, name="controller"),
    "reconciler": lambda d, n: run_informer(d, n, controller=True, main_job=True,
                                            name="reconciler"),
    "reconciler-action": lambda d, n: run_informer(d, n, controller=True, main_job=True,
                                                   config="bench-pods-action.yaml",
                                                   name="reconciler-action"),
    "reconciler-metadata": lambda d, n: run_informer(d, n, controller=True, main_job=True,
                                                     name="reconciler-metadata",
                                                     metadata_only=True),
    "reconciler-action-whole": lambda d, n: run_informer(
        d, n, controller=True, main_job=True, config="bench-pods-action.yaml",
        name="reconciler-action-whole", whole=True),
    "reconciler-reads": lambda d, n: run_informer(d, n, controller=True, main_job=True,
                                                  config="bench-pods.yaml",
                                                  name="reconciler-reads"),
    "stream-projected": lambda d, n: run_stream(d, n, pod_logger_projection()),
    "informer-projected": lambda d, n: run_informer(d, n, controller=False, projected=True,
                                                    name="informer-projected"),
    "controller-projected": lambda d, n: run_informer(d, n, controller=True, projected=True,
                                                      name="controller-projected"),
    "pod-logger": lambda d, n: run_informer(d, n, controller=True, main_job=True,
                                            config="examples/configs/pod-logger.yaml",
                                            name="pod-logger"),
    "pod-logger-whole": lambda d, n: run_informer(d, n, controller=True, main_job=True,
                                                  config="examples/configs/pod-logger.yaml",
                                                  name="pod-logger-whole", whole=True),
}

STEPS = (("read, de-chunk, split lines", "frames", None),
         ("decode (managedFields cut) and free", "stream", "frames"),
         ("reflector, DeltaFIFO, transform, indexer, processor", "informer", "stream"),
         ("enqueue, workqueue, worker, no-op reconcile", "controller", "informer"),
         ("main job reconcile (causes, context, pluggy hook)", "reconciler", "controller"),
         ("templated action (render, keepOld)", "reconciler-action", "reconciler"),
         ("projected decode (pod-logger's paths) and free", "stream-projected", "frames"),
         ("reflector ... processor, projected objects", "informer-projected",
          "stream-projected"),
         ("enqueue, workqueue, worker, no-op reconcile, projected", "controller-projected",
          "informer-projected"),
         ("pod-logger's reconcile (causes, context, log action)", "pod-logger",
          "controller-projected"))


def cache_bytes(pods: int) -> None:
    """Bytes per cached Pod (tracemalloc, the objects kept as a cache keeps them) of each
    decode of the same ``pods`` watch lines, and each as a ratio to kinrun's whole decode."""
    import tracemalloc

    from kinrun.kube.listwatch import event_object

    lines = [orjson.dumps({"type": "ADDED", "object": make_pod(i, namespace="ev")})
             for i in range(pods)]
    decoders = {"bare (orjson.loads)": orjson.loads,
                "kinrun whole (managedFields cut)":
                    lambda line: loads_without_managed_fields(line, event_object, 1)}
    for config in ("examples/configs/pod-logger.yaml", "bench-pods-action.yaml",
                   "bench-pods.yaml"):
        projection = compiled_config(config).informers["pods"].projection
        decoders[f"projected: {Path(config).name}"] = projection.loads_event
    sizes = {}
    for name, decode in decoders.items():
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        kept = [decode(line)["object"] for line in lines]
        sizes[name] = (tracemalloc.get_traced_memory()[0] - before) / pods
        tracemalloc.stop()
        del kept
    whole = sizes["kinrun whole (managedFields cut)"]
    print(f"{pods} Pods, {sum(map(len, lines)) / pods:,.0f} bytes each on the wire; bytes "
          "traced per cached Pod")
    for name, size in sizes.items():
        print(f"  {name:40s} {size:8,.0f}   {size / whole:5.2f}x kinrun whole")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pods", type=int, default=3000)
    p.add_argument("--updates", type=int, default=10)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--gc-threshold", type=int, default=0,
                   help="gen-0 threshold for gc_tuning.manage (default: its own)")
    p.add_argument("--young-bytes", type=int, default=0,
                   help="gc_tuning.YOUNG_COLLECTION_BYTES (default: its own)")
    p.add_argument("--cycles", type=int, default=0,
                   help="the main job's hook leaves a reference cycle of N children per "
                        "reconcile (reconciler variants); reports what the policy froze")
    p.add_argument("--steps", action="store_true",
                   help="also print the per-step differences (needs every variant)")
    p.add_argument("--bytes", action="store_true",
                   help="print the bytes tracemalloc traces per cached Pod for each decode "
                        "(bare, kinrun whole, the configs' projections) instead")
    p.add_argument("--socket", action="store_true",
                   help="feed the watch through a socket from a writer process on another CPU "
                        "(reads release the GIL, as run.py's do) instead of from memory")
    p.add_argument("--cpu", type=int, default=1,
                   help="pin the process to this CPU, as run.py pins contenders (-1: unpinned)")
    args = p.parse_args()
    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    global CYCLES, SOCKET
    CYCLES, SOCKET = args.cycles, args.socket
    if args.young_bytes and hasattr(gc_tuning, "YOUNG_COLLECTION_BYTES"):
        gc_tuning.YOUNG_COLLECTION_BYTES = args.young_bytes
    if args.gc_threshold:
        global GC_THRESHOLDS
        GC_THRESHOLDS = (args.gc_threshold, *gc_tuning.DEFAULT_THRESHOLDS[1:])
    if args.bytes:
        cache_bytes(args.pods)
        return
    data, n = history(args.pods, args.updates)
    if "reconciler-metadata" in args.variants.split(","):
        global METADATA_DATA
        METADATA_DATA = history(args.pods, args.updates, metadata_only=True)[0]
    names = args.variants.split(",")
    times: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeat):
        for name in names:
            times[name].append(VARIANTS[name](data, n) / n * 1e6)
    print(f"{n} events, {len(data) / n:,.0f} bytes each on the wire; CPU us per event")
    for name in names:
        print(f"  {name:17s} median {statistics.median(times[name]):6.1f}   "
              f"min {min(times[name]):6.1f}")
    if GC:
        print("GC (kinrun's policy, gc_tuning.manage): longest pause wall / CPU ms, "
              "collections, CPU s in collections (medians over the runs)")
        for name, runs in GC.items():
            print(f"  {name:17s} {statistics.median(r.max_wall for r in runs) * 1e3:7.1f} / "
                  f"{statistics.median(r.max_cpu for r in runs) * 1e3:6.1f}   "
                  f"{statistics.median(r.count for r in runs):5.0f}   "
                  f"{statistics.median(r.total_cpu for r in runs):6.2f}   "
                  f"garbage left frozen: {statistics.median(LEAKED.get(name) or [0]):,.0f}   "
                  f"longest was gen {runs[-1].longest_generation}")
    if args.steps:
        med = {name: statistics.median(v) for name, v in times.items()}
        print("per step, us per event (differences of medians):")
        for label, a, b in STEPS:
            if a in med and (b is None or b in med):
                print(f"  {label:55s} {med[a] - (med[b] if b else 0.0):6.1f}")


if __name__ == "__main__":
    main()
