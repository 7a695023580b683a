"""The controller-manager subset (garbage collector, namespace controller) of
``EmbeddedAPIServer(controllers=True)``, against kube-controller-manager's documented
behaviour (kubernetes.io: "Garbage Collection", "Use Cascading Deletion", "Namespaces")."""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes
import pytest
from apiserver_http import call

from kinrun.testing.apiserver import EmbeddedAPIServer

CM = "/api/v1/namespaces/default/configmaps"


@pytest.fixture
def gc_client() -> Iterator[kubernetes.client.ApiClient]:
    """A client of an embedded server running its controllers."""
    with EmbeddedAPIServer(controllers=True) as server:
        client = kubernetes.config.new_client_from_config(config_file=server.kubeconfig_path)
        try:
            yield client
        finally:
            client.close()


def cm(name: str, *owners: dict, finalizers: list[str] | None = None) -> dict:
    meta: dict = {"name": name}
    if owners:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
             "uid": o["metadata"]["uid"], **({"blockOwnerDeletion": True}
                                             if o.get("block") else {})} for o in owners]
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def make(client, body) -> dict:
    reply = call(client, "POST", CM, body=body)
    assert reply.status == 201, reply.body
    return reply.body


def exists(client, name: str) -> bool:
    return call(client, "GET", f"{CM}/{name}").status == 200


def delete(client, name: str, policy: str | None = None) -> None:
    body = {"propagationPolicy": policy} if policy else None
    assert call(client, "DELETE", f"{CM}/{name}", body=body).status == 200


def test_background_deletes_dependents_after_the_owner(gc_client):
    """Background (the default): the owner goes, then its dependents, recursively."""
    owner = make(gc_client, cm("owner"))
    child = make(gc_client, cm("child", owner))
    make(gc_client, cm("grandchild", child))
    delete(gc_client, "owner")
    assert not any(exists(gc_client, n) for n in ("owner", "child", "grandchild"))


def test_dependent_with_another_owner_survives_and_loses_the_reference(gc_client):
    """A dependent whose other owner remains is kept; the gone owner's reference is removed."""
    a, b = make(gc_client, cm("a")), make(gc_client, cm("b"))
    make(gc_client, cm("shared", a, b))
    delete(gc_client, "a")
    refs = call(gc_client, "GET", f"{CM}/shared").body["metadata"]["ownerReferences"]
    assert [r["name"] for r in refs] == ["b"]
    delete(gc_client, "b")
    assert not exists(gc_client, "shared")


def test_orphan_keeps_dependents_without_the_reference(gc_client):
    """Orphan: the owner goes once its dependents no longer reference it; they stay."""
    owner = make(gc_client, cm("owner"))
    make(gc_client, cm("child", owner))
    delete(gc_client, "owner", "Orphan")
    assert not exists(gc_client, "owner")
    child = call(gc_client, "GET", f"{CM}/child").body
    assert "ownerReferences" not in child["metadata"]


def test_foreground_waits_for_blocking_dependents(gc_client):
    """Foreground: dependents are deleted first; a blocking dependent with a finalizer keeps
    the owner (foregroundDeletion finalizer) until it goes."""
    owner = make(gc_client, cm("owner"))
    make(gc_client, cm("child", {**owner, "block": True}, finalizers=["example.com/hold"]))
    delete(gc_client, "owner", "Foreground")
    held = call(gc_client, "GET", f"{CM}/owner").body["metadata"]
    assert held["finalizers"] == ["foregroundDeletion"] and held["deletionTimestamp"]
    child = call(gc_client, "GET", f"{CM}/child").body
    assert child["metadata"]["deletionTimestamp"]
    call(gc_client, "PATCH", f"{CM}/child", body={"metadata": {"finalizers": None}},
         content_type="application/merge-patch+json")
    assert not exists(gc_client, "child") and not exists(gc_client, "owner")


def test_namespace_deletion_finishes_after_its_content(gc_client):
    """A deleted Namespace goes Terminating, its objects are deleted, an object with a
    finalizer holds it until the finalizer is removed, then the Namespace goes."""
    v1 = kubernetes.client.CoreV1Api(gc_client)
    v1.create_namespace({"metadata": {"name": "team"}})
    path = "/api/v1/namespaces/team/configmaps"
    call(gc_client, "POST", path, body={"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "plain"}})
    call(gc_client, "POST", path, body={"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "held", "finalizers": ["x.io/f"]}})
    v1.delete_namespace("team")
    ns = call(gc_client, "GET", "/api/v1/namespaces/team").body
    assert ns["status"]["phase"] == "Terminating"
    assert call(gc_client, "GET", f"{path}/plain").status == 404
    call(gc_client, "PATCH", f"{path}/held", body={"metadata": {"finalizers": None}},
         content_type="application/merge-patch+json")
    assert call(gc_client, "GET", "/api/v1/namespaces/team").status == 404
    v1.create_namespace({"metadata": {"name": "team"}})   # the name is free again


def test_controllers_are_off_by_default(embedded_api_client):
    """EmbeddedAPIServer() runs no controllers (as envtest): dependents stay."""
    owner = make(embedded_api_client, cm("owner"))
    make(embedded_api_client, cm("child", owner))
    delete(embedded_api_client, "owner")
    assert exists(embedded_api_client, "child")
