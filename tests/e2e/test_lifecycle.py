"""The main job's life cycle: draining on SIGTERM, a restarted API server, no cluster at all."""

from __future__ import annotations

import re

import pytest

from .conftest import Cluster
from .harness import KinrunProcess, WAIT

pytestmark = pytest.mark.e2e


def labelled_cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"slow": "yes"}}, "data": {}}


def test_sigterm_during_reconciles_drains_and_exits_zero(cluster: Cluster) -> None:
    """SIGTERM while reconciles run: every started reconcile ends, then kinrun exits 0."""
    proc = cluster.run("tests/e2e/configs/slow.yaml",
                       seeds=[labelled_cm(f"cm-{i}") for i in range(4)])
    proc.wait_for(r"kinrun.tests.slow: start ")
    assert proc.stop() == 0
    started = {m.group(1) for m in map(re.compile(r"slow: start (\S+)").search, proc.lines) if m}
    ended = {m.group(1) for m in map(re.compile(r"slow: end (\S+)").search, proc.lines) if m}
    assert started and started == ended
    assert proc.count(r"INFO kinrun: stopped$") == 1


def test_apiserver_restart_is_survived_without_missing_changes(request: pytest.FixtureRequest,
                                                               tmp_path) -> None:
    """A real kube-apiserver restarted under kinrun: it reconnects, relists, misses nothing."""
    cluster = Cluster("envtest", tmp_path, request)
    try:
        proc = cluster.run("examples/configs/pod-logger.yaml", seeds=[_pod("p1"), _pod("p2")])
        ns, client = cluster.namespace, cluster.client
        proc.wait_for(r"Sync/Add/Update for Pod p2$")
        cluster.server.restart_apiserver()
        client.create(cluster.obj(_pod("p3")))
        client.delete("v1", "Pod", "p1", ns, grace_period_seconds=0)
        proc.wait_for(r"Sync/Add/Update for Pod p3$")
        proc.wait_for(rf"Pod {ns}/p1 does not exist anymore$")
        assert proc.count(rf"Pod {ns}/p2 does not exist anymore$") == 0
        assert proc.stop() == 0
    finally:
        cluster.close()


def _pod(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}


def test_no_cluster_configured_says_so_in_one_line_and_suggests_embedded(tmp_path) -> None:
    """No kubeconfig anywhere and no --embedded: one line naming the problem and --embedded, exit 2."""
    proc = KinrunProcess(["examples/configs/pod-logger.yaml"],
                         env={"KUBECONFIG": str(tmp_path / "missing"), "HOME": str(tmp_path),
                              "KUBERNETES_SERVICE_HOST": ""})
    code = proc.proc.wait(WAIT)
    proc._reader.join(5)
    lines = [ln for ln in proc.lines if ln.strip()]
    assert code == 2
    assert len(lines) == 1, lines
    assert "--embedded" in lines[0] and "kubeconfig" in lines[0].lower()
