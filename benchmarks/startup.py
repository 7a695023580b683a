"""Start-up: from process start (exec) to the first reconcile, ``kinrun CONFIG`` vs the library.

    .venv/bin/python benchmarks/startup.py                      # 1 and 1,000 Pods, 7 runs each
    .venv/bin/python benchmarks/startup.py --runs 11 --pods 1
    .venv/bin/python benchmarks/startup.py --ab /tmp/old-tree   # old tree vs this one (A/B)
    .venv/bin/python benchmarks/startup.py --breakdown-only     # where kinrun CONFIG's goes

Not part of the tests. This process hosts the embedded API server (``servers.Embedded``, pinned
to CPU 0 as in ``run.py``); each measured process is one contender of ``run.py``'s ``sync``
workload (``contenders/kinrun_cli.py``: ``kinrun benchmarks/configs/bench-pods.yaml``, and
``contenders/kinrun_lib.py --variant noop``: the same pipeline assembled from the library),
pinned to CPU 1, started with ``--n N`` Pods in the namespace and ``--t-spawn`` taken just
before ``Popen``. The contenders alternate process by process (interleaved), medians are
reported. Figures per process:

- ``first``: wall seconds from spawn to the first reconcile (``t_first - t_spawn``);
- ``open``: from spawn to the first LIST/WATCH request (imports, config, plugins, discovery);
- ``synced``: from spawn to every Pod reconciled once (``t_synced - t_spawn``);
- ``cpu``: the process's CPU seconds (every thread, user + system, since exec: the figure
  survives ``kinrun_cli.py``'s exec) when every Pod was reconciled (for 1 Pod: at the first).

``--ab OLD``: OLD is a checkout of an older tree (``git archive``); its ``runner/``,
``schemas/`` and ``plugins/`` are laid out as the package ``kinrun`` in a temporary directory
put first on ``PYTHONPATH`` for the A side (the editable install's finder comes after it), so
the same contender scripts run the old and the new library alternately; ``--ab-new NEW`` lays
out a copy of the new tree the same way (so that edits to this checkout during the run do not
leak into it).

Byte-code: the harness (``run.py``) runs contenders with ``PYTHONDONTWRITEBYTECODE=1`` in a
source tree without ``__pycache__``, so kinrun's own modules are compiled at every start (an
installed wheel has them compiled). ``--pycache compiled`` points ``PYTHONPYCACHEPREFIX`` at a
primed temporary directory instead (as installed); ``tree`` (default) measures as ``run.py``.

The breakdown (``--breakdown``, default on): one more process per round runs ``kinrun CONFIG``
in-process (``--probe-child``) under ``-X importtime`` with timing wrappers around the phases
(config load and schema validation, plan compile, plugin import and the entry-point scan,
kubeconfig loading, discovery and every other request, informer start, the first LIST, the first
reconcile); imports are summed per top-level package (self time). The wrappers and importtime
add a little time: the breakdown says where time goes, the interleaved runs say how much.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PY = sys.executable
CONFIG = HERE / "configs" / "bench-pods.yaml"
SERVER_CPU, CONTENDER_CPU = 0, 1
CONTENDERS = {
    "kinrun": [PY, str(HERE / "contenders" / "kinrun_lib.py"), "--variant", "noop"],
    "kinrun-cli": [PY, str(HERE / "contenders" / "kinrun_cli.py")],
    "kinrun-cli-direct": ["DIRECT"],
}
"""``kinrun-cli-direct``: the ``kinrun`` console script exec'd by this harness itself (under
``taskset``), with the contender's command line in ``KINRUN_BENCH_ARGS`` as
``contenders/kinrun_cli.py`` sets it: one interpreter start, as the library contender, where
``kinrun-cli`` (``run.py``'s) starts an interpreter for the wrapper script and then execs."""


# -- the probe child: kinrun CONFIG in-process, with phase timers ------------------------------

class Timeline:
    """Phase spans (label, start, end: seconds from spawn) and request records; thread-safe."""

    def __init__(self, t_spawn: float) -> None:
        self.t0 = t_spawn
        self.spans: list[tuple[str, float, float]] = []
        self.requests: list[dict[str, Any]] = []
        self.marks: dict[str, float] = {}
        self.cpu_marks: dict[str, float] = {}  # process CPU seconds (since exec) at each mark
        self.lock = threading.Lock()

    def now(self) -> float:
        return time.time() - self.t0

    def mark(self, name: str) -> None:
        with self.lock:
            self.marks.setdefault(name, self.now())
            self.cpu_marks.setdefault(name, time.process_time())

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        """Replace ``owner.attr`` by a wrapper that records each call's span under ``label``."""
        inner = getattr(owner, attr)
        tl = self

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = tl.now()
            try:
                return inner(*args, **kwargs)
            finally:
                with tl.lock:
                    tl.spans.append((label, t, tl.now()))

        if isinstance(owner, type) and isinstance(owner.__dict__.get(attr), (classmethod,
                                                                               staticmethod)):
            raw = owner.__dict__[attr]
            func = raw.__func__

            def timed_cls(*args: Any, **kwargs: Any) -> Any:
                t = tl.now()
                try:
                    return func(*args, **kwargs)
                finally:
                    with tl.lock:
                        tl.spans.append((label, t, tl.now()))
            setattr(owner, attr, type(raw)(timed_cls))
            return
        setattr(owner, attr, timed)


def probe_child(kubeconfig: str, namespace: str, t_spawn: float) -> None:
    """Run ``kinrun CONFIG`` in this process with phase timers; print one JSON line at the
    first reconcile and exit. Imports happen in the order the CLI's run does them."""
    tl = Timeline(t_spawn)
    tl.mark("interpreter")  # the script runs: interpreter start-up and site are done
    import kinrun.cli  # noqa: F401  (the console script's import)
    tl.mark("import kinrun.cli")
    import kinrun.config  # noqa: F401
    import kinrun.logging_setup  # noqa: F401
    tl.mark("import kinrun.config")
    import kinrun.app as app
    tl.mark("import kinrun.app")
    import kinrun.bound
    import kinrun.config.parse as parse
    import kinrun.manager
    import kinrun.plan
    import kinrun.plugin_manager as pmm
    from kinrun.cache.shared_informer import SharedIndexInformer
    from kinrun.kube import Client, kubeconfig as kcfg, listwatch, transport
    tl.mark("import rest")

    tl.wrap(parse, "validate", "schema validation")
    tl.wrap(kinrun.config, "load", "config load (YAML, schema, build)")
    tl.wrap(app, "plan", "plan compile (incl. plugins)")
    tl.wrap(pmm, "load_plugins", "plugins (import + entry points)")
    tl.wrap(pmm, "_load_entry_points", "entry-point scan")
    tl.wrap(Client, "from_config", "client (kubeconfig, pool)")
    tl.wrap(kcfg, "load_configuration", "kubeconfig loading")
    tl.wrap(kinrun.plan.Plan, "bind", "bind (discovery, wiring)")
    tl.wrap(kinrun.bound.Bound, "manager", "manager build")
    tl.wrap(kinrun.manager.Manager, "start", "manager start (to synced)")
    tl.wrap(SharedIndexInformer, "start", "informer start")

    req = transport.Transport.request

    def request(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        t = tl.now()
        try:
            return req(self, method, path, **kwargs)
        finally:
            with tl.lock:
                tl.requests.append({"method": method, "path": path, "start": t,
                                    "end": tl.now(), "thread": threading.current_thread().name})
    transport.Transport.request = request
    lw_list = listwatch.KubeListerWatcher.list

    def first_list(self: Any, **kwargs: Any) -> Any:
        tl.mark("first LIST sent")
        try:
            return lw_list(self, **kwargs)
        finally:
            tl.mark("first LIST answered")
    listwatch.KubeListerWatcher.list = first_list

    class FirstReconcile:
        @kinrun.hookimpl
        def kinrun_reconcile(self, controller: Any, key: str, obj: Any, ctx: Any) -> None:
            tl.mark("first reconcile")
            with tl.lock:
                out = {"marks": tl.marks, "cpu_marks": tl.cpu_marks, "spans": tl.spans, "requests": tl.requests,
                       "cpu": time.process_time()}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
            os._exit(0)

    load_plugins = pmm.load_plugins

    def with_probe(*args: Any, **kwargs: Any) -> Any:
        pm = load_plugins(*args, **kwargs)
        pm.register(FirstReconcile(), name="startup-probe")
        return pm
    pmm.load_plugins = with_probe
    tl.mark("main")
    kinrun.cli.main([str(CONFIG), "--kubeconfig", kubeconfig, "--namespace", namespace,
                     "--log-level", "warning"])
    os._exit(4)  # main returned: no reconcile happened


def import_packages(stderr: str, top: int = 16) -> list[tuple[str, float]]:
    """``-X importtime`` output summed per top-level package (``kinrun.x`` per subpackage),
    self time, milliseconds, largest first."""
    tot: collections.Counter[str] = collections.Counter()
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        _, self_us, _, name = line.replace("|", ":").split(":", 3)
        name = name.strip()
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] == "kinrun" else parts[0]
        tot[key] += int(self_us)
    return [(k, v / 1000) for k, v in tot.most_common(top)] + [("(all)", sum(tot.values()) / 1000)]


# -- the harness -------------------------------------------------------------------------------

TEMP_DIRS: list[str] = []
"""Temporary directories this run made (sites, byte-code caches); removed at its end."""


def temp_dir(prefix: str) -> str:
    """A new temporary directory, removed when ``main`` ends."""
    TEMP_DIRS.append(tempfile.mkdtemp(prefix=prefix))
    return TEMP_DIRS[-1]


def old_site(tree: Path) -> Path:
    """A directory holding ``tree``'s package as ``kinrun`` (runner/, schemas/, plugins/)."""
    site = Path(temp_dir("kinrun-old-site-"))
    shutil.copytree(tree / "runner", site / "kinrun")
    for sub in ("schemas", "plugins"):
        if (tree / sub).is_dir():
            shutil.copytree(tree / sub, site / "kinrun" / sub, dirs_exist_ok=True)
    return site


def spawn(argv: list[str], kubeconfig: str, namespace: str, n: int, env: dict[str, str],
          timeout: float = 120.0) -> dict[str, Any]:
    """One contender process for the sync workload; its JSON result (``ok`` False on failure)."""
    args = ["--workload", "sync", "--kubeconfig", kubeconfig, "--namespace", namespace,
            "--n", str(n), "--cpu", str(CONTENDER_CPU), "--timeout", str(timeout)]
    if argv == ["DIRECT"]:  # what kinrun_cli.py execs, without the wrapper interpreter
        kinrun = str(Path(PY).parent / "kinrun")
        argv = ["taskset", "-c", str(CONTENDER_CPU), kinrun, str(CONFIG), "--kubeconfig",
                kubeconfig, "--namespace", namespace, "--log-level", "warning"]
        env = env | {"KINRUN_BENCH_ARGS": json.dumps([*args, "--t-spawn", repr(time.time())])}
    else:
        argv = [*argv, *args, "--t-spawn", repr(time.time())]
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT,
                       timeout=timeout + 30)
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("ok"):
                return {"ok": True, "first": r["t_first"] - r["t_spawn"],
                        "open": r["t_open"] - r["t_spawn"],
                        "synced": r["t_synced"] - r["t_spawn"], "cpu": r["cpu_total_s"]}
    return {"ok": False, "stderr": p.stderr[-1500:]}


def breakdown(kubeconfig: str, namespace: str, env: dict[str, str]) -> dict[str, Any]:
    """One probe child under ``-X importtime``: phases, requests, imports per package."""
    argv = [PY, "-X", "importtime", str(Path(__file__).resolve()), "--probe-child", kubeconfig,
            namespace, repr(time.time())]
    if CONTENDER_CPU >= 0:
        argv = ["taskset", "-c", str(CONTENDER_CPU), *argv] if shutil.which("taskset") else argv
    p = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if not lines:
        return {"ok": False, "stderr": p.stderr[-1500:]}
    out = json.loads(lines[-1])
    out["imports"] = import_packages(p.stderr)
    out["ok"] = True
    return out


def med(rows: list[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in rows if r.get("ok")]
    return statistics.median(vals) if vals else float("nan")


def print_breakdown(runs: list[dict[str, Any]]) -> str:
    """The median breakdown of several probe runs as Markdown."""
    ok = [r for r in runs if r.get("ok")]
    if not ok:
        return "breakdown failed:\n" + (runs[0].get("stderr", "") if runs else "")
    out = ["| step (kinrun CONFIG, in order) | at (s from spawn) | took (s) | CPU at (s) | "
           "CPU took (s) |", "|---|---:|---:|---:|---:|"]
    order = ["interpreter", "import kinrun.cli", "import kinrun.config", "import kinrun.app",
             "import rest", "main", "first LIST sent", "first LIST answered", "first reconcile"]
    prev = prev_cpu = 0.0
    for m in order:
        at = statistics.median(r["marks"].get(m, float("nan")) for r in ok)
        cpu = statistics.median(r["cpu_marks"].get(m, float("nan")) for r in ok)
        out.append(f"| {m} | {at:.3f} | {at - prev:.3f} | {cpu:.3f} | {cpu - prev_cpu:.3f} |")
        prev, prev_cpu = at, cpu
    out += ["", "| phase (wrapped call) | calls | total (s) |", "|---|---:|---:|"]
    labels: dict[str, list[float]] = collections.defaultdict(list)
    calls: dict[str, int] = {}
    for r in ok:
        per: dict[str, float] = collections.defaultdict(float)
        for label, a, b in r["spans"]:
            per[label] += b - a
        for label, v in per.items():
            labels[label].append(v)
        calls.update({label: sum(1 for s in r["spans"] if s[0] == label) for label in per})
    for label in labels:
        out.append(f"| {label} | {calls[label]} | {statistics.median(labels[label]):.3f} |")
    out += ["", "| request (first probe run) | start (s) | took (ms) | thread |",
            "|---|---:|---:|---|"]
    for q in ok[0]["requests"][:20]:
        out.append(f"| {q['method']} {q['path']} | {q['start']:.3f} | "
                   f"{(q['end'] - q['start']) * 1000:.1f} | {q['thread']} |")
    out += ["", "| imports by package (self time, -X importtime, median) | ms |", "|---|---:|"]
    per_pkg: dict[str, list[float]] = collections.defaultdict(list)
    for r in ok:
        for k, v in r["imports"]:
            per_pkg[k].append(v)
    for k, vs in sorted(per_pkg.items(), key=lambda kv: -statistics.median(kv[1]))[:18]:
        out.append(f"| {k} | {statistics.median(vs):.0f} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="processes per contender and count")
    ap.add_argument("--pods", default="1,1000", help="Pod counts, comma-separated")
    ap.add_argument("--ab", type=Path, default=None, help="old tree: A/B kinrun-cli old vs new")
    ap.add_argument("--ab-new", type=Path, default=None,
                    help="with --ab: a copy of the new tree too (default: this checkout, live)")
    ap.add_argument("--ab-contenders", default="kinrun-cli", help="contenders of the A/B")
    ap.add_argument("--contenders", default="kinrun,kinrun-cli,kinrun-cli-direct",
                    help="contenders (without --ab); the first is the ratios' reference")
    ap.add_argument("--pycache", choices=["tree", "compiled"], default="tree")
    ap.add_argument("--no-breakdown", action="store_true")
    ap.add_argument("--breakdown-only", action="store_true")
    ap.add_argument("--breakdown-runs", type=int, default=3)
    ap.add_argument("--probe-child", nargs=3, metavar=("KUBECONFIG", "NS", "T_SPAWN"))
    ns = ap.parse_args(argv)
    if ns.probe_child:
        probe_child(ns.probe_child[0], ns.probe_child[1], float(ns.probe_child[2]))
        return 4

    sys.path.insert(0, str(HERE))
    import servers  # benchmarks/servers.py

    os.sched_setaffinity(0, {SERVER_CPU})
    env = os.environ | {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    if ns.pycache == "compiled":
        env["PYTHONPYCACHEPREFIX"] = temp_dir("kinrun-pycache-")
        env.pop("PYTHONDONTWRITEBYTECODE")
    sides: list[tuple[str, list[str], dict[str, str]]] = []
    if ns.ab:
        site = old_site(ns.ab.resolve())
        env_old = env | {"PYTHONPATH": str(site)}
        if "PYTHONPYCACHEPREFIX" in env:
            env_old["PYTHONPYCACHEPREFIX"] = temp_dir("kinrun-pycache-old-")
        env_new = env
        if ns.ab_new:
            env_new = env | {"PYTHONPATH": str(old_site(ns.ab_new.resolve()))}
            if "PYTHONPYCACHEPREFIX" in env:
                env_new["PYTHONPYCACHEPREFIX"] = temp_dir("kinrun-pycache-new-")
        for name in ns.ab_contenders.split(","):
            sides += [(f"{name} (old)", CONTENDERS[name], env_old),
                      (f"{name} (new)", CONTENDERS[name], env_new)]
    else:
        sides = [(name, CONTENDERS[name], env) for name in ns.contenders.split(",")]
    counts = [int(x) for x in ns.pods.split(",")]
    load = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    report = [f"startup.py {' '.join(argv or sys.argv[1:])} -- {started}, load average "
              f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, {ns.runs} runs, pycache {ns.pycache}"]
    with servers.Embedded(history=1000) as srv:
        for n in counts:
            srv.prepare_pods(f"startup-{n}", n)
        if ns.pycache == "compiled":  # prime the byte-code caches: one unmeasured run per side
            for _, argv_c, env_c in sides:
                spawn(argv_c, srv.kubeconfig, f"startup-{counts[0]}", counts[0], env_c)
        if not ns.breakdown_only:
            for n in counts:
                rows: dict[str, list[dict[str, Any]]] = {s[0]: [] for s in sides}
                for rep in range(ns.runs):
                    order = sides if rep % 2 == 0 else sides[::-1]
                    for name, argv_c, env_c in order:
                        r = spawn(argv_c, srv.kubeconfig, f"startup-{n}", n, env_c)
                        if not r["ok"]:
                            print(f"{name} n={n} failed:\n{r['stderr']}", file=sys.stderr)
                        rows[name].append(r)
                        print(f"  n={n} rep={rep} {name}: " + (
                            f"first {r['first']:.3f}s open {r['open']:.3f}s cpu {r['cpu']:.3f}s"
                            if r["ok"] else "FAILED"), file=sys.stderr)
                report += ["", f"{n} Pod(s), medians of {ns.runs} interleaved processes:", "",
                           "| contender | first reconcile (s) | first request (s) | "
                           "all synced (s) | CPU (s) | ok |", "|---|---:|---:|---:|---:|---:|"]
                for name, rs in rows.items():
                    report.append(f"| {name} | {med(rs, 'first'):.3f} | {med(rs, 'open'):.3f} | "
                                  f"{med(rs, 'synced'):.3f} | {med(rs, 'cpu'):.3f} | "
                                  f"{sum(r['ok'] for r in rs)}/{len(rs)} |")
                names = list(rows)
                pairs = ([(names[i], names[i + 1]) for i in range(0, len(names), 2)] if ns.ab
                         else [(names[0], b) for b in names[1:]])  # A/B: new / old
                report.append("")
                for a, b in pairs:
                    report.append(f"- ratio {b} / {a}: first reconcile "
                                  f"{med(rows[b], 'first') / med(rows[a], 'first'):.2f}x, "
                                  f"all synced {med(rows[b], 'synced') / med(rows[a], 'synced'):.2f}x, "
                                  f"CPU {med(rows[b], 'cpu') / med(rows[a], 'cpu'):.2f}x")
        if not ns.no_breakdown and not ns.ab:
            runs = [breakdown(srv.kubeconfig, f"startup-{counts[0]}", env)
                    for _ in range(ns.breakdown_runs)]
            report += ["", f"Breakdown of kinrun CONFIG ({counts[0]} Pod(s), median of "
                       f"{ns.breakdown_runs} probe runs):", "", print_breakdown(runs)]
    print("\n".join(report))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        for path in TEMP_DIRS:
            shutil.rmtree(path, ignore_errors=True)
