"""What a hook's private copy costs per event (issue 26: hooks never see cache objects).

A hook gets ``kinrun.plugin_manager.private_copy`` of the object (an orjson round trip)
instead of the cached dict. This measures, in one run on the benchmark's Pods
(``podgen.make_pod``, managedFields cut as the cache holds them), the copy against the
decode of the same object from its JSON line: the decode is what every event costs already,
so the ratio says how much a hook config's per-event decode work grows. Ratios only (the host
is shared): ``python benchmarks/hook_copy.py [--pods N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

import orjson

from kinrun.plugin_manager import private_copy
from podgen import make_pod


def best_us(func, items, repeat: int) -> float:
    """The best of ``repeat`` passes over ``items``, in microseconds per item."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for item in items:
            func(item)
        times.append((time.perf_counter() - start) / len(items) * 1e6)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    pods = [make_pod(i, with_managed_fields=False) for i in range(args.pods)]
    lines = [orjson.dumps(p) for p in pods]
    ratios = []
    for _ in range(3):  # interleaved: the host's drift hits both alike
        decode = best_us(orjson.loads, lines, args.repeat)
        copy = best_us(private_copy, pods, args.repeat)
        ratios.append(copy / decode)
        print(f"decode {decode:.1f} us, private copy {copy:.1f} us, copy/decode {copy / decode:.2f}")
    print(f"median copy/decode: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
