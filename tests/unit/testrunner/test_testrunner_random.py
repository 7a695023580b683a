"""kinrun test and render: the templates' ``random`` filter draws from a generator seeded with
the case's name (``render``: with "render"), so a case passes or fails the same every run."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from kinrun.templating import TemplateEngine, template_seed
from kinrun.testing.runner import prepare, run_case

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\n"
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers: {cms: {apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      actions:
        - log: "pick {{ range(100000) | random }}"
"""
CM = "{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}"


def _pick(name: str) -> int:
    """What a seeded ``range(100000) | random`` draws first for ``name``."""
    return random.Random(template_seed(name)).choice(range(100000))


def test_a_case_draws_what_its_name_seeds(tmp_path: Path) -> None:
    """The first ``random`` of a case is the first choice of ``Random(template_seed(name))``:
    two cases with two names each pass, on every run (1 in 100000 by chance unseeded)."""
    (tmp_path / "c.yaml").write_text(CONFIG)
    path = tmp_path / "t.test.yaml"
    cases = "".join(f"  - name: {name}\n    given: [{CM}]\n    expect: {{logs: ['pick {_pick(name)}$']}}\n"
                    for name in ("one", "two"))
    path.write_text(HEAD + "cases:\n" + cases)
    prepared = prepare(path)
    for case in prepared.tests.cases:
        outcome = run_case(prepared, case, timeout=10)
        assert outcome.passed, [f.text() for f in outcome.failures]


def test_render_draws_what_render_seeds(tmp_path: Path) -> None:
    """``kinrun render`` shows the first choice of ``Random(template_seed("render"))``."""
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "cm.yaml").write_text(CM)
    run = subprocess.run([sys.executable, "-m", "kinrun.cli", "render", str(tmp_path / "c.yaml"),
                          "--object", str(tmp_path / "cm.yaml")], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert f"pick {_pick('render')}" in run.stdout, run.stdout


def test_an_unseeded_engine_uses_the_shared_generator() -> None:
    """A run (no seed) draws from Python's shared generator: ``random.seed`` decides it."""
    engine = TemplateEngine()
    draws = []
    for _ in range(2):
        random.seed(7)
        draws.append(engine.template("{{ range(100000) | random }}").render({}))
    assert draws[0] == draws[1] == str(random.Random(7).choice(range(100000)))
