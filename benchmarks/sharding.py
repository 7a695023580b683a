"""Sharding: throughput, CPU per reconcile and memory with 1, 2 and 3 replicas of one ring, on a
real kube-apiserver (envtest).

Run: ``KUBEBUILDER_ASSETS=... python benchmarks/sharding.py [--objects 30000]
[--replicas 1,2,3] [--window 40] [--settle-timeout 3600]``. Not part of the test run.

Per replica count N: ``--objects`` ConfigMaps (created once, shared by every run), N kinrun
replicas of a ring of their own (``sharding: {ring: bench-N}``), a controller whose reconcile
burns 5 ms of thread CPU time, and a 2 s resync so that every replica always has a backlog
(saturated: throughput is what the replicas can do, not what events ask for). Once every
object is labelled and the replicas' caches add up to ``--objects``, the run measures over
``--window`` seconds: reconciles (``controller_runtime_reconcile_total`` deltas), CPU seconds
of every replica process (``/proc/PID/stat`` utime + stime; the sharder's work included), and
each replica's resident memory (``VmRSS``) and cache share at the end.

Per-replica memory is also given as the part that holds objects: before the runs, one replica
of a ring of its own over an empty namespace (same config, no object) gives the fixed base of
a process (interpreter, imports, client, metrics, the sharder's empty watches); each replica's
``cache_mb`` is its RSS less that base.

CPU-seconds per reconcile is the figure the issue bounds (3 replicas at most 1.2x one
replica's); throughput on a machine with two cores cannot grow past what two cores give.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from servers import Envtest  # noqa: E402

PLUGIN = '''
import time
from kinrun.hooks import hookimpl

@hookimpl
def kinrun_reconcile(key, obj):
    end = time.thread_time() + 0.005  # 5 ms of this thread's CPU time
    while time.thread_time() < end:
        pass
'''

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
cluster: {{qps: 3000, burst: 6000}}
plugins: [./bench_plugin.py]
informers:
  cms: {{apiVersion: v1, kind: ConfigMap, namespaces: [{ns}], resyncPeriod: 2s,
         transform: {{stripManagedFields: true}}}}
controllers:
  - {{name: bench, for: cms, workers: 2, reconcile: {{hooks: true}},
     rateLimiter: {{qps: 100000, burst: 100000}}}}
sharding: {{ring: {ring}, namespace: {ns}, leaseDuration: 10s, renewDeadline: 6s,
            retryPeriod: 2s, syncPeriod: 5m}}
metrics: {{port: 0, address: 127.0.0.1}}
"""

TICK = os.sysconf("SC_CLK_TCK")


class Replica:
    def __init__(self, name: str, config: Path, kubeconfig: str) -> None:
        self.name = name
        self.p = subprocess.Popen(
            [sys.executable, "-m", "kinrun.cli", str(config), "--kubeconfig", kubeconfig,
             "--shard-id", name], cwd=config.parent, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.lines: list[str] = []
        self.cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        with self.cond:
            self.cond.wait_for(lambda: any("metrics on" in x for x in self.lines), 120)
            line = next(x for x in self.lines if "metrics on" in x)
        self.port = int(re.search(r":(\d+)/metrics", line).group(1))  # type: ignore[union-attr]

    def _read(self) -> None:
        for line in self.p.stdout:  # type: ignore[union-attr]
            with self.cond:
                self.lines.append(line.rstrip())
                self.cond.notify_all()

    def metric(self, pattern: str) -> float:
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=10
                                      ).read().decode()
        return sum(float(m.group(1)) for m in re.finditer(pattern + r" ([0-9.e+]+)", text))

    def cached(self) -> int:
        return int(self.metric(r'kinrun_informer_objects\{informer="cms"\}'))

    def reconciles(self) -> float:
        return self.metric(r'controller_runtime_reconcile_total\{controller="bench",[^}]*\}')

    def cpu(self) -> float:
        fields = Path(f"/proc/{self.p.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.p.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(60)
            except subprocess.TimeoutExpired:
                self.p.kill()


def create_configmaps(env: Envtest, ns: str, n: int) -> None:
    env.srv.create_namespace(ns)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    url = f"{env.srv.url}/api/v1/namespaces/{ns}/configmaps"
    headers = {"Authorization": f"Bearer {env.srv.token}", "Content-Type": "application/json"}

    def create(i: int) -> None:
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": f"cm-{i:06d}", "labels": {"app": "bench"}},
                           "data": {"i": str(i), "pad": "x" * 200}}).encode()
        urllib.request.urlopen(urllib.request.Request(url, body, headers), context=ctx).read()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(create, range(n)))


def until(what: str, check, timeout: float) -> float:
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise RuntimeError(f"not within {timeout:.0f}s: {what}")
        time.sleep(1.0)
    return time.monotonic() - start


def base_rss(env: Envtest, work: Path) -> float:
    """RSS (MB) of one synced replica whose informer has no object: the fixed part of every
    replica, measured in this run."""
    ns = "sharding-bench-empty"
    env.srv.create_namespace(ns)
    config = work / "bench-base.yaml"
    config.write_text(CONFIG.format(ns=ns, ring="bench-base"))
    replica = Replica("base-0", config, env.kubeconfig)
    try:
        until("base replica synced", lambda: any("synced" in x for x in replica.lines), 120)
        time.sleep(10)  # a few renewals and sharder rounds: steady state
        return replica.rss_mb()
    finally:
        replica.stop()


def one(env: Envtest, ns: str, objects: int, n: int, window: float, work: Path,
        settle_timeout: float = 3600.0, base_mb: float = 0.0) -> dict:
    config = work / f"bench-{n}.yaml"
    config.write_text(CONFIG.format(ns=ns, ring=f"bench-{n}"))
    replicas = [Replica(f"b{n}-{i}", config, env.kubeconfig) for i in range(n)]
    try:
        settle = until("labelled and cached", lambda: sum(r.cached() for r in replicas)
                       == objects, settle_timeout)
        time.sleep(5)  # the first pass over the objects gets under way everywhere
        cpu0, rec0 = [r.cpu() for r in replicas], [r.reconciles() for r in replicas]
        t0 = time.monotonic()
        time.sleep(window)
        elapsed = time.monotonic() - t0
        cpu = sum(r.cpu() for r in replicas) - sum(cpu0)
        recs = sum(r.reconciles() for r in replicas) - sum(rec0)
        return {"replicas": n, "settle_s": round(settle, 1),
                "reconciles_per_s": round(recs / elapsed, 1),
                "cpu_s_per_reconcile_ms": round(1000 * cpu / max(recs, 1), 2),
                "cpu_cores_used": round(cpu / elapsed, 2),
                "rss_mb": [round(r.rss_mb()) for r in replicas],
                "cache_mb": [round(r.rss_mb() - base_mb, 1) for r in replicas],
                "share": [round(r.cached() / objects, 3) for r in replicas]}
    finally:
        for r in replicas:
            r.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--objects", type=int, default=30000)
    ap.add_argument("--replicas", default="1,2,3")
    ap.add_argument("--window", type=float, default=40.0)
    ap.add_argument("--settle-timeout", type=float, default=3600.0,
                    help="seconds to wait for every object labelled and cached")
    args = ap.parse_args()
    with Envtest.start_or_none() as env, tempfile.TemporaryDirectory() as tmp:
        if env is None:
            sys.exit(f"sharding: no real kube-apiserver: {Envtest.why_not}")
        work = Path(tmp)
        (work / "bench_plugin.py").write_text(PLUGIN)
        ns = "sharding-bench"
        base_mb = base_rss(env, work)
        print(json.dumps({"base_rss_mb": round(base_mb, 1)}), flush=True)
        t = time.monotonic()
        create_configmaps(env, ns, args.objects)
        print(f"{args.objects} ConfigMaps created in {time.monotonic() - t:.0f}s", flush=True)
        for n in (int(x) for x in args.replicas.split(",")):
            print(json.dumps(one(env, ns, args.objects, n, args.window, work,
                                 args.settle_timeout, base_mb)), flush=True)


if __name__ == "__main__":
    main()
