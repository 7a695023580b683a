"""``gc.collectFrozenEvery``: a duration (default 0, never) built into ``Config.gc``; anything
else is a positioned error; ``kinrun schema`` documents it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kinrun.config import ConfigErrors, load_text
from kinrun.config.model import GCSpec

ROOT = Path(__file__).parents[3]

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {{apiVersion: v1, kind: ConfigMap}}
controllers:
  - {{name: c, for: cms, reconcile: {{hooks: true}}}}
{gc}
"""


def gc_of(gc: str) -> GCSpec:
    """The GCSpec the config builder makes from the top-level YAML line ``gc``."""
    return load_text(CONFIG.format(gc=gc), file="c.yaml").gc


@pytest.mark.parametrize(("gc", "seconds"), [
    pytest.param("", 0.0, id="omitted"),
    pytest.param("gc: {}", 0.0, id="empty"),
    pytest.param("gc: {collectFrozenEvery: 10m}", 600.0, id="minutes"),
    pytest.param("gc: {collectFrozenEvery: 1m30s}", 90.0, id="combined"),
    pytest.param("gc: {collectFrozenEvery: 45}", 45.0, id="seconds-number"),
    pytest.param("gc: {collectFrozenEvery: 0s}", 0.0, id="zero-is-never"),
])
def test_collect_frozen_every_is_a_duration_in_seconds(gc: str, seconds: float) -> None:
    """The builder turns collectFrozenEvery into float seconds; omitted means 0.0 (never)."""
    assert gc_of(gc) == GCSpec(collect_frozen_every=seconds)


@pytest.mark.parametrize(("gc", "line"), [
    pytest.param("gc: {collectFrozenEvery: 10 minutes}",
                 "c.yaml:7:26: gc.collectFrozenEvery: '10 minutes' is not a duration (write "
                 "500ms, 30s, 10m, 1h, 1m30s, or a number of seconds)", id="unknown-unit"),
    pytest.param("gc: {collectFrozenEvery: -5}",
                 "c.yaml:7:26: gc.collectFrozenEvery: -5 is less than 0",
                 id="negative"),
])
def test_a_bad_collect_frozen_every_is_a_positioned_error(gc: str, line: str) -> None:
    """A value that is not a duration is one error naming file, line, column and key path."""
    with pytest.raises(ConfigErrors) as info:
        gc_of(gc)
    assert str(info.value).splitlines() == [line]
    error = info.value.errors[0]
    assert (error.file, error.line, error.path) == ("c.yaml", 7, "gc.collectFrozenEvery")


def test_an_unknown_gc_key_is_a_positioned_error() -> None:
    """gc is closed: a misspelt key is reported at its line under gc."""
    with pytest.raises(ConfigErrors) as info:
        gc_of("gc: {collectEvery: 10m}")
    error = info.value.errors[0]
    assert (error.file, error.line, error.path) == ("c.yaml", 7, "gc.collectEvery")


def test_kinrun_schema_documents_collect_frozen_every() -> None:
    """kinrun schema describes gc.collectFrozenEvery: its pause, its log line, its default."""
    done = subprocess.run([sys.executable, "-m", "kinrun.cli", "schema"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    assert "collectFrozenEvery" in schema["properties"]["gc"]["description"]
    every = schema["$defs"]["gc"]["properties"]["collectFrozenEvery"]
    assert every["$ref"] == "#/$defs/duration"
    for words in ("pauses every thread", "gc: collected N frozen objects", "0: never"):
        assert words in every["description"]
    assert every["default"] == "0s"
