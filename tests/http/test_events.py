"""Event actions against the embedded API server: repeated identical events become one core/v1
Event whose count rises (client-go's EventCorrelator), in onDelete too."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator

import kubernetes
import pytest

from kinrun.config import load_text
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

WAIT = 30.0
CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - name: notes
    for: cms
    events: {component: notes-controller}
    reconcile:
      actions:
        - event: {reason: Seen, message: "saw {{ obj.metadata.name }}"}
      onDelete:
        - event: {type: Warning, reason: Gone, message: "{{ key }} is gone"}
"""


class Sent(logging.Handler):
    """The controller's ``create Event`` / ``patch Event`` lines, on a queue."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: queue.Queue[str] = queue.Queue()

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if " Event " in message:
            self.lines.put(message)

    def next(self) -> str:
        return self.lines.get(timeout=WAIT)


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


@pytest.fixture
def sent() -> Iterator[Sent]:
    handler = Sent()
    logger = logging.getLogger("kinrun.controller.notes")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_three_reconciles_with_the_same_event_make_one_event_with_count_3(
        client: Client, embedded_api_client, sent: Sent) -> None:
    """Three reconciles of one ConfigMap (added, two label changes) each record the same
    event: one Event object, count 3, first and last timestamps kept apart; the source is the
    configured component. The deletion's event is another Event, about the final state."""
    client.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "web", "namespace": "default"}, "data": {}})
    manager = plan(load_text(CONFIG), new_plugin_manager()).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    try:
        assert sent.next().startswith("create Event default/web.")
        for i in range(2):
            client.patch("v1", "ConfigMap", "web", {"metadata": {"labels": {"n": str(i)}}},
                         namespace="default")
            assert sent.next().startswith("patch Event default/web.")
        core = kubernetes.client.CoreV1Api(embedded_api_client)
        events = core.list_namespaced_event("default").items
        assert len(events) == 1
        (event,) = events
        assert (event.count, event.reason, event.message) == (3, "Seen", "saw web")
        assert event.source.component == "notes-controller"
        assert event.reporting_component == "notes-controller"
        assert event.involved_object.name == "web" and event.involved_object.uid
        uid = event.involved_object.uid

        client.delete("v1", "ConfigMap", "web", "default")
        assert sent.next().startswith("create Event default/web.")
        gone = [e for e in core.list_namespaced_event("default").items if e.reason == "Gone"]
        assert len(gone) == 1 and gone[0].message == "default/web is gone"
        assert gone[0].involved_object.uid == uid and gone[0].type == "Warning"
    finally:
        manager.stop(5)
