"""Config mutants (a fixed seed): every one loads, or fails as one-line errors with file:line.

Durations with NaN, infinity, huge and negative values in every duration field, deep nesting,
alias bombs, recursive aliases, wrong types and huge integers, alone and in pairs, each pushed
through ``kinrun.config.load_text`` (what ``kinrun validate`` runs first). None may raise
anything but ConfigErrors, and none may take more than the document's length to refuse.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kinrun.config import Config, ConfigErrors, load_text
from kinrun.plan import plan
from kinrun.safe_yaml import MAX_ALIAS_NODES, MAX_DEPTH

ROOT = Path(__file__).parents[3]

BASE = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms:
    apiVersion: v1
    kind: ConfigMap
    resyncPeriod: {informerResync}
    watchInactivityTimeout: {watchInactivityTimeout}
controllers:
  - name: c
    for: cms
    workers: {workers}
    resyncPeriod: {controllerResync}
    rateLimiter: {{baseDelay: {baseDelay}, maxDelay: {maxDelay}, qps: {qps}}}
    reconcile:
      actions:
        - log: {log}
        - requeueAfter: {requeueAfter}
        - log: {data}
leaderElection: {{leaseName: kinrun, leaseDuration: {leaseDuration}, renewDeadline: {renewDeadline}, retryPeriod: {retryPeriod}}}
probes: {{stuckReconcileAfter: {stuckReconcileAfter}}}
gc: {{collectFrozenEvery: {collectFrozenEvery}}}
reload: {{pollInterval: {pollInterval}, syncTimeout: {syncTimeout}, discoveryInterval: {discoveryInterval}}}
shutdown: {{drainTimeout: {drainTimeout}}}
templates: {{budget: {{timeout: {budgetTimeout}}}}}
"""

DEFAULTS = {
    "informerResync": "10m", "watchInactivityTimeout": "5m", "workers": "2",
    "controllerResync": "1m", "baseDelay": "5ms", "maxDelay": "1000s", "qps": "10",
    "log": "'hello {{ obj.metadata.name }}'", "requeueAfter": "30s", "data": "hi",
    "leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s",
    "stuckReconcileAfter": "10m", "collectFrozenEvery": "0s", "pollInterval": "1s",
    "syncTimeout": "2m", "discoveryInterval": "30s", "drainTimeout": "10s", "budgetTimeout": "1s",
}
DURATIONS = [k for k in DEFAULTS if k not in ("workers", "qps", "log", "data")]


def bomb(levels: int = 9, width: int = 10) -> str:
    """A flow-style billion laughs: ``width ** levels`` leaves through aliases."""
    parts = ["&a0 [lol]"] + [f"&a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]"
                             for i in range(1, levels + 1)]
    return "[" + ", ".join(parts) + "]"


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_map(depth: int) -> str:
    return "{a: " * depth + "1" + "}" * depth


BAD_DURATIONS = [".nan", ".NaN", ".inf", "-.inf", ".Inf", "1e400", "'99999999999999h'",
                 "99999999999999h", "99999999999999", "1" + "0" * 5000, "-5s", "-1", "'1e3'",
                 "true", "[]", "{}", "null", "'87601h'", "315360001", "'1.5.5s'", "''",
                 "'{{ 1 }}'", "1.0e+30", "1e30", "'1' * 999"]
ANY_VALUES = BAD_DURATIONS + [
    bomb(), bomb(5, 20), "&r [*r]", "&m {x: *m}", deep(MAX_DEPTH + 1), deep(10_000),
    deep_map(10_000), deep(MAX_DEPTH - 20), "[" + "x, " * 10 + "]", "'" + "x" * 100_000 + "'",
    "*nowhere", "!!python/object:os.system", "yes", "1:30", "0x" + "f" * 5000, "{a: 1, a: 2}",
]


def mutants(count: int, seed: int = 26) -> list[tuple[str, str]]:
    """``count`` (id, config text) pairs: one or two slots of BASE filled with bad values."""
    rng = random.Random(seed)
    out = [(f"{slot}={value[:20]}", render({slot: value}))
           for slot in DURATIONS for value in (".nan", ".inf", "'99999999999999h'", "-5s")]
    while len(out) < count:
        slots = rng.sample(sorted(DEFAULTS), rng.choice((1, 1, 2)))
        values = {s: rng.choice(BAD_DURATIONS if s in DURATIONS and rng.random() < 0.5
                                else ANY_VALUES) for s in slots}
        out.append((",".join(f"{s}={v[:20]}" for s, v in values.items()), render(values)))
    return out


def render(values: dict[str, str]) -> str:
    return BASE.format(**{**DEFAULTS, **values})


def test_the_base_config_loads() -> None:
    """The unmutated config is valid, so every error below is the mutant's."""
    assert isinstance(load_text(render({}), file="m.yaml"), Config)


@pytest.mark.parametrize(("text",), [pytest.param(t, id=i) for i, t in mutants(300)])
def test_a_mutant_loads_or_gives_one_line_errors_with_file_and_line(text: str) -> None:
    """Each mutant is a Config that plans (what ``kinrun validate`` runs), or ConfigErrors,
    each error one line with file:line."""
    try:
        config = load_text(text, file="m.yaml")
    except ConfigErrors as exc:
        for error in exc.errors:
            assert error.file == "m.yaml" and error.line is not None, str(error)
            assert "\n" not in str(error) and len(str(error)) < 400, str(error)[:500]
    else:
        assert isinstance(config, Config)
        plan(config)


@pytest.mark.parametrize("slot", DURATIONS)
@pytest.mark.parametrize("value", [".nan", ".inf", "1.0e+30", "'99999999999999h'"])
def test_every_duration_field_refuses_nan_infinity_and_huge_values(slot: str, value: str) -> None:
    """NaN, infinity and durations past MAX_DURATION are refused at the field's line."""
    text = render({slot: value})
    line = next(n for n, row in enumerate(text.splitlines(), 1) if value in row)
    with pytest.raises(ConfigErrors) as caught:
        load_text(text, file="m.yaml")
    assert [e.line for e in caught.value.errors] == [line]
    assert re.search(r"not a finite number|longer than the longest duration", str(caught.value))


@pytest.mark.parametrize(("value", "message"), [
    pytest.param(bomb(), f"aliases expand to more than {MAX_ALIAS_NODES} nodes", id="billion-laughs"),
    pytest.param(bomb(4, 25), f"aliases expand to more than {MAX_ALIAS_NODES} nodes", id="390k-laughs"),
    pytest.param(deep(10_000), f"nested more than {MAX_DEPTH} levels deep", id="10000-deep-list"),
    pytest.param(deep_map(10_000), f"nested more than {MAX_DEPTH} levels deep", id="10000-deep-map"),
    pytest.param("&r [*r]", "recursive alias", id="recursive-alias"),
])
def test_yaml_bombs_are_refused_at_their_line(value: str, message: str) -> None:
    """Alias bombs, deep nesting and cycles are one ConfigError at the data: line."""
    text = render({"data": value})
    with pytest.raises(ConfigErrors) as caught:
        load_text(text, file="m.yaml")
    assert len(caught.value.errors) == 1
    error = caught.value.errors[0]
    assert error.line == 19 and message in error.message


@pytest.mark.parametrize(("value", "line"), [
    pytest.param("'99999999999999h'", 18, id="huge-requeue"), pytest.param(".nan", 18, id="nan"),
    pytest.param(deep(10_000), 18, id="deep"), pytest.param(bomb(), 18, id="bomb")])
def test_kinrun_validate_prints_one_line_and_exits_2(tmp_path: Path, value: str, line: int) -> None:
    """The CLI prints FILE:LINE:COLUMN: ... on one line, no traceback, and exits 2."""
    path = tmp_path / "c.yaml"
    path.write_text(render({"requeueAfter": value}))
    done = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = [row for row in (done.stdout + done.stderr).splitlines() if row.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"{path}:{line}:"), lines
