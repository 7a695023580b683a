"""Run kinrun and its peers side by side, in one run, on the same server and the same objects.

    .venv/bin/python benchmarks/run.py                  # everything, 3 repetitions, full scale
    .venv/bin/python benchmarks/run.py --quick          # 1/10 scale, 1 repetition
    .venv/bin/python benchmarks/run.py --workloads events,sync --contenders kinrun,kopf

Prints a table and writes ``benchmarks/results/<UTC time>.json`` and ``results/latest.json``
(plus ``latest.md``, the table in Markdown). What each workload does and how it is measured is
in BENCHMARKS.md; what a contender process does is in ``contenders/_common.py``.

Layout of one run: this process hosts the embedded API server (pinned to CPU 0); every
contender is its own process pinned to CPU 1, started once per (workload, repetition), with
the contenders' order rotated between repetitions. The objects are Deployment-managed Pods from
``podgen.make_pod`` (~9 KB of JSON with managedFields).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import podgen  # noqa: E402  (benchmarks/podgen.py)
import servers  # noqa: E402  (benchmarks/servers.py)

PY = sys.executable
PROFILE_DIR: Path | None = None  # --profile: run every contender under py-spy (slower)
SERVER_CPU, CONTENDER_CPU = 0, 1
WORKLOADS = ("events", "sync", "memory", "latency", "envtest", "envtest-events",
             "envtest-latency", "workqueue")
#: Accepted by --workloads, not in the default run.
OPTIONAL_WORKLOADS = ("scale",)


@dataclass(frozen=True)
class Scale:
    """How big each workload is. ``events`` = pods x updates_per_pod watch events (+1 marker)."""

    event_pods: int = 10_000
    updates_per_pod: int = 10
    slow_events: int = 20_000          # slow contenders: rate over the first N events
    sync_pods: int = 10_000
    latency_pods: int = 1_000
    latency_rate: float = 1_000.0      # writes/s
    latency_seconds: float = 10.0
    envtest_pods: int = 10_000
    #: envtest-events: Pods of the history written through kube-apiserver (x updates_per_pod
    #: events + 1). Smaller than ``event_pods``: every event is an HTTP write here (a few
    #: hundred per second on 2 cores), and the history must be written before the first run.
    envtest_event_pods: int = 2_000
    repeat: int = 3
    wq_items: int = 200_000
    scale_pods: tuple[int, ...] = (10_000, 100_000)  # scale: the sizes, each in its namespace
    scale_updates: int = 5_000         # scale: writes after the sync (the "after" window)
    scale_rate: float = 1_000.0        # ... at this rate (writes/s)
    scale_traced: bool = True          # scale: also one tracemalloc sync run per size

    @property
    def events(self) -> int:
        return self.event_pods * self.updates_per_pod + 1

    @property
    def envtest_events(self) -> int:
        return self.envtest_event_pods * self.updates_per_pod + 1


FULL = Scale()
QUICK = Scale(event_pods=1_000, updates_per_pod=10, sync_pods=1_000, latency_pods=200,
              latency_seconds=3.0, envtest_pods=1_000, envtest_event_pods=200, repeat=1,
              wq_items=20_000, scale_pods=(1_000, 10_000), scale_updates=1_000)


@dataclass(frozen=True)
class Contender:
    """One contender: a script under contenders/ (or a command), the workloads it takes."""

    name: str
    argv: tuple[str, ...]
    workloads: tuple[str, ...] = ("events", "sync", "memory", "latency", "envtest",
                                  "envtest-events", "envtest-latency")
    slow: bool = False  # handles every event, one by one: its event rate is taken over a prefix
    default: bool = True  # in the run when --contenders is not given
    native: bool = False  # a binary (client-go): built first by CLIENTGO_BUILD, never under py-spy
    events_limit: int = 0  # events: done after this many handler calls (a throttled variant)
    kinrun_config: str = ""  # started as ``kinrun CONFIG`` itself (see ``kinrun_argv``)


#: A contender's workloads unless it names its own (``scale`` is added only where named: the
#: contenders that hold 100,000 Pods in minutes, not hours).
ALL = ("events", "sync", "memory", "latency", "envtest", "envtest-events", "envtest-latency")


def script(name: str, *extra: str) -> tuple[str, ...]:
    return (PY, str(HERE / "contenders" / name), *extra)


#: The client-go contender (contenders/clientgo/main.go): build.sh builds it against the
#: client-go vendored in Debian's kubernetes source tree and prints the binary's path (outside
#: the repository). Missing Go or tree: the client-go contenders are skipped with the reason.
CLIENTGO_BUILD = HERE / "contenders" / "clientgo" / "build.sh"
CLIENTGO_BIN = Path(os.environ.get("KINRUN_BENCH_CACHE", "/var/cache/kinrun/bench")) / "clientgo-bench"


def clientgo(*extra: str) -> tuple[str, ...]:
    return (str(CLIENTGO_BIN), *extra)


def kinrun_argv(config: str, args: list[str], env: dict[str, str]) -> list[str]:
    """``kinrun CONFIG`` as a user runs it, for a contender's ``args`` (what
    ``contenders/kinrun_cli.py`` execs, without that wrapper's own interpreter start: start-up
    is measured from the spawn). The config's plugin reads ``args`` from KINRUN_BENCH_ARGS."""
    def value(flag: str) -> str:
        return args[args.index(flag) + 1]
    env["KINRUN_BENCH_ARGS"] = json.dumps(args)
    return [str(Path(PY).parent / "kinrun"), str(HERE / "configs" / config),
            "--kubeconfig", value("--kubeconfig"), "--namespace", value("--namespace"),
            "--log-level", "warning"]


CONTENDERS: dict[str, Contender] = {c.name: c for c in (
    Contender("kinrun", script("kinrun_lib.py", "--variant", "noop"), ALL + ("scale",)),
    Contender("kinrun-action", script("kinrun_lib.py", "--variant", "action"),
              ("events", "latency")),
    Contender("kinrun-metadata", script("kinrun_lib.py", "--variant", "metadata"),
              ("events", "sync", "memory", "envtest", "scale")),
    Contender("kinrun-prune", script("kinrun_lib.py", "--variant", "prune"),
              ("events", "sync", "memory")),
    Contender("kinrun-gc-fix", script("kinrun_lib.py", "--variant", "gc-fix"),
              ("events", "sync", "memory", "latency"), default=False),
    Contender("kinrun-cli", script("kinrun_cli.py"), ALL + ("scale",),
              kinrun_config="bench-pods.yaml"),
    Contender("kinrun-cli-action", script("kinrun_cli.py", "--variant", "action"),
              ("events", "latency"), kinrun_config="bench-pods-action.yaml"),
    # The main job on an example as shipped: `kinrun examples/configs/pod-logger.yaml` (a log
    # action per reconcile, written at the default level info), timed from outside the config.
    # No latency workloads: the example reads only metadata.name, so kinrun's objects (decoded
    # fields: kinrun.kept_paths) carry no bench/stamp annotation to take a latency from.
    Contender("kinrun-pod-logger", script("kinrun_pod_logger.py"),
              ("events", "sync", "memory", "envtest", "envtest-events")),
    Contender("client-watch", script("client_watch.py"), slow=True),
    Contender("client-informer", script("client_informer.py"), slow=True),
    Contender("kopf", script("kopf_operator.py"), slow=True),
    Contender("bare", script("bare.py"), ALL + ("scale",)),
    # client-go (Go, informer + rate-limited workqueue + one worker, as its examples/workqueue).
    # JSON everywhere; protobuf (as kube-controller-manager asks) only on kube-apiserver: the
    # embedded server speaks only JSON.
    Contender("client-go", clientgo("--variant", "json"), ALL + ("scale",), native=True),
    Contender("client-go-protobuf", clientgo("--variant", "protobuf"),
              ("envtest", "envtest-events", "envtest-latency"), native=True),
    # Not in the default run: what slows a client-go contender down (HISTORY.md, client-go).
    Contender("client-go-unpinned", clientgo("--variant", "json", "--no-pin"),
              ("events", "latency"), default=False, native=True),
    Contender("client-go-gomaxprocs2", clientgo("--variant", "json", "--gomaxprocs", "2"),
              ("events", "latency"), default=False, native=True),
    Contender("client-go-get", clientgo("--variant", "json", "--get"),
              ("events", "latency"), default=False, native=True),
    Contender("client-go-get-qps5", clientgo("--variant", "json", "--get", "--qps", "0",
                                             "--burst", "0"),
              ("events",), default=False, native=True, events_limit=200),
    Contender("client-go-qps5", clientgo("--variant", "json", "--qps", "0", "--burst", "0"),
              ("events", "sync", "latency"), default=False, native=True),
    Contender("client-go-dynamic", clientgo("--variant", "json", "--dynamic"),
              ("events", "sync", "memory", "latency"), default=False, native=True),
    Contender("client-go-add-rate-limited", clientgo("--variant", "json", "--add-rate-limited"),
              ("events",), default=False, native=True, events_limit=300),
)}


# -- running one contender -------------------------------------------------------------------

class HarnessPauses:
    """The harness's own collections while one contender runs (a ``gc.callbacks`` entry): the
    embedded server and the stamp writers live in this process, so a pause here delays what
    every contender sees. ``max_s`` / ``total_s``: the longest / all pauses, seconds.

    ``spawn`` runs each contender with the harness's collector off (after a collection and a
    freeze), because its full collections over the server's retained history paused the
    server for 50-170 ms, which was the latency workload's max and most of its p99 (HISTORY.md,
    round 6); this records that no collection ran all the same."""

    def __init__(self) -> None:
        self.max_s = self.total_s = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            return
        pause = time.perf_counter() - self._start
        self.max_s, self.total_s = max(self.max_s, pause), self.total_s + pause


def spawn(c: Contender, workload: str, kubeconfig: str, namespace: str, *, n: int = 0,
          since: str = "", marker: str = "bench-marker", tracemalloc: bool = False,
          on_synced: Callable[[], None] | None = None, timeout: float = 900.0,
          limit: int = 0) -> dict[str, Any]:
    """Start ``c`` for one workload, wait for its JSON line, return it (``ok`` False on failure).

    ``on_synced`` is called (on this thread) when the contender prints ``synced`` (latency).
    """
    argv = [*c.argv, "--workload", workload, "--kubeconfig", kubeconfig, "--namespace",
            namespace, "--n", str(n), "--since", since, "--marker", marker,
            "--cpu", str(CONTENDER_CPU), "--timeout", str(timeout), "--limit", str(limit)]
    if tracemalloc:
        argv.append("--tracemalloc")
    env = os.environ | {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    argv += ["--t-spawn", repr(time.time())]
    pin = None
    if c.kinrun_config:
        argv = kinrun_argv(c.kinrun_config, argv[2:], env)
        pin = lambda: os.sched_setaffinity(0, {CONTENDER_CPU})  # noqa: E731 - as _common.pin
    if PROFILE_DIR and not c.native:
        out = PROFILE_DIR / f"{c.name}-{workload}.collapsed"
        argv = [str(Path(PY).parent / "py-spy"), "record", "--format", "raw", "--rate", "250",
                "--threads", "--nonblocking", "-o", str(out), "--", *argv]
    gc.collect()
    gc.freeze()  # what the server holds now is never traversed again
    gc.disable()  # nor anything while the contender runs (HarnessPauses)
    pauses = HarnessPauses()
    gc.callbacks.append(pauses)
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                         cwd=ROOT, text=True, preexec_fn=pin)
    err: list[str] = []
    t = threading.Thread(target=lambda: err.extend(p.stderr), daemon=True)
    t.start()
    result: dict[str, Any] = {}
    try:
        for line in p.stdout:
            if line.strip() == "synced" and on_synced:
                on_synced()
            elif line.startswith("{"):
                result = json.loads(line)
        p.wait(timeout)
    finally:
        gc.callbacks.remove(pauses)
        gc.enable()
    t.join(5)
    if not result:
        result = {"workload": workload, "ok": False}
    result["harness_gc_max_pause"] = pauses.max_s
    result["harness_gc_total"] = pauses.total_s
    result["contender"] = c.name  # the harness's name for what it started
    if not result.get("ok"):
        result["stderr_tail"] = "".join(err)[-2000:]
    result["exit_code"] = p.returncode
    return result


# -- workloads ---------------------------------------------------------------------------------

def run_events(srv: servers.Server, scale: Scale, names: list[str],
               workload: str = "events") -> list[dict]:
    """Workload 1: every contender replays the same history of ``scale.events`` watch events
    (``envtest-events``: ``scale.envtest_events``, written through kube-apiserver, which must
    run with ``servers.REPLAY_FLAGS``)."""
    pods, events = ((scale.envtest_event_pods, scale.envtest_events)
                    if workload == "envtest-events" else (scale.event_pods, scale.events))
    since = srv.prepare_history("bench-events", pods, scale.updates_per_pod)
    out = []
    for rep in range(scale.repeat):
        for name in rotate(names, rep):
            c = CONTENDERS[name]
            if workload not in c.workloads:
                continue
            limit = min(scale.slow_events, events) if c.slow else c.events_limit
            before = server_cpu(srv)
            r = spawn(c, "events", srv.kubeconfig, "bench-events", since=since, limit=limit)
            after = server_cpu(srv)
            r.update(rep=rep, events=limit or events, server=srv.name, measure=workload)
            if before and after:  # kube-apiserver's and etcd's CPU while this contender ran
                r["server_cpu_s"] = {k: after[k] - before[k] for k in after if k in before}
                r["server_cpu_total_s"] = sum(r["server_cpu_s"].values())
            if r.get("ok"):
                r["events_per_s"] = r["events"] / (r["t_last"] - r["t_open"])
                r["events_per_cpu_s"] = r["events"] / r["cpu_s"]
            report(r)
            out.append(r)
    return out


def run_sync(srv: servers.Server, scale: Scale, names: list[str], namespace: str,
             n: int, workload: str = "sync", repeat: int | None = None,
             tracemalloc: bool = False) -> list[dict]:
    """Workload 2 (and 3): ``n`` Pods exist; from process start to every Pod handled once."""
    out = []
    for rep in range(scale.repeat if repeat is None else repeat):
        for name in rotate(names, rep):
            c = CONTENDERS[name]
            if workload not in c.workloads:
                continue
            before = server_cpu(srv)
            r = spawn(c, "sync", srv.kubeconfig, namespace, n=n, tracemalloc=tracemalloc)
            after = server_cpu(srv)
            r.update(rep=rep, n=n, server=srv.name, measure=workload)
            if before and after:  # kube-apiserver's and etcd's CPU while this contender ran
                r["server_cpu_s"] = {k: after[k] - before[k] for k in after if k in before}
            if r.get("ok"):
                if r.get("server_cpu_s"):
                    r["server_cpu_total_s"] = sum(r["server_cpu_s"].values())
                r["sync_s"] = r["t_synced"] - r["t_spawn"]
                r["sync_from_open_s"] = r["t_synced"] - r["t_open"]
                r["sync_cpu_s"] = r["cpu_s"]
                r["sync_cpu_total_s"] = r["cpu_total_s"]
                r["rss_per_obj"] = (r["rss_after"] - r["rss_before"]) / n
                if "traced_bytes" in r:
                    r["traced_per_obj"] = r["traced_bytes"] / n
                if "heap_alloc_bytes" in r:  # client-go: live Go heap after runtime.GC()
                    r["heap_per_obj"] = r["heap_alloc_bytes"] / n
                    r["heap_inuse_per_obj"] = r["heap_inuse_bytes"] / n
            report(r)
            out.append(r)
    return out


def server_cpu(srv: servers.Server) -> dict[str, float]:
    """CPU seconds (user + system, /proc/<pid>/stat) of kube-apiserver and etcd so far, by
    name; {} on the embedded server (it runs in this process: see ``harness_cpu_s``)."""
    inner = getattr(srv, "srv", None)
    out: dict[str, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for name in ("apiserver", "etcd"):
        proc = getattr(getattr(inner, f"_{name}", None), "proc", None)
        if proc is None:
            continue
        try:
            with open(f"/proc/{proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[name] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def run_scale(srv: servers.Embedded, scale: Scale, names: list[str]) -> list[dict]:
    """Workload ``scale`` (only when named): for each size in ``scale.scale_pods`` (each in its
    own namespace, created once), every contender syncs that many Pods in ``latency`` mode;
    once it has synced, the harness writes ``scale_updates`` updates at ``scale_rate``/s (the
    "after" window) and then the final marker. Reported per run: wall and CPU to the sync from
    process start and from the first request, RSS per Pod at the sync and at the end (after
    ``gc.collect()``), the longest GC pause while syncing and after (``gc_sync_*`` /
    ``gc_after_*``), the harness's (the embedded server's) CPU during the run. Then, when
    ``scale_traced``, one ``sync`` run per size and contender under tracemalloc (Python) or with
    the live Go heap (client-go): bytes per Pod still allocated."""
    out = []
    for n in scale.scale_pods:
        ns = f"bench-scale-{n}"
        t = time.perf_counter()
        srv.prepare_pods(ns, n)  # spawn collects and freezes the server's store first
        print(f"  scale: {n} Pods in {ns} ({time.perf_counter() - t:.1f}s), harness RSS "
              f"{rss_mb():,.0f} MB", flush=True)
    for rep in range(scale.repeat):
        for n in scale.scale_pods:
            ns = f"bench-scale-{n}"
            for name in rotate(names, rep):
                c = CONTENDERS[name]
                if "scale" not in c.workloads:
                    continue
                writes = scale.scale_updates
                writer = srv.stamp_writer(ns, min(n, writes), scale.scale_rate, writes)
                h0 = time.process_time()
                r = spawn(c, "latency", srv.kubeconfig, ns, n=n, on_synced=writer.start,
                          timeout=1800.0)
                writer.join()
                r.update(rep=rep, n=n, server=srv.name, measure="scale", writes=writes,
                         achieved_rate=writer.achieved_rate,
                         harness_cpu_s=time.process_time() - h0)
                if r.get("ok"):
                    _sync_figures(r, n)
                report(r)
                out.append(r)
    if scale.scale_traced:
        for n in scale.scale_pods:
            ns = f"bench-scale-{n}"
            srv.srv.store.delete("v1", "Pod", servers.MARKER, ns)
            for name in names:
                c = CONTENDERS[name]
                if "scale" not in c.workloads:
                    continue
                r = spawn(c, "sync", srv.kubeconfig, ns, n=n, tracemalloc=True, timeout=1800.0)
                r.update(rep=0, n=n, server=srv.name, measure="scale-traced")
                if r.get("ok"):
                    _sync_figures(r, n)
                report(r)
                out.append(r)
    return out


#: --partial FILE: every result line is also appended here as it comes (a long run that is
#: stopped early keeps what it measured).
PARTIAL: Path | None = None


def _partial(r: dict) -> None:
    if PARTIAL is not None:
        with PARTIAL.open("a") as f:
            f.write(json.dumps(r, default=str) + "\n")


def _sync_figures(r: dict, n: int) -> None:
    """Derived figures of one sync (``latency`` or ``sync`` mode) of ``n`` objects."""
    r["sync_s"] = r["t_synced"] - r["t_spawn"]
    r["sync_from_open_s"] = r["t_synced"] - r["t_open"]
    r["sync_cpu_s"] = r["cpu_synced_s"] if r.get("cpu_synced_s") is not None else r["cpu_s"]
    r["sync_cpu_total_s"] = r.get("cpu_synced_total_s") or r.get("cpu_total_s")
    r["rss_per_obj"] = (r["rss_after"] - r["rss_before"]) / n
    if r.get("rss_synced"):
        r["rss_synced_per_obj"] = (r["rss_synced"] - r["rss_before"]) / n
    if "traced_bytes" in r:
        r["traced_per_obj"] = r["traced_bytes"] / n


def rss_mb() -> float:
    """This process's RSS, MB."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def scale_markdown(runs: list[dict]) -> str:
    """The scale workload's table: medians per (contender, size) of the latency-mode runs, and
    the traced bytes per Pod of the tracemalloc runs."""
    def med(rows: list[dict], key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def f(v: float | None, fmt: str) -> str:
        return "" if v is None else format(v, fmt)

    lines = ["| contender | Pods | wall from start s | wall from first request s | CPU from "
             "start s | CPU from first request s | RSS/Pod at sync KB | RSS/Pod end KB | "
             "traced/Pod KB | GC max pause sync ms (CPU) | GC max pause after ms (CPU) | "
             "runs |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    keys = sorted({(r["contender"], r["n"]) for r in runs if r.get("n")},
                  key=lambda k: (k[1], k[0]))
    for name, n in keys:
        rows = [r for r in runs if r.get("ok") and r["contender"] == name and r["n"] == n
                and r.get("measure") == "scale"]
        traced = [r for r in runs if r.get("ok") and r["contender"] == name and r["n"] == n
                  and r.get("measure") == "scale-traced"]
        kb = [None if v is None else v / 1e3 for v in
              (med(rows, "rss_synced_per_obj"), med(rows, "rss_per_obj"),
               med(traced, "traced_per_obj") or med(traced, "heap_per_obj"))]
        ms = [None if v is None else v * 1e3 for v in
              (med(rows, "gc_sync_max_pause"), med(rows, "gc_sync_max_pause_cpu"),
               med(rows, "gc_after_max_pause"), med(rows, "gc_after_max_pause_cpu"))]
        lines.append(
            f"| {name} | {n:,} | {f(med(rows, 'sync_s'), '.2f')} | "
            f"{f(med(rows, 'sync_from_open_s'), '.2f')} | {f(med(rows, 'sync_cpu_total_s'), '.2f')}"
            f" | {f(med(rows, 'sync_cpu_s'), '.2f')} | {f(kb[0], '.1f')} | {f(kb[1], '.1f')} | "
            f"{f(kb[2], '.1f')} | {f(ms[0], '.1f')} ({f(ms[1], '.1f')}) | "
            f"{f(ms[2], '.1f')} ({f(ms[3], '.1f')}) | {len(rows)} |")
    return "\n".join(lines) + "\n"


def run_latency(srv: servers.Server, scale: Scale, names: list[str],
                workload: str = "latency") -> list[dict]:
    """Workload 4: write at ``latency_rate``/s, stamp in an annotation, latency at the handler.
    ``envtest-latency``: the same on kube-apiserver through its HTTP API (merge-PATCHes from 16
    threads: the rate is what the server takes), with the contender's CPU per event after its
    sync (``events_per_cpu_s``): the watch path's cost on the real server's encoding."""
    ns = "bench-latency"
    srv.prepare_pods(ns, scale.latency_pods)
    writes = int(scale.latency_rate * scale.latency_seconds)
    out = []
    for rep in range(scale.repeat):
        for name in rotate(names, rep):
            c = CONTENDERS[name]
            if workload not in c.workloads:
                continue
            writer = srv.stamp_writer(ns, scale.latency_pods, scale.latency_rate, writes)
            r = spawn(c, "latency", srv.kubeconfig, ns, n=scale.latency_pods,
                      on_synced=writer.start)
            writer.join()
            r.update(rep=rep, writes=writes, rate=scale.latency_rate,
                     achieved_rate=writer.achieved_rate, server=srv.name, measure=workload)
            if r.get("ok") and r.get("cpu_synced_s") is not None and r.get("cpu_s"):
                events = r["calls"] - r["calls_synced"]
                r["events_after_sync"] = events
                r["events_per_cpu_s"] = events / max(1e-9, r["cpu_s"] - r["cpu_synced_s"])
            report(r)
            out.append(r)
    return out


def run_workqueue(scale: Scale) -> list[dict]:
    """Workload 5: add/get/done cycles per second (kinrun's queue vs queue.Queue)."""
    out = []
    for rep in range(scale.repeat):
        argv = [PY, str(HERE / "contenders" / "workqueue.py"), "--items", str(scale.wq_items),
                "--cpu", str(CONTENDER_CPU)]
        p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=900)
        for line in p.stdout.splitlines():
            if line.startswith("{"):
                r = json.loads(line) | {"rep": rep}
                report(r)
                out.append(r)
        if p.returncode:
            out.append({"contender": "workqueue", "ok": False, "stderr_tail": p.stderr[-2000:]})
    return out


def build_clientgo() -> tuple[bool, str]:
    """Build the client-go contender (``CLIENTGO_BUILD``): (True, binary) or (False, why not)."""
    try:
        p = subprocess.run(["bash", str(CLIENTGO_BUILD)], capture_output=True, text=True,
                           timeout=1800)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{CLIENTGO_BUILD.name}: {exc}"
    lines = p.stdout.strip().splitlines()
    if p.returncode or not lines:
        return False, (p.stderr.strip().splitlines() or ["build failed"])[-1][:400]
    return True, lines[-1]


def rotate(names: list[str], rep: int) -> list[str]:
    """The contenders' order for repetition ``rep`` (each goes first once in a while)."""
    k = rep % max(1, len(names))
    return names[k:] + names[:k]


def report(r: dict) -> None:
    keys = ("events_per_s", "events_per_cpu_s", "sync_s", "sync_cpu_s", "queue", "workers",
            "cycles_per_s", "rss_per_obj", "traced_per_obj", "gc_max_pause", "calls")
    shown = {k: round(r[k], 4) if isinstance(r[k], float) else r[k] for k in keys if k in r}
    lat = r.get("latency")
    if lat:
        shown["p50_ms"], shown["p99_ms"] = round(lat["p50"] * 1e3, 2), round(lat["p99"] * 1e3, 2)
    status = "ok" if r.get("ok", True) else f"FAILED {r.get('stderr_tail', '')[-600:]}"
    print(f"  {r.get('workload', '?'):8} {r.get('contender', '?'):16} {shown} {status}",
          flush=True)
    _partial(r)


# -- machine ---------------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    """nproc, CPU model, Python and library versions, load average."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    libs = {}
    for lib in ("kinrun", "kubernetes", "kopf", "orjson", "aiohttp", "urllib3"):
        try:
            libs[lib] = version(lib)
        except PackageNotFoundError:
            libs[lib] = None
    git = {}
    for key, cmd in (("commit", ["git", "rev-parse", "--short", "HEAD"]),
                     ("uncommitted", ["git", "status", "--porcelain", "runner", "plugins"])):
        try:
            git[key] = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                                      timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            git[key] = None
    try:  # the client-go contender's toolchain (its tree's version is in each result line)
        go = subprocess.run(["go", "version"], capture_output=True, text=True,
                            timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        go = None
    return {"nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(),
            "platform": platform.platform(), "libs": libs, "go": go,
            "loadavg": os.getloadavg(), "git": git}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="1/10 scale, one repetition")
    p.add_argument("--repeat", type=int, help="repetitions (default 3; --quick: 1)")
    p.add_argument("--workloads", default=",".join(WORKLOADS))
    p.add_argument("--contenders", default=",".join(n for n, c in CONTENDERS.items() if c.default),
                   help=f"comma-separated, of: {', '.join(CONTENDERS)}")
    p.add_argument("--out", default=str(HERE / "results"))
    p.add_argument("--sync-pods", type=int, metavar="N",
                   help="Pods of the sync and memory workloads (default 10,000; --quick 1,000)")
    p.add_argument("--envtest-event-pods", type=int, metavar="N",
                   help="Pods of the envtest-events history (N x 10 + 1 events; default "
                   "2,000; --quick 200)")
    p.add_argument("--scale-pods", metavar="N,M",
                   help="the sizes of the scale workload (default 10000,100000)")
    p.add_argument("--scale-updates", type=int, metavar="N",
                   help="scale: writes after the sync (default 5,000)")
    p.add_argument("--no-scale-traced", action="store_true",
                   help="scale: skip the tracemalloc runs")
    p.add_argument("--partial", metavar="FILE",
                   help="append every result line to FILE as it comes (JSON lines)")
    p.add_argument("--tag", help="write results/<UTC time>-TAG.json and .md only "
                   "(latest.json and latest.md are left as they are)")
    p.add_argument("--profile", metavar="DIR",
                   help="run contenders under py-spy; collapsed stacks to DIR (see profile_top.py)")
    args = p.parse_args(argv)
    if args.partial:
        global PARTIAL
        PARTIAL = Path(args.partial)
    if args.profile:
        global PROFILE_DIR
        PROFILE_DIR = Path(args.profile)
        PROFILE_DIR.mkdir(parents=True, exist_ok=True)
    scale = QUICK if args.quick else FULL
    if args.repeat:
        scale = Scale(**(asdict(scale) | {"repeat": args.repeat}))
    if args.sync_pods:
        scale = Scale(**(asdict(scale) | {"sync_pods": args.sync_pods}))
    if args.envtest_event_pods:
        scale = Scale(**(asdict(scale) | {"envtest_event_pods": args.envtest_event_pods}))
    if args.scale_pods:
        scale = Scale(**(asdict(scale) | {"scale_pods": tuple(
            int(v) for v in args.scale_pods.split(",") if v)}))
    if args.scale_updates is not None:
        scale = Scale(**(asdict(scale) | {"scale_updates": args.scale_updates}))
    if args.no_scale_traced:
        scale = Scale(**(asdict(scale) | {"scale_traced": False}))
    workloads = [w for w in args.workloads.split(",") if w]
    names = [n for n in args.contenders.split(",") if n]
    unknown = [n for n in names if n not in CONTENDERS] + [
        w for w in workloads if w not in WORKLOADS + OPTIONAL_WORKLOADS]
    if unknown:
        p.error(f"unknown: {unknown}")
    skipped: dict[str, str] = {}
    native = [n for n in names if CONTENDERS[n].native]
    if native:
        built, why = build_clientgo()
        if not built:
            for n in native:
                skipped[n] = why
                print(f"{n}: skipped ({why})", flush=True)
            names = [n for n in names if n not in native]
    os.sched_setaffinity(0, {SERVER_CPU})
    started = time.time()
    res: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "machine": machine(), "scale": asdict(scale), "quick": args.quick,
                           "workloads": workloads, "contenders": names, "skipped": skipped,
                           "runs": {}}
    print(f"machine: {res['machine']}", flush=True)
    embedded = [w for w in workloads if w in ("events", "sync", "memory", "latency", "scale")]
    if embedded:
        history = scale.events + scale.sync_pods + 1000
        if "scale" in workloads:
            # the contenders LIST the latest state and watch from it: only the writes
            # after the sync are replayed
            history = max(history, scale.scale_updates * 4 + 1000)
        with servers.Embedded(history=history) as srv:
            if "events" in workloads:
                print(f"events: {scale.events} watch events", flush=True)
                res["runs"]["events"] = run_events(srv, scale, names)
                srv.drop_history()
            if "sync" in workloads or "memory" in workloads:
                srv.prepare_pods("bench-sync", scale.sync_pods)
            if "sync" in workloads:
                print(f"sync: {scale.sync_pods} Pods (embedded)", flush=True)
                res["runs"]["sync"] = run_sync(srv, scale, names, "bench-sync", scale.sync_pods)
            if "memory" in workloads:
                print(f"memory: tracemalloc after sync of {scale.sync_pods} Pods", flush=True)
                res["runs"]["memory"] = run_sync(srv, scale, names, "bench-sync",
                                                 scale.sync_pods, "memory", 1, True)
            if "latency" in workloads:
                print(f"latency: {scale.latency_rate:.0f} writes/s for "
                      f"{scale.latency_seconds}s", flush=True)
                res["runs"]["latency"] = run_latency(srv, scale, names)
            if "scale" in workloads:
                print(f"scale: sync of {', '.join(map(str, scale.scale_pods))} Pods, then "
                      f"{scale.scale_updates} writes at {scale.scale_rate:.0f}/s", flush=True)
                res["runs"]["scale"] = run_scale(srv, scale, names)
    if "envtest-events" in workloads:
        # its own kube-apiserver: the Pods' watch cache off (a watch from an old
        # resourceVersion is then served from etcd), which would change the other workloads
        with servers.Envtest.start_or_none(servers.REPLAY_FLAGS) as srv:
            if srv is None:
                res["runs"]["envtest-events"] = [{"ok": False,
                                                  "skipped": servers.Envtest.why_not}]
                print(f"envtest-events: skipped ({servers.Envtest.why_not})", flush=True)
            else:
                print(f"envtest-events: {scale.envtest_events} watch events replayed by "
                      f"kube-apiserver ({' '.join(servers.REPLAY_FLAGS)})", flush=True)
                res["runs"]["envtest-events"] = run_events(srv, scale, names, "envtest-events")
    on_envtest = [w for w in workloads if w in ("envtest", "envtest-latency")]
    if on_envtest:
        with servers.Envtest.start_or_none() as srv:
            if srv is None:
                for w in on_envtest:
                    res["runs"][w] = [{"ok": False, "skipped": servers.Envtest.why_not}]
                print(f"envtest: skipped ({servers.Envtest.why_not})", flush=True)
            if srv is not None and "envtest" in workloads:
                print(f"envtest: {scale.envtest_pods} Pods on kube-apiserver", flush=True)
                srv.prepare_pods("bench-sync", scale.envtest_pods)
                res["runs"]["envtest"] = run_sync(srv, scale, names, "bench-sync",
                                                  scale.envtest_pods, "envtest")
            if srv is not None and "envtest-latency" in workloads:
                print(f"envtest-latency: {scale.latency_rate:.0f} PATCHes/s asked for "
                      f"{scale.latency_seconds}s on kube-apiserver", flush=True)
                res["runs"]["envtest-latency"] = run_latency(srv, scale, names,
                                                             "envtest-latency")
    if "workqueue" in workloads:
        print("workqueue", flush=True)
        res["runs"]["workqueue"] = run_workqueue(scale)
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["duration_s"] = time.time() - started
    import summary

    res["summary"] = summary.summarize(res)
    table = summary.markdown(res)
    if res["runs"].get("scale"):
        table += "\n### scale (embedded server)\n\n" + scale_markdown(res["runs"]["scale"])
    print(table)
    write(res, table, Path(args.out), args.tag)
    return 0


def write(res: dict, table: str, out: Path, tag: str | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    if tag:
        (out / f"{stamp}-{tag}.json").write_text(json.dumps(res, indent=1, default=str))
        (out / f"{stamp}-{tag}.md").write_text(table)
        print(f"wrote {out / f'{stamp}-{tag}.json'}")
        return
    for path in (out / f"{stamp}{'-quick' if res['quick'] else ''}.json", out / "latest.json"):
        path.write_text(json.dumps(res, indent=1, default=str))
    (out / "latest.md").write_text(table)
    print(f"wrote {out / 'latest.json'}")


if __name__ == "__main__":
    gc.freeze()
    sys.exit(main())
