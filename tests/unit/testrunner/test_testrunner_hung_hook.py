"""kinrun test ends a case whose hook does not return at the case's timeout, names the
reconcile still running, and runs the next case as if nothing happened."""

from __future__ import annotations

import sys
from pathlib import Path

from kinrun.testing.runner import prepare, run_case

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
plugins: [./hooks.py]
informers: {cms: {apiVersion: v1, kind: ConfigMap, labelSelector: p=yes}}
controllers:
  - name: p
    for: cms
    reconcile: {hooks: true}
"""
HOOKS = """\
import threading
from kinrun.hooks import hookimpl

SAFETY = 30  # real seconds: only so that a runner that waits for the hook ends (and fails)
RELEASE = threading.Event()  # set by the test once the case ended


@hookimpl
def kinrun_reconcile(controller, key, obj, ctx):
    if obj is not None and obj["metadata"]["name"] == "hang":
        RELEASE.wait(SAFETY)
    return None
"""
TEST = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerTest
config: c.yaml
cases:
  - name: hang
    given: [{apiVersion: v1, kind: ConfigMap, metadata: {name: hang, namespace: default, labels: {p: "yes"}}}]
    expect: {results: {default/hang: done}}
  - name: after hang
    given: [{apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default, labels: {p: "yes"}}}]
    expect: {results: {default/b: done}}
"""


def test_a_hook_that_does_not_return_fails_its_case_at_the_timeout(tmp_path: Path) -> None:
    """The blocked hook's case fails naming controller and key; the next case passes."""
    (tmp_path / "c.yaml").write_text(CONFIG)
    (tmp_path / "hooks.py").write_text(HOOKS)
    (tmp_path / "t.test.yaml").write_text(TEST)
    prepared = prepare(tmp_path / "t.test.yaml")
    [hooks] = [m for m in list(sys.modules.values())
               if getattr(m, "__file__", None) == str(tmp_path / "hooks.py")]
    try:
        hang, after = (run_case(prepared, case, timeout=2) for case in prepared.tests.cases)
    finally:
        hooks.RELEASE.set()
    assert not hang.passed
    assert any("still reconciling" in f.message and "controller p: key default/hang" in f.message
               for f in hang.failures), [f.text() for f in hang.failures]
    assert after.passed, [f.text() for f in after.failures]
