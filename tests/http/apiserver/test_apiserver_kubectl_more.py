"""kubectl (the one on PATH) against the embedded server: protobuf creates, auth can-i,
explain, scale, server-side Tables. Skipped without kubectl."""

from __future__ import annotations

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not on PATH")

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.ex.com}
spec:
  group: ex.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns: [{name: Mode, type: string, jsonPath: .spec.mode}]
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The widget's desired state.
            properties:
              mode: {type: string, enum: [a, b], description: How it runs.}
"""


def kubectl(server, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", "--kubeconfig", server.kubeconfig_path, *args],
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_create_namespace_configmap_secret_send_protobuf(embedded_server):
    """kubectl create namespace|configmap|secret (protobuf bodies) create the objects."""
    assert kubectl(embedded_server, "create", "namespace", "team").returncode == 0
    r = kubectl(embedded_server, "create", "configmap", "c", "-n", "team", "--from-literal=a=b")
    assert r.returncode == 0, r.stderr
    r = kubectl(embedded_server, "create", "secret", "generic", "s", "-n", "team",
                "--from-literal=p=x")
    assert r.returncode == 0, r.stderr
    store = embedded_server.store
    assert store.get("v1", "ConfigMap", "c", "team")["data"] == {"a": "b"}
    secret = store.get("v1", "Secret", "s", "team")
    assert secret["data"] == {"p": "eA=="} and secret["type"] == "Opaque"


def test_auth_can_i_is_always_yes(embedded_server):
    """kubectl auth can-i answers yes: the embedded server authorizes everything."""
    r = kubectl(embedded_server, "auth", "can-i", "delete", "pods", "-n", "kube-system")
    assert r.returncode == 0 and r.stdout.strip() == "yes", r.stderr
    r = kubectl(embedded_server, "auth", "can-i", "--list")
    assert r.returncode == 0 and "*.*" in r.stdout, r.stderr


def test_get_prints_the_real_columns_and_explain_reads_the_schemas(embedded_server):
    """kubectl get shows a Pod's READY/STATUS/RESTARTS and a CRD's printer columns; kubectl
    explain works for a built-in kind and a CRD."""
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n"
    assert kubectl(embedded_server, "apply", "-f", "-", stdin=pod).returncode == 0
    out = kubectl(embedded_server, "get", "pods").stdout
    assert out.split("\n")[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert out.split("\n")[1].split()[:4] == ["p", "0/1", "Pending", "0"]
    assert kubectl(embedded_server, "apply", "-f", "-", stdin=CRD).returncode == 0
    widget = "apiVersion: ex.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {mode: a}\n"
    r = kubectl(embedded_server, "apply", "-f", "-", stdin=widget)
    assert r.returncode == 0, r.stderr
    assert kubectl(embedded_server, "get", "widgets").stdout.split() == ["NAME", "MODE", "w", "a"]
    assert "How it runs." in kubectl(embedded_server, "explain", "widget.spec").stdout
    assert "replicas" in kubectl(embedded_server, "explain", "deployment.spec").stdout
    bad = kubectl(embedded_server, "apply", "-f", "-", stdin=widget.replace("mode: a", "mode: c"))
    assert bad.returncode != 0 and 'spec.mode: Unsupported value: "c"' in bad.stderr


def test_scale_a_deployment(embedded_server):
    """kubectl scale changes spec.replicas through the scale subresource."""
    deploy = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"""
    assert kubectl(embedded_server, "apply", "-f", "-", stdin=deploy).returncode == 0
    r = kubectl(embedded_server, "scale", "deployment", "web", "--replicas=3")
    assert r.returncode == 0, r.stderr
    assert embedded_server.store.get("apps/v1", "Deployment", "web")["spec"]["replicas"] == 3
