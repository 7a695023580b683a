"""scripts/kubectl-embedded-check passes: every kubectl operation of issue 29's list works
against the embedded server (skipped without kubectl)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")
def test_kubectl_embedded_check_passes():
    """The script's operations (get with columns, get -w, apply both ways, create via
    protobuf, explain, scale, label, annotate, 3 patch types, replace, cascading deletes,
    auth can-i, namespace deletion) all pass."""
    r = subprocess.run([str(ROOT / "scripts/kubectl-embedded-check"), sys.executable],
                       capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0 failed" in r.stdout
