"""Validation and defaulting as kube-apiserver 1.20 does them (see docs/embedded.md)."""

from __future__ import annotations

from apiserver_http import call

CM = "/api/v1/namespaces/default/configmaps"


def test_version_is_the_emulated_release(embedded_api_client):
    """/version says 1.20, the release the embedded server emulates."""
    info = call(embedded_api_client, "GET", "/version").body
    assert (info["major"], info["minor"]) == ("1", "20")
    assert info["gitVersion"].startswith("v1.20.")


def test_metadata_that_is_not_an_object_is_a_bad_request(embedded_api_client):
    """metadata: "x" is refused with 400 BadRequest (kube-apiserver's decoder), not 500."""
    reply = call(embedded_api_client, "POST", CM,
                 body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"})
    assert reply.status == 400 and reply.body["reason"] == "BadRequest"
    assert 'ConfigMap in version "v1" cannot be handled as a ConfigMap' in reply.body["message"]


def test_configmap_data_must_be_strings(embedded_api_client):
    """data: {a: 9} is 400 BadRequest, as the real server's decoder answers."""
    reply = call(embedded_api_client, "POST", CM, body={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"a": 9}})
    assert reply.status == 400 and "data.a" in reply.body["message"]


def test_secret_string_data_is_merged_into_data(embedded_api_client):
    """stringData is base64-merged into data (winning over data), type defaults to Opaque."""
    reply = call(embedded_api_client, "POST", "/api/v1/namespaces/default/secrets", body={
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "stringData": {"p": "x", "q": "y"}, "data": {"q": "eg=="}})
    assert reply.status == 201
    assert reply.body["data"] == {"p": "eA==", "q": "eQ=="} and reply.body["type"] == "Opaque"
    assert "stringData" not in reply.body


def test_apply_of_a_service_port_without_protocol_is_a_typed_patch_error(embedded_api_client):
    """SSA of a port without its list-map key protocol: 500 as kube-apiserver 1.20 (the
    differential test is ``test_apply_of_a_port_without_protocol``); with the key it is
    applied."""
    path = "/api/v1/namespaces/default/services/s"
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}]}}
    reply = call(embedded_api_client, "PATCH", path, body=body, query={"fieldManager": "m"},
                 content_type="application/apply-patch+yaml")
    assert reply.status == 500
    assert reply.body["message"] == (
        "failed to create typed patch object: .spec.ports: element 0: associative list with "
        "keys has an element that omits key field \"protocol\" (and doesn't have default value)")
    body["spec"]["ports"][0]["protocol"] = "TCP"
    reply = call(embedded_api_client, "PATCH", path, body=body, query={"fieldManager": "m"},
                 content_type="application/apply-patch+yaml")
    assert reply.status == 201


def test_create_defaults_list_map_keys_and_drops_unknown_fields(embedded_api_client):
    """A created Service's port gets protocol TCP and its targetPort; a field the schema lacks
    is dropped."""
    reply = call(embedded_api_client, "POST", "/api/v1/namespaces/default/services", body={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}], "bogus": 1}})
    assert reply.status == 201
    assert reply.body["spec"]["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert "bogus" not in reply.body["spec"]


def test_pod_without_containers_is_422(embedded_api_client):
    """A Pod whose spec lacks containers: 422 spec.containers: Required value."""
    reply = call(embedded_api_client, "POST", "/api/v1/namespaces/default/pods", body={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    assert reply.status == 422
    assert reply.body["details"]["causes"] == [{"reason": "FieldValueRequired",
                                                "message": "Required value",
                                                "field": "spec.containers"}]


CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.ex.com"},
       "spec": {"group": "ex.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "required": ["mode"], "description": "Desired.",
                        "properties": {
                            "mode": {"type": "string", "enum": ["a", "b"]},
                            "replicas": {"type": "integer", "minimum": 1, "default": 1},
                            "free": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}}}}}}]}}
WIDGETS = "/apis/ex.com/v1/namespaces/default/widgets"


def widget(name, spec, **extra):
    return {"apiVersion": "ex.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": spec, **extra}


def test_custom_resource_schema_validates_prunes_and_defaults(embedded_api_client):
    """A CR breaking its CRD's schema is 422 with one cause per field; a valid one is pruned
    (except under preserve-unknown-fields) and defaulted."""
    assert call(embedded_api_client, "POST", "/apis/apiextensions.k8s.io/v1/"
                "customresourcedefinitions", body=CRD).status == 201
    bad = call(embedded_api_client, "POST", WIDGETS, body=widget("a", {"mode": "c", "replicas": 0}))
    assert bad.status == 422
    assert sorted((c["field"], c["reason"]) for c in bad.body["details"]["causes"]) == [
        ("spec.mode", "FieldValueNotSupported"), ("spec.replicas", "FieldValueInvalid")]
    assert bad.body["message"].startswith('Widget.ex.com "a" is invalid: [')
    ok = call(embedded_api_client, "POST", WIDGETS,
              body=widget("b", {"mode": "a", "x": 1, "free": {"y": 2}}, top=1))
    assert ok.status == 201 and "top" not in ok.body
    assert ok.body["spec"] == {"mode": "a", "free": {"y": 2}, "replicas": 1}
    patched = call(embedded_api_client, "PATCH", f"{WIDGETS}/b", body={"spec": {"mode": "z"}},
                   content_type="application/merge-patch+json")
    assert patched.status == 422


def test_openapi_v2_serves_builtin_and_crd_definitions(embedded_api_client):
    """/openapi/v2 (JSON) holds 1.20's built-in definitions and one per CRD version; a
    protobuf-only request gets the protobuf form, a request for another form 404."""
    call(embedded_api_client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
         body=CRD)
    doc = call(embedded_api_client, "GET", "/openapi/v2").body
    cm = doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]
    assert cm["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    crd = doc["definitions"]["com.ex.v1.Widget"]
    assert crd["properties"]["spec"]["required"] == ["mode"]
    assert crd["x-kubernetes-group-version-kind"] == [{"group": "ex.com", "version": "v1",
                                                       "kind": "Widget"}]
    assert doc["info"]["version"] == "v1.20.2"
    m, url, hdrs, _, _ = embedded_api_client.param_serialize(
        "GET", "/openapi/v2", header_params={
            "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    proto = embedded_api_client.call_api(m, url, hdrs)
    proto.read()
    assert proto.status == 200 and proto.data.startswith(b"\n\x032.0\x12")  # swagger, info
    assert proto.getheader("Content-Type") == "application/octet-stream"
    m, url, hdrs, _, _ = embedded_api_client.param_serialize(
        "GET", "/openapi/v2", header_params={"Accept": "application/yaml"})
    assert embedded_api_client.call_api(m, url, hdrs).status == 404


def test_openapi_v3_documents_hold_the_kinds_schemas(embedded_api_client):
    """/openapi/v3/apis/apps/v1 holds Deployment's schema (refs into components) and what it
    refers to."""
    root = call(embedded_api_client, "GET", "/openapi/v3").body
    url = root["paths"]["apis/apps/v1"]["serverRelativeURL"]
    doc = call(embedded_api_client, "GET", url.split("?")[0]).body
    schemas = doc["components"]["schemas"]
    deploy = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deploy["properties"]["spec"]["$ref"] == "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    assert "io.k8s.api.core.v1.Container" in schemas
    assert "io.k8s.api.core.v1.ConfigMap" not in schemas


def test_per_kind_validation_refuses_a_deployment_selecting_other_labels(embedded_api_client):
    """A Deployment whose selector does not select its template's labels is 422 naming
    spec.template.metadata.labels, as kube-apiserver (tests/envtest/test_differential_kinds.py);
    with matching labels it is created."""
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {"matchLabels": {"app": "a"}},
                     "template": {"metadata": {"labels": {"app": "b"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    path = "/apis/apps/v1/namespaces/default/deployments"
    reply = call(embedded_api_client, "POST", path, body=body)
    assert reply.status == 422
    assert [(c["field"], c["message"]) for c in reply.body["details"]["causes"]] == [
        ("spec.template.metadata.labels", 'Invalid value: map[string]string{"app":"b"}: '
         "`selector` does not match template `labels`")]
    body["spec"]["template"]["metadata"]["labels"] = {"app": "a", "tier": "web"}
    assert call(embedded_api_client, "POST", path, body=body).status == 201


def test_bad_labels_get_kube_apiserver_1_20_causes(embedded_api_client):
    """A 64-character label value or key name gets 1.20's ``must be no more than 63
    characters`` only; a value both too long and malformed gets two causes, in Go's order
    (the real answers: tests/envtest/test_differential_kinds.py, METADATA_CASES)."""
    def causes(labels):
        reply = call(embedded_api_client, "POST", CM, body={
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "labels": labels}})
        assert reply.status == 422
        return [(c["field"], c["message"]) for c in reply.body["details"]["causes"]]

    x64, k64 = "x" * 64, "k" * 64
    assert causes({"a": x64}) == [
        ("metadata.labels", f'Invalid value: "{x64}": must be no more than 63 characters')]
    assert causes({k64: "v"}) == [
        ("metadata.labels", f'Invalid value: "{k64}": name part must be no more than 63 '
                            "characters")]
    both = causes({"a": "x" * 63 + "-"})
    assert [m.split(": ", 2)[2][:30] for _, m in both] == [
        "must be no more than 63 charac", "a valid label must be an empty"]
    assert both[1][1].endswith("regex used for validation is "
                               "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
