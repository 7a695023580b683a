"""kubectl against the embedded server: get, apply (client- and server-side), watch, delete.

Skipped when kubectl is not installed (Debian: ``apt-get install kubernetes-client``).
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading

import pytest

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

POD = """apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec: {containers: [{name: c, image: nginx}]}
"""


def kubectl(server, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, KUBECONFIG=server.kubeconfig_path)
    return subprocess.run([KUBECTL, *args], env=env, input=stdin, capture_output=True, text=True,
                          timeout=60)


def test_kubectl_get_empty_and_namespaces(embedded_server):
    """kubectl get pods / namespaces works over the written kubeconfig."""
    r = kubectl(embedded_server, "get", "pods")
    assert r.returncode == 0 and "No resources found" in r.stderr + r.stdout
    ns = kubectl(embedded_server, "get", "ns", "-o", "name")
    assert "namespace/default" in ns.stdout.split()


def test_kubectl_apply_creates_then_configures(embedded_server):
    """kubectl apply -f creates, then patches; labels change on the stored object."""
    first = kubectl(embedded_server, "apply", "-f", "-", stdin=POD)
    assert first.returncode == 0, first.stderr
    second = kubectl(embedded_server, "apply", "-f", "-", stdin=POD.replace("app: web", "app: web2"))
    assert second.returncode == 0, second.stderr
    stored = embedded_server.store.get("v1", "Pod", "web", "default")
    assert stored["metadata"]["labels"] == {"app": "web2"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in stored["metadata"]["annotations"]


def test_kubectl_server_side_apply(embedded_server):
    """kubectl apply --server-side uses apply-patch+yaml with a field manager."""
    r = kubectl(embedded_server, "apply", "--server-side", "-f", "-", stdin=POD)
    assert r.returncode == 0, r.stderr
    managers = {m["manager"] for m in embedded_server.store.get("v1", "Pod", "web")["metadata"]["managedFields"]}
    assert "kubectl" in managers


def test_kubectl_get_by_label_and_delete(embedded_server):
    """kubectl get -l selects; kubectl delete waits for the deletion and succeeds."""
    embedded_server.load([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default", "labels": {"t": "x"}}},
                          {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "default"}}])
    got = kubectl(embedded_server, "get", "cm", "-l", "t=x", "-o", "name")
    assert got.stdout.split() == ["configmap/a"]
    deleted = kubectl(embedded_server, "delete", "cm", "a")
    assert deleted.returncode == 0 and embedded_server.store.get("v1", "ConfigMap", "a") is None


def test_kubectl_get_watch_sees_new_pod(embedded_server):
    """kubectl get pods -w prints a pod created after the watch started."""
    env = dict(os.environ, KUBECONFIG=embedded_server.kubeconfig_path)
    proc = subprocess.Popen([KUBECTL, "get", "pods", "-w", "-o", "name"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line.strip()) for line in proc.stdout], daemon=True).start()
    try:
        assert embedded_server.wait_for_watchers("v1", "Pod", timeout=20), "kubectl never watched"
        embedded_server.store.create({"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": "late", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
        assert lines.get(timeout=20) == "pod/late"
    finally:
        proc.terminate()
        proc.wait(10)



def test_kubectl_apply_image_change_keeps_other_container_fields(embedded_server):
    """A second kubectl apply (strategic merge with $setElementOrder) changes the image only."""
    manifest = POD.replace("{name: c, image: nginx}", "{name: c, image: nginx, ports: [{containerPort: 80}]}")
    assert kubectl(embedded_server, "apply", "-f", "-", stdin=manifest).returncode == 0
    r = kubectl(embedded_server, "apply", "-f", "-", stdin=manifest.replace("image: nginx", "image: nginx:2"))
    assert r.returncode == 0, r.stderr
    containers = embedded_server.store.get("v1", "Pod", "web")["spec"]["containers"]
    assert containers == [{"name": "c", "image": "nginx:2",   # with 1.20's Container defaults
                           "ports": [{"containerPort": 80, "protocol": "TCP"}],
                           "terminationMessagePath": "/dev/termination-log",
                           "terminationMessagePolicy": "File", "resources": {}}]
