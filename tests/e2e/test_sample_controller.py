"""The sample-controller example (examples/configs/sample-controller.yaml, client-go's
sample-controller in YAML) as ``kinrun CONFIG`` against the embedded and the real API server:
the Foo's Deployment is created and owned, the Foo's status.availableReplicas follows the
Deployment's status (which the test writes, as no Deployment controller runs here), a settled
status is not written again, and a Deployment the Foo does not control gets a Warning Event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import Cluster
from .harness import wait_for_object

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CRD = yaml.safe_load((ROOT / "examples" / "crds" / "foo.yaml").read_text())
FOO = "samplecontroller.k8s.io/v1alpha1"


def foo(name: str, deployment: str, replicas: int = 2) -> dict[str, Any]:
    return {"apiVersion": FOO, "kind": "Foo", "metadata": {"name": name},
            "spec": {"deploymentName": deployment, "replicas": replicas}}


def events(cluster: Cluster, reason: str) -> list[dict[str, Any]]:
    answer = cluster.client.transport.request(
        "GET", f"/api/v1/namespaces/{cluster.namespace}/events")
    return [e for e in answer["items"] if e.get("reason") == reason]


def test_foo_owns_its_deployment_and_reports_its_available_replicas(cluster: Cluster) -> None:
    """Deployment created and owned; availableReplicas 0, then 2 once the Deployment says so."""
    seeds = cluster.shared(CRD)
    proc = cluster.run("examples/configs/sample-controller.yaml",
                       seeds=[*seeds, foo("example-foo", "example-foo")])
    client, ns = cluster.client, cluster.namespace
    deploy = wait_for_object(client, "apps/v1", "Deployment", "example-foo", ns,
                             lambda o: o is not None)
    owner = client.get(FOO, "Foo", "example-foo", ns)
    (ref,) = deploy["metadata"]["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref.get("controller")) == (
        "Foo", owner["metadata"]["uid"], True)
    assert deploy["spec"]["replicas"] == 2
    wait_for_object(client, FOO, "Foo", "example-foo", ns,
                    lambda o: (o.get("status") or {}).get("availableReplicas") == 0)
    client.patch_status("apps/v1", "Deployment", "example-foo",  # as the Deployment controller
                        {"status": {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                                    "availableReplicas": 2}}, namespace=ns)
    wait_for_object(client, FOO, "Foo", "example-foo", ns,
                    lambda o: (o.get("status") or {}).get("availableReplicas") == 2)
    status_writes = rf"patch Foo {ns}/example-foo/status$"
    proc.wait_for(status_writes, count=2)
    applies = proc.count(rf"apply Deployment {ns}/example-foo$")
    for i in range(3):  # reconciles of the settled Foo: the Deployment applied, no status write
        client.patch("apps/v1", "Deployment", "example-foo",  # mapped to its owner, the Foo
                     {"metadata": {"annotations": {"poke": str(i)}}}, namespace=ns)
        proc.wait_for(rf"apply Deployment {ns}/example-foo$", count=applies + i + 1)
    assert proc.count(status_writes) == 2
    assert proc.count("did not keep") == 0  # every status field it writes is in the CRD
    assert events(cluster, "Synced")
    assert proc.stop() == 0


def test_a_deployment_the_foo_does_not_control_gets_a_warning(cluster: Cluster) -> None:
    """ErrResourceExists: a Warning Event; the foreign Deployment is not touched."""
    seeds = cluster.shared(CRD)
    taken = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "taken"},
             "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "other"}},
                      "template": {"metadata": {"labels": {"app": "other"}},
                                   "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    proc = cluster.run("examples/configs/sample-controller.yaml",
                       seeds=[*seeds, taken, foo("grabby", "taken", 3)])
    proc.wait_for(r'Resource "taken" already exists and is not managed by Foo$')
    (event,) = events(cluster, "ErrResourceExists")
    assert event["type"] == "Warning" and event["involvedObject"]["name"] == "grabby"
    deploy = cluster.client.get("apps/v1", "Deployment", "taken", cluster.namespace)
    assert deploy["spec"]["replicas"] == 1 and not deploy["metadata"].get("ownerReferences")
    assert proc.stop() == 0
