"""``kinrun CONFIG --dry-run`` against a real kube-apiserver: every write is sent with
``dryRun=All`` and named in the log with the fields it would change, and afterwards the server
holds exactly what it held before (same objects, same resourceVersions, no Lease)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinrun.kube import Client
from kinrun.testing.envtest import EnvtestServer
from e2e.harness import KinrunProcess, get_or_none

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
leaderElection: {{leaseName: dry-run-lease, namespace: {ns}}}
informers:
  parents:
    apiVersion: v1
    kind: ConfigMap
    labelSelector: kinrun.dev/dry-run=parent
controllers:
  - name: dry-run
    for: parents
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {{name: "{{{{ obj.metadata.name }}}}-child"}}
              data: {{parent: "{{{{ obj.metadata.name }}}}"}}
        - patch:
            target: {{apiVersion: apps/v1, kind: Deployment, name: web}}
            patch: |
              metadata: {{annotations: {{foo: bar}}}}
              spec: {{replicas: 3}}
        - patch:
            patch: |
              metadata: {{labels: {{kinrun.dev/dry-run: parent}}}}
        - delete:
            target: {{apiVersion: v1, kind: ConfigMap, name: "{{{{ obj.metadata.name }}}}-old"}}
        - event: {{type: Normal, reason: DryRun, message: "reconciled {{{{ obj.metadata.name }}}}"}}
"""

SEEDS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "ConfigMap",
     "metadata": {"name": "settings", "labels": {"kinrun.dev/dry-run": "parent"}},
     "data": {"a": "1"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings-old"},
     "data": {"stale": "yes"}},
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "web", "annotations": {"owner": "test"}},
     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
              "template": {"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}},
]

WATCHED = [("v1", "ConfigMap"), ("apps/v1", "Deployment"), ("v1", "Event"),
           ("coordination.k8s.io/v1", "Lease")]
"""Every kind the config could write (a Lease, if leader election ran)."""


@pytest.fixture
def client(envtest_server: EnvtestServer) -> Iterator[Client]:
    """A real (not dry-run) Client of the envtest server."""
    with Client.from_config(kubeconfig=envtest_server.kubeconfig_path) as c:
        yield c


def snapshot(client: Client, ns: str) -> dict[str, list[dict[str, Any]]]:
    """Every object of the WATCHED kinds in ``ns``, as the server lists them (resourceVersion,
    managedFields and all), sorted by name."""
    out = {}
    for api_version, kind in WATCHED:
        items = client.lister_watcher(client.resolve(api_version, kind), namespace=ns).list().items
        out[kind] = sorted(items, key=lambda o: o["metadata"]["name"])
    return out


def test_dry_run_names_every_write_and_changes_nothing(
        envtest_server: EnvtestServer, envtest_namespace: str, client: Client,
        tmp_path: Path) -> None:
    """--dry-run: apply/patch/delete/Event are logged as would-be changes with their field
    paths, leader election is skipped, and the server's objects are untouched."""
    ns = envtest_namespace
    for seed in SEEDS:
        client.create({**seed, "metadata": {**seed["metadata"], "namespace": ns}})
    before = snapshot(client, ns)
    config = tmp_path / "dry-run.yaml"
    config.write_text(CONFIG.format(ns=ns))

    proc = KinrunProcess([str(config), "--kubeconfig", envtest_server.kubeconfig_path,
                          "--namespace", ns, "--dry-run"])
    try:
        proc.wait_for(r"dry-run: would create Event ")
        assert proc.stop() == 0, proc.log()
    finally:
        proc.kill()

    log = proc.log()
    expected = [
        "dry-run: leader election skipped",
        f"dry-run: would create ConfigMap {ns}/settings-child$",
        f"dry-run: would patch Deployment {ns}/web: metadata.annotations.foo \\(added\\), "
        f"spec.replicas 1 -> 3$",
        f"dry-run: no change to ConfigMap {ns}/settings$",
        f"dry-run: would delete ConfigMap {ns}/settings-old$",
        f"dry-run: would create Event {ns}/settings\\.[0-9a-f]+ \\(Normal DryRun\\)$",
    ]
    for pattern in expected:
        assert re.search(pattern, log, re.M), f"no line matching {pattern!r} in:\n{log}"
    assert snapshot(client, ns) == before
    assert get_or_none(client, "v1", "ConfigMap", "settings-child", ns) is None
    assert get_or_none(client, "coordination.k8s.io/v1", "Lease", "dry-run-lease", ns) is None
