"""``kinrun render`` and a run share one code path (kinrun.reconcile.Reconciler.render): for
each situation a reconcile meets, the writes render shows are the writes a reconcile sends,
in the same order, and the requeue render shows is the one the reconcile asks."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.bound import reconciler
from kinrun.cache import KeyedIndexer, Lister
from kinrun.config import load_text
from kinrun.plan import plan

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    finalizer: example.com/copy
    reconcile:
      actions:
        - log: "copying {{ key }}"
        - apply:
            ownerReference: false
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-copy", namespace: copies}
              data: {{ obj.data | default({}) | tojson }}
      finalize:
        - delete:
            target: {apiVersion: v1, kind: ConfigMap, namespace: copies,
                     name: "{{ obj.metadata.name }}-copy"}
        - requeueAfter: "{{ (obj.metadata.annotations | default({})).get('wait', '0s') }}"
      onDelete:
        - log: "{{ key }} is gone"
        - delete:
            target: {apiVersion: v1, kind: Secret, namespace: copies,
                     name: "{{ old.metadata.name }}-s"}
"""
FINALIZER = "example.com/copy"


def cm(*, finalizers: tuple[str, ...] = (), terminating: bool = False,
       **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cm", "namespace": "ns", "uid": "u1",
                            "resourceVersion": "5", "annotations": dict(annotations)}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if terminating:
        meta["deletionTimestamp"] = "2023-11-14T22:13:20Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"a": "b"}}


class RecordingClient:
    """Records what a reconcile sends (as ``describe()``, what render prints); answers a
    finalizer patch with the object it makes, anything else with nothing."""

    dry_run = False

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def execute(self, req: Any, **_: Any) -> Any:
        self.sent.append(req.describe())
        if req.patch_type == "json":
            obj = cm()
            obj["metadata"]["finalizers"] = req.body[-1]["value"]
            return obj
        return None


SITUATIONS = [
    pytest.param(cm(), None, id="live-without-the-finalizer"),
    pytest.param(cm(finalizers=(FINALIZER,)), None, id="live-with-the-finalizer"),
    pytest.param(cm(finalizers=(FINALIZER,), terminating=True), None,
                 id="terminating-finalize-done"),
    pytest.param(cm(finalizers=(FINALIZER,), terminating=True, wait="30s"), None,
                 id="terminating-finalize-asks-requeue"),
    pytest.param(cm(finalizers=("other.io/x",), terminating=True), None,
                 id="terminating-without-ours"),
    pytest.param(None, cm(finalizers=(FINALIZER,)), id="deleted"),
]


@pytest.mark.parametrize(("obj", "final"), SITUATIONS)
def test_render_shows_what_a_reconcile_sends(obj: dict | None, final: dict | None) -> None:
    """The requests in render's steps are the requests the reconcile sent, in order; its
    requeueAfter is the reconcile's requeue delay."""
    compiled = plan(load_text(CONFIG))
    listers = {"cms": Lister(KeyedIndexer())}
    client = RecordingClient()
    run = reconciler(compiled.controller("c"), listers=listers, client=client)  # type: ignore
    if final is not None:
        run.record_deletion("ns/cm", final, tombstone=False)
    result = run("ns/cm", obj)
    rendered = reconciler(compiled.controller("c"), listers=listers).render(
        "ns/cm", obj, old=final)
    writes = [s for s in rendered.steps if "log" not in s and "requeueAfter" not in s]
    requeue = [s["requeueAfter"] for s in rendered.steps if "requeueAfter" in s]
    assert result.outcome in ("done", "requeue")
    assert writes == client.sent
    assert (result.delay if result.outcome == "requeue" else None) == \
        (min(requeue) if requeue and min(requeue) > 0 else None)
