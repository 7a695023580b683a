"""The RBAC ``kinrun rbac`` computes for a sharded config is enough on the real kube-apiserver:
two replicas run under a ServiceAccount bound to it, split the objects (membership Leases, the
sharder's election, labels, drains, GETs of moved objects), then one stops and the other takes
its objects over (Lease takeover, moves, the freed Lease deleted); no request is refused."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest
import yaml

from envtest.rawkube import RawKube
from envtest.test_rbac_examples import FORBIDDEN, Identity
from e2e.harness import KinrunProcess
from kinrun.config import load
from kinrun.errors import NotFoundError
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.rbac import rbac_needs, rbac_objects
from kinrun.sharding.keys import shard_label
from kinrun.testing.envtest import EnvtestServer

pytestmark = [pytest.mark.envtest]

N = 30


def _config(tmp: Path, namespace: str) -> Path:
    path = tmp / "sharded.yaml"
    path.write_text(yaml.safe_dump({
        "apiVersion": "kinrun.dev/v1alpha1", "kind": "ControllerConfig",
        "informers": {"cms": {"apiVersion": "v1", "kind": "ConfigMap",
                              "namespaces": [namespace], "labelSelector": "app=sharded"}},
        "controllers": [{"name": "c", "for": "cms", "reconcile": {
            "actions": [{"log": "reconciled {{ obj.metadata.name }}"}]}}],
        "sharding": {"ring": "rbac", "namespace": namespace, "leaseDuration": "4s",
                     "renewDeadline": "3s", "retryPeriod": "1s"}}))
    return path


def _until(what: str, check, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"not within {timeout:.0f}s: {what}"
        threading.Event().wait(0.25)


def test_two_replicas_split_and_hand_over_under_the_generated_rbac(
        envtest_server: EnvtestServer, tmp_path: Path) -> None:
    admin = RawKube(envtest_server.kubeconfig_path, "envtest")
    identity = Identity(envtest_server, admin, tmp_path, "sharding")
    ns = identity.namespace
    config = _config(tmp_path, ns)
    needs = rbac_needs(plan(load(config)))
    identity.grant(rbac_objects(needs, name=identity.name, service_account=identity.name,
                                service_account_namespace=ns))
    identity.wait_effective(list(needs.permissions), [])
    client = Client.from_config(kubeconfig=envtest_server.kubeconfig_path)
    procs: list[KinrunProcess] = []
    try:
        for i in range(N):
            client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": f"cm-{i}", "namespace": ns, "labels": {"app": "sharded"}}})
        for name in ("a", "b"):
            procs.append(KinrunProcess([str(config), "--kubeconfig", str(identity.kubeconfig),
                                        "--shard-id", name]))
        label = shard_label("rbac")

        def labels() -> list[str | None]:
            items = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns,
                                          label_selector="app=sharded").list().items
            return [(o["metadata"].get("labels") or {}).get(label) for o in items]

        _until("both replicas hold objects", lambda: set(labels()) == {"a", "b"})
        procs[1].stop()  # SIGTERM: b releases its Lease (and the sharder's, if it held it)
        _until("a holds everything", lambda: set(labels()) == {"a"})

        def lease_b_gone() -> bool:
            try:
                client.get("coordination.k8s.io/v1", "Lease", "b", ns)
            except NotFoundError:
                return True
            return False
        _until("b's Lease freed", lease_b_gone)
        for proc in procs:
            assert not re.search(FORBIDDEN, proc.log()), proc.log()
        assert procs[0].count(r"reconciled cm-") >= N // 2
    finally:
        for proc in procs:
            proc.kill()
        client.close()
        identity.close()
