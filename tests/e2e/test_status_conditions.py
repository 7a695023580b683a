"""The status action's conditions on the embedded and the real API server, through ``kinrun
CONFIG``: a condition appears with a transition time, a new reason (a new generation) keeps that
time while observedGeneration moves, a status change moves it, and every change is one write."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Cluster
from .harness import wait_for_object

pytestmark = pytest.mark.e2e

CONFIG = "tests/e2e/configs/widget-status.yaml"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "ready": {"type": "boolean"}, "reason": {"type": "string"}}},
                               "status": {"type": "object", "properties": {
                                   "phase": {"type": "string"},
                                   "observedGeneration": {"type": "integer"},
                                   "conditions": {
                                       "type": "array", "x-kubernetes-list-type": "map",
                                       "x-kubernetes-list-map-keys": ["type"],
                                       "items": {"type": "object", "required": [
                                           "type", "status", "lastTransitionTime", "reason",
                                           "message"], "properties": {
                                           "type": {"type": "string"},
                                           "status": {"type": "string",
                                                      "enum": ["True", "False", "Unknown"]},
                                           "observedGeneration": {"type": "integer"},
                                           "lastTransitionTime": {"type": "string",
                                                                  "format": "date-time"},
                                           "reason": {"type": "string"},
                                           "message": {"type": "string"}}}}}}}}}}]}}


def ready(obj: dict[str, Any] | None) -> dict[str, Any]:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "Ready"), {})


def test_conditions_keep_their_transition_time_until_the_status_changes(
        cluster: Cluster) -> None:
    """New reason: same lastTransitionTime, new observedGeneration; False->True: a new time."""
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"ready": False, "reason": "Starting"}}
    proc = cluster.run(CONFIG, seeds=[*cluster.shared(CRD), widget])
    client, ns = cluster.client, cluster.namespace
    first = wait_for_object(client, "example.com/v1", "Widget", "w", ns,
                            lambda o: ready(o).get("reason") == "Starting")
    assert first["status"]["phase"] == "Pending" and first["status"]["observedGeneration"] == 1
    assert ready(first)["status"] == "False" and ready(first)["observedGeneration"] == 1
    since = ready(first)["lastTransitionTime"]
    client.patch("example.com/v1", "Widget", "w", {"spec": {"reason": "Pulling"}}, namespace=ns)
    second = wait_for_object(client, "example.com/v1", "Widget", "w", ns,
                             lambda o: ready(o).get("reason") == "Pulling")
    assert ready(second)["lastTransitionTime"] == since
    assert ready(second)["observedGeneration"] == 2 and ready(second)["message"] == "generation 2"
    proc.wait_for(rf"patch Widget {ns}/w/status$", count=2)
    client.patch("example.com/v1", "Widget", "w", {"spec": {"ready": True}}, namespace=ns)
    third = wait_for_object(client, "example.com/v1", "Widget", "w", ns,
                            lambda o: ready(o).get("status") == "True")
    assert third["status"]["phase"] == "Ready" and ready(third)["observedGeneration"] == 3
    assert ready(third)["lastTransitionTime"] >= since
    proc.wait_for(rf"patch Widget {ns}/w/status$", count=3)
    assert proc.stop() == 0
    assert proc.count(rf"patch Widget {ns}/w/status$") == 3  # one write per change, no more
    assert proc.count("did not keep") == 0
