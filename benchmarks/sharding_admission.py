"""Sharding at admission against labelling through the sharder's watch: how long until N new
objects carry their shard label, how many PATCHes the replica sends for it, and its memory.

Run: ``python benchmarks/sharding_admission.py [--objects 30000] [--runs 3]``. Not part of
the test run. Each run starts ``kinrun CONFIG --embedded --shard-id r1`` (one replica: it is
also the sharder) with ``sharding.admission`` off (``watch``) or on (``admission``),
alternating, creates ``--objects`` labelled ConfigMaps from 4 client threads as fast as the
embedded server takes them, and measures from the first create until a LIST with the shard
label's selector counts them all (polled every 0.1 s), the replica's
``rest_client_requests_total{method="PATCH"}`` and its VmRSS at that moment. The embedded
server runs in the replica's process, so its RSS holds the server's store too (the same in
both modes). Ratios only: the host is shared.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  items: {{apiVersion: v1, kind: ConfigMap, labelSelector: bench=true}}
controllers:
  - name: c
    for: items
    reconcile: {{actions: [{{log: {{message: "{{{{ key }}}}", level: debug}}}}]}}
metrics: {{port: {metrics}, address: 127.0.0.1}}
sharding: {{ring: bench, admission: {admission}, syncPeriod: 10m}}
"""
SERVER = "admission: {port: 0, address: 127.0.0.1}\n"
LABEL = "shard.kinrun.dev/bench"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def kube_request(host: str, method: str, path: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(host + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def run_once(mode: str, objects: int, tmp: Path) -> dict[str, float]:
    metrics = free_port()
    config = tmp / f"{mode}.yaml"
    config.write_text(CONFIG.format(metrics=metrics, admission=str(mode == "admission").lower())
                      + (SERVER if mode == "admission" else ""))
    log = (tmp / f"{mode}.log").open("w+")
    proc = subprocess.Popen([sys.executable, "-m", "kinrun.cli", str(config), "--embedded",
                             "--shard-id", "r1", "--log-level", "info"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        host = wait_host(log, proc)
        start = time.perf_counter()
        threads = [threading.Thread(target=create, args=(host, i, objects, 4)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        while labelled(host) < objects:
            time.sleep(0.1)
        seconds = time.perf_counter() - start
        return {"seconds": seconds, "patches": patches(metrics), "rss_mb": rss_mb(proc.pid)}
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def wait_host(log, proc: subprocess.Popen) -> str:
    """The embedded server's URL once the replica is the ring's only member and its caches
    synced."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        log.seek(0)
        text = log.read()
        if "ring members ['r1']" in text and "kinrun running" in text:
            return re.search(r"embedded API server at (http://\S+)", text).group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"kinrun exited: {text}")
        time.sleep(0.2)
    raise RuntimeError("kinrun did not start")


def create(host: str, worker: int, objects: int, workers: int) -> None:
    for i in range(worker, objects, workers):
        kube_request(host, "POST", "/api/v1/namespaces/default/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"item-{i}", "labels": {"bench": "true"}}, "data": {"i": str(i)}})


def labelled(host: str) -> int:
    out = kube_request(host, "GET", f"/api/v1/namespaces/default/configmaps?labelSelector="
                       f"{LABEL}%3Dr1")
    return len(out["items"])


def patches(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return sum(float(m.group(1)) for m in re.finditer(
        r'^rest_client_requests_total\{[^}]*method="PATCH"[^}]*\} (\S+)', text, re.M))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=30000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict[str, float]]] = {"watch": [], "admission": []}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            for mode in results:
                results[mode].append(run_once(mode, args.objects, Path(tmp)))
                print(mode, results[mode][-1], flush=True)
    print(f"{args.objects} new objects, medians of {args.runs} alternated runs:")
    print("| mode | until all labelled (s) | PATCHes | RSS (MB) |\n|---|---:|---:|---:|")
    med = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in
           results.items()}
    for mode, m in med.items():
        print(f"| {mode} | {m['seconds']:.1f} | {m['patches']:.0f} | {m['rss_mb']:.0f} |")
    print(f"- admission/watch: time {med['admission']['seconds'] / med['watch']['seconds']:.2f}x,"
          f" RSS {med['admission']['rss_mb'] / med['watch']['rss_mb']:.2f}x")


if __name__ == "__main__":
    main()
