"""Summarise py-spy collapsed stacks (``run.py --profile DIR``): top functions by self and
total time, per file.

    .venv/bin/python benchmarks/profile_top.py DIR/kinrun-events.collapsed [--top 30] [--thread NAME]

A collapsed file has one line per distinct stack: ``frame;frame;...;frame COUNT`` (outermost
first; with ``--threads`` the first frame names the thread). Percentages are of all samples.
"""

from __future__ import annotations

import argparse
from collections import Counter


def load(path: str, thread: str | None) -> list[tuple[list[str], int]]:
    stacks = []
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if thread and thread not in frames[0]:
                continue
            stacks.append((frames, int(count)))
    return stacks


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("path")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--thread")
    a = p.parse_args()
    stacks = load(a.path, a.thread)
    total = sum(c for _, c in stacks) or 1
    self_t: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    for frames, count in stacks:
        threads[frames[0]] += count
        self_t[frames[-1]] += count
        for fr in set(frames[1:]):
            incl[fr] += count
    print(f"{total} samples")
    print("-- threads")
    for name, c in threads.most_common(10):
        print(f"{100 * c / total:6.1f}%  {name}")
    print("-- self")
    for name, c in self_t.most_common(a.top):
        print(f"{100 * c / total:6.1f}%  {name}")
    print("-- total (inclusive)")
    for name, c in incl.most_common(a.top):
        print(f"{100 * c / total:6.1f}%  {name}")


if __name__ == "__main__":
    main()
