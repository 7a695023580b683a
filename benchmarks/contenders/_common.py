"""What every contender shares: arguments, CPU pinning, the recorder, GC and memory probes.

A contender is one process that runs one workload against one API server and prints exactly
one JSON line on stdout (its result), then exits. The harness (``benchmarks/run.py``) starts it,
reads that line, and never measures inside the contender's process.

Workloads (the harness prepares the server; the contender only reads):

- ``events``: a watch from ``--since`` (an old resourceVersion) replays the server's history;
  the informer-style contenders skip their initial LIST (it would return "now", and nothing
  would be replayed), so only the watch path is measured. Done when the object named
  ``--marker`` carries the annotation ``bench/final`` (the last event of the history).
- ``sync``: ``--n`` Pods exist; list (and watch) as the contender does by default; done when
  ``--n`` distinct objects were handled once.
- ``latency``: like ``sync`` for the existing objects (then prints the line ``synced`` so that
  the harness starts writing), then every handled object's annotation
  ``bench/stamp`` (a ``time.time()`` written by the harness just before its API write) gives
  one write -> handler latency sample (seconds); done at the marker (as in ``events``).

``cpu_s`` is the contender's CPU time (every thread, user + system) from its first request to
the end condition: rates per CPU-second do not depend on how busy the machine is. Beside it,
``cpu_user_s``, ``cpu_sys_s`` (its kernel part) and ``minflt`` (minor page faults: fresh pages
the kernel mapped and zeroed) over the same span, from ``getrusage``; ``rss_peak``: the
process's highest RSS up to the end condition (bytes, ``ru_maxrss``).

Timestamps are ``time.time()`` seconds (wall clock, comparable across processes on one
machine); durations use the same clock so the harness can combine them with its own stamps.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

#: Taken at import of this module: the first thing a contender imports, before any library.
T_IMPORTED = time.time()

STAMP_ANNOTATION = "bench/stamp"
FINAL_ANNOTATION = "bench/final"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line every contender accepts (see the module docstring for workloads)."""
    p = argparse.ArgumentParser()
    p.add_argument("--workload", choices=["events", "sync", "latency"], required=True)
    p.add_argument("--kubeconfig", required=True)
    p.add_argument("--namespace", default="default")
    p.add_argument("--n", type=int, default=0, help="objects to handle once (sync)")
    p.add_argument("--since", default="", help="resourceVersion to replay from (events)")
    p.add_argument("--marker", default="bench-marker", help="name of the last object written")
    p.add_argument("--cpu", type=int, default=-1, help="pin to this CPU (-1: no pinning)")
    p.add_argument("--t-spawn", type=float, default=0.0, help="harness time.time() at spawn")
    p.add_argument("--tracemalloc", action="store_true", help="trace allocations (sync)")
    p.add_argument("--timeout", type=float, default=600.0, help="give up after seconds")
    p.add_argument("--variant", default="", help="contender-specific variant")
    p.add_argument("--limit", type=int, default=0,
                   help="events: done after this many handler calls (0: at the marker)")
    return p.parse_args(argv)


def pin(cpu: int) -> None:
    """Pin this process (all its threads, present and future) to one CPU; -1 leaves it."""
    if cpu >= 0:
        os.sched_setaffinity(0, {cpu})


def rss_bytes() -> int:
    """Resident set size of this process, bytes (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class GcMonitor:
    """Times every cyclic-GC collection through ``gc.callbacks``.

    Fields after ``stop()``: ``max_pause`` (seconds, wall), ``max_pause_cpu`` (seconds of the
    collecting thread's CPU time: the collection itself, without the time another process
    held the core, which on a shared machine is most of a long wall pause), ``total``
    (seconds), ``count`` per generation. The callback runs on whatever thread triggered the collection, with the GIL
    held, so no lock is needed.
    """

    def __init__(self) -> None:
        self.max_pause = 0.0
        self.max_pause_cpu = 0.0  # the same collections in the collecting thread's CPU time
        self._started_cpu = 0.0
        self.total = 0.0
        self.count = [0, 0, 0]
        self.long: list[tuple[float, int, float]] = []  # (time.time(), generation, seconds) > 10 ms
        self._started = 0.0
        # mark(): (phase, (max_pause, max_pause_cpu, total, count) at its end); the longest
        # pauses of the phases marked so far (max_pause/max_pause_cpu restart at each mark)
        self._marks: list[tuple[str, tuple[float, float, float, list[int]]]] = []
        self._whole = (0.0, 0.0)

    def _cb(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            self._started_cpu = time.thread_time()
            return
        d = time.perf_counter() - self._started
        self.max_pause_cpu = max(self.max_pause_cpu, time.thread_time() - self._started_cpu)
        self.total += d
        self.max_pause = max(self.max_pause, d)
        gen = info.get("generation", 0)
        self.count[gen] += 1
        if d > 0.010 and len(self.long) < 50:
            self.long.append((round(time.time(), 3), gen, round(d, 4)))

    def start(self) -> "GcMonitor":
        gc.callbacks.append(self._cb)
        return self

    def mark(self, phase: str) -> None:
        """End the phase ``phase`` ("start": process start to the first request, called by
        ``Recorder.opened``; "sync": first request to the sync, called when ``--n`` objects
        were handled). ``stop()`` then reports each phase's collections apart
        (``gc_<phase>_max_pause``, ``_max_pause_cpu``, ``_total``, ``_count``), the rest
        (since the last mark) as "after" once "sync" was marked, else as "sync"; the longest
        pause (``gc_max_pause``) stays the whole run's. Called with the GIL held."""
        if any(name == phase for name, _ in self._marks):
            return
        self._marks.append((phase, (self.max_pause, self.max_pause_cpu, self.total,
                                    list(self.count))))
        self._whole = (max(self._whole[0], self.max_pause), max(self._whole[1], self.max_pause_cpu))
        self.max_pause = self.max_pause_cpu = 0.0

    def stop(self) -> dict[str, Any]:
        if self._cb in gc.callbacks:
            gc.callbacks.remove(self._cb)
        out = {"gc_max_pause": max(self._whole[0], self.max_pause),
               "gc_max_pause_cpu": max(self._whole[1], self.max_pause_cpu),
               "gc_total": self.total, "gc_count": self.count,
               "gc_long": self.long}
        if self._marks:
            rest = "after" if any(name == "sync" for name, _ in self._marks) else "sync"
            total0, count0 = 0.0, [0, 0, 0]
            segments = [(name, snap) for name, snap in self._marks] + [
                (rest, (self.max_pause, self.max_pause_cpu, self.total, list(self.count)))]
            for name, (mx, mx_cpu, total, count) in segments:
                out[f"gc_{name}_max_pause"] = mx
                out[f"gc_{name}_max_pause_cpu"] = mx_cpu
                out[f"gc_{name}_total"] = total - total0
                out[f"gc_{name}_count"] = [a - b for a, b in zip(count, count0)]
                total0, count0 = total, count
        return out


class Recorder:
    """Counts handler calls and decides when the workload is done.

    ``handled(name, namespace, annotations)`` is called by the contender's handler for every
    object it handles (any thread; a lock guards the counters). ``done`` is set when the
    workload's end condition holds; ``t_first``/``t_last`` are the first and the last handler
    call (time.time()). Latency samples are seconds.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.done = threading.Event()
        self.calls = 0
        self.keys: set[str] = set()
        self.t_open = 0.0
        self.rss_open = 0
        self.cpu_open = 0.0     # process CPU seconds (all threads) at opened()
        self.cpu_done = 0.0     # ... when the end condition held
        self.rusage_open: Any = None  # resource.getrusage at opened(), then at the end
        self.rusage_done: Any = None
        self.t_first = 0.0
        self.t_last = 0.0
        self.t_synced = 0.0
        self.cpu_synced = 0.0   # process CPU seconds when ``--n`` objects were handled (latency)
        self.calls_synced = 0
        self.latencies: list[float] = []
        self.on_synced: Any = None  # called (once, under the lock) when ``--n`` were handled
        self.on_opened: Any = None  # called (once) at ``opened()``
        self.cpu_synced_total = 0.0  # process CPU seconds since process start at that moment
        self.rss_synced = 0          # RSS at that moment (before any collection; bytes)
        self._lock = threading.Lock()

    def opened(self) -> None:
        """The contender is about to send its first LIST or WATCH request (its libraries are
        imported): the memory baseline is taken here and tracemalloc starts here."""
        if not self.t_open:
            self.rss_open = rss_bytes()
            if self.args.tracemalloc:
                import tracemalloc
                tracemalloc.start()
            self.t_open = time.time()
            self.cpu_open = time.process_time()
            self.rusage_open = resource.getrusage(resource.RUSAGE_SELF)
            if self.on_opened is not None:
                self.on_opened()

    def handled(self, name: str, namespace: str, annotations: dict[str, str] | None) -> None:
        now = time.time()
        with self._lock:
            self.calls += 1
            if not self.t_first:
                self.t_first = now
            self.t_last = now
            self._workload_locked(now, name, namespace, annotations or {})

    def _workload_locked(self, now: float, name: str, namespace: str,
                         annotations: dict[str, str]) -> None:
        w = self.args.workload
        if w == "sync" or (w == "latency" and not self.t_synced):
            self.keys.add(f"{namespace}/{name}")
            if len(self.keys) >= self.args.n and not self.t_synced:
                self.t_synced = now
                self.cpu_synced, self.calls_synced = time.process_time(), self.calls
                self.cpu_synced_total = self.cpu_synced
                self.rss_synced = rss_bytes()
                if self.on_synced is not None:
                    self.on_synced()
                if w == "sync":
                    self._finish_locked()
                else:
                    sys.stdout.write("synced\n")
                    sys.stdout.flush()
            return
        stamp = annotations.get(STAMP_ANNOTATION)
        if w == "latency" and stamp:
            self.latencies.append(now - float(stamp))
        if name == self.args.marker and FINAL_ANNOTATION in annotations:
            self._finish_locked()
        elif self.args.limit and self.calls >= self.args.limit:
            self._finish_locked()

    def _finish_locked(self) -> None:
        if not self.done.is_set():
            self.cpu_done = time.process_time()
            self.rusage_done = resource.getrusage(resource.RUSAGE_SELF)
            self.done.set()

    def result(self) -> dict[str, Any]:
        with self._lock:
            r = {"calls": self.calls, "distinct": len(self.keys), "t_open": self.t_open,
                 "t_first": self.t_first, "t_last": self.t_last, "t_synced": self.t_synced,
                 "cpu_s": self.cpu_done - self.cpu_open if self.cpu_done else None,
                 "cpu_total_s": self.cpu_done or None,
                 "cpu_synced_s": self.cpu_synced - self.cpu_open if self.cpu_synced else None,
                 "cpu_synced_total_s": self.cpu_synced_total or None,
                 "rss_synced": self.rss_synced or None,
                 "calls_synced": self.calls_synced}
            if self.latencies:
                r["latency"] = summarize(self.latencies)
            if self.rusage_open is not None and self.rusage_done is not None:
                a, b = self.rusage_open, self.rusage_done
                r["cpu_user_s"] = b.ru_utime - a.ru_utime  # of cpu_s: in the process
                r["cpu_sys_s"] = b.ru_stime - a.ru_stime   # in the kernel (page faults mostly)
                r["minflt"] = b.ru_minflt - a.ru_minflt    # pages mapped and zeroed
                r["rss_peak"] = b.ru_maxrss * 1024         # bytes: the highest RSS so far
            return r


def summarize(samples: list[float]) -> dict[str, float]:
    """p50/p90/p99/max and count of latency samples (seconds)."""
    s = sorted(samples)

    def q(p: float) -> float:
        return s[min(len(s) - 1, int(p * len(s)))]

    return {"n": len(s), "p50": q(0.50), "p90": q(0.90), "p99": q(0.99), "max": s[-1]}


def _per_thread(name: str, parse: Callable[[str], Any]) -> dict[str, Any]:
    """``parse(text)`` of ``/proc/self/task/<tid>/<name>`` for every live thread, by thread
    name (Linux; empty elsewhere, and a thread that ended meanwhile is left out)."""
    out: dict[str, Any] = {}
    for thread in threading.enumerate():
        try:
            with open(f"/proc/self/task/{thread.native_id}/{name}") as f:
                text = f.read()
        except OSError:
            continue
        out[thread.name] = parse(text)
    return out


def thread_cpu_seconds() -> dict[str, float]:
    """CPU seconds (user + system, since each thread started) of every live thread, by
    thread name, from its ``stat``: where a contender's time goes between its threads."""
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu(text: str) -> float:
        fields = text.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks
    return _per_thread("stat", cpu)


def thread_switches() -> dict[str, list[int]]:
    """[voluntary, involuntary] context switches of every live thread since it started, by
    thread name, from its ``status``: a thread that sleeps and is woken per event (a
    hand-off) shows as many voluntary switches as events."""
    def switches(text: str) -> list[int]:
        fields = dict(line.split(":", 1) for line in text.splitlines() if "ctxt_switches" in line)
        return [int(fields.get("voluntary_ctxt_switches", 0)),
                int(fields.get("nonvoluntary_ctxt_switches", 0))]
    return _per_thread("status", switches)


def emit(name: str, args: argparse.Namespace, rec: Recorder, extra: dict[str, Any]) -> None:
    """Print the one result line and end the process at once (no thread joins, no atexit)."""
    out = {"contender": name, "workload": args.workload, "variant": args.variant,
           "t_spawn": args.t_spawn, "t_imported": T_IMPORTED, "ok": rec.done.is_set(),
           "pid": os.getpid(), "cpu": args.cpu}
    out.update(rec.result())
    out.update(extra)
    out["thread_cpu_s"] = thread_cpu_seconds()
    out["thread_switches"] = thread_switches()
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0 if out["ok"] else 3)


def wait_and_emit(name: str, args: argparse.Namespace, rec: Recorder, gcmon: GcMonitor,
                  rss_before: int, extra: dict[str, Any] | None = None) -> None:
    """Wait for the workload's end (or ``--timeout``), take the memory probes, then emit."""
    rec.done.wait(args.timeout)
    res = dict(extra or {})
    res.update(gcmon.stop())
    res["t_done"] = time.time()
    gc.collect()
    res["rss_start"] = rss_before
    res["rss_before"] = rec.rss_open or rss_before
    res["rss_after"] = rss_bytes()
    if args.tracemalloc:
        import tracemalloc
        if tracemalloc.is_tracing():
            res["traced_bytes"] = tracemalloc.get_traced_memory()[0]
    emit(name, args, rec, res)


def replay_first_list(rec: Recorder, args: argparse.Namespace) -> None:
    """For kinrun's main-job contenders (in their own process): every LIST and WATCH of
    ``kinrun.kube.listwatch.KubeListerWatcher`` is recorded as opened (``rec.opened``), and
    for the ``events`` workload the first LIST answers nothing at ``args.since``, so the
    informer's watch replays the server's history; everything else is kinrun's own code."""
    from kinrun.cache import ObjectList
    from kinrun.kube import listwatch

    original_list = listwatch.KubeListerWatcher.list
    original_watch = listwatch.KubeListerWatcher.watch
    replayed = threading.Event()

    def bench_list(self: Any, *, resource_version: str = "") -> Any:
        rec.opened()
        if args.workload == "events" and not replayed.is_set():
            replayed.set()
            return ObjectList(items=[], resource_version=args.since, kind="PodList")
        return original_list(self, resource_version=resource_version)

    def bench_watch(self: Any, **kwargs: Any) -> Any:
        rec.opened()
        return original_watch(self, **kwargs)

    listwatch.KubeListerWatcher.list = bench_list  # type: ignore[method-assign]
    listwatch.KubeListerWatcher.watch = bench_watch  # type: ignore[method-assign]


def start(args: argparse.Namespace) -> tuple[Recorder, GcMonitor, int]:
    """Pin, start the GC probe; returns (recorder, GC monitor, RSS at start, bytes)."""
    pin(args.cpu)
    rec, gcmon = Recorder(args), GcMonitor().start()
    rec.on_opened = lambda: gcmon.mark("start")  # GC pauses per phase: start, sync, after
    if args.workload == "latency":
        rec.on_synced = lambda: gcmon.mark("sync")
    return rec, gcmon, rss_bytes()
