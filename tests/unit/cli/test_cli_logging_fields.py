"""JSON logs carry the reconcile fields (controller, kind, namespace, name, key, a fresh
reconcileID per reconcile), as controller-runtime's structured logs: on every line logged during
a reconcile, on the controller's retry line after it, and on an action's log line in the main job."""

from __future__ import annotations

import io
import json
import logging
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinrun.clock import FakeClock
from kinrun.controller import Controller
from kinrun.logging_setup import RECONCILE_FIELDS, configure_logging, reconcile_log_fields
from kinrun.workqueue import RateLimitingQueue

ROOT = Path(__file__).parents[3]
FIELDS = ("controller", "kind", "namespace", "name", "key", "reconcileID")


@pytest.fixture
def lines() -> Iterator[list[dict[str, Any]]]:
    """JSON records logged at info and above, parsed; the handler, level and this thread's
    reconcile fields are restored afterwards."""
    root = logging.getLogger()
    level = root.level
    out = io.StringIO()
    token = RECONCILE_FIELDS.set(None)
    configure_logging("info", "json", out)
    parsed: list[dict[str, Any]] = []
    yield parsed
    RECONCILE_FIELDS.reset(token)
    for handler in [h for h in root.handlers if h.get_name() == "kinrun.cli"]:
        root.removeHandler(handler)
    root.setLevel(level)


def read(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    handler = next(h for h in logging.getLogger().handlers if h.get_name() == "kinrun.cli")
    lines[:] = [json.loads(line) for line in handler.stream.getvalue().splitlines()]
    return lines


def test_lines_during_and_after_a_reconcile_carry_its_fields(lines: list[dict[str, Any]]) -> None:
    """A line logged inside the reconcile and the controller's retry line after it carry the
    same fields; the next reconcile gets a new reconcileID; lines before any reconcile none."""
    logging.getLogger("kinrun.test").info("before")
    calls: list[int] = []

    def reconcile(key: str, obj: Any) -> None:
        calls.append(1)
        logging.getLogger("kinrun.controller.pods").info("reconciling %s", key)
        if len(calls) == 1:
            raise RuntimeError("first try fails")

    wrapped = reconcile_log_fields("Pod")("pod-logger", reconcile)
    queue = RateLimitingQueue(clock=FakeClock(), name="pod-logger")
    controller = Controller("pod-logger", queue, lambda key: None, wrapped)
    controller.enqueue("default/web")
    controller.process_next_item()
    queue.add("default/web")
    controller.process_next_item()
    queue.shut_down()
    before, first, retry, second = read(lines)
    assert not set(FIELDS) & set(before)
    assert first["message"] == "reconciling default/web"
    assert {k: first[k] for k in FIELDS[:-1]} == {
        "controller": "pod-logger", "kind": "Pod", "namespace": "default", "name": "web",
        "key": "default/web"}
    assert "will retry" in retry["message"]
    assert retry["reconcileID"] == first["reconcileID"]
    assert second["reconcileID"] != first["reconcileID"]
    assert uuid.UUID(first["reconcileID"]).version == 4
    assert str(uuid.UUID(first["reconcileID"])) == first["reconcileID"]


def test_cluster_scoped_key_has_an_empty_namespace(lines: list[dict[str, Any]]) -> None:
    """A key without a namespace ("name") logs namespace "" and the name."""
    def reconcile(key: str, obj: Any) -> None:
        logging.getLogger("kinrun.controller.nodes").info("node")

    reconcile_log_fields("Node")("nodes", reconcile)("node-1", None)
    (line,) = read(lines)
    assert (line["namespace"], line["name"], line["key"]) == ("", "node-1", "node-1")


def test_text_lines_stay_as_they_were(lines: list[dict[str, Any]]) -> None:
    """The text format does not print the reconcile fields (its lines are for people)."""
    out = io.StringIO()
    configure_logging("info", "text", out)

    def reconcile(key: str, obj: Any) -> None:
        logging.getLogger("kinrun.controller.pods").info("plain")

    reconcile_log_fields("Pod")("pods", reconcile)("default/web", None)
    assert out.getvalue().rstrip().endswith("kinrun.controller.pods: plain")


def test_main_job_action_log_lines_carry_the_fields() -> None:
    """``kinrun CONFIG --embedded --log-format json``: the pod-logger's log action line carries
    controller, kind, namespace, name, key and a reconcileID."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kinrun.cli", str(ROOT / "examples/configs/pod-logger.yaml"),
         "--embedded", "--seed", str(ROOT / "examples/seeds/pod-logger.yaml"),
         "--log-format", "json"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    found = None
    try:
        for raw in proc.stderr:  # type: ignore[union-attr]
            record = json.loads(raw)
            if record["message"] == "Sync/Add/Update for Pod mypod":
                found = record
                break
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert found is not None
    assert {k: found[k] for k in FIELDS[:-1]} == {
        "controller": "pod-logger", "kind": "Pod", "namespace": "default", "name": "mypod",
        "key": "default/mypod"}
    assert uuid.UUID(found["reconcileID"]).variant == uuid.RFC_4122
    assert proc.returncode == 0
