"""What ``kinrun rbac`` and ``kinrun manifests`` give a sharded config: the Leases of the
ring, patch on the sharded resources, get on the sharded primaries; three replicas named by
their Pods."""

from __future__ import annotations

import yaml

from kinrun.config import load_text
from kinrun.manifests import Names, write_base
from kinrun.plan import plan
from kinrun.rbac import rbac_needs

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  deploys: {apiVersion: apps/v1, kind: Deployment, namespaces: [apps]}
  rs: {apiVersion: apps/v1, kind: ReplicaSet, namespaces: [apps]}
  nodes: {apiVersion: v1, kind: Node}
controllers:
  - name: d
    for: deploys
    watches: [{informer: rs, mapTo: owner}]
    reconcile: {actions: [{log: "{{ obj.metadata.name }}"}]}
"""
SHARDED = CONFIG + "sharding: {ring: web, namespace: ops}\n"


def perms(text: str, **kwargs) -> set[str]:
    return {str(p) for p in rbac_needs(plan(load_text(text, file="c.yaml")), **kwargs).permissions}


def test_sharding_adds_the_ring_leases_and_the_label_patches():
    added = perms(SHARDED) - perms(CONFIG)
    assert added == {
        "create coordination.k8s.io/leases in ops", "delete coordination.k8s.io/leases in ops",
        "get coordination.k8s.io/leases in ops", "list coordination.k8s.io/leases in ops",
        "update coordination.k8s.io/leases in ops",
        "patch apps/deployments in apps", "patch apps/replicasets in apps",
        "get apps/deployments in apps"}  # nodes: not sharded, nothing more


def test_a_dry_run_needs_nothing_for_sharding():
    assert perms(SHARDED, dry_run=True) == perms(CONFIG, dry_run=True)


def test_manifests_run_three_replicas_named_by_their_pods(tmp_path):
    config_file = tmp_path / "web.yaml"
    config_file.write_text(SHARDED)
    from kinrun.config import load

    config = load(config_file)
    write_base(config, tmp_path / "base", Names.for_config(config_file))
    deployment = yaml.safe_load((tmp_path / "base" / "deployment.yaml").read_text())
    assert deployment["spec"]["replicas"] == 3
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in env
    rbac = list(yaml.safe_load_all((tmp_path / "base" / "rbac.yaml").read_text()))
    lease_rules = [r for doc in rbac if doc and doc["kind"] == "Role"
                   and doc["metadata"]["namespace"] == "ops" for r in doc["rules"]]
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "verbs": ["create", "delete", "get", "list", "update"]} in lease_rules
