"""Hot reload beside a restart, with 10,000 objects cached (embedded API server).

Run: ``python benchmarks/reload.py [--objects 10000] [--repeat 3] [--poll 0.1]``.
Not part of the test run.

A config with two informers (ConfigMaps: ``--objects`` of them; Secrets: a few) and two
controllers (``a`` on the ConfigMaps, ``b`` on the Secrets) runs in this process on the
embedded server, through the real client. Then, per repetition:

* reload: the config file is replaced (write a temporary file, rename it) with ``a``'s action
  changed and a controller ``c`` added on the Secrets informer; the reload loop
  (``kinrun.reload.Reloader.run`` polling every ``--poll`` s, as ``reload.pollInterval``)
  notices it. Measured from the rename: ``applied`` (the reload's log line: new definitions
  in force, new controllers' workers started) and ``first`` (the first reconcile under the
  new definition of ``a``); and the LISTs of the ConfigMaps during the reload (must be 0:
  the informer is kept with its cache);
* restart: the same config compiled, bound and started again from nothing (a new client, a new
  Manager: what a restart of kinrun does after the process started), up to the first
  reconcile of ``a`` and up to all ``--objects`` keys synced; LISTs counted the same way.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kinrun.config import load  # noqa: E402
from kinrun.kube import Client  # noqa: E402
from kinrun.plan import plan  # noqa: E402
from kinrun.reload import Reloader  # noqa: E402
from kinrun.testing.apiserver import EmbeddedAPIServer  # noqa: E402

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [bench]}
  secrets: {apiVersion: v1, kind: Secret, namespaces: [bench]}
controllers:
  - name: a
    for: cms
    reconcile:
      actions: [{log: {message: "VERSION {{ obj.metadata.name }}", level: debug}}]
  - name: b
    for: secrets
    reconcile:
      actions: [{log: {message: "b {{ obj.metadata.name }}", level: debug}}]
EXTRA"""
EXTRA = """\
  - name: c
    for: secrets
    reconcile:
      actions: [{log: {message: "c {{ obj.metadata.name }}", level: debug}}]
"""


def config(version: int) -> str:
    return CONFIG.replace("VERSION", f"v{version}").replace("EXTRA", EXTRA if version % 2 == 0
                                                             else "")


class Probe:
    """The wrap seam: the time of the first reconcile of ``a`` under each version."""

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.cond = threading.Condition()

    def wrap_for(self, bound):
        version = int(bound.plan.controller("a").spec.reconcile.actions[0].raw["log"]
                      ["message"].split()[0][1:])

        def wrap(controller, reconcile):
            if controller != "a":
                return reconcile

            def observed(key, obj, *args):
                if version not in self.first:
                    with self.cond:
                        self.first.setdefault(version, time.perf_counter())
                        self.cond.notify_all()
                return reconcile(key, obj, *args)
            return observed
        return wrap

    def wait(self, version: int) -> float:
        with self.cond:
            self.cond.wait_for(lambda: version in self.first, 120)
            return self.first[version]


def counting(client: Client, lists: Counter) -> Client:
    original = client.lister_watcher

    def lister_watcher(ref, **kw):
        lw = original(ref, **kw)
        inner = lw.list

        def counted(*a, **k):
            lists[ref.resource] += 1
            return inner(*a, **k)
        lw.list = counted
        return lw
    client.lister_watcher = lister_watcher
    return client


class Applied(logging.Handler):
    """Notes when the reload log line comes."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.at: list[float] = []
        self.cond = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("config reloaded"):
            with self.cond:
                self.at.append(time.perf_counter())
                self.cond.notify_all()

    def wait(self, n: int) -> float:
        with self.cond:
            self.cond.wait_for(lambda: len(self.at) >= n, 120)
            return self.at[n - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--poll", type=float, default=0.1)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    applied = Applied()
    logging.getLogger("kinrun.reload").addHandler(applied)
    logging.getLogger("kinrun.reload").setLevel(logging.INFO)
    folder = Path(tempfile.mkdtemp(prefix="kinrun-reload-bench-"))
    path = folder / "kinrun.yaml"
    path.write_text(config(1))
    with EmbeddedAPIServer() as server:
        server.load([{"apiVersion": "v1", "kind": "ConfigMap",
                      "metadata": {"name": f"cm-{i:05d}", "namespace": "bench",
                                   "labels": {"app": "bench"}},
                      "data": {"k": "v" * 100}} for i in range(args.objects)])
        server.load([{"apiVersion": "v1", "kind": "Secret",
                      "metadata": {"name": f"s-{i}", "namespace": "bench"}} for i in range(5)])
        lists: Counter = Counter()
        client = counting(Client.from_config(kubeconfig=server.kubeconfig_path), lists)
        probe = Probe()
        bound = plan(load(path)).bind(client, wait_for_kinds=True)
        manager = bound.manager(wrap=probe.wrap_for(bound))
        started = time.perf_counter()
        assert manager.start(sync_timeout=120)
        print(f"start: synced {args.objects} objects and running in "
              f"{time.perf_counter() - started:.2f} s")
        reloader = Reloader(manager, lambda: load(path), plan, wrap_for=probe.wrap_for,
                            files=lambda: [str(path)], discovery_interval=0)
        from kinrun.config_watch import ConfigWatcher

        watcher = ConfigWatcher([str(path)])
        stop, wake = threading.Event(), threading.Event()
        loop = threading.Thread(target=reloader.run, args=(stop, wake, watcher.changed,
                                                            args.poll), daemon=True)
        loop.start()
        reload_applied, reload_first, reload_lists = [], [], []
        for n in range(args.repeat):
            version = n + 2
            before = lists["configmaps"]
            tmp = folder / ".kinrun.yaml.tmp"
            tmp.write_text(config(version))
            t0 = time.perf_counter()
            os.replace(tmp, path)
            reload_applied.append(applied.wait(n + 1) - t0)
            reload_first.append(probe.wait(version) - t0)
            reload_lists.append(lists["configmaps"] - before)
            time.sleep(1.0)  # let the swapped controller's replay of the cache finish
        stop.set()
        wake.set()
        loop.join(10)
        manager.stop(5.0)
        client.close()
        restart_first, restart_synced, restart_lists = [], [], []
        for n in range(args.repeat):
            lists2: Counter = Counter()
            probe2 = Probe()
            t0 = time.perf_counter()
            client2 = counting(Client.from_config(kubeconfig=server.kubeconfig_path), lists2)
            bound2 = plan(load(path)).bind(client2, wait_for_kinds=True)
            manager2 = bound2.manager(wrap=probe2.wrap_for(bound2))
            assert manager2.start(sync_timeout=120)
            restart_synced.append(time.perf_counter() - t0)
            version = next(iter(probe2.first), None) or int(
                load(path).controller("a").reconcile.actions[0].raw["log"]["message"]
                .split()[0][1:])
            restart_first.append(probe2.wait(version) - t0)
            restart_lists.append(lists2["configmaps"])
            manager2.stop(5.0)
            client2.close()

    def show(values):
        return f"median {statistics.median(values) * 1000:.0f} ms (runs: " + \
            ", ".join(f"{v * 1000:.0f}" for v in values) + ")"
    print(f"objects cached: {args.objects}; poll interval {args.poll:g} s; "
          f"repeat {args.repeat}")
    print(f"reload: file renamed -> applied (new definitions in force): {show(reload_applied)}")
    print(f"reload: file renamed -> first reconcile of the new definition: {show(reload_first)}")
    print(f"reload: ConfigMap LISTs during the reload: {reload_lists}")
    print(f"restart: start -> caches synced, workers running: {show(restart_synced)}")
    print(f"restart: start -> first reconcile: {show(restart_first)}")
    print(f"restart: ConfigMap LISTs: {restart_lists}")


if __name__ == "__main__":
    main()
