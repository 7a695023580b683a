"""Sharding end to end on a real kube-apiserver: three kinrun replicas split a few thousand
ConfigMaps; one is killed (SIGKILL) and another started.

Checked from what the replicas record (``recorder_plugin``: every reconcile's replica and
interval, on one monotonic clock) and what they expose (``kinrun_informer_objects``):

* every object is labelled and reconciled; each replica caches 25-42% of them;
* no two replicas ever reconcile one object at overlapping times (before, during and after
  the kill and the join; a 3 s resync keeps every replica reconciling all the time, so a
  move without the drain handshake shows up as overlaps: seen with the drain replaced by a
  direct move), and no move runs ``onDelete``
  (no reconcile with ``live: false``);
* after the SIGKILL, the dead replica's objects are reconciled by the others; a new replica
  gets its share. Both durations are printed (``-s``), not asserted: timing goals live in
  benchmarks/.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kinrun.kube import Client
from kinrun.sharding.keys import drain_label, object_key, shard_label
from kinrun.sharding.ring import Ring
from tests.e2e.harness import KinrunProcess

pytestmark = [pytest.mark.e2e, pytest.mark.envtest]

N = 1500
RING = "e2e"
HERE = Path(__file__).resolve().parent
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
cluster: {{qps: 2000, burst: 4000}}
plugins: [{plugin}]
informers:
  cms: {{apiVersion: v1, kind: ConfigMap, namespaces: [{ns}], labelSelector: app=sharded,
         resyncPeriod: 3s}}
controllers:
  - name: rec
    for: cms
    workers: 4
    reconcile: {{hooks: true}}
sharding: {{ring: {ring}, namespace: {ns}, leaseDuration: {lease}s, renewDeadline: {renew}s,
            retryPeriod: 1s, syncPeriod: 20s}}
metrics: {{port: 0, address: 127.0.0.1}}
"""
DEADLINE = float(os.environ.get("KINRUN_SHARD_DEADLINE", "150"))
# Leases long enough that a loaded machine (load average ~20 on 2 cores starved renewals of
# 3 s) does not take a live replica out of the ring; the handover waits about LEASE seconds.
LEASE, RENEW = 8, 6
"""Seconds any one phase may take (two shared cores)."""


class Replica:
    def __init__(self, name: str, config: Path, kubeconfig: str, record: Path,
                 env: dict[str, str] | None = None) -> None:
        self.name, self.record = name, record
        self.proc = KinrunProcess(
            [str(config), "--kubeconfig", kubeconfig, "--shard-id", name],
            env={"KINRUN_SHARD_ID": name, "KINRUN_SHARD_RECORD": str(record), **(env or {})})
        line = self.proc.wait_for(r"metrics on http://")
        self.port = int(re.search(r":(\d+)/metrics", line).group(1))  # type: ignore[union-attr]

    def cached(self, informer: str = "cms") -> int:
        """The size of the replica's cache of ``informer`` (its /metrics)."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5).read()
        found = re.search(rb'kinrun_informer_objects\{informer="%s"\} ([0-9.e+]+)'
                          % re.escape(informer.encode()), text)
        return int(float(found.group(1))) if found else 0


def _records(paths: list[Path]) -> list[dict[str, Any]]:
    out = []
    for path in paths:
        if path.exists():
            out += [json.loads(line) for line in path.read_text().splitlines()
                    if line.endswith("}")]  # a killed replica's last line may be cut
    return out


def _until(what: str, check: Callable[[], bool], timeout: float = DEADLINE) -> float:
    """Wait (re-checking every 0.25 s) until ``check()``; the seconds it took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.25)
    return time.monotonic() - start


def _overlaps(records: list[dict[str, Any]]) -> list[tuple[dict, dict]]:
    """Pairs of reconciles of one key by two replicas whose intervals overlap."""
    by_key: dict[str, list[dict]] = defaultdict(list)
    for rec in records:
        by_key[rec["key"]].append(rec)
    bad = []
    for recs in by_key.values():
        recs.sort(key=lambda r: r["start"])
        latest: dict | None = None  # the record with the latest end so far
        for rec in recs:
            if latest is not None and rec["r"] != latest["r"] and rec["start"] < latest["end"]:
                bad.append((latest, rec))
            if latest is None or rec["end"] > latest["end"]:
                latest = rec
    return bad


def test_three_replicas_split_the_objects_and_hand_over_safely(envtest_server, envtest_namespace,
                                                               tmp_path):
    ns = envtest_namespace
    config = tmp_path / "sharded.yaml"
    config.write_text(CONFIG.format(plugin=HERE / "recorder_plugin.py", ns=ns, ring=RING,
                                    lease=LEASE, renew=RENEW))
    client = Client.from_config(kubeconfig=envtest_server.kubeconfig_path, qps=2000, burst=4000)
    replicas: list[Replica] = []
    try:
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: client.create(
                {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": f"cm-{i:05d}", "namespace": ns,
                              "labels": {"app": "sharded"}}, "data": {"i": str(i)}}), range(N)))
        keys = {f"{ns}/cm-{i:05d}" for i in range(N)}
        for name in ("r1", "r2", "r3"):
            replicas.append(Replica(name, config, envtest_server.kubeconfig_path,
                                    tmp_path / f"{name}.jsonl"))
        paths = [r.record for r in replicas]

        def reconciled_by(who: Callable[[dict], bool], wanted: set[str]) -> bool:
            return wanted <= {rec["key"] for rec in _records(paths) if who(rec)}

        took = _until("every object reconciled", lambda: reconciled_by(lambda r: True, keys))
        print(f"\n{N} objects, 3 replicas: all reconciled {took:.1f}s after the last start")
        took = _until("every object labelled as the ring says, caches settled", lambda: (
            _balanced(client, ns, ["r1", "r2", "r3"])
            and sum(r.cached() for r in replicas) == N))
        print(f"  balanced {took:.1f}s later")
        assert not _overlaps(_records(paths)), _overlaps(_records(paths))[:5]
        labels = _labels(client, ns)
        for name in ("r1", "r2", "r3"):  # each reconciles what it now holds
            mine = {f"{ns}/{k}" for k, r in labels.items() if r == name}
            # an object moved last is in its new shard's cache before that shard's first
            # reconcile of it: wait for that reconcile, not for the cache alone
            _until(f"{name} reconciled every object it holds",
                   lambda name=name, mine=mine: reconciled_by(lambda r: r["r"] == name, mine))
        for replica in replicas:
            share = replica.cached() / N
            print(f"  {replica.name}: caches {share:.1%} of the objects")
            assert 0.25 <= share <= 0.42, (replica.name, share)

        # -- SIGKILL one replica: the others take its objects over ------------------------
        victim = replicas[1]
        its = {f"{ns}/{name}" for name, r in labels.items() if r == victim.name}
        victim.proc.proc.send_signal(signal.SIGKILL)
        victim.proc.proc.wait(10)
        killed = time.monotonic()
        took = _until("the killed replica's objects reconciled by the others", lambda:
                      reconciled_by(lambda r: r["r"] != victim.name and r["start"] > killed, its))
        print(f"  SIGKILL {victim.name}: its {len(its)} objects reconciled by the others "
              f"{took:.1f}s later (leaseDuration {LEASE}s)")
        survivors = [replicas[0], replicas[2]]
        _until("two caches hold everything", lambda: _balanced(client, ns, ["r1", "r3"])
               and sum(r.cached() for r in survivors) == N)

        # -- a new replica joins: it gets its share ---------------------------------------
        joined = time.monotonic()
        newcomer = Replica("r4", config, envtest_server.kubeconfig_path, tmp_path / "r4.jsonl")
        replicas.append(newcomer)
        paths.append(newcomer.record)
        _until("the new replica has its share", lambda: newcomer.cached() >= 0.25 * N)
        mine = {f"{ns}/{name}" for name, r in _labels(client, ns).items() if r == "r4"}
        took = _until("the new replica reconciled its share", lambda: reconciled_by(
            lambda r: r["r"] == "r4", mine))
        print(f"  r4 joined: {len(mine)} objects ({len(mine) / N:.0%}) reconciled by it "
              f"{time.monotonic() - joined:.1f}s after its start")
        live = replicas[0], replicas[2], newcomer
        _until("three caches hold everything once", lambda: _balanced(
            client, ns, ["r1", "r3", "r4"]) and sum(r.cached() for r in live) == N)
        for replica in live:
            assert 0.25 <= replica.cached() / N <= 0.42, (replica.name, replica.cached())

        records = _records(paths)
        assert not _overlaps(records), _overlaps(records)[:5]
        assert not [r for r in records if not r["live"]], "a move ran onDelete"
        print(f"  {len(records)} reconciles recorded, no overlap, no onDelete")
    except BaseException:
        for replica in replicas:
            print(f"--- {replica.name}:\n" + "\n".join(replica.proc.log().splitlines()[-40:]))
        raise
    finally:
        for replica in replicas:
            replica.proc.kill()
        client.close()


def _balanced(client: Client, ns: str, members: list[str]) -> bool:
    """Every object labelled for its ring owner among ``members``, none draining."""
    items = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns,
                                  label_selector="app=sharded").list().items
    ring = Ring(members)
    return len(items) == N and all(
        (o["metadata"].get("labels") or {}).get(shard_label(RING))
        == ring.owner(object_key("", "ConfigMap", o))
        and drain_label(RING) not in o["metadata"]["labels"] for o in items)


def _labels(client: Client, ns: str) -> dict[str, str]:
    """ConfigMap name -> its shard label (objects without one are left out)."""
    items = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns,
                                  label_selector="app=sharded").list().items
    label = shard_label(RING)
    return {o["metadata"]["name"]: o["metadata"]["labels"][label] for o in items
            if label in (o["metadata"].get("labels") or {})}
