"""Discovery documents and CustomResourceDefinitions served through the embedded server."""

from __future__ import annotations

import kubernetes
import pytest
from apiserver_http import WatchStream, call

WIDGETS = "/apis/example.com/v1/namespaces/default/widgets"


def crd(*, status: bool = True, scope: str = "Namespaced", versions=("v1",)) -> dict:
    vs = []
    for i, v in enumerate(versions):
        entry = {"name": v, "served": True, "storage": i == 0,
                 "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
        if status:
            entry["subresources"] = {"status": {}}
        vs.append(entry)
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": scope,
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                               "shortNames": ["wd"], "categories": ["all"]},
                     "versions": vs}}


def widget(name: str, **spec) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def resources(client, path: str) -> dict[str, dict]:
    return {r["name"]: r for r in call(client, "GET", path).body["resources"]}


def test_version(embedded_api_client):
    """/version answers a version.Info (VersionApi decodes it)."""
    info = kubernetes.client.VersionApi(embedded_api_client).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")


def test_core_api_versions(embedded_api_client):
    """/api lists v1."""
    assert kubernetes.client.CoreApi(embedded_api_client).get_api_versions().versions == ["v1"]


@pytest.mark.parametrize("name,short,namespaced,kind", [
    ("pods", ["po"], True, "Pod"), ("configmaps", ["cm"], True, "ConfigMap"),
    ("secrets", None, True, "Secret"), ("services", ["svc"], True, "Service"),
    ("namespaces", ["ns"], False, "Namespace"), ("events", ["ev"], True, "Event"),
    ("serviceaccounts", ["sa"], True, "ServiceAccount"),
])
def test_core_v1_resources(embedded_api_client, name, short, namespaced, kind):
    """/api/v1 lists built-in kinds with shortNames, scope and verbs."""
    res = resources(embedded_api_client, "/api/v1")[name]
    assert res.get("shortNames") == short and res["namespaced"] is namespaced and res["kind"] == kind
    assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(res["verbs"])


def test_status_subresources_in_discovery(embedded_api_client):
    """Kinds with a status subresource list ``<plural>/status``."""
    core = resources(embedded_api_client, "/api/v1")
    assert core["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert "configmaps/status" not in core
    assert "deployments/status" in resources(embedded_api_client, "/apis/apps/v1")


def test_api_groups(embedded_api_client):
    """/apis lists apps, coordination.k8s.io, events.k8s.io and apiextensions.k8s.io."""
    groups = kubernetes.client.ApisApi(embedded_api_client).get_api_versions().groups
    names = {g.name: g.preferred_version.group_version for g in groups}
    assert names["apps"] == "apps/v1"
    assert names["coordination.k8s.io"] == "coordination.k8s.io/v1"
    assert names["events.k8s.io"] == "events.k8s.io/v1"
    assert names["apiextensions.k8s.io"] == "apiextensions.k8s.io/v1"


@pytest.mark.parametrize("path,name,short", [
    ("/apis/apps/v1", "deployments", ["deploy"]),
    ("/apis/coordination.k8s.io/v1", "leases", None),
    ("/apis/events.k8s.io/v1", "events", ["ev"]),
])
def test_group_resources(embedded_api_client, path, name, short):
    """/apis/<g>/<v> lists the group's kinds."""
    res = resources(embedded_api_client, path)[name]
    assert res.get("shortNames") == short and res["namespaced"] is True


def test_unknown_group_is_not_found(embedded_api_client):
    """Discovery of an unserved group or version answers 404."""
    assert call(embedded_api_client, "GET", "/apis/example.com").status == 404
    assert call(embedded_api_client, "GET", "/apis/apps/v9").status == 404


def test_crd_is_established_and_served(embedded_api_client):
    """A created CRD is Established and its kind appears in /apis and its group-version."""
    ext = kubernetes.client.ApiextensionsV1Api(embedded_api_client)
    ext.create_custom_resource_definition(crd())
    got = call(embedded_api_client, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com").body
    conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conditions["Established"] == "True" and conditions["NamesAccepted"] == "True"
    groups = {g["name"] for g in call(embedded_api_client, "GET", "/apis").body["groups"]}
    assert "example.com" in groups
    res = resources(embedded_api_client, "/apis/example.com/v1")
    assert res["widgets"]["shortNames"] == ["wd"] and res["widgets"]["kind"] == "Widget"
    assert res["widgets"]["singularName"] == "widget" and res["widgets"]["namespaced"] is True
    assert "widgets/status" in res


def test_custom_resource_crud_with_custom_objects_api(embedded_api_client):
    """CustomObjectsApi creates, reads, patches, lists and deletes custom resources."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(crd())
    co = kubernetes.client.CustomObjectsApi(embedded_api_client)
    created = co.create_namespaced_custom_object("example.com", "v1", "default", "widgets", widget("w1", size=1))
    assert created["metadata"]["generation"] == 1
    patched = co.patch_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1",
                                                {"spec": {"size": 2}})
    assert patched["spec"]["size"] == 2 and patched["metadata"]["generation"] == 2
    listed = co.list_namespaced_custom_object("example.com", "v1", "default", "widgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["w1"] and listed["kind"] == "WidgetList"
    co.delete_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1")
    assert call(embedded_api_client, "GET", f"{WIDGETS}/w1").status == 404


def test_custom_resource_status_subresource(embedded_api_client):
    """With a declared status subresource, status only changes through /status."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(crd())
    body = widget("w1", size=1)
    body["status"] = {"ready": True}
    created = call(embedded_api_client, "POST", WIDGETS, body=body).body
    assert "status" not in created
    merge = "application/merge-patch+json"
    ignored = call(embedded_api_client, "PATCH", f"{WIDGETS}/w1", body={"status": {"ready": True}}, content_type=merge)
    assert "status" not in ignored.body
    done = call(embedded_api_client, "PATCH", f"{WIDGETS}/w1/status", body={"status": {"ready": True}}, content_type=merge)
    assert done.body["status"] == {"ready": True} and done.body["metadata"]["generation"] == 1


def test_custom_resource_without_status_subresource(embedded_api_client):
    """Without a status subresource, /status is 404 and status is written with the object."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(crd(status=False))
    body = widget("w1")
    body["status"] = {"ready": True}
    assert call(embedded_api_client, "POST", WIDGETS, body=body).body["status"] == {"ready": True}
    assert call(embedded_api_client, "GET", f"{WIDGETS}/w1/status").status == 404


def test_custom_resources_refuse_strategic_merge_patch(embedded_api_client):
    """Custom resources answer 415 to strategic merge patch, as the real server."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(crd())
    call(embedded_api_client, "POST", WIDGETS, body=widget("w1"))
    r = call(embedded_api_client, "PATCH", f"{WIDGETS}/w1", body={"spec": {}},
             content_type="application/strategic-merge-patch+json")
    assert r.status == 415


def test_cluster_scoped_crd(embedded_api_client):
    """scope Cluster serves the kind without namespaces."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(crd(scope="Cluster"))
    body = widget("w1")
    del body["metadata"]["namespace"]
    assert call(embedded_api_client, "POST", "/apis/example.com/v1/widgets", body=body).status == 201
    assert resources(embedded_api_client, "/apis/example.com/v1")["widgets"]["namespaced"] is False
    assert call(embedded_api_client, "GET", "/apis/example.com/v1/widgets/w1").status == 200


def test_crd_serves_every_version(embedded_api_client):
    """Each served version answers, with its own apiVersion on the objects."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(
        crd(versions=("v1", "v1beta1")))
    call(embedded_api_client, "POST", WIDGETS, body=widget("w1"))
    beta = call(embedded_api_client, "GET", "/apis/example.com/v1beta1/namespaces/default/widgets/w1").body
    assert beta["apiVersion"] == "example.com/v1beta1"
    listed = call(embedded_api_client, "GET", "/apis/example.com/v1beta1/widgets").body
    assert listed["items"][0]["apiVersion"] == "example.com/v1beta1"
    group = call(embedded_api_client, "GET", "/apis/example.com").body
    assert [v["version"] for v in group["versions"]] == ["v1", "v1beta1"]


def test_deleting_crd_removes_instances_and_discovery(embedded_server, embedded_api_client):
    """Deleting a CRD deletes its custom resources (watchers see DELETED) and unserves it."""
    kubernetes.client.ApiextensionsV1Api(embedded_api_client).create_custom_resource_definition(crd())
    call(embedded_api_client, "POST", WIDGETS, body=widget("w1"))
    w = WatchStream(embedded_api_client, WIDGETS, {"resourceVersion": str(embedded_server.store.resource_version)})
    r = call(embedded_api_client, "DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
    assert r.status == 200
    assert w.next()["type"] == "DELETED"
    assert w.wait_end()
    assert call(embedded_api_client, "GET", "/apis/example.com/v1").status == 404
    assert call(embedded_api_client, "GET", WIDGETS).status == 404


def test_invalid_crd_is_rejected(embedded_api_client):
    """A CRD whose name is not <plural>.<group> answers 422."""
    body = crd()
    body["metadata"]["name"] = "wrong.example.com"
    r = call(embedded_api_client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=body)
    assert r.status == 422 and r.body["reason"] == "Invalid"


def test_openapi_v3_advertises_field_validation(embedded_api_client):
    """/openapi/v3 lists group-versions whose PATCH operations accept fieldValidation."""
    root = call(embedded_api_client, "GET", "/openapi/v3").body
    url = root["paths"]["api/v1"]["serverRelativeURL"]
    doc = call(embedded_api_client, "GET", url.split("?")[0]).body
    op = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["patch"]
    assert op["x-kubernetes-group-version-kind"]["kind"] == "Pod"
    assert any(p["name"] == "fieldValidation" for p in op["parameters"])
