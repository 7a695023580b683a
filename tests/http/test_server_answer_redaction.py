"""Server answers never carry back what a write sent (kinrun.redact.redact_echoes, applied in
kinrun.kube.http_errors): the embedded server's 422 quoting an invalid label value built from a
Secret, whole or transformed, reaches neither the error nor the log; the field path, reason
and the object's name stay."""

from __future__ import annotations

import base64
import json
import logging
import threading
import urllib.parse
from typing import Any

import pytest

from kinrun.config import load_text
from kinrun.errors import InvalidError
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.testing.apiserver import EmbeddedAPIServer

WAIT = 30.0
SECRET = "hunter2 opens the vault"  # a space: never a valid label value


def configmap(label: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "copy", "namespace": "default", "labels": {"token": label}},
            "data": {"k": "v"}}


TRANSFORMS = [
    pytest.param(SECRET, id="whole"),
    pytest.param(SECRET.upper(), id="upper"),
    pytest.param(SECRET[::-1], id="reversed"),
    pytest.param(SECRET.split()[1] + " x", id="split-piece"),
    pytest.param("pre " + SECRET[:7], id="prefix"),
    pytest.param(urllib.parse.quote(SECRET), id="url-encoded"),
]


@pytest.fixture
def client(embedded_server: EmbeddedAPIServer) -> Any:
    client = Client.from_config(kubeconfig=str(embedded_server.kubeconfig_path), qps=0)
    try:
        yield client
    finally:
        client.close()


@pytest.mark.parametrize("value", TRANSFORMS)
@pytest.mark.parametrize("verb", ["create", "apply"])
def test_an_invalid_label_value_is_redacted_from_the_422(client: Client, verb: str,
                                                         value: str) -> None:
    """The 422 quoting the label value keeps its field path, reason and the object's name,
    with the value replaced by <redacted> in the message, the causes and str()."""
    with pytest.raises(InvalidError) as info:
        getattr(client, verb)(configmap(value))
    error = info.value
    shown = str(error) + json.dumps(error.body)
    assert value not in shown
    assert 'metadata.labels: Invalid value: "<redacted>"' in str(error)
    assert '"copy"' in str(error)  # the name: the request line names it anyway
    causes = error.body["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [("metadata.labels",
                                                            "FieldValueInvalid")]


CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  secrets: {apiVersion: v1, kind: Secret, namespaces: [default]}
controllers:
  - name: copy-token
    for: secrets
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{ obj.metadata.name }}-copy"
                namespace: default
                labels: {token: "{{ (obj.data.token | b64decode)[::-1] | upper }}"}
"""


class Reconciles:
    """Counts finished reconciles (the ``wrap`` seam); ``wait(n)`` blocks until n."""

    def __init__(self) -> None:
        self.done, self._cond = 0, threading.Condition()

    def wrap(self, controller: str, reconcile: Any) -> Any:
        def observed(key: str, obj: Any, *args: Any) -> Any:
            try:
                return reconcile(key, obj, *args)
            finally:
                with self._cond:
                    self.done += 1
                    self._cond.notify_all()
        return observed

    def wait(self, count: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self.done >= count, WAIT)


def test_a_reconcile_of_a_secret_logs_no_value_the_server_quoted(
        embedded_server: EmbeddedAPIServer, client: Client,
        caplog: pytest.LogCaptureFixture) -> None:
    """A controller applying a ConfigMap whose label is built from a Secret's value (reversed,
    upper-cased) gets a 422; its retry log line names the field and reason, not the value."""
    token = base64.b64encode(SECRET.encode()).decode()
    embedded_server.load([{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                           "metadata": {"name": "src", "namespace": "default"},
                           "data": {"token": token}}])
    reconciles = Reconciles()
    manager = plan(load_text(CONFIG), new_plugin_manager()).bind(client).manager(
        wrap=reconciles.wrap)
    with caplog.at_level(logging.DEBUG):
        try:
            assert manager.start(threading.Event(), WAIT)
            assert reconciles.wait(1)
        finally:
            manager.stop(5.0)
    assert "Invalid value: \\\"<redacted>\\\"" in caplog.text or \
        'Invalid value: "<redacted>"' in caplog.text
    assert SECRET[::-1].upper() not in caplog.text
