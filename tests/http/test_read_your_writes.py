"""Read-your-writes on the embedded API server, real worker threads (issue 28): a controller
with a finalizer whose actions mark each object "handled once" (an annotation patch guarded by
``when:``), then write an applySet and a status in the same reconcile. Over 200 objects and 3
workers: the "once" branch runs exactly once per object, kinrun's own writes never conflict
(409) with each other, and after the objects are deleted ``finalize`` runs once per object
(never on a version from before its own finalizer removal: no 422)."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from kinrun.config import load_text
from kinrun.errors import ApiError
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.testing.apiserver import EmbeddedAPIServer

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "examples" / "crds" / "foo.yaml"
RUNS = 200
WAIT = 120.0

CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  foos: {apiVersion: samplecontroller.k8s.io/v1alpha1, kind: Foo}
controllers:
  - name: once
    for: foos
    workers: 3
    finalizer: example.com/once
    reconcile:
      actions:
        - create:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {generateName: "once-", labels: {once: "{{ obj.metadata.name }}"}}
          when: "'example.com/handled' not in (obj.metadata.annotations | default({}))"
        - patch: {patch: '{"metadata": {"annotations": {"example.com/handled": "yes"}}}'}
          when: "'example.com/handled' not in (obj.metadata.annotations | default({}))"
        - %s
        - %s
      finalize: [{log: "bye {{ key }}"}]
"""
LOG = "log: {message: 'handled {{ key }}', level: debug}"
STATUS = "status: {fields: {availableReplicas: 1}, observedGeneration: false}"
APPLYSET = ("applySet: {manifests: \"{apiVersion: v1, kind: ConfigMap, metadata: "
            "{name: 'child-{{ obj.metadata.name }}'}, data: {a: b}}\"}")


class Conflicts:
    """The real Client, recording every 409 and 422 it answers (thread-safe)."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._lock = threading.Lock()
        self.conflicts: list[str] = []

    def execute(self, req: Any, **kwargs: Any) -> Any:
        try:
            return self._client.execute(req, **kwargs)
        except ApiError as err:
            if getattr(err, "status", None) in (409, 422):
                with self._lock:
                    self.conflicts.append(f"{req.summary()}: {err}")
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def _settled(server: EmbeddedAPIServer, name: str, status: bool) -> bool:
    foo = server.store.get("samplecontroller.k8s.io/v1alpha1", "Foo", name, "default") or {}
    return (foo.get("status") or {}).get("availableReplicas") == (1 if status else None) and \
        "example.com/handled" in (foo.get("metadata", {}).get("annotations") or {})


def _wait(condition: Any, what: str) -> None:
    event = threading.Event()
    for _ in range(int(WAIT / 0.05)):
        if condition():
            return
        event.wait(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("order", [(STATUS, APPLYSET), (APPLYSET, STATUS), (LOG, LOG)],
                         ids=["status-then-applySet", "applySet-then-status", "finalizer-patch"])
def test_once_runs_once_and_own_writes_never_conflict(embedded_server: EmbeddedAPIServer,
                                                       order: tuple[str, str],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    """200 Foos, 3 workers: one "once" ConfigMap per Foo, 0 conflicts among our writes; then
    deleted: one finalize per Foo, and none of them refused."""
    embedded_server.load([yaml.safe_load(CRD.read_text())])
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path, qps=0)
    counting = Conflicts(client)
    manager = plan(load_text(CONFIG % order, file="once.yaml")).bind(counting).manager()
    names = [f"foo-{i}" for i in range(RUNS)]
    try:
        assert manager.start(threading.Event(), 30.0)
        for name in names:
            client.create({
                "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"deploymentName": name, "replicas": 1}}, namespace="default")
        _wait(lambda: all(_settled(embedded_server, n, STATUS in order) for n in names), "every Foo settled")
        _wait(lambda: len(manager.controllers["once"].queue) == 0, "an empty queue")
        onces = [cm["metadata"]["labels"]["once"]
                 for cm in embedded_server.store.list("v1", "ConfigMap", "default")
                 if "once" in (cm["metadata"].get("labels") or {})]
        doubled = sorted({n for n in onces if onces.count(n) > 1})
        assert (len(onces), doubled) == (RUNS, [])
        assert counting.conflicts == []
        with caplog.at_level(logging.INFO, logger="kinrun.controller.once"):
            for name in names:
                client.delete("samplecontroller.k8s.io/v1alpha1", "Foo", name, "default")
            _wait(lambda: not embedded_server.store.list("samplecontroller.k8s.io/v1alpha1",
                                                         "Foo", "default"), "every Foo gone")
            _wait(lambda: len(manager.controllers["once"].queue) == 0, "an empty queue")
        byes = [r.getMessage() for r in caplog.records if r.getMessage().startswith("bye ")]
        assert (len(byes), len(set(byes))) == (RUNS, RUNS)
        assert counting.conflicts == []
    finally:
        manager.stop(5.0)
        client.close()
