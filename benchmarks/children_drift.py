"""Children graph: drift correction, beside applySet re-applying every child, in one run.

Run: ``python benchmarks/children_drift.py [--parents 1000] [--rounds 2] [--json PATH]``
(~2.5 min on 2 cores; ``--parents 200`` for a quick run, ~40 s). Not part of the test run.

The scenario of the issue "children as a graph": ``--parents`` WebApplications
(``examples/crds/webapplication.yaml``) with 3 children each (a ConfigMap, a Deployment, a
Service that ``dependsOn`` the Deployment, whose ``readyWhen`` is always true so nothing
needs a Deployment controller). Two controllers run in this process, each on its own
namespace, through the real ``kinrun.kube.Client`` with kinrun's ``Metrics``:

* ``children``: the ``children`` action (kinrun adds a label-selected informer per child kind:
  the ConfigMaps' metadata-only; Deployments and Services whole: their default readiness reads
  more than metadata) and re-applies a child only when it drifted;
* ``applyset`` (the contender, the pattern before ``children``): an ``applySet`` of the same
  3 manifests (``force: true``, so that it reverts a hand edit instead of failing with a
  conflict; ``prune`` at its default, true: one LIST per child kind per reconcile) and a
  declared informer per child kind with ``mapTo: owner``, of the same shapes as the children's
  (same label selector, ConfigMaps metadata-only): only the action differs. It re-applies all 3
  children in every reconcile;
* ``applyset-noprune``, only when named (``--contenders children,applyset,applyset-noprune``):
  the same with ``prune: false`` (no LIST).

The API server is ``python -m kinrun.testing.apiserver`` in a child process (its garbage
collector off), so this process's CPU is the controllers' and the server's is read apart
(``/proc/<pid>/stat``, 10 ms ticks). Once both have settled, in ``--rounds`` interleaved
rounds (per round: a block of each kind of write for children, then for applyset; the idle
controller costs nothing meanwhile, its informers watch another namespace; the idle cost of
both is printed), each write on another parent, by a second client on the main thread:

* ``spec`` (``--edits`` per block, default parents / 5): a hand edit, a merge patch of one
  Deployment's ``spec.replicas`` (a field the config sets) from 2 to 5, waited for until
  the revert is in the controller's cache;
* ``status`` (``--status-edits``, default parents / 20): a new ``status.availableReplicas``
  of one Deployment, as a Deployment controller writes (no drift), waited for until cached;

then until quiet (queue idle; reconcile and request counters unchanged over two 30 ms
windows: so the wall time per write is no latency figure). Per write: parent reconciles
(``controller_runtime_reconcile_total``), requests the controller sent
(``rest_client_requests_total``, by method) and its writes (a recording wrapper, by verb
and kind). Per block: the controller's CPU seconds (``time.process_time`` minus the main
thread's ``time.thread_time``: the writing client and the waiting are left out) and the
server's, divided by the writes.

Then ``resync``: every parent queued once with nothing drifted (what a periodic resync or a
poll would cost; the design a watch-based drift answer replaces): CPU and requests per parent.

Then memory: per child kind, a lone informer of the children informer's spec (same selector,
transform, index; metadata-only or whole) started under ``tracemalloc`` beside the running
controllers; traced bytes after sync and ``gc.collect()``, minus those of the same informer
on a selector that matches nothing, divided by the children cached. Both shapes are measured
for each kind (kinrun's choice is marked; the contender's informers have the same shapes).

Prints tables and the ratios children/applyset; ``--json PATH`` writes every raw number.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kinrun.config import load  # noqa: E402
from kinrun.config.model import FrozenMap  # noqa: E402
from kinrun.kube import Client  # noqa: E402
from kinrun.metrics import Metrics  # noqa: E402
from kinrun.plan import plan  # noqa: E402

CRD = ROOT / "examples" / "crds" / "webapplication.yaml"
APP, APP_KIND = "example.com/v1alpha1", "WebApplication"
CONTROLLER = "webapp"
CHILD_KINDS = (("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("v1", "Service"))
PART_OF = "applyset.kubernetes.io/part-of"
REPLICAS, EDITED = 2, 5
WINDOW = 0.03
"""Seconds of a quiet window: counters unchanged and the queue idle over two in a row."""

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: "{{ obj.metadata.name }}-config"}
data: {{ obj.spec.config | default({}) | to_json }}
"""
DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: "{{ obj.metadata.name }}"}
spec:
  replicas: {{ obj.spec.replicas }}
  selector: {matchLabels: {app: "{{ obj.metadata.name }}"}}
  template:
    metadata: {labels: {app: "{{ obj.metadata.name }}"}}
    spec:
      containers:
        - name: web
          image: "{{ obj.spec.image }}"
          ports: [{containerPort: {{ obj.spec.port }}, protocol: TCP}]
          envFrom: [{configMapRef: {name: "{{ obj.metadata.name }}-config"}}]
"""
SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: "{{ obj.metadata.name }}"}
spec:
  selector: {app: "{{ obj.metadata.name }}"}
  ports: [{port: 80, targetPort: {{ obj.spec.port }}, protocol: TCP}]
"""


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


def children_config(ns: str) -> str:
    return f"""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  webapps: {{apiVersion: {APP}, kind: {APP_KIND}, namespaces: [{ns}]}}
controllers:
  - name: {CONTROLLER}
    for: webapps
    reconcile:
      actions:
        - children:
            resources:
              - name: config
                manifest: |
{_indent(CONFIGMAP, 18)}\
              - name: deployment
                readyWhen: "true"     # no Deployment controller here: always ready
                manifest: |
{_indent(DEPLOYMENT, 18)}\
              - name: service
                dependsOn: [deployment]
                manifest: |
{_indent(SERVICE, 18)}"""


def applyset_config(ns: str, prune: bool = True) -> str:
    informers = "".join(
        f"  {kind.lower()}s: {{apiVersion: {api}, kind: {kind}, namespaces: [{ns}], "
        f"labelSelector: {PART_OF}{', metadataOnly: true' if kind == 'ConfigMap' else ''}}}\n"
        for api, kind in CHILD_KINDS)
    watches = ", ".join(f"{{informer: {kind.lower()}s, mapTo: owner}}" for _, kind in CHILD_KINDS)
    return f"""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  webapps: {{apiVersion: {APP}, kind: {APP_KIND}, namespaces: [{ns}]}}
{informers}\
controllers:
  - name: {CONTROLLER}
    for: webapps
    watches: [{watches}]
    reconcile:
      actions:
        - applySet:
            force: true             # revert a hand edit (default false: a conflict)
            prune: {str(prune).lower()}
            manifests: |
{_indent(CONFIGMAP, 14)}\
              ---
{_indent(DEPLOYMENT, 14)}\
              ---
{_indent(SERVICE, 14)}"""


CONTENDERS = {
    "children": children_config,
    "applyset": applyset_config,
    "applyset-noprune": lambda ns: applyset_config(ns, prune=False),
}
"""Name -> config of its namespace; ``children`` is measured first and the others against it."""


def parents(ns: str, count: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}] + [
        {"apiVersion": APP, "kind": APP_KIND, "metadata": {"name": f"app-{i:05d}", "namespace": ns},
         "spec": {"image": "nginx:1.27", "replicas": REPLICAS, "port": 8080,
                  "config": {"MODE": "prod", "INDEX": str(i)}}}
        for i in range(count)]


# -- the server ---------------------------------------------------------------------------------


class Server:
    """``python -m kinrun.testing.apiserver`` in a child process, seeded with ``files``."""

    def __init__(self, work: Path, files: list[Path], history: int) -> None:
        self.kubeconfig = str(work / "kubeconfig")
        argv = [sys.executable, "-m", "kinrun.testing.apiserver", "--kubeconfig",
                self.kubeconfig, "--controllers", "off", "--history-size", str(history)]
        for f in files:
            argv += ["--load", str(f)]
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, PYTHONUNBUFFERED="1"))
        for line in self.p.stdout:  # type: ignore[union-attr]
            if line.startswith("kubeconfig"):
                break
        else:
            raise RuntimeError("the embedded API server did not start")

    def cpu(self) -> float:
        """The server process's CPU seconds (user + system) so far."""
        with open(f"/proc/{self.p.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.p.terminate()
        self.p.wait(30)


# -- one controller -----------------------------------------------------------------------------


class Recording:
    """The real Client, counting each write it sends by ``(verb, kind)`` (thread-safe)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.writes: Counter = Counter()

    def execute(self, req: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.writes[(req.verb, req.kind)] += 1
        return self._client.execute(req, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def snapshot(self) -> Counter:
        with self._lock:
            return Counter(self.writes)


class Runner:
    """One controller (``name``: a key of :data:`CONTENDERS`) on namespace ``ns``, started."""

    def __init__(self, name: str, ns: str, text: str, work: Path, kubeconfig: str) -> None:
        self.name, self.ns = name, ns
        self.path = work / f"{name}.yaml"
        self.path.write_text(text)
        self.metrics = Metrics()
        self.client = Recording(Client.from_config(kubeconfig=kubeconfig, qps=0))
        self.metrics.instrument_client(self.client)
        config = load(str(self.path))
        self.manager = plan(config).bind(self.client).manager(metrics=self.metrics)
        if not self.manager.start(threading.Event(), 120.0, gc_policy=True):
            raise RuntimeError(f"{name}: the caches did not sync")
        self.queue = self.manager.controllers[CONTROLLER].queue
        names = {kind: next(n for n, spec in config.informers.items()
                            if n != "webapps" and spec.kind == kind)
                 for _, kind in CHILD_KINDS}
        self.child_informers = names
        self.deployments = self.manager.informers[names["Deployment"]].lister

    def reconciles(self) -> float:
        r = self.metrics.registry
        return sum(r.get_sample_value("controller_runtime_reconcile_total",
                                      {"controller": CONTROLLER, "result": res}) or 0.0
                   for res in ("success", "error", "requeue", "requeue_after"))

    def requests(self) -> Counter:
        out: Counter = Counter()
        for metric in self.metrics.registry.collect():
            if metric.name != "rest_client_requests":
                continue
            for s in metric.samples:
                if s.name == "rest_client_requests_total":
                    out[s.labels["method"]] += int(s.value)
        return out

    def counters(self) -> tuple[float, Counter, Counter]:
        return self.reconciles(), self.requests(), self.client.snapshot()

    def cached_children(self) -> int:
        return sum(len(self.manager.informers[n].lister.list())
                   for n in self.child_informers.values())

    def quiet(self, timeout: float = 120.0) -> None:
        """Queue idle and no reconcile or request counted over two windows in a row."""
        deadline = time.monotonic() + timeout
        last, calm = None, 0
        while calm < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name}: never quiet")
            now = (self.reconciles(), sum(self.requests().values()))
            calm = calm + 1 if now == last and self.queue.idle() else 0
            last = now
            time.sleep(WINDOW)

    def stop(self) -> None:
        self.manager.stop(5.0)
        self.client.close()


def _wait(condition: Any, what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.002)


def settle(runner: Runner, count: int) -> float:
    """Wait until every parent's 3 children are cached and the controller is quiet."""
    t0 = time.perf_counter()
    _wait(lambda: runner.cached_children() >= 3 * count, f"{runner.name}: all children",
          timeout=600)
    runner.quiet()
    return time.perf_counter() - t0


# -- the measurements ---------------------------------------------------------------------------


def edit_once(runner: Runner, editor: Client, parent: str, what: str) -> dict[str, Any]:
    """One write to ``parent``'s Deployment by another client, waited for until the controller
    saw it (``spec``: ``spec.replicas`` 2 -> 5, until reverted; ``status``: a new
    ``status.availableReplicas``, as a Deployment controller writes) and is quiet; the
    controller's reconciles, requests and writes meanwhile."""
    r0, q0, w0 = runner.counters()
    if what == "spec":
        answer = editor.patch("apps/v1", "Deployment", parent, {"spec": {"replicas": EDITED}},
                              namespace=runner.ns)
    else:
        answer = editor.patch_status("apps/v1", "Deployment", parent, {"status": {
            "observedGeneration": 1, "replicas": REPLICAS, "availableReplicas": STATUS.pop()}},
            namespace=runner.ns)
    written = int(answer["metadata"]["resourceVersion"])

    def seen() -> bool:
        live = runner.deployments.get(f"{runner.ns}/{parent}")
        if live is None:
            return False
        version = int(live["metadata"]["resourceVersion"])
        if what == "spec":  # reverted: a newer version with the config's replicas
            return version > written and live["spec"]["replicas"] == REPLICAS
        return version >= written
    _wait(seen, f"{runner.name}: {parent} {what} write seen")
    runner.quiet()
    r1, q1, w1 = runner.counters()
    return {"reconciles": int(r1 - r0), "requests": dict(q1 - q0),
            "writes": {f"{v} {k}": n for (v, k), n in (w1 - w0).items()}}


STATUS = list(range(1_000_000))
"""Distinct availableReplicas values, so that each status write changes the object."""


def edit_block(runner: Runner, editor: Client, server: Server, names: list[str], what: str
               ) -> dict[str, Any]:
    """``names``' Deployments written one after the other (:func:`edit_once`); the CPU
    seconds of the block: the controller's (this process but the main thread) and the
    server's."""
    gc.collect()
    main0, cpu0, srv0 = time.thread_time(), time.process_time(), server.cpu()
    wall0 = time.perf_counter()
    edits = [edit_once(runner, editor, name, what) for name in names]
    wall = time.perf_counter() - wall0
    main, cpu, srv = (time.thread_time() - main0, time.process_time() - cpu0,
                      server.cpu() - srv0)
    return {"edits": edits, "controller_cpu_s": cpu - main, "main_thread_cpu_s": main,
            "server_cpu_s": srv, "wall_s": wall}


def idle(seconds: float) -> float:
    """The controllers' CPU milliseconds per second while nothing happens (both running)."""
    main0, cpu0 = time.thread_time(), time.process_time()
    time.sleep(seconds)
    return 1e3 * (time.process_time() - cpu0 - (time.thread_time() - main0)) / seconds


def resync(runner: Runner, server: Server, count: int) -> dict[str, Any]:
    """Every parent queued once, nothing drifted: CPU and requests until quiet."""
    runner.quiet()
    gc.collect()
    r0, q0, w0 = runner.counters()
    main0, cpu0, srv0 = time.thread_time(), time.process_time(), server.cpu()
    for i in range(count):
        runner.queue.add(f"{runner.ns}/app-{i:05d}")
    _wait(lambda: runner.reconciles() - r0 >= count, f"{runner.name}: resync", timeout=600)
    runner.quiet()
    main, cpu, srv = (time.thread_time() - main0, time.process_time() - cpu0,
                      server.cpu() - srv0)
    r1, q1, w1 = runner.counters()
    return {"parents": count, "reconciles": int(r1 - r0), "requests": dict(q1 - q0),
            "writes": {f"{v} {k}": n for (v, k), n in (w1 - w0).items()},
            "controller_cpu_s": cpu - main, "server_cpu_s": srv}


def memory(runner: Runner, kubeconfig: str) -> list[dict[str, Any]]:
    """Per child kind and shape (metadata-only, whole): traced bytes per cached child of a lone
    informer of the children informer's spec, minus the same informer matching nothing."""
    config = load(str(runner.path))
    client = Client.from_config(kubeconfig=kubeconfig, qps=0)
    out = []
    try:
        for _, kind in CHILD_KINDS:
            name = runner.child_informers[kind]
            spec = config.informers[name]
            for metadata_only in (True, False):
                full = _traced(config, dataclasses.replace(spec, metadata_only=metadata_only),
                               client)
                empty = _traced(config, dataclasses.replace(
                    spec, metadata_only=metadata_only,
                    label_selector=f"{PART_OF}=nothing-matches"), client)
                out.append({"kind": kind, "metadata_only": metadata_only,
                            "kinrun_uses": metadata_only == spec.metadata_only,
                            "children": full[1],
                            "bytes_per_child": (full[0] - empty[0]) / max(1, full[1])})
    finally:
        client.close()
    return out


def _traced(config: Any, spec: Any, client: Client) -> tuple[int, int]:
    """(tracemalloc bytes still held once ``spec``'s lone informer synced, objects cached)."""
    lone = dataclasses.replace(config, controllers=(), informers=FrozenMap({spec.name: spec}))
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    manager = plan(lone).bind(client).manager()
    if not manager.start_caches(threading.Event(), 120.0):
        raise RuntimeError(f"{spec.name}: no sync")
    count = len(manager.informers[spec.name].lister.list())
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    manager.stop(5.0)
    return held, count


# -- report -------------------------------------------------------------------------------------


def summarize(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-write distributions and per-block CPU of ``blocks`` (one controller, one kind of
    write)."""
    edits = [e for b in blocks for e in b["edits"]]
    return {
        "edits": len(edits),
        "reconciles_per_edit": Counter(e["reconciles"] for e in edits),
        "requests_per_edit": Counter(sum(e["requests"].values()) for e in edits),
        "requests_by_method": dict(sum((Counter(e["requests"]) for e in edits), Counter())),
        "writes_by_kind": dict(sum((Counter(e["writes"]) for e in edits), Counter())),
        "controller_cpu_ms_per_edit": [1e3 * b["controller_cpu_s"] / len(b["edits"])
                                       for b in blocks],
        "server_cpu_ms_per_edit": [1e3 * b["server_cpu_s"] / len(b["edits"]) for b in blocks],
        "wall_ms_per_edit": [1e3 * b["wall_s"] / len(b["edits"]) for b in blocks],
    }


def _dist(counter: Any) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(Counter(counter).items())) or "none"


def _times(counter: Any) -> str:
    """A per-write distribution: ``2 (x400)``: 400 writes had the value 2."""
    return ", ".join(f"{k} (x{v})" for k, v in sorted(Counter(counter).items()))


def _ms(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parents", type=int, default=1000, help="parents per controller")
    ap.add_argument("--edits", type=int, default=None,
                    help="hand edits of spec.replicas per block (default: parents / 5)")
    ap.add_argument("--status-edits", type=int, default=None,
                    help="status writes per block (default: parents / 20)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="blocks per controller, interleaved (children first)")
    ap.add_argument("--contenders", default="children,applyset",
                    help=f"comma-separated, children first (of: {', '.join(CONTENDERS)})")
    ap.add_argument("--no-resync", action="store_true", help="skip the resync measurement")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory measurement")
    ap.add_argument("--json", help="write the raw numbers here")
    args = ap.parse_args(argv)
    names = args.contenders.split(",")
    if names[0] != "children" or len(names) < 2 or any(n not in CONTENDERS for n in names):
        ap.error(f"--contenders: children first, then one or more of {', '.join(CONTENDERS)}")
    edits = args.edits if args.edits is not None else max(1, args.parents // 5)
    status = args.status_edits if args.status_edits is not None else max(1, args.parents // 20)
    if (edits + status) * args.rounds > args.parents:
        ap.error("(--edits + --status-edits) x --rounds must not exceed --parents (each write "
                 "on another parent)")
    started = dt.datetime.now(dt.timezone.utc)
    t_start = time.perf_counter()
    result: dict[str, Any] = {"contenders": names, "parents": args.parents,
                              "edits_per_block": edits, "status_edits_per_block": status,
                              "rounds": args.rounds, "started": started.isoformat(),
                              "loadavg_start": list(os.getloadavg())}
    with tempfile.TemporaryDirectory(prefix="kinrun-children-drift-") as tmp:
        work = Path(tmp)
        seed = work / "parents.yaml"
        seed.write_text(yaml.safe_dump_all([o for n in names
                                            for o in parents(f"drift-{n}", args.parents)]))
        server = Server(work, [CRD, seed], history=max(10_000, 20 * args.parents))
        runners: dict[str, Runner] = {}
        try:
            result["settle"] = {}
            for name in names:
                ns, make = f"drift-{name}", CONTENDERS[name]
                t0 = time.perf_counter()
                runners[name] = runner = Runner(name, ns, make(ns), work, server.kubeconfig)
                settle(runner, args.parents)
                r, q, w = runner.counters()
                result["settle"][name] = {
                    "settle_s": time.perf_counter() - t0, "reconciles": int(r),
                    "requests": dict(q), "writes": {f"{v} {k}": n for (v, k), n in w.items()}}
                print(f"{name}: {args.parents} parents x 3 children settled in "
                      f"{result['settle'][name]['settle_s']:.1f} s", flush=True)
            result["idle_cpu_ms_per_s"] = idle(3.0)
            editor = Client.from_config(kubeconfig=server.kubeconfig, qps=0)
            blocks: dict[str, dict[str, list[dict[str, Any]]]] = {
                what: {n: [] for n in runners} for what in ("spec", "status")}
            at = 0
            for rnd in range(args.rounds):
                for what, count in (("spec", edits), ("status", status)):
                    names = [f"app-{i:05d}" for i in range(at, at + count)]
                    at += count
                    for name, runner in runners.items():
                        b = edit_block(runner, editor, server, names, what)
                        blocks[what][name].append(b)
                        print(f"round {rnd + 1} {what:<6} {name:<8}: {count} writes, "
                              f"controller CPU {1e3 * b['controller_cpu_s'] / count:.2f} ms "
                              f"each, server {1e3 * b['server_cpu_s'] / count:.2f} ms",
                              flush=True)
            editor.close()
            result["drift"] = {n: summarize(b) for n, b in blocks["spec"].items()}
            result["status"] = {n: summarize(b) for n, b in blocks["status"].items()}
            result["raw"] = blocks
            if not args.no_resync:
                result["resync"] = {n: resync(r, server, args.parents)
                                    for n, r in runners.items()}
            if not args.no_memory:
                result["memory"] = memory(runners["children"], server.kubeconfig)
        finally:
            for runner in runners.values():
                runner.stop()
            server.stop()
    result["took_s"] = time.perf_counter() - t_start
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "platform": platform.platform(), "loadavg_end": list(os.getloadavg())}
    report(result)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    return 0


def _ratio(c: list[float], a: list[float]) -> tuple[list[float], float | None]:
    per = [x / y for x, y in zip(c, a) if y]
    return per, (statistics.median(per) if per else None)


def report(result: dict[str, Any]) -> None:
    n, names = result["parents"], result["contenders"]
    others = names[1:]
    head = " | ".join(names)

    def row(label: str, values: list[str]) -> None:
        print(f"| {label} | " + " | ".join(values) + " |")

    print(f"\n{n} parents x 3 children per controller; {result['rounds']} interleaved rounds; "
          f"load average at the start {result['loadavg_start'][0]:.2f}, at the end "
          f"{result['machine']['loadavg_end'][0]:.2f}; took {result['took_s']:.0f} s; idle "
          f"controllers {result['idle_cpu_ms_per_s']:.2f} CPU-ms per second (in every figure)")
    st = result["settle"]
    print(f"\n| settle (creation of every child) | {head} |")
    print("|---|" + "---|" * len(names))
    row("reconciles per parent", [f"{st[c]['reconciles'] / n:.2f}" for c in names])
    row("writes", [_dist(st[c]["writes"]) for c in names])
    row("requests by method (informers' LIST/WATCH and discovery included)",
        [_dist(st[c]["requests"]) for c in names])
    ratios: dict[str, Any] = {}
    for what, title in (("drift", "per hand edit of one Deployment's spec.replicas"),
                        ("status", "per status write of one Deployment (no drift)")):
        d = result[what]
        print(f"\n| {title} ({d['children']['edits']} each) | {head} |")
        print("|---|" + "---|" * len(names))
        row("parent reconciles each", [_times(d[c]["reconciles_per_edit"]) for c in names])
        row("requests sent each", [_times(d[c]["requests_per_edit"]) for c in names])
        row("requests by method, all", [_dist(d[c]["requests_by_method"]) for c in names])
        row("writes by verb and kind, all", [_dist(d[c]["writes_by_kind"]) for c in names])
        for label, key in (("controller CPU ms each (per block)", "controller_cpu_ms_per_edit"),
                           ("server CPU ms each (per block)", "server_cpu_ms_per_edit"),
                           ("wall ms each, write to quiet (per block)", "wall_ms_per_edit")):
            row(label, [_ms(d[c][key]) for c in names])
        for other in others:
            for side in ("controller", "server"):
                key = f"{side}_cpu_ms_per_edit"
                per, med = _ratio(d["children"][key], d[other][key])
                ratios[f"{what} {side} CPU, children/{other}"] = {"per_block": per,
                                                                   "median": med}
    if "resync" in result:
        rs = result["resync"]
        print(f"\n| resync: every parent queued once, nothing drifted | {head} |")
        print("|---|" + "---|" * len(names))
        row("reconciles", [str(rs[c]["reconciles"]) for c in names])
        row("requests by method", [_dist(rs[c]["requests"]) for c in names])
        for side in ("controller", "server"):
            row(f"{side} CPU ms per parent",
                [f"{1e3 * rs[c][f'{side}_cpu_s'] / n:.3f}" for c in names])
            for other in others:
                c, a = rs["children"][f"{side}_cpu_s"], rs[other][f"{side}_cpu_s"]
                ratios[f"resync {side} CPU, children/{other}"] = {
                    "per_block": [c / a] if a else [], "median": c / a if a else None}
    print("\n| ratio | per block | median |")
    print("|---|---|---:|")
    for label, r in ratios.items():
        med = "n/a" if r["median"] is None else f"{r['median']:.2f}x"
        print(f"| {label} | {_ms(r['per_block'])} | {med} |")
    result["ratios"] = ratios
    if "memory" in result:
        print("\n| child kind | informer | children cached | traced bytes per child |")
        print("|---|---|---:|---:|")
        for m in result["memory"]:
            shape = "metadata-only" if m["metadata_only"] else "whole"
            mark = " (kinrun's choice here)" if m["kinrun_uses"] else ""
            print(f"| {m['kind']} | {shape}{mark} | {m['children']} | "
                  f"{m['bytes_per_child']:,.0f} |")


if __name__ == "__main__":
    sys.exit(main())
