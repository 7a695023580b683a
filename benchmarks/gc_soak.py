"""Soak: memory stays bounded over 1,000,000 watch events while a plugin makes cyclic garbage.

Run: ``python benchmarks/gc_soak.py [--events 1000000] [--pods 1000] [--cycles 3]``. Not part
of the test run (it takes minutes); no timing is asserted, the result is printed.

kinrun's pipeline as the main job runs it (``replay.py``'s ``reconciler`` variant: StreamWatch
over chunked watch lines, SharedIndexInformer with the managedFields transform, the enqueue
handler, workqueue, one worker, ``kinrun.reconcile.Reconciler`` with a pluggy hook) under the
main job's GC policy (``gc_tuning.manage``). The hook leaves a reference cycle of ``--cycles``
children behind at every reconcile (garbage only the cyclic collector frees). The watch
stream is generated as it is read (``--pods`` Pods updated round-robin), so the input takes no
memory. Every tenth of the run it prints RSS, the objects frozen (``gc.get_freeze_count()``),
the live cycles (a weak reference per cycle's root) and the longest GC pause so far (wall and
CPU); at the end, ``gc.collect()`` after ``gc_tuning.unfreeze()`` counts what the policy had
frozen that was garbage (the leak).
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from podgen import make_pod  # noqa: E402
from replay import FakeResponse, GcPauses, QuietWatch  # noqa: E402

from kinrun.cache import ObjectList, SharedIndexInformer, strip_managed_fields  # noqa: E402
from kinrun.gc import policy as gc_tuning  # noqa: E402
from kinrun.controller import Controller, enqueue_own_key  # noqa: E402
from kinrun.kube.listwatch import StreamWatch  # noqa: E402
from kinrun.workqueue import RateLimitingQueue  # noqa: E402


class GeneratedBody(io.RawIOBase):
    """A chunked watch body of ``events`` events over ``pods`` Pods, made as it is read."""

    def __init__(self, pods: int, events: int) -> None:
        self._objs = [orjson.loads(orjson.dumps(make_pod(i, namespace="soak")))
                      for i in range(pods)]
        self._events, self._sent, self._rv = events, 0, 1000
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while len(self._buf) < len(b) and self._sent <= self._events:
            if self._sent == self._events:
                self._buf += b"0\r\n\r\n"
                self._sent += 1
                break
            obj = self._objs[self._sent % len(self._objs)]
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            obj["metadata"].setdefault("annotations", {})["soak/n"] = str(self._sent)
            kind = "ADDED" if self._sent < len(self._objs) else "MODIFIED"
            line = orjson.dumps({"type": kind, "object": obj}) + b"\n"
            self._buf += b"%x\r\n%s\r\n" % (len(line), line)
            self._sent += 1
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


class GeneratedResponse(FakeResponse):
    def __init__(self, pods: int, events: int) -> None:
        self._fp = type("_Fp", (), {})()
        self._fp.fp = io.BufferedReader(GeneratedBody(pods, events), 1 << 16)


class SoakListerWatcher:
    def __init__(self, pods: int, events: int) -> None:
        self.watched = False
        self.response = GeneratedResponse(pods, events)  # its Pods made now, not on the
        # reflector's thread at the watch (the harness's set-up, frozen before the run)

    def list(self, *, resource_version: str = "") -> ObjectList:
        return ObjectList(items=[], resource_version="1000", kind="PodList")

    def watch(self, **_: Any) -> Any:
        if self.watched:
            return QuietWatch()
        self.watched = True
        return StreamWatch(self.response, api_version="v1", kind="Pod",
                           drop_managed_fields=True)


def rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--pods", type=int, default=1_000)
    p.add_argument("--cycles", type=int, default=3)
    args = p.parse_args()

    import kinrun
    import types
    from kinrun import plugin_manager
    from kinrun.bound import RecordDeletions
    from kinrun.reconcile import Reconciler

    done, count = threading.Event(), [0]
    roots: list[weakref.ref] = []
    sample_every = max(1, args.events // 10)

    plugin = types.ModuleType("soak_plugin")

    @kinrun.hookimpl
    def kinrun_reconcile(controller: str, key: str, obj: Any, ctx: Any) -> None:
        parent: dict[str, Any] = {"key": key, "children": []}
        for i in range(args.cycles):
            parent["children"].append({"parent": parent, "i": i})
        count[0] += 1
        if count[0] % 1000 == 0:  # a sample of the cycles, to count the live ones
            roots.append(weakref.ref(_Root(parent)))

    plugin.kinrun_reconcile = kinrun_reconcile  # type: ignore[attr-defined]
    pm = plugin_manager.new_plugin_manager()
    pm.register(plugin, name="soak")

    lister_watcher = SoakListerWatcher(args.pods, args.events)  # the harness's own Pods
    previous = gc_tuning.manage()
    gc_tuning.freeze(collect=True)  # the set-up, walked by no collection (as the Manager's
    # freeze after the initial lists): the pauses printed are the pipeline's
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    informer = SharedIndexInformer(lister_watcher, kind="Pod",
                                   transform=strip_managed_fields, name="soak")
    reconciler = Reconciler("soak", hooks=plugin_manager.reconcile_caller(pm, True),
                            listers={"pods": informer.lister},
                            indexers={"pods": informer.indexer})
    ctrl = Controller("soak", RateLimitingQueue(), informer.indexer.get_by_key, reconciler,
                      workers=1, causes=True)
    informer.add_event_handler(RecordDeletions(enqueue_own_key(ctrl.enqueue, causes=True),
                                               reconciler, None), synchronous=True)
    events = [0]

    class Done:  # counts events the informer handled: the workqueue may collapse updates of
        # a key still queued, so reconciles can be fewer than events
        def on_add(self, obj: Any, initial: bool = False) -> None:
            self.on_update(None, obj)

        def on_update(self, old: Any, new: Any) -> None:
            events[0] += 1
            if events[0] >= args.events:
                done.set()

        def on_delete(self, obj: Any) -> None: ...
    informer.add_event_handler(Done(), synchronous=True)
    ctrl.start()
    start, rss0 = time.time(), rss()
    informer.start()
    print(f"{args.events:,} events over {args.pods:,} Pods, a {args.cycles + 1}-object cycle "
          f"left by every reconcile; RSS at start {rss0 / 1e6:.0f} MB")
    next_sample = sample_every
    while not done.wait(0.5):
        if events[0] >= next_sample:
            next_sample += sample_every
            live = sum(1 for r in roots if r() is not None)
            print(f"  {events[0]:>9,} events {count[0]:>9,} reconciles  RSS {rss() / 1e6:6.0f} MB  frozen "
                  f"{gc.get_freeze_count():>9,}  sampled cycles alive {live:>4}/{len(roots)}  "
                  f"longest GC pause {pauses.max_wall * 1e3:6.1f} ms wall / "
                  f"{pauses.max_cpu * 1e3:5.1f} ms CPU  ({time.time() - start:.0f} s)",
                  flush=True)
    informer.stop()
    ctrl.stop(drain_timeout=0)
    gc.callbacks.remove(pauses)
    live = sum(1 for r in roots if r() is not None)
    print(f"done: {events[0]:,} events, {count[0]:,} reconciles in {time.time() - start:.0f} s; RSS {rss() / 1e6:.0f} MB "
          f"(start {rss0 / 1e6:.0f} MB); {pauses.count:,} collections, longest "
          f"{pauses.max_wall * 1e3:.1f} ms wall / {pauses.max_cpu * 1e3:.1f} ms CPU; sampled "
          f"cycles still alive (frozen garbage): {live} of {len(roots)}")
    gc_tuning.unfreeze(previous)
    print(f"a full collection after unfreeze freed {gc.collect():,} objects")


class _Root:
    """A weak-referenceable holder put into the cycle, so the cycle's life can be observed."""

    __slots__ = ("cycle", "__weakref__")

    def __init__(self, cycle: dict) -> None:
        self.cycle = cycle
        cycle["root"] = self


if __name__ == "__main__":
    main()
