"""Every example config, run as ``kinrun CONFIG`` against the embedded and a real API server:
objects are created, updated and deleted with the client; the tests assert on what kinrun
logged and on the objects it wrote."""

from __future__ import annotations

import pytest

from .conftest import Cluster
from .harness import get_or_none, wait_for_object

pytestmark = pytest.mark.e2e


def pod(name: str, node: str | None = None, labels: dict | None = None) -> dict:
    spec: dict = {"containers": [{"name": "main", "image": "busybox:1.36"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}}, "spec": spec}


def configmap(name: str, labels: dict | None = None, owner: dict | None = None) -> dict:
    meta: dict = {"name": name, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner["apiVersion"], "kind": owner["kind"],
                                    "name": owner["metadata"]["name"],
                                    "uid": owner["metadata"]["uid"]}]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def test_pod_logger_logs_initial_list_add_update_and_delete(cluster: Cluster) -> None:
    """pod-logger: a pod that existed at start, then a created, updated and deleted one."""
    proc = cluster.run("examples/configs/pod-logger.yaml", seeds=[pod("before")])
    proc.wait_for(r"Sync/Add/Update for Pod before$")
    proc.wait_for(r"controller pod-logger started with 1 worker")
    client, ns = cluster.client, cluster.namespace
    client.create(cluster.obj(pod("p1")))
    proc.wait_for(r"Sync/Add/Update for Pod p1$")
    client.patch("v1", "Pod", "p1", {"metadata": {"labels": {"changed": "yes"}}}, namespace=ns)
    proc.wait_for(r"Sync/Add/Update for Pod p1$", count=2)
    client.delete("v1", "Pod", "p1", ns, grace_period_seconds=0)
    proc.wait_for(rf"Pod {ns}/p1 does not exist anymore$")
    assert proc.stop() == 0
    assert proc.count(r"Pod .*/before does not exist anymore") == 0


def test_configmap_children_applies_owned_child_and_deletes_it_with_parent(cluster: Cluster) -> None:
    """configmap-children: a labelled ConfigMap gets an owned child; deleting it removes the child."""
    gen = {"kinrun.dev/generate": "true"}
    proc = cluster.run("examples/configs/configmap-children.yaml",
                       seeds=[configmap("settings", gen), configmap("unrelated")])
    client, ns = cluster.client, cluster.namespace
    parent = client.get("v1", "ConfigMap", "settings", ns)
    child = wait_for_object(client, "v1", "ConfigMap", "settings-child", ns, lambda o: o is not None)
    owner = child["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("ConfigMap", "settings",
                                                            parent["metadata"]["uid"])
    assert owner.get("controller") is True
    assert child["data"] == {"parent": "settings"}
    client.patch("v1", "ConfigMap", "unrelated", {"metadata": {"labels": gen}}, namespace=ns)
    wait_for_object(client, "v1", "ConfigMap", "unrelated-child", ns, lambda o: o is not None)
    client.delete("v1", "ConfigMap", "settings", ns)
    wait_for_object(client, "v1", "ConfigMap", "settings-child", ns, lambda o: o is None)
    assert get_or_none(client, "v1", "ConfigMap", "unrelated-child", ns) is not None
    assert proc.stop() == 0


def test_pods_by_node_hook_plugin_uses_custom_index(cluster: Cluster) -> None:
    """pods-by-node: the plugin's byNode index counts pods per node; a node change requeues its pods."""
    node_a, node_b = cluster.name("node-a"), cluster.name("node-b")
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}} for n in (node_a, node_b)]
    proc = cluster.run("examples/configs/pods-by-node.yaml",
                       seeds=[*nodes, pod("web-1", node_a), pod("web-2", node_a),
                              pod("batch-1", node_b), pod("pending")])
    ns = cluster.namespace
    proc.wait_for(rf"Pod {ns}/web-1 is on node {node_a} with 1 other pod\(s\)")
    proc.wait_for(rf"Pod {ns}/batch-1 is on node {node_b} with 0 other pod\(s\)")
    proc.wait_for(rf"Pod {ns}/pending is not scheduled yet")
    cluster.client.create(cluster.obj(pod("web-3", node_a)))
    proc.wait_for(rf"Pod {ns}/web-3 is on node {node_a} with 2 other pod\(s\)")
    before = proc.count(rf"Pod {ns}/batch-1 is on node")
    cluster.client.patch("v1", "Node", node_b, {"metadata": {"labels": {"zone": "z1"}}})
    proc.wait_for(rf"Pod {ns}/batch-1 is on node {node_b}", count=before + 1)
    cluster.client.delete("v1", "Pod", "web-3", ns, grace_period_seconds=0)
    proc.wait_for(rf"Pod {ns}/web-3 is gone")
    for name in ("web-1", "web-2", "batch-1", "pending"):
        cluster.client.delete("v1", "Pod", name, ns, grace_period_seconds=0, missing_ok=True)
    for name in (node_a, node_b):
        cluster.client.delete("v1", "Node", name, missing_ok=True)
    assert proc.stop() == 0


DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
             "template": {"metadata": {"labels": {"app": "web"}},
                          "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
}


def config_hash(client, ns: str) -> str | None:
    """The Deployment's pod-template config-hash annotation (None when unset)."""
    template = client.get("apps/v1", "Deployment", "web", ns)["spec"]["template"]
    return ((template.get("metadata") or {}).get("annotations") or {}).get("kinrun.dev/config-hash")


def test_secondary_watch_maps_configmaps_to_their_deployment(cluster: Cluster) -> None:
    """secondary-watch: labelled and owned ConfigMaps requeue their Deployment; the config hash rolls."""
    proc = cluster.run("examples/configs/secondary-watch.yaml", seeds=[DEPLOYMENT])
    client, ns = cluster.client, cluster.namespace
    reconciled = rf"Reconciling Deployment {ns}/web \(generation \d+\)"
    proc.wait_for(reconciled)
    first = wait_for_object(client, "apps/v1", "Deployment", "web", ns,
                            lambda o: config_hash(client, ns) is not None)
    empty_hash = config_hash(client, ns)
    events = client.lister_watcher(client.resolve("v1", "Event"), namespace=ns).list().items
    assert any(e.get("reason") == "Reconciled" and e["involvedObject"]["name"] == "web"
               for e in events)
    client.create(cluster.obj(configmap("by-label", {"kinrun.dev/deployment": "web"})))
    wait_for_object(client, "apps/v1", "Deployment", "web", ns,
                    lambda o: config_hash(client, ns) not in (None, empty_hash))
    one_hash = config_hash(client, ns)
    client.patch("v1", "ConfigMap", "by-label", {"data": {"k": "changed"}}, namespace=ns)
    wait_for_object(client, "apps/v1", "Deployment", "web", ns,
                    lambda o: config_hash(client, ns) not in (None, empty_hash, one_hash))
    seen = proc.count(reconciled)
    deployment = client.get("apps/v1", "Deployment", "web", ns)
    client.create(cluster.obj(configmap("owned", owner=deployment)))
    proc.wait_for(reconciled, count=seen + 1)
    settled = client.get("apps/v1", "Deployment", "web", ns)["metadata"]["generation"]
    assert settled <= first["metadata"]["generation"] + 3
    client.delete("apps/v1", "Deployment", "web", ns)
    proc.wait_for(rf"Deployment {ns}/web is gone")
    assert proc.stop() == 0
