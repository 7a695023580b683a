"""Warm standby (leaderElection.warmStandby) on a real kube-apiserver: a replica waiting for the
Lease has its caches synced and reconciles nothing; once the leader lets go it takes over with
no new initial LIST wait, reconciling what its cache already holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import Cluster

pytestmark = [pytest.mark.e2e, pytest.mark.envtest]

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {{apiVersion: v1, kind: Pod, namespaces: [default]}}
controllers:
  - name: pod-logger
    for: pods
    reconcile:
      actions: [{{log: "reconciled Pod {{{{ obj.metadata.name }}}}"}}]
leaderElection:
  leaseName: warm-standby
  namespace: {namespace}
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
  warmStandby: {warm}
"""

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


@pytest.fixture
def envtest_cluster(request, tmp_path) -> Cluster:
    cluster = Cluster("envtest", tmp_path, request)
    yield cluster
    cluster.close()


def _config(tmp_path: Path, namespace: str, warm: bool) -> str:
    path = tmp_path / f"warm-{warm}.yaml"
    path.write_text(CONFIG.format(namespace=namespace, warm=str(warm).lower()))
    return str(path)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_standby_syncs_before_the_lease_only_when_warm(envtest_cluster: Cluster, tmp_path, warm):
    """The standby's informer syncs while it waits (warm) or only after it leads (cold); it
    reconciles nothing before it holds the Lease, and everything after."""
    cluster = envtest_cluster
    config = _config(tmp_path, cluster.namespace, warm)
    leader = cluster.run(config, seeds=[POD])
    leader.wait_for(r"became leader")
    leader.wait_for(r"reconciled Pod p1")
    standby = cluster.run(config)
    standby.wait_for(r"waiting to become leader")
    if warm:
        standby.wait_for(r"warm standby: caches synced; waiting for the Lease")
        assert standby.count(r"informer pods synced: 1 pods") == 1
    else:
        assert standby.count(r"informer pods synced") == 0
    assert standby.count(r"reconciled Pod") == 0
    assert leader.stop() == 0  # releases the Lease
    standby.wait_for(r"became leader")
    standby.wait_for(r"reconciled Pod p1")
    log = standby.log()
    synced, led = log.index("informer pods synced"), log.index("became leader")
    assert (synced < led) is warm
    assert standby.stop() == 0
