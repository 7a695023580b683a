"""``kinrun CONFIG --embedded`` with ``admission:`` (issue 33): kinrun registers its webhook
configurations on the embedded API server, which calls them as kube-apiserver does; so a
client of ``--embedded`` sees the defaults, denials and warnings it would see on a cluster.
The example ``examples/configs/foo-admission.yaml``, on a free port."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.errors import ApiError
from kinrun.kube import Client

from .harness import ROOT, KinrunProcess

pytestmark = pytest.mark.e2e

FOOS = "samplecontroller.k8s.io/v1alpha1"


def test_the_embedded_server_calls_kinruns_webhooks(tmp_path: Path) -> None:
    """A Foo without spec is stored defaulted with the creator noted; one above the quota is
    refused with the rule's message and is not stored; the controller reconciles the Foo as
    the webhooks stored it."""
    example = (ROOT / "examples/configs/foo-admission.yaml").read_text()
    config = tmp_path / "foo-admission.yaml"
    config.write_text(example.replace("crds: [../crds/foo.yaml]",
                                      f"crds: [{ROOT / 'examples/crds/foo.yaml'}]")
                      .replace("admission:\n  webhooks:",
                               "admission:\n  port: 0\n  address: 127.0.0.1\n  webhooks:"))
    quota = tmp_path / "quota.yaml"
    quota.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo-quota, namespace: "
                     "default}\ndata: {maxReplicas: '3'}\n")
    proc = KinrunProcess([str(config), "--embedded", "--seed", "examples/crds/foo.yaml",
                          "--seed", str(quota)])
    try:
        client = Client.from_config(kubeconfig=proc.kubeconfig())
        proc.wait_for(r"registered on the embedded API server")
        proc.wait_for(r"informer quotas synced: 1 configmaps")
        made = client.create({"apiVersion": FOOS, "kind": "Foo",
                              "metadata": {"name": "a", "namespace": "default"}, "spec": {}})
        assert made["spec"] == {"deploymentName": "a", "replicas": 1}
        assert made["metadata"]["annotations"] == {
            "samplecontroller.example.com/created-by": "kinrun-embedded"}
        proc.wait_for(r"Foo default/a: 1 replica\(s\) of a")
        with pytest.raises(ApiError) as refused:
            client.create({"apiVersion": FOOS, "kind": "Foo",
                           "metadata": {"name": "big", "namespace": "default"},
                           "spec": {"replicas": 5}})
        assert refused.value.status == 403
        assert "Foo big asks for 5 replicas; the quota of default is 3" in str(refused.value)
        with pytest.raises(ApiError):
            client.get(FOOS, "Foo", "big", "default")
        client.close()
        assert proc.stop() == 0
    finally:
        proc.kill()


SHARDED = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  databases: {apiVersion: v1, kind: ConfigMap, labelSelector: example.com/database=true}
controllers:
  - name: c
    for: databases
    reconcile: {actions: [{log: "database {{ key }}"}]}
admission: {port: 0, address: 127.0.0.1, webhooks: []}
sharding: {ring: databases, admission: true}
"""


def test_sharding_labels_new_objects_at_admission(tmp_path: Path) -> None:
    """With sharding.admission, a new object's create is answered with its shard label
    (kinrun's shard webhook on the embedded server), and the replica reconciles it."""
    config = tmp_path / "sharded.yaml"
    config.write_text(SHARDED)
    proc = KinrunProcess([str(config), "--embedded", "--shard-id", "r1"])
    try:
        client = Client.from_config(kubeconfig=proc.kubeconfig())
        proc.wait_for(r"registered on the embedded API server")
        proc.wait_for(r"ring members \['r1'\]")
        made = client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "db1", "namespace": "default", "labels": {"example.com/database": "true"}}})
        assert made["metadata"]["labels"]["shard.kinrun.dev/databases"] == "r1"
        proc.wait_for(r"database default/db1")
        client.close()
        assert proc.stop() == 0
    finally:
        proc.kill()
