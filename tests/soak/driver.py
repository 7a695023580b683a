"""The soak driver: kinrun (the real CLI, a subprocess) on a real kube-apiserver through a
FaultProxy, randomised writes interleaved with faults, then the checks.

One run (``run_soak``):
  1. start kinrun on a config watching ConfigMaps ``soak=in`` in a fresh namespace, with the
     recorder plugin (``recorder_plugin.py``), through the proxy;
  2. for a bounded number of steps (and wall-clock budget), from a fixed seed: 1-3 writes
     (create, update, delete, re-create: same name, new uid; relabel into or out of the
     selector), then a fault (watch drop/close/410/stall/bookmark/garbage/truncate, 429 and 5xx
     bursts, kube-apiserver restart, etcd wipe);
  3. stop faulting and wait until it settles: the cache equals a quorum LIST and every key's
     last reconcile is its final state (bounded);
  4. SIGTERM kinrun (it must drain and exit 0), then check the records (``check``).

Writes go straight to the API server (not through the proxy), as another client would.
"""

from __future__ import annotations

import json
import os
import random
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kinrun.testing.envtest import EnvtestServer, unique_namespace_name
from kinrun.testing.fault_proxy import FaultProxy

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SELECTOR = "soak=in"
INFORMER = "cms"

STREAM_FAULT_WEIGHTS = {"close": 3, "expire": 3, "bookmark": 3, "stall": 2, "drop": 1,
                        "garbage": 1, "truncate": 1, "429": 1, "5xx": 1}
BACKOFF_FAULTS = frozenset({"drop", "garbage", "truncate"})
"""Faults after which kinrun's reflector backs off (800 ms doubling to 30 s, reset after 2 min
without failures): spaced by ``SoakParams.backoff_gap`` so that the soak keeps moving."""


@dataclass
class SoakParams:
    """One soak's knobs. Times in seconds."""

    seed: int = 20240601
    steps: int = 400                 # write+fault rounds at most
    budget: float = 100.0            # wall-clock bound of the fault phase
    min_faults: int = 0              # keep going (within steps and budget) until this many reached
    names: int = 14                  # object names in use (so names are reused: re-creates)
    fault_probability: float = 0.8   # per step
    restarts: int = 1                # kube-apiserver restarts, spread over the run
    wipes: int = 1                   # etcd wipes + kube-apiserver restart, spread over the run
    inactivity: float = 2.0          # watchInactivityTimeout given to kinrun
    stall_max: float = 20.0          # proxy ends a stall the client did not notice after this
    backoff_gap: float = 30.0        # seconds between faults that make the reflector back off
    settle_timeout: float = 120.0
    workers: int = 4
    log_dir: str = ""                # kept when set; else a temp dir
    break_on_purpose: str = ""       # "skip-relist": the child applies no LIST after the first


@dataclass
class SoakResult:
    """Figures and violations of one soak."""

    params: dict[str, Any]
    steps: int = 0
    writes: dict[str, int] = field(default_factory=dict)
    faults: dict[str, dict[str, int]] = field(default_factory=dict)
    faults_reached: int = 0
    relists: int = 0
    watches: int = 0
    reconciles: int = 0
    deletes_by_reason: dict[str, int] = field(default_factory=dict)
    divergence: dict[str, int] = field(default_factory=dict)
    settle_seconds: float | None = None
    fault_phase_seconds: float = 0.0
    exit_code: int | None = None
    shimmed: bool | None = None
    reason_checked: bool = False
    violations: dict[str, list[str]] = field(default_factory=dict)
    log_dir: str = ""

    def summary(self) -> str:
        """The figures, one per line."""
        lines = [f"steps: {self.steps} in {self.fault_phase_seconds:.0f} s; writes: {self.writes}",
                 f"faults reached/requested: " + ", ".join(
                     f"{k} {v.get('reached', 0)}/{v.get('requested', 0)}"
                     for k, v in sorted(self.faults.items())),
                 f"faults reached in all: {self.faults_reached}",
                 f"relists (LISTs after the first): {self.relists}; watches opened: {self.watches}",
                 f"reconciles: {self.reconciles}; onDelete by reason: {self.deletes_by_reason}",
                 f"divergence at the end (missing/extra/stale): {self.divergence}",
                 f"time to settle: {self.settle_seconds if self.settle_seconds is None else round(self.settle_seconds, 1)} s",
                 f"kinrun exit code: {self.exit_code}; inactivity shim needed: {self.shimmed}; "
                 f"reason checks ran: {self.reason_checked}",
                 f"violations: {sum(len(v) for v in self.violations.values())} "
                 f"{ {k: len(v) for k, v in self.violations.items()} }"]
        for name, items in sorted(self.violations.items()):
            lines += [f"  {name}: {item}" for item in items[:5]]
        return "\n".join(lines)


# -- a raw client for the driver's writes ------------------------------------------------------

class Kube:
    """Minimal JSON client straight to the API server (admin token). Not thread-safe."""

    def __init__(self, server: EnvtestServer) -> None:
        self.server = server
        self._tls = ssl.create_default_context()
        self._tls.check_hostname = False
        self._tls.verify_mode = ssl.CERT_NONE

    def call(self, method: str, path: str, body: Any = None,
             content_type: str = "application/json") -> tuple[int, dict[str, Any]]:
        """(status, decoded body); retries connection failures for up to 60 s (restarts)."""
        data = json.dumps(body).encode() if body is not None else None
        deadline = time.monotonic() + 60
        while True:
            req = urllib.request.Request(self.server.url + path, data=data, method=method, headers={
                "Authorization": f"Bearer {self.server.token}", "Content-Type": content_type})
            try:
                with urllib.request.urlopen(req, timeout=30, context=self._tls) as resp:
                    return resp.status, json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as err:
                if err.code in (500, 503, 504) and time.monotonic() < deadline:
                    time.sleep(0.5)
                    continue
                return err.code, json.loads(err.read() or b"{}")
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)


# -- the run ---------------------------------------------------------------------------------

class Soak:
    """One soak run over ``server`` (see module docstring)."""

    def __init__(self, server: EnvtestServer, params: SoakParams) -> None:
        self.server, self.p = server, params
        self.rand = random.Random(params.seed)
        self.kube = Kube(server)
        self.ns = unique_namespace_name("soak", prefix="soak")
        self.dir = Path(params.log_dir or tempfile.mkdtemp(prefix="kinrun-soak-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.record = self.dir / "records.jsonl"
        self.model: dict[str, tuple[str, bool, str]] = {}  # name -> (uid, in selector, rv)
        self.ops: list[dict[str, Any]] = []
        self.writes: Counter[str] = Counter()
        self.proxy = FaultProxy(server.url)
        self.kinrun: subprocess.Popen[bytes] | None = None
        self._last_backoff_fault = -1e9
        self._dump_seq = 0

    @property
    def cm_path(self) -> str:
        return f"/api/v1/namespaces/{self.ns}/configmaps"

    def run(self) -> SoakResult:
        result = SoakResult(params=asdict(self.p), log_dir=str(self.dir))
        self.server.create_namespace(self.ns)
        with self.proxy:
            self._start_kinrun()
            try:
                self._wait_started()
                started = time.monotonic()
                result.steps = self._fault_phase()
                result.fault_phase_seconds = time.monotonic() - started
                settled_at = time.monotonic()
                result.divergence = self._settle()
                if sum(result.divergence.values()) == 0 and not result.divergence.get("unsettled"):
                    result.settle_seconds = time.monotonic() - settled_at
            finally:
                result.exit_code = self._stop_kinrun()
            result.faults = self.proxy.counts()
            result.relists = max(0, self.proxy.count("list", self.cm_path) - 1)
            result.watches = self.proxy.count("watch", self.cm_path)
        for kind in ("restart", "wipe"):
            n = sum(1 for op in self.ops if op["op"] == kind)
            result.faults[kind] = {"requested": n, "reached": n}
        result.faults_reached = sum(v["reached"] for k, v in result.faults.items()
                                    if not k.startswith("stall_"))
        result.writes = dict(self.writes)
        records = _read_records(self.record)
        result.shimmed = any(r["t"] == "shim" for r in records)
        check(records, self.ops, self._server_state(), result)
        (self.dir / "ops.jsonl").write_text("".join(json.dumps(o) + "\n" for o in self.ops))
        (self.dir / "result.json").write_text(json.dumps(asdict(result), indent=1))
        return result

    # -- kinrun ----------------------------------------------------------------------------

    def _start_kinrun(self) -> None:
        kubeconfig = self.proxy.write_kubeconfig(self.dir / "kubeconfig", token=self.server.token,
                                                 namespace=self.ns)
        config = {
            "apiVersion": "kinrun.dev/v1alpha1", "kind": "ControllerConfig",
            "cluster": {"kubeconfig": kubeconfig, "qps": 500, "burst": 1000},
            "plugins": [str(HERE / "recorder_plugin.py")],
            "informers": {INFORMER: {
                "apiVersion": "v1", "kind": "ConfigMap", "namespaces": [self.ns],
                "labelSelector": SELECTOR,
                "watchInactivityTimeout": f"{self.p.inactivity}s"}},
            "controllers": [{"name": "soak", "for": INFORMER, "workers": self.p.workers,
                             "rateLimiter": {"baseDelay": "5ms", "maxDelay": "1s"},
                             "reconcile": {"hooks": True}}],
        }
        path = self.dir / "kinrun.yaml"
        path.write_text(json.dumps(config, indent=1))
        env = {**os.environ, "KINRUN_SOAK_RECORD": str(self.record),
               "KINRUN_SOAK_INFORMER": INFORMER, "KINRUN_SOAK_INACTIVITY": str(self.p.inactivity),
               "KINRUN_SOAK_BREAK": self.p.break_on_purpose}
        kinrun = Path(sys.executable).with_name("kinrun")
        argv = [str(kinrun)] if kinrun.exists() else [sys.executable, "-m", "kinrun.cli"]
        log = open(self.dir / "kinrun.log", "ab")  # noqa: SIM115 - closed with the process
        self.kinrun = subprocess.Popen([*argv, str(path), "--log-level", "info"], env=env,
                                       stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                                       stdin=subprocess.DEVNULL)
        log.close()

    def _wait_started(self) -> None:
        ok = self.proxy.wait_for(lambda p: p.open_watches(self.cm_path) >= 1, 60)
        if not ok:
            raise RuntimeError(f"kinrun never opened its watch; see {self.dir / 'kinrun.log'}")

    def _stop_kinrun(self) -> int | None:
        assert self.kinrun is not None
        if self.kinrun.poll() is None:
            self.kinrun.send_signal(signal.SIGTERM)
        try:
            return self.kinrun.wait(30)
        except subprocess.TimeoutExpired:
            self.kinrun.kill()
            self.kinrun.wait(10)
            return None  # hung: reported as exit code None

    # -- writes ----------------------------------------------------------------------------

    def _log(self, op: str, name: str, t0: float, **kw: Any) -> None:
        self.ops.append({"op": op, "name": name, "t0": t0, "t1": time.monotonic(), **kw})
        self.writes[op] += 1

    def _create(self, name: str) -> None:
        inside = self.rand.random() < 0.75
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"soak": "in" if inside else "out"}},
                "data": {"v": "0"}}
        t0 = time.monotonic()
        code, obj = self.kube.call("POST", self.cm_path, body)
        if code == 201:
            meta = obj["metadata"]
            self.model[name] = (meta["uid"], inside, meta["resourceVersion"])
            self._log("create", name, t0, uid=meta["uid"], inside=inside)

    def _patch(self, name: str, patch: dict[str, Any], op: str) -> None:
        uid, was_in, _ = self.model[name]
        t0 = time.monotonic()
        code, obj = self.kube.call("PATCH", f"{self.cm_path}/{name}", patch,
                                   "application/merge-patch+json")
        if code == 200:
            inside = obj["metadata"].get("labels", {}).get("soak") == "in"
            self.model[name] = (uid, inside, obj["metadata"]["resourceVersion"])
            self._log(op, name, t0, uid=uid, inside=inside, was_in=was_in)
        elif code == 404:
            self.model.pop(name, None)

    def _delete(self, name: str) -> None:
        uid, was_in, _ = self.model.pop(name)
        t0 = time.monotonic()
        code, _obj = self.kube.call("DELETE", f"{self.cm_path}/{name}")
        if code in (200, 202):
            self._log("delete", name, t0, uid=uid, was_in=was_in)

    def _write_step(self) -> None:
        name = f"cm-{self.rand.randrange(self.p.names)}"
        if name not in self.model:
            self._create(name)
            return
        roll = self.rand.random()
        if roll < 0.35:
            self._patch(name, {"data": {"v": str(self.rand.randrange(10**6))}}, "update")
        elif roll < 0.6:
            inside = self.model[name][1]
            self._patch(name, {"metadata": {"labels": {"soak": "out" if inside else "in"}}},
                        "relabel")
        elif roll < 0.8:
            self._delete(name)
        else:
            self._delete(name)
            self._create(name)  # same name, new uid
            self.writes["recreate"] += 1

    # -- faults ----------------------------------------------------------------------------

    def _fault_phase(self) -> int:
        p = self.p
        started = time.monotonic()
        deadline = started + p.budget
        specials = _spread({"restart": p.restarts, "wipe": p.wipes}, self.rand)
        step = 0
        while step < p.steps and time.monotonic() < deadline:
            step += 1
            for _ in range(self.rand.randint(1, 3)):
                self._write_step()
            progress = max(step / p.steps, (time.monotonic() - started) / p.budget)
            if specials and progress >= specials[0][0]:
                self._server_fault(specials.pop(0)[1])
            elif self.rand.random() < p.fault_probability:
                self._stream_fault()
            if p.min_faults and self._reached() >= p.min_faults and not specials:
                break  # enough faults reached, every restart and wipe done
        return step

    def _reached(self) -> int:
        return sum(v["reached"] for k, v in self.proxy.counts().items() if not k.startswith("stall_"))

    def _stream_fault(self) -> None:
        kinds = dict(STREAM_FAULT_WEIGHTS)
        if time.monotonic() - self._last_backoff_fault < self.p.backoff_gap:
            for kind in BACKOFF_FAULTS:
                kinds.pop(kind)
        kind = self.rand.choices(list(kinds), weights=list(kinds.values()))[0]
        if kind in BACKOFF_FAULTS:
            self._last_backoff_fault = time.monotonic()
        if not self.proxy.wait_for(lambda pr: pr.open_watches(self.cm_path) >= 1, 70):
            return  # kinrun is backing off: the fault would reach nothing
        px = self.proxy
        if kind == "429":
            px.fail_requests(self.rand.randint(1, 3), 429, retry_after=1, within=4,
                             match=self._is_cm_request)
            px.close_watches()  # the re-opening WATCH meets the burst
        elif kind == "5xx":
            px.fail_requests(self.rand.randint(1, 3), self.rand.choice([500, 503]),
                             retry_after=1, within=4, match=self._is_cm_request)
            px.close_watches()
        elif kind == "stall":
            px.stall_watches(self.p.stall_max)
        elif kind == "truncate":
            px.truncate_watches()
        else:
            getattr(px, f"{kind}_watches")()

    def _is_cm_request(self, method: str, target: str) -> bool:
        return target.startswith(self.cm_path)

    def _server_fault(self, kind: str) -> None:
        t0 = time.monotonic()
        if kind == "restart":
            self.server.restart_apiserver()
            self._log("restart", "", t0)
            return
        gone = {name: uid for name, (uid, inside, _rv) in self.model.items()}
        ins = {name: inside for name, (uid, inside, _rv) in self.model.items()}
        self.server.wipe_etcd()
        self.model.clear()
        self._log("wipe", "", t0, gone=gone, was_in=ins)
        self.server.create_namespace(self.ns)

    # -- settle ----------------------------------------------------------------------------

    def _server_state(self) -> dict[str, tuple[str, str]]:
        """Quorum LIST (resourceVersion ""), selector applied: key -> (uid, rv)."""
        code, body = self.kube.call("GET", f"{self.cm_path}?labelSelector={SELECTOR}")
        if code != 200:
            raise RuntimeError(f"quorum LIST: HTTP {code}: {body}")
        return {f"{self.ns}/{o['metadata']['name']}": (o["metadata"]["uid"],
                                                       o["metadata"]["resourceVersion"])
                for o in body.get("items", [])}

    def _dump(self) -> dict[str, tuple[str, str]] | None:
        self._dump_seq += 1
        target = Path(f"{self.record}.dump.{self._dump_seq}")
        Path(f"{self.record}.req").write_text(str(self._dump_seq))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if target.exists():
                data = json.loads(target.read_text())
                target.unlink()
                return {k: tuple(v) for k, v in data["objects"].items()} if data["ready"] else None
            time.sleep(0.05)
        return None

    def _settle(self) -> dict[str, int]:
        """Wait until cache == server and every key's last reconcile is its final state;
        return the divergence counts at the end (all 0 when settled)."""
        deadline = time.monotonic() + self.p.settle_timeout
        while True:
            server, cache = self._server_state(), self._dump()
            div = divergence(server, cache or {})
            if sum(div.values()) == 0 and _reconciled(server, _read_records(self.record)):
                return div
            if time.monotonic() > deadline:
                div["unsettled"] = 1
                return div
            time.sleep(0.5)


def _spread(counts: dict[str, int], rand: random.Random) -> list[tuple[float, str]]:
    """When the server faults happen, as fractions of the run (steps or budget, whichever
    runs out first): evenly spread, kinds in shuffled order."""
    kinds = [k for k, n in counts.items() for _ in range(n)]
    rand.shuffle(kinds)
    return [((i + 1) / (len(kinds) + 1), k) for i, k in enumerate(kinds)]


def divergence(server: dict[str, tuple[str, str]], cache: dict[str, tuple[str, str]]) -> dict[str, int]:
    """missing (on the server, not cached), extra (cached, not on the server), stale (other
    uid or resourceVersion)."""
    return {"missing": sum(1 for k in server if k not in cache),
            "extra": sum(1 for k in cache if k not in server),
            "stale": sum(1 for k in server if k in cache and tuple(cache[k]) != tuple(server[k]))}


def _reconciled(server: dict[str, tuple[str, str]], records: list[dict[str, Any]]) -> bool:
    last = _last_records(records)
    for key, (uid, rv) in server.items():
        rec = last.get(key)
        if rec is None or not rec["live"] or (rec["uid"], rec["rv"]) != (uid, rv):
            return False
    return all(not rec["live"] for key, rec in last.items() if key not in server)


def _last_records(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}
    for rec in records:
        if rec["t"] == "rec" and (rec["key"] not in last or rec["end"] >= last[rec["key"]]["end"]):
            last[rec["key"]] = rec
    return last


def _read_records(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            pass  # a line being written right now
    return out


# -- the checks ------------------------------------------------------------------------------

def _endings(ops: list[dict[str, Any]]) -> tuple[dict[str, list[tuple[float, str]]],
                                                 dict[str, float]]:
    """(uid -> [(t0, how)] for every time the object stopped matching the informer: "left"
    (relabelled out), "deleted" (deleted while in), "wiped" (etcd wiped while in);
    uid -> t0 of its deletion, in or out of the selector, or of the wipe)."""
    ends: dict[str, list[tuple[float, str]]] = defaultdict(list)
    gone: dict[str, float] = {}
    for op in ops:
        if op["op"] == "relabel" and op["was_in"] and not op["inside"]:
            ends[op["uid"]].append((op["t0"], "left"))
        elif op["op"] == "delete":
            gone[op["uid"]] = op["t0"]
            if op["was_in"]:
                ends[op["uid"]].append((op["t0"], "deleted"))
        elif op["op"] == "wipe":
            for name, uid in op["gone"].items():
                gone[uid] = op["t0"]
                if op["was_in"][name]:
                    ends[uid].append((op["t0"], "wiped"))
    return ends, gone


def check(records: list[dict[str, Any]], ops: list[dict[str, Any]],
          server: dict[str, tuple[str, str]], result: SoakResult) -> None:
    """Fill ``result.violations`` (name -> descriptions) and the reconcile figures.

    Checks: every onDelete carries the final state (ctx.old) of an object the primary cache
    saw, after that object stopped matching (deleted, relabelled out, wiped) -- never for a
    live object, never more often than it stopped matching; every object that stopped matching
    and was seen by the cache ends with an onDelete; reasons (when ReconcileContext has
    ``reason``): "deleted", "left" or "unknown" as the op log allows; each live object's last
    reconcile is its final version; no key reconciled on two threads at once.
    """
    v: dict[str, list[str]] = defaultdict(list)
    recs = sorted((r for r in records if r["t"] == "rec"), key=lambda r: r["start"])
    seen = {r["uid"] for r in records if r["t"] == "ev" and r["uid"]}
    ends, gone = _endings(ops)
    result.reconciles = len(recs)
    result.reason_checked = any(r["has_reason"] for r in recs)
    reasons: Counter[str] = Counter()
    deletes_so_far: Counter[str] = Counter()
    by_uid: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for rec in recs:
        if rec["uid"]:
            by_uid[rec["uid"]].append(rec)
        if rec["live"]:
            continue
        uid = rec["uid"]
        reasons[str(rec["reason"])] += 1
        if not rec["has_old"] or not uid:
            v["onDelete without the final state (ctx.old)"].append(rec["key"])
            continue
        if uid not in seen:
            v["onDelete for an object the cache never saw"].append(f"{rec['key']} {uid}")
        before = [how for t, how in ends.get(uid, []) if t < rec["start"]]
        deletes_so_far[uid] += 1
        if not before:
            v["onDelete for a live object"].append(f"{rec['key']} {uid} at {rec['start']:.2f}")
        elif deletes_so_far[uid] > len(before):
            v["more than one onDelete per departure"].append(f"{rec['key']} {uid}")
        if result.reason_checked:
            # "left" needs a departure before the reconcile; "deleted" a deletion (in or out
            # of the selector: a departure then a deletion coalesce) or a wipe before it.
            allowed = {"unknown"} | ({"left"} if "left" in before else set())
            if gone.get(uid, float("inf")) < rec["start"]:
                allowed.add("deleted")
            if rec["reason"] not in allowed:
                v["wrong deletion reason"].append(
                    f"{rec['key']} {uid}: {rec['reason']!r}, op log allows {sorted(allowed)}")
    live_uids = {uid for uid, _rv in server.values()}
    for uid, how in ends.items():
        if uid in live_uids or uid not in seen:
            continue
        mine = by_uid.get(uid, [])
        if not mine or mine[-1]["live"]:
            v["departed object without a final onDelete"].append(
                f"{uid} ({', '.join(h for _t, h in how)}); last record: "
                f"{'none' if not mine else 'live'}")
    last = _last_records(records)
    for key, (uid, rv) in server.items():
        rec = last.get(key)
        if rec is None or not rec["live"] or (rec["uid"], rec["rv"]) != (uid, rv):
            v["final version not reconciled last"].append(
                f"{key}: server {uid} {rv}, last record "
                f"{None if rec is None else (rec['live'], rec['uid'], rec['rv'])}")
    running: dict[str, dict[str, Any]] = {}
    for rec in recs:
        prev = running.get(rec["key"])
        if prev is not None and rec["start"] < prev["end"] and rec["thread"] != prev["thread"]:
            v["key reconciled by two workers at once"].append(rec["key"])
        if prev is None or rec["end"] > prev["end"]:
            running[rec["key"]] = rec
    if sum(result.divergence.values()):
        v["cache differs from the server"].append(str(result.divergence))
    if result.exit_code != 0:
        v["kinrun did not stop cleanly"].append(f"exit code {result.exit_code}")
    result.deletes_by_reason = dict(reasons)
    result.violations = dict(v)


CONTRACT_CHECKS = frozenset({"wrong deletion reason", "departed object without a final onDelete"})
"""Checks that depend on the deletion contract the Manager is gaining (ctx.reason; onDelete for
the old uid before the re-created object's reconcile)."""


def run_soak(server: EnvtestServer, params: SoakParams) -> SoakResult:
    """Run one soak on ``server`` (it will be restarted and wiped). Returns the figures."""
    return Soak(server, params).run()


def main(argv: list[str] | None = None) -> int:
    """``scripts/soak``: a long soak; prints the figures; exit 1 on any violation."""
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SoakParams.seed)
    parser.add_argument("--min-faults", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=1400)
    parser.add_argument("--budget", type=float, default=1500.0, help="seconds of faulting at most")
    parser.add_argument("--restarts", type=int, default=3)
    parser.add_argument("--wipes", type=int, default=2)
    parser.add_argument("--backoff-gap", type=float, default=45.0)
    parser.add_argument("--log-dir", default="")
    args = parser.parse_args(argv)
    params = SoakParams(seed=args.seed, steps=args.steps, budget=args.budget,
                        min_faults=args.min_faults, restarts=args.restarts, wipes=args.wipes,
                        backoff_gap=args.backoff_gap, log_dir=args.log_dir)
    with EnvtestServer() as server:
        result = run_soak(server, params)
    print(result.summary())
    print(f"logs: {result.log_dir}")
    return 1 if result.violations else 0


if __name__ == "__main__":
    sys.exit(main())
