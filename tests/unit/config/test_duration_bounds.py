"""Every duration is bounded by MAX_DURATION (87600h): configs, flags, case files and templates
refuse longer ones, NaN and infinity with an error naming the value; nothing overflows later."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from kinrun.config import ConfigErrors, parse_duration
from kinrun.durations import MAX_DURATION, clamp_delay

ROOT = Path(__file__).parents[3]


@pytest.mark.parametrize("value", ["87600h", MAX_DURATION, int(MAX_DURATION), "315360000"])
def test_the_longest_duration_is_accepted(value: object) -> None:
    """MAX_DURATION itself, in each form, parses."""
    assert parse_duration(value) == MAX_DURATION


@pytest.mark.parametrize("value", ["99999999999999h", "87600h1ms", "315360001", 1e30,
                                   10**400, "9" * 5000, 99999999999999 * 3600])
def test_longer_durations_are_refused(value: object) -> None:
    """Anything longer is a ValueError naming the bound (huge integers included)."""
    with pytest.raises(ValueError, match=r"longer than the longest duration kinrun accepts \(87600h\)"):
        parse_duration(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(value: float) -> None:
    """NaN and infinities are not durations."""
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(value)


@pytest.mark.parametrize(("seconds", "clamped"), [
    (math.inf, MAX_DURATION), (math.nan, MAX_DURATION), (1e30, MAX_DURATION), (5.0, 5.0),
    (0.0, 0.0), (-1.0, -1.0)])
def test_clamp_delay(seconds: float, clamped: float) -> None:
    """Run-time delays beyond the bound (and NaN) become MAX_DURATION; others stay."""
    assert clamp_delay(seconds) == clamped


def test_a_template_rendering_a_huge_requeue_is_a_render_error() -> None:
    """requeueAfter: '{{ ... }}' rendering 99999999999999h fails the render, naming the bound."""
    from kinrun.actions import compile_actions

    program = compile_actions([{"requeueAfter": "{{ '99999999999999' ~ 'h' }}"}],
                              controller="web", source=("web.yaml", 10, "actions"))
    with pytest.raises(Exception, match="longer than the longest duration") as caught:
        program.render(key="shop/web-1", obj={"apiVersion": "v1", "kind": "Pod",
                                              "metadata": {"name": "web-1", "namespace": "shop"}})
    assert "requeueAfter" in str(caught.value)


@pytest.mark.parametrize("value", ["99999999999999h", "1e400"])
def test_the_drain_timeout_flag_refuses_a_huge_duration(value: str, tmp_path: Path) -> None:
    """--drain-timeout 99999999999999h is a usage error (exit 2), before anything runs."""
    config = tmp_path / "c.yaml"
    config.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n")
    done = subprocess.run([sys.executable, "-m", "kinrun.cli", "run", "--drain-timeout", value,
                           str(config)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--drain-timeout" in done.stderr


@pytest.mark.parametrize("value", [".nan", ".inf", "99999999999999h", "1.0e+30"])
def test_a_case_file_refuses_an_unbounded_after(value: str, tmp_path: Path) -> None:
    """``after:`` in a kinrun test file: a located ConfigError, never a traceback."""
    from kinrun.testing.casefile import load_test_file

    (tmp_path / "c.yaml").write_text(
        "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
        "informers: {cms: {apiVersion: v1, kind: ConfigMap}}\n"
        "controllers: [{name: c, for: cms, reconcile: {actions: [{log: hi}]}}]\n")
    path = tmp_path / "c.test.yaml"
    path.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerTest\nconfig: c.yaml\n"
                    "cases:\n  - name: waits\n    when:\n"
                    f"      - after: {value}\n"
                    "    expect: {requests: []}\n")
    with pytest.raises(ConfigErrors) as caught:
        load_test_file(path)
    assert [e.line for e in caught.value.errors] == [7]
