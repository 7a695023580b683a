"""The finalizer example (examples/configs/finalizer.yaml) as ``kinrun CONFIG`` against the
embedded and the real API server: the finalizer is added, a delete leaves the ConfigMap
terminating while finalize deletes its copy in another namespace, the finalizer is removed and
the ConfigMap goes; a failing finalize (on hold) keeps it, with its finalizer, until the hold
is lifted. (Namespace deletion waiting for the finalizer is not tested: no controller-manager
runs here, so a deleted namespace never finishes terminating anyway.)"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Cluster
from .harness import get_or_none, wait_for_object

pytestmark = pytest.mark.e2e

FINALIZER = "example.com/backup"
BACKUPS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "backups"}}


def original(name: str, **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"example.com/backup": "true"},
                         "annotations": annotations}, "data": {"color": "blue"}}


def has_finalizer(obj: dict[str, Any] | None) -> bool:
    return obj is not None and FINALIZER in (obj["metadata"].get("finalizers") or [])


def test_delete_finalizes_while_the_object_exists_then_it_goes(cluster: Cluster) -> None:
    """finalizer added; delete: the copy is deleted first, then the finalizer, then the object."""
    proc = cluster.run("examples/configs/finalizer.yaml",
                       seeds=[*cluster.shared(BACKUPS), original("settings")])
    client, ns = cluster.client, cluster.namespace
    copy = f"{ns}.settings"
    wait_for_object(client, "v1", "ConfigMap", copy, "backups", lambda o: o is not None)
    assert has_finalizer(client.get("v1", "ConfigMap", "settings", ns))
    client.delete("v1", "ConfigMap", "settings", ns)
    wait_for_object(client, "v1", "ConfigMap", "settings", ns, lambda o: o is None)
    assert get_or_none(client, "v1", "ConfigMap", copy, "backups") is None
    proc.wait_for(rf"^.*{ns}/settings is gone; finalize deleted its copy before it went$")
    log = proc.log()
    assert log.index(f"delete ConfigMap backups/{copy}") < log.index(
        f"remove finalizer {FINALIZER}")
    assert proc.stop() == 0


def test_a_failing_finalize_keeps_the_object_and_its_finalizer(cluster: Cluster) -> None:
    """On hold: deleted but still there, terminating, finalizer and copy kept; released: gone."""
    proc = cluster.run("examples/configs/finalizer.yaml",
                       seeds=[*cluster.shared(BACKUPS),
                              original("held", **{"example.com/hold": "true"})])
    client, ns = cluster.client, cluster.namespace
    copy = f"{ns}.held"
    wait_for_object(client, "v1", "ConfigMap", copy, "backups", lambda o: o is not None)
    wait_for_object(client, "v1", "ConfigMap", "held", ns, has_finalizer)
    client.delete("v1", "ConfigMap", "held", ns)
    proc.wait_for(rf"{ns}/held is on hold \(annotation example.com/hold\)", count=2)  # retried
    held = client.get("v1", "ConfigMap", "held", ns)
    assert held["metadata"].get("deletionTimestamp") and has_finalizer(held)
    assert get_or_none(client, "v1", "ConfigMap", copy, "backups") is not None
    client.patch("v1", "ConfigMap", "held",
                 {"metadata": {"annotations": {"example.com/hold": None}}}, namespace=ns)
    wait_for_object(client, "v1", "ConfigMap", "held", ns, lambda o: o is None)
    assert get_or_none(client, "v1", "ConfigMap", copy, "backups") is None
    assert proc.stop() == 0
