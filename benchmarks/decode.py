"""Decode throughput: kinrun's kube layer vs the kubernetes client's models, one run.

Two workloads against the embedded API server (``kinrun.testing.apiserver``), which runs in a
child process so its encoding does not share the measuring process's GIL:

- LIST of ``--pods`` (default 10,000) Deployment-managed Pods (~9 KB of JSON each, with
  managedFields), paged by 500: kinrun ``Client.lister_watcher(...).list()`` (dicts) vs
  ``CoreV1Api.list_namespaced_pod`` (V1Pod models), the same paging.
- WATCH of ``--events`` (default 100,000) MODIFIED events: the server replays its history
  from a resourceVersion, in rounds of ``--round`` events: kinrun ``watch()`` (line split +
  orjson) vs ``kubernetes.watch.Watch().stream()`` (models). Rounds are small (500) because
  the embedded server sends a whole replay as one HTTP chunk, and the client's line splitter
  (``iter_resp_lines``) copies the rest of its buffer after every line, quadratic in the chunk
  size; a real kube-apiserver writes about one event per chunk. Small rounds keep that
  artefact minor, so the figures compare decoding, not chunk handling.
- decode only: the raw lines of one round, one event per chunk, decoded without any I/O by
  kinrun's StreamWatch vs the client's ``Watch.unmarshal_event`` into V1Pod.

Every figure is given by wall clock and by CPU time of the measuring process (the server's
work is in the child process and not counted), since the shared 2-core machines make wall
clock noisy.

Prints a table, writes ``benchmarks/results/decode.json``. Figures are objects/s, each the
best of ``--repeat`` runs. Run: ``python benchmarks/decode.py`` (``--quick`` for a small run).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "decode.json"
NAMESPACE = "default"

# -- workload: realistic Pods ----------------------------------------------------------------

try:  # helper A's shared generator, when present
    sys.path.insert(0, str(Path(__file__).parent))
    from podgen import make_pod  # type: ignore[import-not-found]
    POD_SOURCE = "benchmarks/podgen.py"
except ImportError:  # pragma: no cover - depends on the tree
    POD_SOURCE = "benchmarks/decode.py (local generator)"

    def make_pod(i: int, namespace: str = "default", with_managed_fields: bool = True) -> dict:
        """A Pod as a Deployment's ReplicaSet makes it, running, ~9 KB of JSON."""
        rs = f"web-{i // 50:04d}-7d9f8c6b5"
        name = f"{rs}-{i:06x}"
        labels = {"app": f"web-{i // 50:04d}", "pod-template-hash": "7d9f8c6b5",
                  "tier": "frontend", "team": f"team-{i % 7}", "version": "v1.24.3"}
        env = [{"name": f"SETTING_{k}", "value": f"value-{k}-{i}"} for k in range(14)]
        env.append({"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                  "fieldPath": "status.podIP"}}})
        container = {
            "name": "app", "image": "registry.example.com/team/web:v1.24.3",
            "imagePullPolicy": "IfNotPresent",
            "args": ["--port=8080", "--log-level=info", f"--instance={i}"],
            "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"},
                      {"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
            "env": env,
            "resources": {"limits": {"cpu": "500m", "memory": "512Mi"},
                          "requests": {"cpu": "100m", "memory": "128Mi"}},
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
                              "initialDelaySeconds": 10, "periodSeconds": 10,
                              "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
                               "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1,
                               "failureThreshold": 3},
            "volumeMounts": [{"name": "config", "mountPath": "/etc/web"},
                             {"name": "kube-api-access-abcde", "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }
        sidecar = {"name": "proxy", "image": "registry.example.com/mesh/proxy:1.19.0",
                   "ports": [{"containerPort": 15001, "protocol": "TCP"}],
                   "resources": {"requests": {"cpu": "10m", "memory": "40Mi"}},
                   "terminationMessagePath": "/dev/termination-log",
                   "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}
        stamp = "2024-05-01T10:00:00Z"

        def status_of(c: dict) -> dict:
            return {"name": c["name"], "ready": True, "restartCount": 0, "started": True,
                    "image": c["image"], "imageID": "docker-pullable://" + c["image"] + "@sha256:"
                    + "0" * 64, "containerID": "containerd://" + f"{i:064x}",
                    "state": {"running": {"startedAt": stamp}}, "lastState": {}}

        pod = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": name, "generateName": rs + "-", "namespace": namespace,
                "uid": f"{i:08x}-0000-4000-8000-{i:012x}", "creationTimestamp": stamp,
                "labels": labels,
                "annotations": {"kubectl.kubernetes.io/restartedAt": stamp,
                                "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                     "uid": f"{i // 50:08x}-1111-4000-8000-000000000000",
                                     "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": {
                "containers": [container, sidecar],
                "volumes": [
                    {"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                    {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt",
                                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}},
                ],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "serviceAccountName": "web",
                "serviceAccount": "web", "nodeName": f"node-{i % 20:02d}",
                "securityContext": {"runAsNonRoot": True, "fsGroup": 2000},
                "schedulerName": "default-scheduler", "priority": 0,
                "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
                "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300}],
            },
            "status": {
                "phase": "Running", "qosClass": "Burstable", "startTime": stamp,
                "hostIP": f"10.0.{i % 20}.1", "podIP": f"10.244.{(i >> 8) % 256}.{i % 256}",
                "podIPs": [{"ip": f"10.244.{(i >> 8) % 256}.{i % 256}"}],
                "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                                "lastTransitionTime": stamp}
                               for t in ("Initialized", "Ready", "ContainersReady",
                                         "PodScheduled")],
                "containerStatuses": [status_of(container), status_of(sidecar)],
            },
        }
        if with_managed_fields:
            pod["metadata"]["managedFields"] = _managed_fields(stamp)
        return pod

    def _managed_fields(stamp: str) -> list[dict]:
        spec_fields = {"f:containers": {'k:{"name":"app"}': {
            ".": {}, "f:args": {}, "f:env": {f'k:{{"name":"SETTING_{k}"}}': {
                ".": {}, "f:name": {}, "f:value": {}} for k in range(14)},
            "f:image": {}, "f:imagePullPolicy": {}, "f:livenessProbe": {
                ".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {},
                                                                 "f:port": {}, "f:scheme": {}},
                "f:initialDelaySeconds": {}, "f:periodSeconds": {}},
            "f:name": {}, "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {
                ".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
            "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
                            "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
            "f:volumeMounts": {".": {}, 'k:{"mountPath":"/etc/web"}': {
                ".": {}, "f:mountPath": {}, "f:name": {}}}}},
            "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
            "f:schedulerName": {}, "f:securityContext": {".": {}, "f:fsGroup": {},
                                                         "f:runAsNonRoot": {}},
            "f:serviceAccount": {}, "f:serviceAccountName": {},
            "f:terminationGracePeriodSeconds": {}, "f:volumes": {".": {}, 'k:{"name":"config"}': {
                ".": {}, "f:configMap": {".": {}, "f:defaultMode": {}, "f:name": {}},
                "f:name": {}}}}
        status_fields = {"f:conditions": {f'k:{{"type":"{t}"}}': {
            ".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {},
            "f:type": {}} for t in ("ContainersReady", "Initialized", "Ready")},
            "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {},
            "f:podIPs": {".": {}, 'k:{"ip":"10.244.0.1"}': {".": {}, "f:ip": {}}},
            "f:startTime": {}}
        return [
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
             "time": stamp, "fieldsType": "FieldsV1", "fieldsV1": {
                 "f:metadata": {"f:generateName": {}, "f:labels": {
                     ".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:team": {}, "f:tier": {},
                     "f:version": {}}, "f:ownerReferences": {
                     ".": {}, 'k:{"uid":"00000000-1111-4000-8000-000000000000"}': {}}},
                 "f:spec": spec_fields}},
            {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": stamp,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": status_fields},
             "subresource": "status"},
        ]


# -- the server, in a child process ------------------------------------------------------------

def _server_main(conn: Any, history: int) -> None:
    """Child: run the embedded server; answer ("load", n) and ("bump", n, gen) over ``conn``."""
    from kinrun.testing.apiserver import EmbeddedAPIServer

    with EmbeddedAPIServer(port=0, history_size=history, bookmark_interval=3600.0) as srv:
        pods = [make_pod(i, namespace=NAMESPACE) for i in range(conn.recv()[1])]
        srv.load(pods)
        conn.send(srv.url)
        while True:
            msg = conn.recv()
            if msg[0] == "stop":
                break
            if msg[0] == "bump":  # n MODIFIED events, round-robin over the pods
                _, n, gen = msg
                batch = []
                for k in range(n):
                    pod = pods[k % len(pods)]
                    pod["metadata"]["annotations"]["bench/generation"] = f"{gen}-{k}"
                    batch.append(pod)
                    if len(batch) == len(pods):
                        srv.load(batch)
                        batch = []
                if batch:
                    srv.load(batch)
                conn.send("ok")
    conn.close()


class ServerProcess:
    """The embedded server in a child process (spawned fresh, so no forked threads)."""

    def __init__(self, pods: int, history: int) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_server_main, args=(child, history), daemon=True)
        self.proc.start()
        self.conn.send(("load", pods))
        self.url = self.conn.recv()

    def bump(self, n: int, gen: int) -> None:
        self.conn.send(("bump", n, gen))
        assert self.conn.recv() == "ok"

    def close(self) -> None:
        self.conn.send(("stop",))
        self.proc.join(timeout=30)


# -- the contenders ---------------------------------------------------------------------------

def _api_client(url: str, pool_size: int = 4) -> Any:
    from kubernetes import client as k8s

    config = k8s.Configuration(host=url)
    config.connection_pool_maxsize = pool_size
    return k8s.ApiClient(config)


class Timer:
    """Wall (perf_counter) and CPU (process_time: this process only, not the server) seconds."""

    def __enter__(self) -> Timer:
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = time.process_time() - self.cpu0

    @property
    def both(self) -> tuple[float, float]:
        return self.wall, self.cpu


def _current_rv(kin: Any) -> str:
    """The server's current resourceVersion (global): from a LIST of an empty collection."""
    ref = kin.resolve("v1", "ConfigMap")
    return kin.lister_watcher(ref, namespace="kube-public").list().resource_version


def list_kinrun(url: str, expected: int) -> tuple[float, float]:
    """(wall, cpu) seconds for kinrun to LIST the namespace's pods (paged by 500) as dicts."""
    from kinrun.kube import Client

    kin = Client.from_api_client(_api_client(url), qps=0, burst=0)
    lw = kin.lister_watcher(kin.resolve("v1", "Pod"), namespace=NAMESPACE, page_size=500)
    with Timer() as t:
        result = lw.list()
    assert len(result.items) == expected, len(result.items)
    return t.both


def list_client(url: str, expected: int) -> tuple[float, float]:
    """(wall, cpu) seconds for the kubernetes client to LIST the same pods into V1Pod models."""
    from kubernetes import client as k8s

    v1 = k8s.CoreV1Api(_api_client(url))
    items: list = []
    token = None
    with Timer() as t:
        while True:
            page = v1.list_namespaced_pod(NAMESPACE, limit=500, _continue=token)
            items.extend(page.items)
            token = page.metadata._continue
            if not token:
                break
    assert len(items) == expected, len(items)
    return t.both


def watch_kinrun(url: str, rv: str, count: int) -> tuple[float, float]:
    """(wall, cpu) seconds for kinrun to receive ``count`` watch events after ``rv``."""
    from kinrun.kube import Client

    kin = Client.from_api_client(_api_client(url), qps=0, burst=0)
    lw = kin.lister_watcher(kin.resolve("v1", "Pod"), namespace=NAMESPACE)
    seen = 0
    with Timer() as t:
        w = lw.watch(resource_version=rv, timeout_seconds=600, allow_bookmarks=False)
        for event in w:
            if event.type == "MODIFIED":
                seen += 1
                if seen == count:
                    break
    w.close()
    assert seen == count, seen
    return t.both


def watch_client(url: str, rv: str, count: int) -> tuple[float, float]:
    """(wall, cpu) seconds for ``kubernetes.watch.Watch().stream()`` to yield ``count`` V1Pod
    events."""
    from kubernetes import client as k8s
    from kubernetes import watch

    v1 = k8s.CoreV1Api(_api_client(url))
    w = watch.Watch()
    seen = 0
    with Timer() as t:
        for event in w.stream(v1.list_namespaced_pod, NAMESPACE, resource_version=rv,
                              timeout_seconds=600, allow_watch_bookmarks=False):
            if event["type"] == "MODIFIED":
                seen += 1
                if seen == count:
                    w.stop()
                    break
    assert seen == count, seen
    return t.both


def capture_lines(url: str, rv: str, count: int) -> list[bytes]:
    """The raw watch lines of ``count`` events after ``rv`` (for the decode-only figures)."""
    import urllib3

    http = urllib3.PoolManager()
    resp = http.request("GET", f"{url}/api/v1/namespaces/{NAMESPACE}/pods?watch=true"
                        f"&resourceVersion={rv}&timeoutSeconds=600", preload_content=False)
    lines: list[bytes] = []
    rest = b""
    while len(lines) < count:
        chunk = resp.read1(1 << 16)
        if not chunk:
            break
        parts = (rest + chunk).split(b"\n")
        rest = parts.pop()
        lines.extend(p + b"\n" for p in parts if p)
    resp.close()
    return lines[:count]


def decode_kinrun(lines: list[bytes]) -> tuple[float, float]:
    """(wall, cpu) seconds for kinrun's StreamWatch to decode ``lines``, one chunk each."""
    import io

    import urllib3

    from kinrun.kube.listwatch import StreamWatch

    class Chunks(io.RawIOBase):
        def __init__(self) -> None:
            self.it = iter(lines)

        def readable(self) -> bool:
            return True

        def read1(self, n: int = -1) -> bytes:
            return next(self.it, b"")

        read = read1

    resp = urllib3.HTTPResponse(body=Chunks(), status=200, preload_content=False)
    with Timer() as t:
        n = sum(1 for _ in StreamWatch(resp, api_version="v1", kind="Pod"))
    assert n == len(lines)
    return t.both


def decode_client(lines: list[bytes]) -> tuple[float, float]:
    """(wall, cpu) seconds for the client's Watch.unmarshal_event to build V1Pod events."""
    from kubernetes import watch

    w = watch.Watch()
    with Timer() as t:
        n = sum(1 for line in lines if w.unmarshal_event(line.decode("utf-8"), "V1Pod"))
    assert n == len(lines)
    return t.both


# -- driver -----------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> dict[str, Any]:
    round_size = min(args.round, args.events)
    server = ServerProcess(args.pods, history=args.pods + round_size + 1000)
    try:
        from kinrun.kube import Client

        kin = Client.from_api_client(_api_client(server.url), qps=0, burst=0)
        sample = kin.get("v1", "Pod", make_pod(0)["metadata"]["name"], NAMESPACE)
        pod_bytes = len(json.dumps(sample, separators=(",", ":")))
        print(f"server {server.url}: {args.pods} pods of {pod_bytes} bytes ({POD_SOURCE})")
        timings: dict[str, dict[str, list[float]]] = {}

        def add(workload: str, who: str, wall_cpu: tuple[float, float]) -> None:
            slot = timings.setdefault(workload, {}).setdefault(who, [0.0, 0.0])
            slot[0] += wall_cpu[0]
            slot[1] += wall_cpu[1]

        best: dict[str, tuple[float, float]] = {}
        for _ in range(args.repeat):
            for who, fn in (("kinrun", list_kinrun), ("client", list_client)):
                took = fn(server.url, args.pods)
                best[who] = min(best.get(who, took), took)
        for who, took in best.items():
            add("list", who, took)
        done, gen = 0, 0
        while done < args.events:
            n = min(round_size, args.events - done)
            rv = _current_rv(kin)
            server.bump(n, gen)
            gen += 1
            add("watch", "kinrun", watch_kinrun(server.url, rv, n))
            add("watch", "client", watch_client(server.url, rv, n))
            if done == 0:
                lines = capture_lines(server.url, rv, min(n, args.decode_events))
                add("decode", "kinrun", decode_kinrun(lines))
                add("decode", "client", decode_client(lines))
            done += n
            if done == args.events or done // round_size % 20 == 0:
                print(f"  watch: {done}/{args.events} events", flush=True)
        counts = {"list": args.pods, "watch": args.events, "decode": len(lines)}
    finally:
        server.close()
    rates = {w: {who: {"wall": counts[w] / wc[0], "cpu": counts[w] / wc[1]}
                 for who, wc in by.items()} for w, by in timings.items()}
    ratio = {w: {m: r["kinrun"][m] / r["client"][m] for m in ("wall", "cpu")}
             for w, r in rates.items()}
    return {"pod_bytes": pod_bytes, "counts": counts, "objects_per_second": rates,
            "ratio": ratio}


LABELS = {"list": "LIST {n} pods", "watch": "WATCH {n} events",
          "decode": "decode {n} events (no I/O)"}


def print_table(report: dict[str, Any]) -> None:
    """The figures as a table: objects/s by wall clock and by this process's CPU time."""
    rates, ratio, counts = report["objects_per_second"], report["ratio"], report["counts"]
    print(f"\n{'workload':<30}{'kinrun wall':>12}{'client wall':>12}{'ratio':>7}"
          f"{'kinrun cpu':>12}{'client cpu':>12}{'ratio':>7}   (objects/s)")
    for key in ("list", "watch", "decode"):
        r = rates[key]
        print(f"{LABELS[key].format(n=counts[key]):<30}"
              f"{r['kinrun']['wall']:>12,.0f}{r['client']['wall']:>12,.0f}"
              f"{ratio[key]['wall']:>6.1f}x"
              f"{r['kinrun']['cpu']:>12,.0f}{r['client']['cpu']:>12,.0f}"
              f"{ratio[key]['cpu']:>6.1f}x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=10_000, help="pods in the LIST")
    parser.add_argument("--events", type=int, default=100_000, help="watch events")
    parser.add_argument("--round", type=int, default=500,
                        help="watch events replayed per round (the embedded server sends a "
                             "replay as one HTTP chunk; see the module docstring)")
    parser.add_argument("--repeat", type=int, default=2, help="LIST runs (best counts)")
    parser.add_argument("--decode-events", type=int, default=5_000,
                        help="events in the decode-only (no I/O) comparison")
    parser.add_argument("--quick", action="store_true",
                        help="small run: 1,000 pods, 5,000 events, 1 repeat")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.pods, args.events, args.repeat, args.decode_events = 1_000, 5_000, 1, 1_000
    report = run(args)
    report.update({"python": platform.python_version(), "machine": platform.machine(),
                   "cpus": os.cpu_count(), "pod_source": POD_SOURCE,
                   "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    print_table(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
