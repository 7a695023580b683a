"""The /scale subresource (autoscaling/v1 Scale) of built-in workloads and CRDs."""

from __future__ import annotations

import kubernetes
from apiserver_http import call

from kinrun.testing.apiserver.scale import format_selector

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
          "spec": {"selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_deployment_scale_read_and_patched_through_the_python_client(embedded_api_client):
    """read/patch_namespaced_deployment_scale work; the patch changes spec.replicas only and
    bumps the generation."""
    apps = kubernetes.client.AppsV1Api(embedded_api_client)
    apps.create_namespaced_deployment("default", DEPLOY)
    scale = apps.read_namespaced_deployment_scale("web", "default")
    assert scale.spec.replicas == 1 and scale.status.selector == "app=web"
    assert apps.patch_namespaced_deployment_scale(
        "web", "default", {"spec": {"replicas": 4}}).spec.replicas == 4
    deploy = apps.read_namespaced_deployment("web", "default")
    assert deploy.spec.replicas == 4 and deploy.metadata.generation == 2


def test_scale_selector_is_written_as_label_selector_as_selector_does():
    """A selector with expressions: requirements sorted by key, values sorted and once
    (``metav1.LabelSelectorAsSelector(...).String()``, what 1.20's scale storage answers and
    what a Deployment's SELECTOR column shows)."""
    selector = {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn",
                                      "values": ["z", "b", "b"]},
                                     {"key": "abc", "operator": "Exists"}]}
    assert format_selector(selector) == "abc,app=web,tier notin (b,z)"
    assert format_selector({"b": "2", "a": "1"}) == "a=1,b=2"   # an RC's plain map


def test_scale_put_with_a_stale_resource_version_conflicts(embedded_api_client):
    """PUT of a Scale carrying an old resourceVersion: 409; negative replicas: 422."""
    call(embedded_api_client, "POST", "/apis/apps/v1/namespaces/default/deployments", body=DEPLOY)
    path = "/apis/apps/v1/namespaces/default/deployments/web/scale"
    scale = call(embedded_api_client, "GET", path).body
    scale["spec"]["replicas"] = 2
    assert call(embedded_api_client, "PUT", path, body=scale).status == 200
    assert call(embedded_api_client, "PUT", path, body=scale).status == 409
    scale = call(embedded_api_client, "GET", path).body
    scale["spec"]["replicas"] = -1
    bad = call(embedded_api_client, "PUT", path, body=scale)
    assert bad.status == 422 and bad.body["details"]["causes"][0]["field"] == "spec.replicas"


def test_crd_scale_subresource_and_discovery(embedded_api_client):
    """A CRD declaring a scale subresource serves it at its paths and lists it in discovery."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "pools.ex.com"},
           "spec": {"group": "ex.com", "scope": "Namespaced",
                    "names": {"plural": "pools", "singular": "pool", "kind": "Pool"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "subresources": {"status": {}, "scale": {
                                      "specReplicasPath": ".spec.size",
                                      "statusReplicasPath": ".status.ready",
                                      "labelSelectorPath": ".status.selector"}},
                                  "schema": {"openAPIV3Schema": {
                                      "type": "object",
                                      "x-kubernetes-preserve-unknown-fields": True}}}]}}
    assert call(embedded_api_client, "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd).status == 201
    pools = "/apis/ex.com/v1/namespaces/default/pools"
    call(embedded_api_client, "POST", pools, body={
        "apiVersion": "ex.com/v1", "kind": "Pool", "metadata": {"name": "p"}, "spec": {"size": 2}})
    reply = call(embedded_api_client, "PATCH", f"{pools}/p/scale", body={"spec": {"replicas": 7}},
                 content_type="application/merge-patch+json")
    assert reply.status == 200 and reply.body["spec"] == {"replicas": 7}
    assert call(embedded_api_client, "GET", f"{pools}/p").body["spec"]["size"] == 7
    resources = call(embedded_api_client, "GET", "/apis/ex.com/v1").body["resources"]
    assert {"pools", "pools/status", "pools/scale"} <= {r["name"] for r in resources}
