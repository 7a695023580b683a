"""`--log-format zap`: controller-runtime's zap keys (ts, level, logger, caller, msg, error,
controller, controllerGroup, controllerKind, <Kind>, namespace, name, reconcileID); a failed
reconcile is an error record "Reconciler error" with the error in `error`."""

from __future__ import annotations

import io
import json
import logging
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinrun.clock import FakeClock
from kinrun.controller import Controller
from kinrun.logging_setup import RECONCILE_FIELDS, configure_logging, reconcile_log_fields
from kinrun.workqueue import RateLimitingQueue

ROOT = Path(__file__).parents[3]


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    token = RECONCILE_FIELDS.set(None)
    configure_logging("info", "zap", stream)
    yield stream
    RECONCILE_FIELDS.reset(token)
    for handler in [h for h in root.handlers if h.get_name() == "kinrun.cli"]:
        root.removeHandler(handler)
    root.setLevel(level)


def records(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_failed_reconcile_is_a_reconciler_error_with_controller_runtime_keys(
        out: io.StringIO) -> None:
    """The reconcile's own line and the retry line carry the reconcile keys; the retry line
    is level error, msg "Reconciler error", error the cause."""
    def reconcile(key: str, obj: Any) -> None:
        logging.getLogger("kinrun.controller.deploys").warning("looking at %s", key)
        raise RuntimeError("the Deployment is not ready")

    wrapped = reconcile_log_fields("Deployment", "apps")("web-ctl", reconcile)
    queue = RateLimitingQueue(clock=FakeClock(), name="web-ctl")
    controller = Controller("web-ctl", queue, lambda key: None, wrapped)
    controller.enqueue("prod/web")
    controller.process_next_item()
    queue.shut_down()
    inside, failed = records(out)
    assert inside["level"] == "warn" and inside["msg"] == "looking at prod/web"
    assert inside["caller"].endswith(".py:" + inside["caller"].rsplit(":", 1)[1])
    for rec in (inside, failed):
        assert {k: rec[k] for k in ("controller", "controllerGroup", "controllerKind",
                                    "namespace", "name")} == {
            "controller": "web-ctl", "controllerGroup": "apps", "controllerKind": "Deployment",
            "namespace": "prod", "name": "web"}
        assert rec["Deployment"] == {"name": "web", "namespace": "prod"}
        assert "message" not in rec
    assert failed["reconcileID"] == inside["reconcileID"]
    assert (failed["level"], failed["msg"]) == ("error", "Reconciler error")
    assert "the Deployment is not ready" in failed["error"]
    assert "will retry" in failed["detail"]


def test_a_cluster_scoped_object_has_no_namespace_key(out: io.StringIO) -> None:
    """A Namespace reconcile: no "namespace" key at all (controller-runtime omits it)."""
    reconcile_log_fields("Namespace")("ns-ctl", lambda key, obj: logging.getLogger(
        "kinrun.x").info("hi"))("team-a", None)
    (rec,) = records(out)
    assert "namespace" not in rec and rec["Namespace"] == {"name": "team-a"}
    assert rec["controllerGroup"] == ""


def test_an_exception_logged_gives_error_and_stacktrace(out: io.StringIO) -> None:
    """exc_info becomes error (type: message) and stacktrace."""
    try:
        raise ValueError("bad value")
    except ValueError:
        logging.getLogger("kinrun.x").exception("it broke")
    (rec,) = records(out)
    assert rec["level"] == "error" and rec["error"] == "ValueError: bad value"
    assert "Traceback" in rec["stacktrace"]


def test_main_job_logs_in_zap_format() -> None:
    """`kinrun CONFIG --embedded --log-format zap`: the pod-logger's action line is a zap
    record with the reconcile keys."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kinrun.cli", str(ROOT / "examples/configs/pod-logger.yaml"),
         "--embedded", "--seed", str(ROOT / "examples/seeds/pod-logger.yaml"),
         "--log-format", "zap"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    found = None
    try:
        for raw in proc.stderr:  # type: ignore[union-attr]
            record = json.loads(raw)
            if record["msg"] == "Sync/Add/Update for Pod mypod":
                found = record
                break
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert found is not None
    assert (found["controllerKind"], found["controllerGroup"], found["Pod"]) == (
        "Pod", "", {"name": "mypod", "namespace": "default"})
    assert proc.returncode == 0
