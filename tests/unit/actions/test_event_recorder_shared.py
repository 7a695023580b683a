"""One EventRecorder per controller: the event actions of ``actions``, ``onDelete`` and
``finalize`` count into the same correlator, with the controller's configured source."""

from __future__ import annotations

from kinrun.clock import FakeClock
from kinrun.config import load_text
from kinrun.kube.event_recorder import EventRequest
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: first
    for: cms
    finalizer: example.com/first
    reconcile:
      actions: [{event: {reason: Seen, message: m}}]
      onDelete: [{event: {reason: Gone, message: m}}]
      finalize: [{event: {reason: Cleaning, message: m}}]
  - name: second
    for: cms
    events: {component: second-controller, host: pod-0}
    reconcile:
      actions: [{event: {reason: Seen, message: m}}]
"""
CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "resourceVersion": "7"}}


def _event(program, obj=None, old=None) -> EventRequest:
    (step,) = program.render(key="shop/web", obj=obj, old=old).steps
    assert isinstance(step, EventRequest)
    return step


def test_programs_of_a_controller_share_its_recorder() -> None:
    """actions, onDelete and finalize of one controller: one recorder (kinrun/<name>); another
    controller has its own, with its configured component and host. onDelete's Event is about
    the final state."""
    compiled = plan(load_text(CONFIG), new_plugin_manager(), clock=FakeClock(wall=1_700_000_000.0))
    first, second = compiled.controller("first"), compiled.controller("second")
    live = _event(first.actions, obj=CM)
    gone = _event(first.on_delete, old=CM)
    cleaning = _event(first.finalize, obj=CM)
    assert live.recorder is gone.recorder is cleaning.recorder
    assert live.body["source"] == {"component": "kinrun/first"}
    assert gone.body["involvedObject"]["uid"] == "u-1" and gone.body["reason"] == "Gone"
    other = _event(second.actions, obj=CM)
    assert other.recorder is not live.recorder
    assert other.body["source"] == {"component": "second-controller", "host": "pod-0"}
    assert other.body["reportingComponent"] == "second-controller"
    assert other.body["reportingInstance"] == "pod-0"
