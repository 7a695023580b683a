"""Create/get/update/patch/delete semantics through the real ``kubernetes`` client."""

from __future__ import annotations

import kubernetes
import pytest
from apiserver_http import call, configmap, pod

CM = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
DEPLOY = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str, replicas: int = 1) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}


def test_create_sets_uid_timestamp_and_resource_version(embedded_api_client):
    """A created object gets a uid, creationTimestamp and a fresh resourceVersion."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    cm = v1.create_namespaced_config_map("default", configmap("a", data={"k": "v"}))
    assert cm.metadata.uid and cm.metadata.creation_timestamp is not None
    got = call(embedded_api_client, "GET", f"{CM}/a").body
    assert got["metadata"]["resourceVersion"] == cm.metadata.resource_version
    assert got["data"] == {"k": "v"} and got["kind"] == "ConfigMap" and got["apiVersion"] == "v1"


def test_resource_versions_increase_across_kinds(embedded_api_client):
    """One global counter orders writes of every kind."""
    a = call(embedded_api_client, "POST", CM, body=configmap("a")).body
    p = call(embedded_api_client, "POST", PODS, body=pod("p")).body
    b = call(embedded_api_client, "POST", CM, body=configmap("b")).body
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, p, b)]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


def test_create_existing_name_is_already_exists(embedded_api_client):
    """A second create with the same name answers 409 AlreadyExists."""
    call(embedded_api_client, "POST", CM, body=configmap("a"))
    r = call(embedded_api_client, "POST", CM, body=configmap("a"))
    assert r.status == 409 and r.body["reason"] == "AlreadyExists"
    assert r.body["kind"] == "Status" and r.body["details"]["name"] == "a"


def test_get_missing_is_not_found(embedded_api_client):
    """GET of an absent object answers 404 NotFound with the client's ApiException."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    with pytest.raises(kubernetes.client.ApiException) as info:
        v1.read_namespaced_config_map("nope", "default")
    assert info.value.status == 404
    r = call(embedded_api_client, "GET", f"{CM}/nope")
    assert r.body["reason"] == "NotFound" and r.body["message"] == 'configmaps "nope" not found'


def test_create_in_missing_namespace_is_not_found(embedded_api_client):
    """Namespaced objects need their namespace: 404 naming the namespace."""
    r = call(embedded_api_client, "POST", "/api/v1/namespaces/ghost/configmaps",
             body=configmap("a", namespace="ghost"))
    assert r.status == 404 and r.body["details"]["kind"] == "namespaces"


def test_initial_namespaces_exist(embedded_api_client):
    """default, kube-system and kube-public exist at start, phase Active."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    names = {ns.metadata.name: ns.status.phase for ns in v1.list_namespace().items}
    assert {"default", "kube-system", "kube-public"} <= set(names)
    assert names["default"] == "Active"


def test_namespace_mismatch_is_bad_request(embedded_api_client):
    """A body namespace different from the URL's answers 400."""
    r = call(embedded_api_client, "POST", CM, body=configmap("a", namespace="kube-system"))
    assert r.status == 400 and r.body["reason"] == "BadRequest"


def test_invalid_name_is_invalid(embedded_api_client):
    """An upper-case name answers 422 Invalid with a metadata.name cause."""
    r = call(embedded_api_client, "POST", CM, body=configmap("Bad_Name"))
    assert r.status == 422 and r.body["reason"] == "Invalid"
    assert r.body["details"]["causes"][0]["field"] == "metadata.name"


def test_generate_name_creates_unique_names(embedded_api_client):
    """generateName gets a random suffix per create."""
    body = {"metadata": {"generateName": "gen-"}, "data": {}}
    a = call(embedded_api_client, "POST", CM, body=body).body["metadata"]["name"]
    b = call(embedded_api_client, "POST", CM, body=body).body["metadata"]["name"]
    assert a.startswith("gen-") and b.startswith("gen-") and a != b


def test_update_with_stale_resource_version_conflicts(embedded_api_client):
    """PUT with an old resourceVersion answers 409 Conflict; with the current one it works."""
    cm = call(embedded_api_client, "POST", CM, body=configmap("a")).body
    stale = dict(cm, data={"x": "1"})
    ok = call(embedded_api_client, "PUT", f"{CM}/a", body=stale)
    assert ok.status == 200
    again = call(embedded_api_client, "PUT", f"{CM}/a", body=dict(cm, data={"x": "2"}))
    assert again.status == 409 and again.body["reason"] == "Conflict"
    assert "the object has been modified" in again.body["message"]


def test_update_without_resource_version_is_unconditional(embedded_api_client):
    """PUT without metadata.resourceVersion replaces the object."""
    call(embedded_api_client, "POST", CM, body=configmap("a"))
    r = call(embedded_api_client, "PUT", f"{CM}/a", body=configmap("a", data={"z": "1"}))
    assert r.status == 200 and r.body["data"] == {"z": "1"}


def test_update_keeps_uid_and_creation_timestamp(embedded_api_client):
    """uid and creationTimestamp cannot be changed by an update."""
    cm = call(embedded_api_client, "POST", CM, body=configmap("a")).body
    body = configmap("a")
    body["metadata"].update(uid="other", creationTimestamp="2000-01-01T00:00:00Z")
    r = call(embedded_api_client, "PUT", f"{CM}/a", body=body).body
    assert r["metadata"]["uid"] == cm["metadata"]["uid"]
    assert r["metadata"]["creationTimestamp"] == cm["metadata"]["creationTimestamp"]


def test_update_missing_object_is_not_found(embedded_api_client):
    """PUT of an absent object answers 404."""
    assert call(embedded_api_client, "PUT", f"{CM}/a", body=configmap("a")).status == 404


def test_noop_update_keeps_resource_version(embedded_api_client):
    """An update that changes nothing keeps the resourceVersion (no write)."""
    cm = call(embedded_api_client, "POST", CM, body=configmap("a", data={"k": "v"})).body
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"k": "v"}},
             content_type="application/merge-patch+json").body
    assert r["metadata"]["resourceVersion"] == cm["metadata"]["resourceVersion"]


def test_generation_bumps_on_spec_change_only(embedded_api_client):
    """generation starts at 1, bumps on spec changes, not on labels or status."""
    d = call(embedded_api_client, "POST", DEPLOY, body=deployment("web")).body
    assert d["metadata"]["generation"] == 1
    merge = "application/merge-patch+json"
    labels = call(embedded_api_client, "PATCH", f"{DEPLOY}/web", content_type=merge,
                  body={"metadata": {"labels": {"x": "y"}}}).body
    assert labels["metadata"]["generation"] == 1
    status = call(embedded_api_client, "PATCH", f"{DEPLOY}/web/status", content_type=merge,
                  body={"status": {"replicas": 3}}).body
    assert status["metadata"]["generation"] == 1 and status["status"]["replicas"] == 3
    spec = call(embedded_api_client, "PATCH", f"{DEPLOY}/web", content_type=merge,
                body={"spec": {"replicas": 5}}).body
    assert spec["metadata"]["generation"] == 2


def test_status_subresource_changes_only_status(embedded_api_client):
    """PUT .../status ignores spec and label changes; the main endpoint ignores status."""
    d = call(embedded_api_client, "POST", DEPLOY, body=deployment("web")).body
    d["spec"]["replicas"] = 9
    d["metadata"]["labels"] = {"sneaky": "yes"}
    d["status"] = {"replicas": 2}
    r = call(embedded_api_client, "PUT", f"{DEPLOY}/web/status", body=d).body
    assert r["status"] == {"replicas": 2} and r["spec"]["replicas"] == 1
    assert "labels" not in r["metadata"]
    r["status"] = {"replicas": 7}
    r["spec"]["replicas"] = 4
    main = call(embedded_api_client, "PUT", f"{DEPLOY}/web", body=r).body
    assert main["status"] == {"replicas": 2} and main["spec"]["replicas"] == 4


def test_status_update_with_stale_resource_version_conflicts(embedded_api_client):
    """The status subresource is optimistic too."""
    d = call(embedded_api_client, "POST", DEPLOY, body=deployment("web")).body
    call(embedded_api_client, "PATCH", f"{DEPLOY}/web", body={"spec": {"replicas": 2}},
         content_type="application/merge-patch+json")
    d["status"] = {"replicas": 1}
    assert call(embedded_api_client, "PUT", f"{DEPLOY}/web/status", body=d).status == 409


def test_create_resets_status_of_kinds_with_status_subresource(embedded_api_client):
    """Creating a Pod ignores the body's status: it starts Pending."""
    body = pod("p")
    body["status"] = {"phase": "Running"}
    assert call(embedded_api_client, "POST", PODS, body=body).body["status"]["phase"] == "Pending"


def test_patch_with_kubernetes_client_strategic_merge(embedded_api_client):
    """CoreV1Api.patch_* (strategic merge, treated as merge) merges maps."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    v1.create_namespaced_config_map("default", configmap("a", data={"a": "1"}))
    got = v1.patch_namespaced_config_map("a", "default", {"data": {"b": "2"}})
    assert got.data == {"a": "1", "b": "2"}


def test_merge_patch_null_deletes_key(embedded_api_client):
    """A JSON merge patch with null removes the key."""
    call(embedded_api_client, "POST", CM, body=configmap("a", data={"a": "1", "b": "2"}))
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"a": None}},
             content_type="application/merge-patch+json")
    assert r.body["data"] == {"b": "2"}


def test_json_patch_operations(embedded_api_client):
    """RFC 6902 add/replace/remove apply; a failed test op answers 422."""
    call(embedded_api_client, "POST", CM, body=configmap("a", data={"a": "1", "b": "2"}))
    ops = [{"op": "add", "path": "/data/c", "value": "3"},
           {"op": "replace", "path": "/data/a", "value": "9"},
           {"op": "remove", "path": "/data/b"}]
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body=ops,
             content_type="application/json-patch+json")
    assert r.status == 200 and r.body["data"] == {"a": "9", "c": "3"}
    bad = [{"op": "test", "path": "/data/a", "value": "0"}]
    assert call(embedded_api_client, "PATCH", f"{CM}/a", body=bad,
                content_type="application/json-patch+json").status == 422


def test_patch_with_stale_resource_version_conflicts(embedded_api_client):
    """A patch carrying an old metadata.resourceVersion answers 409."""
    cm = call(embedded_api_client, "POST", CM, body=configmap("a")).body
    merge = "application/merge-patch+json"
    call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"x": "1"}}, content_type=merge)
    r = call(embedded_api_client, "PATCH", f"{CM}/a", content_type=merge,
             body={"metadata": {"resourceVersion": cm["metadata"]["resourceVersion"]}, "data": {"y": "1"}})
    assert r.status == 409


def test_patch_missing_object_is_not_found(embedded_api_client):
    """PATCH of an absent object answers 404 (except apply, which creates)."""
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {}},
             content_type="application/merge-patch+json")
    assert r.status == 404


APPLY = "application/apply-patch+yaml"


def _apply(client, manager: str, data: str, force: bool = False):
    doc = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\ndata: {data}\n"
    query = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return call(client, "PATCH", f"{CM}/a", body=doc, content_type=APPLY, query=query)


def test_apply_creates_then_merges_managers(embedded_api_client):
    """Apply creates (201, one Apply entry); another manager's fields merge in (200)."""
    first = _apply(embedded_api_client, "one", "{a: '1'}")
    assert first.status == 201 and first.body["data"] == {"a": "1"}
    assert [(m["manager"], m["operation"]) for m in first.body["metadata"]["managedFields"]] == [("one", "Apply")]
    second = _apply(embedded_api_client, "two", "{b: '2'}")
    assert second.status == 200 and second.body["data"] == {"a": "1", "b": "2"}


def test_reapplying_the_same_config_changes_nothing(embedded_api_client):
    """A repeated identical apply keeps the resourceVersion."""
    first = _apply(embedded_api_client, "one", "{a: '1'}").body
    again = _apply(embedded_api_client, "one", "{a: '1'}").body
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_apply_removes_fields_the_manager_stopped_applying(embedded_api_client):
    """A field dropped from a manager's configuration is removed unless another owns it."""
    _apply(embedded_api_client, "one", "{a: '1', b: '2'}")
    assert _apply(embedded_api_client, "one", "{b: '2'}").body["data"] == {"b": "2"}


def test_apply_conflict_and_force(embedded_api_client):
    """Changing another Apply manager's field is a 409 naming it; force takes ownership."""
    _apply(embedded_api_client, "one", "{k: '1'}")
    clash = _apply(embedded_api_client, "two", "{k: '2'}")
    assert clash.status == 409 and clash.body["reason"] == "Conflict"
    assert clash.body["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.k"}]
    forced = _apply(embedded_api_client, "two", "{k: '2'}", force=True)
    assert forced.status == 200 and forced.body["data"] == {"k": "2"}
    assert [m["manager"] for m in forced.body["metadata"]["managedFields"]] == ["two"]


def test_apply_without_field_manager_is_rejected(embedded_api_client):
    """Apply requires the fieldManager parameter (422)."""
    doc = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body=doc,
             content_type="application/apply-patch+yaml")
    assert r.status == 422


def test_force_with_non_apply_patch_is_bad_request(embedded_api_client):
    """force is only allowed with apply."""
    call(embedded_api_client, "POST", CM, body=configmap("a"))
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {}},
             content_type="application/merge-patch+json", query={"force": "true"})
    assert r.status == 400


def test_unknown_patch_type_is_unsupported_media_type(embedded_api_client):
    """A PATCH content type the resource does not accept answers 415."""
    call(embedded_api_client, "POST", CM, body=configmap("a"))
    r = call(embedded_api_client, "PATCH", f"{CM}/a", body='{"data": {}}',
             content_type="text/plain")
    assert r.status == 415


def test_delete_without_finalizers_removes_object(embedded_api_client):
    """DELETE answers a Success Status and the object is gone."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    v1.create_namespaced_config_map("default", configmap("a"))
    r = call(embedded_api_client, "DELETE", f"{CM}/a")
    assert r.status == 200 and r.body["status"] == "Success"
    assert call(embedded_api_client, "GET", f"{CM}/a").status == 404
    assert call(embedded_api_client, "DELETE", f"{CM}/a").status == 404


def test_delete_with_finalizers_sets_deletion_timestamp_until_removed(embedded_api_client):
    """Finalizers keep a deleted object (deletionTimestamp set) until an update removes them."""
    body = deployment("web")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    call(embedded_api_client, "POST", DEPLOY, body=body)
    r = call(embedded_api_client, "DELETE", f"{DEPLOY}/web")
    assert r.status == 200 and r.body["metadata"]["deletionTimestamp"]
    held = call(embedded_api_client, "GET", f"{DEPLOY}/web").body
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["generation"] == 2
    blocked = call(embedded_api_client, "PATCH", f"{DEPLOY}/web", content_type="application/merge-patch+json",
                   body={"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}})
    assert blocked.status == 422
    done = call(embedded_api_client, "PATCH", f"{DEPLOY}/web", content_type="application/merge-patch+json",
                body={"metadata": {"finalizers": None}})
    assert done.status == 200
    assert call(embedded_api_client, "GET", f"{DEPLOY}/web").status == 404


def test_delete_preconditions_are_honoured(embedded_api_client):
    """A uid or resourceVersion precondition that does not match answers 409."""
    cm = call(embedded_api_client, "POST", CM, body=configmap("a")).body
    wrong_uid = call(embedded_api_client, "DELETE", f"{CM}/a", body={"preconditions": {"uid": "x"}})
    assert wrong_uid.status == 409 and "does not match the UID in record" in wrong_uid.body["message"]
    wrong_rv = call(embedded_api_client, "DELETE", f"{CM}/a",
                    body={"preconditions": {"resourceVersion": "1"}})
    assert wrong_rv.status == 409
    ok = call(embedded_api_client, "DELETE", f"{CM}/a", body={
        "preconditions": {"uid": cm["metadata"]["uid"],
                          "resourceVersion": cm["metadata"]["resourceVersion"]}})
    assert ok.status == 200


@pytest.mark.parametrize(("policy", "finalizer"), [
    ("Background", None), ("Foreground", "foregroundDeletion"), ("Orphan", "orphan")])
def test_delete_accepts_propagation_policies(embedded_api_client, policy, finalizer):
    """Every propagationPolicy is accepted (via the kubernetes client's V1DeleteOptions);
    Foreground and Orphan add their finalizer, which, with no garbage collector running (as
    envtest), keeps the object."""
    v1 = kubernetes.client.CoreV1Api(embedded_api_client)
    v1.create_namespaced_config_map("default", configmap("a"))
    v1.delete_namespaced_config_map("a", "default", propagation_policy=policy)
    got = call(embedded_api_client, "GET", f"{CM}/a")
    if finalizer is None:
        assert got.status == 404
    else:
        assert got.body["metadata"]["finalizers"] == [finalizer]
        assert got.body["metadata"]["deletionTimestamp"]


def test_delete_rejects_unknown_propagation_policy(embedded_api_client):
    """An unknown propagationPolicy answers 422."""
    call(embedded_api_client, "POST", CM, body=configmap("a"))
    r = call(embedded_api_client, "DELETE", f"{CM}/a", body={"propagationPolicy": "Sideways"})
    assert r.status == 422


def test_delete_collection_by_label(embedded_api_client):
    """DELETE on a collection removes the selected objects only."""
    call(embedded_api_client, "POST", CM, body=configmap("a", labels={"t": "x"}))
    call(embedded_api_client, "POST", CM, body=configmap("b", labels={"t": "y"}))
    r = call(embedded_api_client, "DELETE", CM, query={"labelSelector": "t=x"})
    assert r.status == 200 and [i["metadata"]["name"] for i in r.body["items"]] == ["a"]
    left = call(embedded_api_client, "GET", CM).body["items"]
    assert [i["metadata"]["name"] for i in left] == ["b"]


def test_deleted_namespace_stays_terminating_and_refuses_new_content(embedded_api_client):
    """With no namespace controller a deleted namespace stays Terminating with its content;
    creating in it answers 403 Forbidden (NamespaceTerminating)."""
    call(embedded_api_client, "POST", "/api/v1/namespaces", body={"metadata": {"name": "team"}})
    call(embedded_api_client, "POST", "/api/v1/namespaces/team/configmaps",
         body=configmap("a", namespace="team"))
    r = call(embedded_api_client, "DELETE", "/api/v1/namespaces/team")
    assert r.status == 200 and r.body["status"]["phase"] == "Terminating"
    assert call(embedded_api_client, "GET", "/api/v1/namespaces/team").body["status"]["phase"] == "Terminating"
    assert call(embedded_api_client, "GET", "/api/v1/namespaces/team/configmaps/a").status == 200
    refused = call(embedded_api_client, "POST", "/api/v1/namespaces/team/configmaps",
                   body=configmap("b", namespace="team"))
    assert refused.status == 403 and refused.body["reason"] == "Forbidden"
    assert refused.body["details"]["causes"][0]["reason"] == "NamespaceTerminating"


def test_scheduled_pod_deletion_is_graceful(embedded_api_client):
    """A scheduled pod is only marked (grace 30 s) until deleted with grace 0; an unscheduled
    one goes at once."""
    call(embedded_api_client, "POST", PODS, body=pod("bound", nodeName="n1"))
    call(embedded_api_client, "POST", PODS, body=pod("free"))
    assert call(embedded_api_client, "DELETE", f"{PODS}/free").status == 200
    assert call(embedded_api_client, "GET", f"{PODS}/free").status == 404
    marked = call(embedded_api_client, "DELETE", f"{PODS}/bound").body
    assert marked["kind"] == "Pod" and marked["metadata"]["deletionGracePeriodSeconds"] == 30
    status = call(embedded_api_client, "PATCH", f"{PODS}/bound/status", body={"status": {"phase": "Running"}},
                  content_type="application/merge-patch+json")
    assert status.status == 200          # updates do not finish a graceful deletion
    assert call(embedded_api_client, "GET", f"{PODS}/bound").status == 200
    call(embedded_api_client, "DELETE", f"{PODS}/bound", query={"gracePeriodSeconds": "0"})
    assert call(embedded_api_client, "GET", f"{PODS}/bound").status == 404


def test_pod_create_applies_spec_defaults(embedded_api_client):
    """A created Pod gets restartPolicy Always and the other common spec defaults."""
    spec = call(embedded_api_client, "POST", PODS, body=pod("p")).body["spec"]
    assert spec["restartPolicy"] == "Always" and spec["terminationGracePeriodSeconds"] == 30


def test_method_not_supported_on_collection(embedded_api_client):
    """PUT on a collection answers 405 MethodNotAllowed."""
    r = call(embedded_api_client, "PUT", CM, body=configmap("a"))
    assert r.status == 405 and r.body["reason"] == "MethodNotAllowed"


def test_unknown_resource_path_is_not_found(embedded_api_client):
    """A path naming no served resource answers 404."""
    assert call(embedded_api_client, "GET", "/api/v1/namespaces/default/widgets").status == 404
    assert call(embedded_api_client, "GET", "/apis/nope.example.com/v1/things").status == 404


def test_cluster_scoped_and_typed_clients(embedded_api_client):
    """AppsV1Api, CoordinationV1Api and EventsV1Api models round-trip."""
    apps = kubernetes.client.AppsV1Api(embedded_api_client)
    apps.create_namespaced_deployment("default", deployment("web"))
    assert apps.read_namespaced_deployment("web", "default").spec.replicas == 1
    coord = kubernetes.client.CoordinationV1Api(embedded_api_client)
    coord.create_namespaced_lease("default", {"metadata": {"name": "lock"},
                                              "spec": {"holderIdentity": "me"}})
    assert coord.read_namespaced_lease("lock", "default").spec.holder_identity == "me"
    ev = kubernetes.client.EventsV1Api(embedded_api_client)
    ev.create_namespaced_event("default", {"metadata": {"name": "e1"}, "eventTime": "2026-01-01T00:00:00.000000Z",
                                           "reason": "Synced", "action": "Sync",
                                           "reportingController": "kinrun", "reportingInstance": "x"})
    assert [e.metadata.name for e in ev.list_namespaced_event("default").items] == ["e1"]


def test_concurrent_optimistic_updates_lose_nothing(embedded_server, embedded_api_client):
    """Writers racing read-modify-write with 409 retries end with every increment applied."""
    import threading
    call(embedded_api_client, "POST", CM, body=configmap("counter", data={"n": "0"}))

    def bump(times: int) -> None:
        for _ in range(times):
            while True:
                cur = call(embedded_api_client, "GET", f"{CM}/counter").body
                cur["data"]["n"] = str(int(cur["data"]["n"]) + 1)
                r = call(embedded_api_client, "PUT", f"{CM}/counter", body=cur)
                if r.status == 200:
                    break
                assert r.status == 409

    threads = [threading.Thread(target=bump, args=(25,)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert call(embedded_api_client, "GET", f"{CM}/counter").body["data"]["n"] == "100"


def test_create_from_yaml_body_is_accepted(embedded_api_client):
    """A create whose body is application/yaml is decoded like JSON (as kube-apiserver does)."""
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-yaml}\ndata: {k: v}\n"
    reply = call(embedded_api_client, "POST", CM, body=text, content_type="application/yaml")
    assert reply.status == 201
    assert call(embedded_api_client, "GET", f"{CM}/from-yaml").body["data"] == {"k": "v"}


def test_create_with_protobuf_body_of_an_undecoded_kind_answers_415(embedded_api_client):
    """A protobuf body of a kind the server does not decode (a Pod) is refused with 415, not
    misread; a truncated one is 400 (Namespace/ConfigMap/Secret bodies: test_apiserver_wire)."""
    type_meta = b"\x0a\x02v1\x12\x03Pod"
    body = b"k8s\x00" + b"\x0a" + bytes([len(type_meta)]) + type_meta
    reply = call(embedded_api_client, "POST", "/api/v1/namespaces/default/pods", body=body,
                 content_type="application/vnd.kubernetes.protobuf")
    assert reply.status == 415
    assert reply.body["reason"] == "UnsupportedMediaType"
    reply = call(embedded_api_client, "POST", CM, body=b"k8s\x00\x0a",
                 content_type="application/vnd.kubernetes.protobuf")
    assert reply.status == 400
