"""Event actions on a real kube-apiserver: the recorder's strategic merge patch raises the
count of one core/v1 Event (what client-go's EventCorrelator sends), and the server takes it."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator

import pytest

from kinrun.config import load_text
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

WAIT = 60.0
CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {{apiVersion: v1, kind: ConfigMap, namespaces: [{ns}]}}
controllers:
  - name: envtest-notes
    for: cms
    reconcile:
      actions:
        - event: {{reason: Seen, message: "saw {{{{ obj.metadata.name }}}}"}}
"""


class Lines(logging.Handler):
    """The controller's ``create Event`` / ``patch Event`` lines, on a queue."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: queue.Queue[str] = queue.Queue()

    def emit(self, record: logging.LogRecord) -> None:
        if " Event " in record.getMessage():
            self.lines.put(record.getMessage())


@pytest.fixture
def lines() -> Iterator[Lines]:
    handler, logger = Lines(), logging.getLogger("kinrun.controller.envtest-notes")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_repeated_event_is_one_event_with_count_3(envtest_server, envtest_namespace: str,
                                                  lines: Lines) -> None:
    """Three reconciles, one Event: count 3, component kinrun/<controller>."""
    ns = envtest_namespace
    with Client.from_config(kubeconfig=envtest_server.kubeconfig_path) as client:
        client.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "web", "namespace": ns}, "data": {}})
        manager = plan(load_text(CONFIG.format(ns=ns)), new_plugin_manager()).bind(
            client).manager()
        assert manager.start(sync_timeout=WAIT)
        try:
            assert lines.lines.get(timeout=WAIT).startswith(f"create Event {ns}/web.")
            for i in range(2):
                client.patch("v1", "ConfigMap", "web", {"metadata": {"labels": {"n": str(i)}}},
                             namespace=ns)
                assert lines.lines.get(timeout=WAIT).startswith(f"patch Event {ns}/web.")
        finally:
            manager.stop(5)
        events = client.lister_watcher(client.resolve("v1", "Event"), namespace=ns).list().items
    assert [(e["count"], e["reason"], e["source"]["component"]) for e in events] == [
        (3, "Seen", "kinrun/envtest-notes")]
    assert events[0]["reportingComponent"] == "kinrun/envtest-notes"
