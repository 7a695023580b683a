"""Workload 5: workqueue add -> get -> done cycles per second, one producer and N workers.

Queues compared, each pinned to one CPU with its producer and workers as threads:
- ``kinrun.RateLimitingQueue``: what a kinrun controller uses (``add``, ``get``, ``forget``,
  ``done`` per item);
- ``kinrun.Queue``: the plain level underneath (``add``, ``get``, ``done``);
- ``queue.Queue``: the standard library's FIFO (``put``, ``get``, ``task_done``), the floor: it
  has none of the workqueue's guarantees (no de-duplication, no exclusivity per key).

The producer adds ``--items`` distinct keys as fast as it can, then shuts the queue down; the
workers take items until shutdown. cycles/s = items / (last done - first add). Prints one JSON
line per (queue, workers).
"""

from __future__ import annotations

import argparse
import json
import os
import queue as stdqueue
import threading
import time

from kinrun.workqueue import Queue, RateLimitingQueue

WORKERS = (1, 2, 4)


def run_kinrun(make, items: list[str], workers: int, forget: bool) -> float:
    q = make()

    def worker() -> None:
        while True:
            item, shutdown = q.get()
            if shutdown:
                return
            if forget:
                q.forget(item)
            q.done(item)

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    for item in items:
        q.add(item)
    q.shut_down()
    for t in threads:
        t.join()
    return len(items) / (time.perf_counter() - t0)


def run_stdlib(items: list[str], workers: int) -> float:
    q: stdqueue.Queue = stdqueue.Queue()
    stop = object()

    def worker() -> None:
        while True:
            item = q.get()
            q.task_done()
            if item is stop:
                return

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    for item in items:
        q.put(item)
    for _ in threads:
        q.put(stop)
    for t in threads:
        t.join()
    return len(items) / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--items", type=int, default=200_000)
    p.add_argument("--cpu", type=int, default=-1)
    a = p.parse_args()
    if a.cpu >= 0:
        os.sched_setaffinity(0, {a.cpu})
    items = [f"default/pod-{i}" for i in range(a.items)]
    for workers in WORKERS:
        for name, fn in (
            ("kinrun RateLimitingQueue", lambda w: run_kinrun(RateLimitingQueue, items, w, True)),
            ("kinrun Queue", lambda w: run_kinrun(Queue, items, w, False)),
            ("queue.Queue", lambda w: run_stdlib(items, w)),
        ):
            rate = fn(workers)
            print(json.dumps({"contender": "workqueue", "workload": "workqueue", "ok": True,
                              "queue": name, "workers": workers, "items": a.items,
                              "cycles_per_s": rate}), flush=True)


if __name__ == "__main__":
    main()
