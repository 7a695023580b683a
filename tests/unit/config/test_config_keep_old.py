"""``reconcile.keepOld``: a boolean only (positioned errors, also from ``kinrun validate``), and
``ReconcileSpec.keeps_old``: keepOld when given, else whether an action names ``old``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kinrun.config import ConfigErrors, ReconcileSpec, load_text

ROOT = Path(__file__).parents[3]

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {{apiVersion: v1, kind: ConfigMap}}
controllers:
  - name: c
    for: cms
    reconcile:
      {reconcile}
"""


def reconcile_of(reconcile: str) -> ReconcileSpec:
    """The ReconcileSpec the config builder makes from the YAML flow mapping ``reconcile``."""
    return load_text(CONFIG.format(reconcile=reconcile), file="c.yaml").controllers[0].reconcile


@pytest.mark.parametrize(("reconcile", "keep_old", "keeps_old"), [
    pytest.param("{hooks: true}", None, False, id="hooks-only"),
    pytest.param("{actions: [{log: hi}]}", None, False, id="actions-without-old"),
    pytest.param("{actions: [{log: 'was {{ old.data.x }}'}]}", None, True, id="action-using-old"),
    pytest.param("{actions: [{log: hi, when: 'old is none'}]}", None, True, id="when-using-old"),
    pytest.param("{actions: [{log: 'holder {{ obj.data.bold }}'}]}", None, False,
                 id="word-inside-another"),
    pytest.param("{onDelete: [{log: 'bye {{ old.metadata.name }}'}]}", None, False,
                 id="onDelete-gets-the-final-state-anyway"),
    pytest.param("{hooks: true, actions: [{log: '{{ old }}'}]}", None, True,
                 id="hooks-and-action-using-old"),
    pytest.param("{hooks: true, keepOld: true}", True, True, id="hooks-only-keepOld-true"),
    pytest.param("{actions: [{log: '{{ old }}'}], keepOld: false}", False, False,
                 id="action-using-old-keepOld-false"),
])
def test_keeps_old_is_keep_old_when_given_else_whether_an_action_names_old(
        reconcile: str, keep_old: bool | None, keeps_old: bool) -> None:
    """The builder copies keepOld (None when absent); keeps_old falls back to whether any
    action (not onDelete: a deletion brings its final state) mentions the word old."""
    spec = reconcile_of(reconcile)
    assert (spec.keep_old, spec.keeps_old) == (keep_old, keeps_old)


def test_reconcile_spec_defaults_keep_no_old_versions() -> None:
    """A bare ReconcileSpec keeps nothing; one with an action naming old keeps old versions."""
    assert (ReconcileSpec().keep_old, ReconcileSpec().keeps_old) == (None, False)
    [action] = reconcile_of("{actions: [{log: '{{ old }}'}]}").actions
    assert ReconcileSpec(actions=(action,)).keeps_old
    assert not ReconcileSpec(actions=(action,), keep_old=False).keeps_old


@pytest.mark.parametrize(("value", "message"), [
    pytest.param('"yes"', "'yes' is not of type boolean (it is string)", id="quoted-yes"),
    pytest.param("1", "1 is not of type boolean (it is number)", id="number"),
    pytest.param("null", "null is not of type boolean (it is null)", id="null"),
    pytest.param("yes", "'yes' loads as the boolean true in YAML 1.1: write true/false, or "
                        "quote it ('yes') for a string", id="yaml11-yes"),
])
def test_keep_old_must_be_a_boolean(value: str, message: str) -> None:
    """A non-boolean keepOld is one error naming file, line, column and key path."""
    with pytest.raises(ConfigErrors) as info:
        reconcile_of(f"{{actions: [{{log: hi}}], keepOld: {value}}}")
    assert str(info.value).splitlines() == [
        f"c.yaml:9:39: controllers[0].reconcile.keepOld: {message}"]
    error = info.value.errors[0]
    assert (error.file, error.line, error.path) == ("c.yaml", 9, "controllers[0].reconcile.keepOld")


def test_validate_rejects_a_string_keep_old(tmp_path: Path) -> None:
    """kinrun validate: keepOld: "yes" exits 2 with the positioned error on stderr."""
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(reconcile='actions: [{log: hi}]\n      keepOld: "yes"'))
    done = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", str(config)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (f"{config}:10:16: controllers[0].reconcile.keepOld: "
                           "'yes' is not of type boolean (it is string)\n")
