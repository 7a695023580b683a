"""Render cost of the template sandbox: what the per-render budget costs, one run.

Four workloads, each rendered ``--number`` times and timed ``--repeat`` times (best run kept),
in this process and on the CPU clock (``time.process_time``) as well as wall clock, since the
shared 2-core machines make wall clock noisy:

- ``log``: one ``log`` action template with a few lookups and a filter (the usual action);
- ``apply``: an ``apply`` action whose manifest is a YAML template with a loop over the Pod's
  containers (a few ``for`` steps, ~40 output chunks), parsed after rendering;
- ``program``: both actions plus a ``when:`` through ``ActionProgram.render`` (one reconcile);
- ``loop100``: a template looping 100 times with a filter inside (the per-step cost).

Figures are microseconds per render, and Python function calls per render (``calls``, counted
with cProfile: deterministic, so comparable on a loaded machine where the timings are not).
Run: ``python benchmarks/template_budget.py`` (add ``--number 2000`` for a quick run). Compare
before/after a sandbox change by running it on both trees (``PYTHONPATH=<old tree>``); not part
of the test run (no assertions).

Figures of the change that added the budget (2-core VM at load ~15, so timings are the best of
80-120 interleaved rounds in one process, two runs): log 10.2 -> 11.3-11.5 us, apply
114-134 -> 121-136 us (+2-7), program (two actions + when) 152-187 -> 163-194 us (+7-11),
loop100 37 -> 56-57 us (+0.2 us per iteration of a loop over more than 32 items); calls
33 -> 44, 394 -> 414, 472 -> 493, 427 -> 552.

Figures of the change that bounded C-level work by value sizes and refused mutating methods
(issue 26; same VM, best of 5 x 3,000, two runs each): log 3.9-4.2 -> 4.1-4.4 us, apply 61-70
-> 59-62 us, program 83-87 -> 77-86 us (within the noise), loop100 31-35 -> 59-63 us (+0.3 us
per call of a filter that takes containers: its size check wrapper); calls 38 -> 44,
409 -> 419, 501 -> 510, 557 -> 867.

Figures of the change that put the budget on the one ``kinrun.clock.Clock`` (issue 27:
``clock.now`` bound once at construction, was a bare ``time.monotonic`` callable; the old
module loaded next to the new in one process, best of 15 interleaved rounds, CPU time, idle
2-core VM): ``RenderBudget.step`` 88.3 -> 88.2 ns (ratio 0.998), a 2000-step loop render
613 -> 614 us (ratio 1.002): the same cost, as ``REAL_CLOCK.now`` is ``time.monotonic`` itself.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
POD = ROOT / "tests" / "data" / "objects" / "pod-web.yaml"

LOG = ("pod {{ obj.metadata.namespace }}/{{ obj.metadata.name }} "
       "on {{ obj.spec.nodeName | default('?') }}")
APPLY = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ obj.metadata.name }}-info
  labels:
    app: {{ obj.metadata.labels.app | default('none') }}
data:
  node: "{{ obj.spec.nodeName | default('') }}"
{% for c in obj.spec.containers %}
  image-{{ c.name }}: "{{ c.image }}"
{% endfor %}
"""
LOOP100 = "{% for i in range(100) %}{{ i | string | length }}{% endfor %}"


def _timed(func: Any, number: int, repeat: int) -> tuple[float, float]:
    """Best (wall, cpu) microseconds per call over ``repeat`` runs of ``number`` calls."""
    best_wall = best_cpu = float("inf")
    for _ in range(repeat):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(number):
            func()
        best_wall = min(best_wall, (time.perf_counter() - wall0) / number * 1e6)
        best_cpu = min(best_cpu, (time.process_time() - cpu0) / number * 1e6)
    return best_wall, best_cpu


def workloads() -> dict[str, Any]:
    """Name -> zero-argument callable doing one render."""
    from kinrun.actions import compile_actions
    from kinrun.templating import TemplateEngine

    pod = yaml.safe_load(POD.read_text())
    engine = TemplateEngine()
    log = engine.template(LOG)
    loop = engine.template(LOOP100)
    apply = compile_actions([{"apply": {"manifest": APPLY, "ownerReference": False}}],
                            controller="bench", engine=engine)
    program = compile_actions([
        {"log": LOG, "when": "obj.metadata.name"},
        {"apply": {"manifest": APPLY, "ownerReference": False}},
    ], controller="bench", engine=engine)
    variables = {"obj": pod, "old": None, "key": "shop/web-1", "controller": "bench"}
    return {
        "log": lambda: log.render(variables),
        "apply": lambda: apply.render(key="shop/web-1", obj=pod),
        "program": lambda: program.render(key="shop/web-1", obj=pod),
        "loop100": lambda: loop.render(variables),
    }


def _calls(func: Any, number: int = 100) -> float:
    """Python function calls per call of ``func`` (cProfile's count, builtins included)."""
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(number):
        func()
    profile.disable()
    return pstats.Stats(profile).total_calls / number


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000, help="renders per timing run")
    parser.add_argument("--repeat", type=int, default=5, help="timing runs (best kept)")
    args = parser.parse_args(argv)
    print(f"{'workload':<10} {'wall us':>9} {'cpu us':>9} {'calls':>7}")
    for name, func in workloads().items():
        func()  # warm up (and fail early)
        wall, cpu = _timed(func, args.number, args.repeat)
        print(f"{name:<10} {wall:>9.2f} {cpu:>9.2f} {_calls(func):>7.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
