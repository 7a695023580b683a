"""Medians, ratios and the targets of issue 6, from the raw runs of ``run.py``; the Markdown table.

``summarize(res) -> dict`` takes the whole result document (``res["runs"][workload]`` is a list
of contender results, one per repetition) and returns, per workload and contender, the median
of each measure over the successful repetitions, the ratios of kinrun to each peer, and one
entry per target with the measured value and whether it holds.
"""

from __future__ import annotations

import statistics
from typing import Any

KINRUN = "kinrun"


def _median(runs: list[dict], key: str, sub: str | None = None) -> float | None:
    vals = [(r[key][sub] if sub else r[key]) for r in runs
            if r.get("ok") and key in r and (sub is None or sub in r[key])]
    return statistics.median(vals) if vals else None


def _by_contender(runs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in runs:
        if "contender" in r:
            out.setdefault(r["contender"], []).append(r)
    return out


MEASURES = {
    "events": [("events_per_s", None), ("events_per_cpu_s", None), ("gc_max_pause", None),
               ("gc_max_pause_cpu", None), ("gc_total", None), ("calls", None)],
    "envtest-events": [("events_per_s", None), ("events_per_cpu_s", None),
                       ("gc_max_pause", None), ("calls", None), ("server_cpu_total_s", None)],
    "sync": [("sync_s", None), ("sync_from_open_s", None), ("sync_cpu_total_s", None),
             ("sync_cpu_s", None), ("rss_per_obj", None), ("gc_max_pause", None),
             ("gc_max_pause_cpu", None), ("heap_per_obj", None)],
    "memory": [("traced_per_obj", None), ("rss_per_obj", None), ("gc_max_pause", None),
               ("heap_inuse_per_obj", None)],
    "latency": [("latency", "p50"), ("latency", "p99"), ("latency", "max"),
                ("achieved_rate", None), ("calls", None)],
    "envtest": [("sync_s", None), ("sync_from_open_s", None), ("sync_cpu_total_s", None),
                ("sync_cpu_s", None), ("rss_per_obj", None), ("heap_per_obj", None)],
    "envtest-latency": [("latency", "p50"), ("latency", "p99"), ("latency", "max"),
                        ("achieved_rate", None), ("events_after_sync", None),
                        ("events_per_cpu_s", None)],
}


def summarize(res: dict[str, Any]) -> dict[str, Any]:
    """Medians per workload and contender, kinrun's ratios, and the targets (see module doc)."""
    med: dict[str, dict[str, dict[str, Any]]] = {}
    for workload, measures in MEASURES.items():
        for name, runs in _by_contender(res["runs"].get(workload, [])).items():
            row = {"ok_runs": sum(1 for r in runs if r.get("ok")), "runs": len(runs)}
            for key, sub in measures:
                row[f"{key}.{sub}" if sub else key] = _median(runs, key, sub)
            med.setdefault(workload, {})[name] = row
    wq = res["runs"].get("workqueue", [])
    if wq:
        med["workqueue"] = _workqueue(wq)
    return {"medians": med, "ratios": _ratios(med), "targets": _targets(med)}


def _workqueue(runs: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in runs:
        if r.get("ok", True) and "cycles_per_s" in r:
            out.setdefault(f"{r['queue']} workers={r['workers']}", []).append(r["cycles_per_s"])
    return {k: {"cycles_per_s": statistics.median(v)} for k, v in out.items()}


def _get(med: dict, workload: str, name: str, key: str) -> float | None:
    return (med.get(workload, {}).get(name) or {}).get(key)


PEERS = ("client-watch", "client-informer", "kopf", "bare", "client-go")
KINRUNS = ("kinrun", "kinrun-cli", "kinrun-gc-fix")
"""The kinrun contenders judged against the targets (the library, the CLI, the proposed GC fix)."""
RATIO_KINRUNS = KINRUNS + ("kinrun-pod-logger",)
"""The kinrun contenders with ratio rows (the pod-logger example has no target of its own)."""
CLIENT_GOS = ("client-go", "client-go-protobuf")
SYNC_MEASURES = (("sync_s", "wall, from process start"),
                 ("sync_from_open_s", "wall, from first request"),
                 ("sync_cpu_total_s", "CPU, from process start"),
                 ("sync_cpu_s", "CPU, from first request"))


def _ratios(med: dict) -> dict[str, Any]:
    """Per workload, each kinrun contender's event rate over each peer's (wall and per
    CPU-second; above 1: kinrun handles more) and its sync time over the bare LIST's and
    client-go's (each measure; below 1: kinrun takes less). Beside the kinrun/client-go rows,
    the same ratio for ``bare`` (urllib3 + orjson, no pipeline): how much of the gap is the
    decoder (``CLIENT_GO_CAVEAT``)."""
    out: dict[str, Any] = {}
    for wl in ("events", "envtest-events"):
        for name in RATIO_KINRUNS + ("bare",):
            for key, label in (("events_per_s", "wall"), ("events_per_cpu_s", "CPU")):
                k = _get(med, wl, name, key)
                for peer in PEERS + CLIENT_GOS:
                    if peer == name or (name == "bare" and peer not in CLIENT_GOS):
                        continue
                    v = _get(med, wl, peer, key)
                    if k and v:
                        out[f"{wl} {name}/{peer} ({label})"] = k / v
    for wl in ("sync", "envtest"):
        for name in RATIO_KINRUNS + ("bare",):
            if name != "bare":
                for key, label in SYNC_MEASURES:
                    kb, bb = _get(med, wl, name, key), _get(med, wl, "bare", key)
                    if kb and bb:
                        out[f"{wl} {name}/bare ({label})"] = kb / bb
            for peer in CLIENT_GOS:  # below 1: less CPU than client-go
                kb, gb = _get(med, wl, name, "sync_cpu_s"), _get(med, wl, peer, "sync_cpu_s")
                if kb and gb:
                    out[f"{wl} {name}/{peer} (CPU, from first request)"] = kb / gb
    wl = "envtest-latency"
    for name in RATIO_KINRUNS + ("bare",):
        k = _get(med, wl, name, "events_per_cpu_s")
        for peer in ("bare",) + CLIENT_GOS:
            v = _get(med, wl, peer, "events_per_cpu_s")
            if k and v and peer != name and not (name == "bare" and peer == "bare"):
                out[f"{wl} {name}/{peer} (events per CPU-second after sync)"] = k / v
    return out


def _targets(med: dict) -> list[dict[str, Any]]:
    """One row per target: ``values``/``met`` per kinrun contender (None: not measured)."""
    r = _ratios(med)
    rows: list[tuple[str, str, Any]] = []   # (target, goal, name -> (value, met))
    for key, label in (("events_per_s", "wall"), ("events_per_cpu_s", "per CPU-second")):
        rows.append((f"event throughput ({label})", ">= 10,000 events/s",
                     lambda n, key=key: _check(_get(med, "events", n, key),
                                               lambda v: v >= 10_000)))
    for peer, goal in (("client-watch", 15), ("kopf", 10), ("client-informer", 10)):
        for label in ("wall", "CPU"):
            rows.append((f"events vs {peer} ({label})", f">= {goal}x",
                         lambda n, peer=peer, label=label, goal=goal: _check(
                             r.get(f"events {n}/{peer} ({label})"), lambda v: v >= goal)))
    for wl in ("sync", "envtest"):
        for _, label in SYNC_MEASURES:
            rows.append((f"initial sync ({wl}) vs bare LIST+orjson, {label}", "<= 2x",
                         lambda n, wl=wl, label=label: _check(
                             r.get(f"{wl} {n}/bare ({label})"), lambda v: v <= 2)))
    rows.append(("bytes per cached Pod (tracemalloc)", "<= 30 KB",
                 lambda n: _check(_get(med, "memory", n, "traced_per_obj"),
                                  lambda v: v <= 30 * 1024)))
    rows.append(("longest GC pause, 10k Pods cached (events, sync)", "<= 50 ms",
                 lambda n: _check(_max(_get(med, "events", n, "gc_max_pause"),
                                       _get(med, "sync", n, "gc_max_pause")),
                                  lambda v: v <= 0.050)))
    rows.append(("p99 write -> reconcile at 1,000 writes/s", "< 50 ms",
                 lambda n: _check(_get(med, "latency", n, "latency.p99"), lambda v: v < 0.050)))
    out = []
    for target, goal, fn in rows:
        cells = {n: fn(n) for n in _present(med)}
        out.append({"target": target, "goal": goal,
                    "values": {n: c[0] for n, c in cells.items()},
                    "met": {n: c[1] for n, c in cells.items()}})
    return out


def _present(med: dict) -> list[str]:
    """The kinrun contenders that have results in this run."""
    return [n for n in KINRUNS if any(n in rows for rows in med.values())]


def _check(value: float | None, ok: Any) -> tuple[float | None, bool | None]:
    return (value, None if value is None else bool(ok(value)))


def _max(*values: float | None) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


# -- Markdown ----------------------------------------------------------------------------------

def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "—"
    if unit == "ms":
        return f"{v * 1e3:,.1f} ms"
    if unit == "KB":
        return f"{v / 1024:,.1f} KB"
    if unit == "s":
        return f"{v:,.2f} s"
    if unit == "x":
        return f"{v:,.2f}x"
    if isinstance(v, float):
        return f"{v:,.0f}"
    return str(v)


COLUMNS = {
    "events": [("events_per_s", "events/s (wall)", ""),
               ("events_per_cpu_s", "events per CPU-second", ""),
               ("gc_max_pause", "longest GC pause", "ms"),
               ("gc_max_pause_cpu", "longest GC pause, CPU", "ms"),
               ("gc_total", "GC total", "s"), ("calls", "handler calls", "")],
    "sync": [("sync_s", "wall from process start", "s"),
             ("sync_from_open_s", "wall from first request", "s"),
             ("sync_cpu_total_s", "CPU from process start", "s"),
             ("sync_cpu_s", "CPU from first request", "s"),
             ("rss_per_obj", "RSS per Pod", "KB"), ("gc_max_pause", "longest GC pause", "ms"),
             ("gc_max_pause_cpu", "longest GC pause, CPU", "ms")],
    "memory": [("traced_per_obj", "tracemalloc per Pod", "KB"),
               ("rss_per_obj", "RSS per Pod (traced run)", "KB")],
    "latency": [("latency.p50", "p50", "ms"), ("latency.p99", "p99", "ms"),
                ("latency.max", "max", "ms"), ("achieved_rate", "writes/s achieved", ""),
                ("calls", "handler calls", "")],
    "envtest": [("sync_s", "wall from process start", "s"),
                ("sync_from_open_s", "wall from first request", "s"),
                ("sync_cpu_total_s", "CPU from process start", "s"),
                ("sync_cpu_s", "CPU from first request", "s"),
                ("rss_per_obj", "RSS per Pod", "KB")],
    "envtest-events": [("events_per_s", "events/s (wall)", ""),
                       ("events_per_cpu_s", "events per CPU-second", ""),
                       ("gc_max_pause", "longest GC pause", "ms"),
                       ("calls", "handler calls", ""),
                       ("server_cpu_total_s", "kube-apiserver + etcd CPU", "s")],
    "envtest-latency": [("latency.p50", "p50", "ms"), ("latency.p99", "p99", "ms"),
                        ("latency.max", "max", "ms"), ("achieved_rate", "PATCHes/s achieved", ""),
                        ("events_after_sync", "events after sync", ""),
                        ("events_per_cpu_s", "events per CPU-second after sync", "")],
}

TITLES = {
    "events": "Workload 1 — event throughput (watch replay, embedded server)",
    "sync": "Workload 2 — initial sync (embedded server)",
    "envtest": "Workload 2 — initial sync (real kube-apiserver, envtest)",
    "envtest-events": ("Workload 1b — event throughput (watch replay, real kube-apiserver,"
                       " envtest)"),
    "memory": "Workload 3 — memory after sync (tracemalloc run)",
    "latency": "Workload 4 — write -> handler latency (embedded server)",
    "envtest-latency": "Workload 4b — PATCH -> handler latency (real kube-apiserver, envtest)",
}


CLIENT_GO_CAVEAT = (
    "These rows compare decoders more than pipelines. Over JSON, kinrun cuts managedFields out"
    " of the bytes before orjson decodes the rest, and a config whose reads are known decodes"
    " only those fields (`kinrun-cli`: `reads: [metadata]`; `kinrun-pod-logger`: what its"
    " template reads); client-go 1.20 decodes every field,"
    " managedFields included, walking each event's bytes several times (encoding/json to"
    " frame it and read its kind, json-iterator for the typed structs; HISTORY.md, \"client-go"
    " beside kinrun\"). The `bare/client-go` rows (urllib3 + orjson, no pipeline, managedFields"
    " decoded too) show how much of the gap is the decoder alone. kube-controller-manager and"
    " the kubelet ask for protobuf: the `client-go-protobuf` rows (kube-apiserver only) are"
    " the comparison with them; most controller-runtime operators use JSON. Events rows above"
    " 1: more events per second than client-go; sync rows below 1: less CPU. For the"
    " pipeline's own cost read the kinrun/bare rows above.")
"""Printed right above the client-go ratio rows (issue 30: the rows alone overstate what the
pipeline wins)."""


def markdown(res: dict[str, Any]) -> str:
    """The results as Markdown tables (medians of the repetitions), ratios and targets."""
    s = res["summary"]
    sc = res["scale"]
    lines = [f"Run {res['started']}, {sc['repeat']} repetition(s), medians"
             f"{' (QUICK scale)' if res.get('quick') else ''}.", ""]
    for wl, cols in COLUMNS.items():
        rows = s["medians"].get(wl)
        if not rows:
            continue
        lines += [f"### {TITLES[wl]}", "",
                  "| contender | " + " | ".join(c[1] for c in cols) + " | ok runs |",
                  "|---|" + "---:|" * (len(cols) + 1)]
        for name, row in rows.items():
            cells = [_fmt(row.get(k), u) for k, _, u in cols]
            lines.append(f"| {name} | " + " | ".join(cells) +
                         f" | {row['ok_runs']}/{row['runs']} |")
        lines.append("")
    if s["medians"].get("workqueue"):
        lines += ["### Workload 5 — workqueue add/get/done cycles", "",
                  "| queue | cycles/s |", "|---|---:|"]
        for k, v in s["medians"]["workqueue"].items():
            lines.append(f"| {k} | {_fmt(v['cycles_per_s'])} |")
        lines.append("")
    own = {k: v for k, v in s["ratios"].items() if "client-go" not in k}
    beside_go = {k: v for k, v in s["ratios"].items() if "client-go" in k}
    lines += ["### Ratios", "", "| ratio | value |", "|---|---:|"]
    lines += [f"| {k} | {_fmt(v, 'x')} |" for k, v in own.items()]
    if beside_go:
        lines += ["", "### Ratios beside client-go", "", CLIENT_GO_CAVEAT, "",
                  "| ratio | value |", "|---|---:|"]
        lines += [f"| {k} | {_fmt(v, 'x')} |" for k, v in beside_go.items()]
    names = list(s["targets"][0]["values"]) if s["targets"] else []
    lines += ["", "### Targets", "",
              "| target | goal | " + " | ".join(names) + " |",
              "|---|---|" + "---:|" * len(names)]
    for t in s["targets"]:
        unit = ("x" if t["goal"].endswith("x") else "ms" if "ms" in t["goal"] else
                "KB" if "KB" in t["goal"] else "")
        cells = []
        for n in names:
            met = {True: "", False: " **no**", None: ""}[t["met"][n]]
            cells.append(_fmt(t["values"][n], unit) + met)
        lines.append(f"| {t['target']} | {t['goal']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
