"""What a cached Pod costs in CPython objects, and the least it could cost as a dict.

The memory target of issue 17 (bytes per cached Pod <= 0.8x client-go's, lister reads still
returning the cached dicts) meets a floor set by CPython's object sizes, not by kinrun. This
script measures that floor on the benchmark's Pods, decoded as the cache holds them
(``kinrun.kube.managed_fields.loads_without_managed_fields``: a watch event's object,
managedFields cut):

- ``traced``: tracemalloc's bytes per Pod for ``--pods`` decoded Pods kept in a list (the
  memory workload's measure, without the store's key and index entries);
- by type: ``sys.getsizeof`` of each object reachable from one Pod, each counted once, split
  into the containers (dicts, lists), the string values another Pod repeats, the other
  strings and the rest. Left out, as one object serves every Pod: the dict keys (orjson's
  key cache), small ints, True/False/None;
- ``shared``: traced bytes per Pod when, after decoding, every repeated string value is
  replaced by one canonical copy (a table of strings, as ``sys.intern`` would do; the
  duplicates freed): what perfect sharing at no cost would leave. The walk that does it is
  timed too (CPU us per Pod, ``time.process_time``, the collector off as kinrun's policy
  keeps it off decoded objects): it is what sharing would add to every event;
- ``containers``: dicts plus lists alone, the part no sharing of values can reduce while the
  cache holds dicts.

Run: ``.venv/bin/python benchmarks/cache_floor.py [--pods 2000] [--client-go KB]``;
``--client-go`` (client-go's live heap per Pod in KB, from ``run.py``'s memory workload) adds
the target (0.8x of it) to the output. Prints a table; writes nothing. Not part of the test run.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from podgen import make_pod  # noqa: E402

from kinrun.kube.managed_fields import event_object, loads_without_managed_fields  # noqa: E402

REPEAT = 5
"""Timed runs of each CPU figure; the best (least) is reported."""
SAMPLE = 100
"""Pods walked for the by-type split (each Pod's shape is the same)."""


def event_lines(pods: int) -> list[bytes]:
    """One MODIFIED watch event line per Pod, managedFields included, as the server sends."""
    return [orjson.dumps({"type": "MODIFIED", "object": make_pod(i)}) for i in range(pods)]


def decode(line: bytes) -> dict[str, Any]:
    """The event's object as the cache holds it (managedFields cut before decoding)."""
    return loads_without_managed_fields(line, event_object, 1)["object"]


def traced_per_object(make: Any, count: int) -> tuple[float, list[Any]]:
    """(tracemalloc bytes per object of ``make()``'s list of ``count``, the list)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    objs = make()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / count, objs


def by_type(obj: Any, repeated: set[str]) -> Counter:
    """Bytes of every object reachable from ``obj``, each counted once, by kind: ``dict``,
    ``list``, ``str repeated`` (a value another Pod has too), ``str``, ``other``. Dict keys
    are left out: orjson's key cache shares them between objects."""
    acc: Counter = Counter()
    seen: set[int] = set()

    def walk(o: Any, is_key: bool = False) -> None:
        if id(o) in seen or is_key:
            return
        seen.add(id(o))
        if isinstance(o, dict):
            acc["dict"] += sys.getsizeof(o)
            for k, v in o.items():
                walk(k, True)
                walk(v)
        elif isinstance(o, list):
            acc["list"] += sys.getsizeof(o)
            for v in o:
                walk(v)
        elif isinstance(o, str):
            acc["str repeated" if o in repeated else "str"] += sys.getsizeof(o)
        elif o is None or isinstance(o, bool) or (isinstance(o, int) and -5 <= o <= 256):
            pass  # one object for the whole interpreter
        else:
            acc["other"] += sys.getsizeof(o)

    walk(obj)
    return acc


def string_values(obj: Any, out: list[str]) -> list[str]:
    """Every string value in ``obj`` (not the keys), in document order."""
    if isinstance(obj, dict):
        for v in obj.values():
            string_values(v, out)
    elif isinstance(obj, list):
        for v in obj:
            string_values(v, out)
    elif isinstance(obj, str):
        out.append(obj)
    return out


def share_in_place(obj: Any, table: dict[str, str]) -> None:
    """Replace each string value of ``obj`` by its copy in ``table``, in place (the cheapest
    form of the walk a decoder's caller could do)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if isinstance(v, str):
                obj[k] = table.setdefault(v, v)
            elif isinstance(v, (dict, list)):
                share_in_place(v, table)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if isinstance(v, str):
                obj[i] = table.setdefault(v, v)
            elif isinstance(v, (dict, list)):
                share_in_place(v, table)


def best_us_per_pod(timed: Any, pods: int) -> float:
    """The least of REPEAT runs of ``timed()`` (CPU seconds it measured), in us per Pod."""
    return min(timed() for _ in range(REPEAT)) / pods * 1e6


def decode_shared(lines: list[bytes]) -> list[dict[str, Any]]:
    """Every line decoded, then its string values shared in place through one table; the
    table is dropped before returning (the strings stay, held by the Pods)."""
    table: dict[str, str] = {}
    pods = [decode(line) for line in lines]
    for pod in pods:
        share_in_place(pod, table)
    return pods


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=2000)
    p.add_argument("--client-go", type=float, default=None,
                   help="client-go's live heap per Pod in KB (run.py memory workload)")
    args = p.parse_args()
    lines = event_lines(args.pods)
    n = args.pods

    traced, pods = traced_per_object(lambda: [decode(line) for line in lines], n)
    counts = Counter(v for pod in pods for v in set(string_values(pod, [])))
    repeated = {v for v, c in counts.items() if c > 1}
    parts = Counter()
    for pod in pods[:SAMPLE]:
        parts.update(by_type(pod, repeated))
    parts = {k: v / SAMPLE for k, v in parts.items()}
    values = [len(string_values(pod, [])) for pod in pods[:SAMPLE]]

    del pods
    shared_traced, _ = traced_per_object(lambda: decode_shared(lines), n)

    def walk_seconds() -> float:
        copies = [decode(line) for line in lines]
        table: dict[str, str] = {}
        t = time.process_time()
        for pod in copies:
            share_in_place(pod, table)
        return time.process_time() - t

    def decode_seconds() -> float:
        t = time.process_time()
        copies = [decode(line) for line in lines]
        spent = time.process_time() - t
        del copies
        return spent

    gc.disable()  # the timings below: collections over the growing list would dominate them
    best = best_us_per_pod(walk_seconds, n)
    best_decode = best_us_per_pod(decode_seconds, n)
    gc.enable()

    kb = 1024
    containers = parts.get("dict", 0) + parts.get("list", 0)
    print(f"{n} Pods, {len(lines[0]):,} bytes per event on the wire; "
          f"{sum(values) / len(values):.0f} string values per Pod")
    print(f"  traced per cached Pod                          {traced / kb:6.1f} KB")
    for name in ("dict", "list", "str repeated", "str", "other"):
        print(f"    {name:<44} {parts.get(name, 0) / kb:6.1f} KB")
    print(f"  traced with every repeated string shared       {shared_traced / kb:6.1f} KB")
    print(f"  containers alone (dicts + lists)               {containers / kb:6.1f} KB")
    print(f"  sharing walk, in place: CPU us per Pod         {best:6.1f}"
          f"   (decoding the Pod: {best_decode:.1f})")
    if args.client_go:
        print(f"  target: 0.8x client-go's {args.client_go:.1f} KB            "
              f"{0.8 * args.client_go:6.1f} KB")


if __name__ == "__main__":
    main()
