"""The embedded API server calls admission webhooks as kube-apiserver 1.20 does (issue 33):
mutating then validating, selectors and rules, denials, failurePolicy, dry runs, warnings,
updates that stay consistent while a webhook runs, deletes. The webhook is a test double
(``tests/webhook_double.py``); the differential test against 1.20 is in
``tests/envtest/test_differential_webhooks.py``."""

from __future__ import annotations

import socket
from typing import Any

import kubernetes
import pytest
from apiserver_http import call
from webhook_double import configuration, hook, json_patch, webhook_double

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
CMS = "/api/v1/namespaces/default/configmaps"


def register(client: Any, kind: str, hooks: list[dict[str, Any]], name: str = "test") -> None:
    plural = kind.lower() + "s"
    made = call(client, "POST", f"{ADMISSION}/{plural}", body=configuration(kind, name, hooks))
    assert made.status == 201, made.body


def cm(name: str = "", data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    metadata = {"name": name, **meta} if name else dict(meta)
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data or {}}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_mutating_then_validating_with_the_stored_identity(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """The mutating webhook's patch is stored; the validating one sees the patched object with
    the generated name and the uid it is then stored with; warnings of both reach the
    client as Warning headers."""
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        obj = request["object"]
        if request["kind"]["kind"] != "ConfigMap":
            return {"allowed": True}
        if "uid" not in obj["metadata"]:   # the mutating call: no identity yet
            return {**json_patch([{"op": "add", "path": "/metadata/labels",
                                   "value": {"mutated": "yes"}}]), "warnings": ["mutated"]}
        assert obj["metadata"]["labels"] == {"mutated": "yes"}
        return {"allowed": True, "warnings": ["validated"]}

    with webhook_double(answer) as wh:
        register(embedded_api_client, "MutatingWebhookConfiguration", [
            hook("m.example.com", wh.url("/m"), wh.ca_bundle, resources=["configmaps"],
                 operations=["CREATE"])])
        register(embedded_api_client, "ValidatingWebhookConfiguration", [
            hook("v.example.com", wh.url("/v"), wh.ca_bundle, resources=["configmaps"],
                 operations=["CREATE"])])
        made = call(embedded_api_client, "POST", CMS, body=cm(generateName="gen-"))
        assert made.status == 201, made.body
        assert made.body["metadata"]["labels"] == {"mutated": "yes"}
        assert made.headers.get("Warning") == '299 - "mutated", 299 - "validated"'
        mutating, validating = wh.requests
        assert mutating["name"] == "" and mutating["operation"] == "CREATE"
        assert validating["name"] == made.body["metadata"]["name"]
        assert validating["object"]["metadata"]["uid"] == made.body["metadata"]["uid"]
        assert validating["dryRun"] is False and validating["namespace"] == "default"


def test_a_mutating_webhook_may_fill_a_required_field_of_a_create(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """kube-apiserver validates a create after the mutating webhooks: a Pod sent without
    ``spec.containers`` (required) is stored with the container a webhook adds; without the
    webhook the same body is 422 naming the field."""
    pods = "/api/v1/namespaces/default/pods"
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    assert call(embedded_api_client, "POST", pods, body=pod).status == 422

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        return json_patch([{"op": "add", "path": "/spec/containers",
                            "value": [{"name": "c", "image": "busybox"}]}])

    with webhook_double(answer) as wh:
        register(embedded_api_client, "MutatingWebhookConfiguration", [
            hook("fill.example.com", wh.url("/m"), wh.ca_bundle, resources=["pods"],
                 operations=["CREATE"])])
        made = call(embedded_api_client, "POST", pods, body=pod)
        assert made.status == 201, made.body
        assert [c["name"] for c in made.body["spec"]["containers"]] == ["c"]
        assert "containers" not in wh.requests[0]["object"]["spec"]


def test_a_denial_is_the_webhooks_status_and_nothing_is_stored(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """The message is prefixed as kube-apiserver does; code below 400 becomes 400; an
    update and a delete are refused the same way and the object stays as it was."""
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        data = (request.get("object") or {}).get("data") or {}
        if "forbidden" in data:
            return {"allowed": False, "status": {"code": 409, "message": "no forbidden keys"}}
        if request["operation"] == "DELETE":
            assert request["object"] is None and request["oldObject"]["data"] == {"k": "v"}
            return {"allowed": False, "status": {"code": 200}}
        return {"allowed": True}

    with webhook_double(answer) as wh:
        register(embedded_api_client, "ValidatingWebhookConfiguration", [
            hook("v.example.com", wh.url("/v"), wh.ca_bundle, resources=["configmaps"],
                 operations=["*"])])
        denied = call(embedded_api_client, "POST", CMS, body=cm("a", {"forbidden": "1"}))
        assert (denied.status, denied.body["message"]) == (
            409, 'admission webhook "v.example.com" denied the request: no forbidden keys')
        assert call(embedded_api_client, "GET", f"{CMS}/a").status == 404
        assert call(embedded_api_client, "POST", CMS, body=cm("a", {"k": "v"})).status == 201
        patched = call(embedded_api_client, "PATCH", f"{CMS}/a", body={"data": {"forbidden": "1"}},
                       content_type="application/merge-patch+json")
        assert patched.status == 409
        deleted = call(embedded_api_client, "DELETE", f"{CMS}/a")
        assert (deleted.status, deleted.body["message"]) == (
            400, 'admission webhook "v.example.com" denied the request without explanation')
        assert call(embedded_api_client, "GET", f"{CMS}/a").body["data"] == {"k": "v"}


def test_failure_policy_decides_when_the_webhook_cannot_be_called(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """Nothing listening: Fail answers 500 InternalError 'failed calling webhook'; Ignore
    lets the write through."""
    url = f"https://127.0.0.1:{closed_port()}/v"
    register(embedded_api_client, "ValidatingWebhookConfiguration", [
        hook("fail.example.com", url, None, resources=["configmaps"], operations=["CREATE"],
             objectSelector={"matchLabels": {"policy": "fail"}}),
        hook("ignore.example.com", url, None, resources=["configmaps"], operations=["CREATE"],
             policy="Ignore", objectSelector={"matchLabels": {"policy": "ignore"}})])
    refused = call(embedded_api_client, "POST", CMS, body=cm("a", labels={"policy": "fail"}))
    assert refused.status == 500 and refused.body["reason"] == "InternalError"
    assert refused.body["message"].startswith(
        f'Internal error occurred: failed calling webhook "fail.example.com": Post "{url}'
        '?timeout=5s": ')
    assert call(embedded_api_client, "POST", CMS,
                body=cm("b", labels={"policy": "ignore"})).status == 201
    assert call(embedded_api_client, "POST", CMS, body=cm("c")).status == 201  # no selector match


def test_a_service_webhook_fails_naming_the_url_a_cluster_would_call(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """clientConfig.service cannot be reached from the embedded server: under Fail the 500
    names the service's URL as kube-apiserver builds it (it named an empty one)."""
    service = hook("svc.example.com", "https://unused/", None, resources=["configmaps"],
                   operations=["CREATE"])
    service["clientConfig"] = {"service": {"name": "hooks", "namespace": "shop",
                                           "path": "/validate"}}
    register(embedded_api_client, "ValidatingWebhookConfiguration", [service])
    refused = call(embedded_api_client, "POST", CMS, body=cm("a"))
    assert refused.status == 500
    assert 'Post "https://hooks.shop.svc:443/validate?timeout=5s": clientConfig.service ' \
        'cannot be reached' in refused.body["message"]


def test_rules_and_selectors_choose_the_calls(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """A rule on configmaps is not called for a Secret, nor for another operation; a
    namespaceSelector reads the namespace's labels; ``pods/status`` matches only the status
    subresource; writes of webhook configurations are never sent."""
    with webhook_double(lambda request: {"allowed": True}) as wh:
        register(embedded_api_client, "ValidatingWebhookConfiguration", [
            hook("cm.example.com", wh.url("/cm"), wh.ca_bundle, resources=["configmaps"],
                 operations=["UPDATE"], namespaceSelector={"matchLabels": {"team": "a"}}),
            hook("status.example.com", wh.url("/st"), wh.ca_bundle, resources=["pods/status"],
                 operations=["UPDATE"]),
            hook("any.example.com", wh.url("/any"), wh.ca_bundle, resources=["*"],
                 operations=["CREATE"],
                 rules=[{"apiGroups": ["admissionregistration.k8s.io"], "apiVersions": ["*"],
                         "resources": ["*"], "operations": ["*"]}])])
        for ns, labels in (("team-a", {"team": "a"}), ("team-b", {"team": "b"})):
            call(embedded_api_client, "POST", "/api/v1/namespaces",
                 body={"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": ns, "labels": labels}})
            path = f"/api/v1/namespaces/{ns}/configmaps"
            assert call(embedded_api_client, "POST", path, body=cm("x")).status == 201
            assert call(embedded_api_client, "PATCH", f"{path}/x", body={"data": {"a": "1"}},
                        content_type="application/merge-patch+json").status == 200
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        pods = "/api/v1/namespaces/default/pods"
        assert call(embedded_api_client, "POST", pods, body=pod).status == 201
        assert call(embedded_api_client, "PATCH", f"{pods}/p", body={"metadata": {"labels": {
            "a": "b"}}}, content_type="application/merge-patch+json").status == 200
        assert call(embedded_api_client, "PATCH", f"{pods}/p/status", body={"status": {
            "phase": "Running"}}, content_type="application/merge-patch+json").status == 200
        register(embedded_api_client, "ValidatingWebhookConfiguration", [], name="another")
        assert [(r["resource"]["resource"], r.get("subResource", ""), r.get("namespace"))
                for r in wh.requests] == [("configmaps", "", "team-a"), ("pods", "status", "default")]


def test_dry_runs_call_the_webhooks_and_store_nothing(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """A dry-run create is sent with dryRun true (and patched as a real one); nothing is
    stored."""
    with webhook_double(lambda request: json_patch(
            [{"op": "add", "path": "/metadata/labels", "value": {"m": "1"}}])) as wh:
        register(embedded_api_client, "MutatingWebhookConfiguration", [
            hook("none.example.com", wh.url("/n"), wh.ca_bundle, resources=["configmaps"],
                 operations=["CREATE"])])
        dry = call(embedded_api_client, "POST", CMS, body=cm("a"), query={"dryRun": "All"})
        assert dry.status == 201 and dry.body["metadata"]["labels"] == {"m": "1"}
        assert [r["dryRun"] for r in wh.requests] == [True]
        assert call(embedded_api_client, "GET", f"{CMS}/a").status == 404


def test_an_update_is_done_again_when_the_object_changed_during_the_webhook(
        embedded_server: Any, embedded_api_client: kubernetes.client.ApiClient) -> None:
    """A write that lands while the webhook is called is not lost: the update is read,
    patched and admitted again on the new version (as GuaranteedUpdate retries)."""
    def answer(request: dict[str, Any]) -> dict[str, Any]:
        if len(wh.requests) == 1:   # first call: someone else writes meanwhile
            current = embedded_server.store.get("v1", "ConfigMap", "a", "default")
            current["data"]["other"] = "write"
            embedded_server.store.update(current)
        return {"allowed": True}

    with webhook_double(answer) as wh:
        assert call(embedded_api_client, "POST", CMS, body=cm("a", {"k": "v"})).status == 201
        register(embedded_api_client, "ValidatingWebhookConfiguration", [
            hook("v.example.com", wh.url("/v"), wh.ca_bundle, resources=["configmaps"],
                 operations=["UPDATE"])])
        patched = call(embedded_api_client, "PATCH", f"{CMS}/a", body={"data": {"mine": "1"}},
                       content_type="application/merge-patch+json")
        assert patched.status == 200
        assert patched.body["data"] == {"k": "v", "other": "write", "mine": "1"}
        assert len(wh.requests) == 2
        assert wh.requests[1]["oldObject"]["data"] == {"k": "v", "other": "write"}


@pytest.mark.parametrize("answer, message", [
    ({"allowed": True, "patchType": "JSONPatch", "patch": "bm90IGpzb24="}, "does not apply"),
    ({"allowed": True, "patchType": "Merge", "patch": "e30="}, "unsupported patch type"),
    (json_patch([{"op": "add", "path": "/data/n", "value": 9}]),
     'Internal error occurred: ConfigMap in version "v1" cannot be handled as a ConfigMap'),
])
def test_a_bad_patch_is_an_internal_error(embedded_api_client: kubernetes.client.ApiClient,
                                          answer: dict[str, Any], message: str) -> None:
    """A mutating webhook's patch that is no JSON patch, of another type, or that gives the
    object a value its type cannot decode (1.20's dispatcher: NewInternalError): 500,
    nothing stored."""
    with webhook_double(lambda request: answer) as wh:
        register(embedded_api_client, "MutatingWebhookConfiguration", [
            hook("m.example.com", wh.url("/m"), wh.ca_bundle, resources=["configmaps"],
                 operations=["CREATE"])])
        bad = call(embedded_api_client, "POST", CMS, body=cm("a"))
        assert bad.status == 500 and message in bad.body["message"]
        assert call(embedded_api_client, "GET", f"{CMS}/a").status == 404


def test_configurations_are_defaulted_and_invalid_ones_refused(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """Stored with 1.20's defaults; an invalid one is 422 naming each field (the same fields
    and messages as 1.20: tests/envtest/test_differential_webhooks.py), so a bad configuration
    never reaches the writes it would be called for."""
    good = hook("m.example.com", "https://127.0.0.1:1/m", None, resources=["configmaps"],
                operations=["CREATE"])
    del good["failurePolicy"], good["timeoutSeconds"]
    path = f"{ADMISSION}/mutatingwebhookconfigurations"
    made = call(embedded_api_client, "POST", path,
                body=configuration("MutatingWebhookConfiguration", "good", [good]))
    assert made.status == 201
    assert {k: made.body["webhooks"][0][k] for k in (
        "failurePolicy", "matchPolicy", "namespaceSelector", "objectSelector", "timeoutSeconds",
        "reinvocationPolicy")} == {"failurePolicy": "Fail", "matchPolicy": "Equivalent",
                                   "namespaceSelector": {}, "objectSelector": {},
                                   "timeoutSeconds": 10, "reinvocationPolicy": "Never"}
    bad = dict(good, sideEffects="Some", admissionReviewVersions=["v2"],
               clientConfig={"url": "https://127.0.0.1:1/m", "caBundle": "!!",
                             "service": {"name": "s", "namespace": "n"}},
               rules=[dict(good["rules"][0], operations=["PUT"])],
               namespaceSelector={"matchExpressions": [{"key": "a", "operator": "In"}]})
    refused = call(embedded_api_client, "POST", path,
                   body=configuration("MutatingWebhookConfiguration", "bad", [bad]))
    assert refused.status == 422
    assert sorted(c["field"] for c in refused.body["details"]["causes"]) == [
        "webhooks[0].admissionReviewVersions", "webhooks[0].clientConfig",
        "webhooks[0].clientConfig.caBundle", "webhooks[0].namespaceSelector.matchExpressions[0].values",
        "webhooks[0].rules[0].operations", "webhooks[0].sideEffects"]
    assert call(embedded_api_client, "POST", CMS, body=cm("a")).status == 500  # good: unreachable


def test_generated_webhooks_skip_kinrun_own_objects(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """A webhook `kinrun manifests` generates (failurePolicy Fail, unreachable) refuses
    writes, except to the objects carrying kinrun's instance label: its own ConfigMap,
    Deployment and pods stay writable while it is down."""
    from kinrun.admission.manifests import webhook_objects
    from kinrun.config import load_text

    config = load_text(
        "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\ninformers:\n"
        "  cms: {apiVersion: v1, kind: ConfigMap}\ncontrollers: [{name: c, for: cms, "
        "reconcile: {actions: [{log: hi}]}}]\nadmission:\n  webhooks:\n"
        "    - {name: v.example.com, type: validating, failurePolicy: Fail, rules: [{apiGroups: "
        "[''], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}], "
        "validate: [{deny: refused}]}\n", file="x.yaml")
    labels = {"app.kubernetes.io/name": "kinrun", "app.kubernetes.io/instance": "kinrun-x"}
    [generated] = webhook_objects(config.admission, "kinrun-x-webhook", "default", labels)[1]["webhooks"]
    generated["clientConfig"] = {"url": f"https://127.0.0.1:{closed_port()}/v"}
    register(embedded_api_client, "ValidatingWebhookConfiguration", [generated])
    assert call(embedded_api_client, "POST", CMS, body=cm("user")).status == 500
    assert call(embedded_api_client, "POST", CMS, body=cm("own", labels=labels)).status == 201
    other = dict(labels, **{"app.kubernetes.io/instance": "kinrun-y"})
    assert call(embedded_api_client, "POST", CMS, body=cm("other", labels=other)).status == 500


GIZMOS = "/apis/ex.com/v1/namespaces/default/gizmos"
GIZMO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.ex.com"},
    "spec": {"group": "ex.com", "scope": "Namespaced",
             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "required": ["mode"], "properties": {
                                   "mode": {"type": "string", "enum": ["a", "b"]}}},
                               "status": {"type": "object", "properties": {
                                   "phase": {"type": "string"}}}}}}}]}}
APPLY = "application/apply-patch+yaml"


def gizmo(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "ex.com/v1", "kind": "Gizmo", "metadata": {"name": name},
            "spec": spec}


def _write_without_mode(client: Any, verb: str, new: str = "new") -> Any:
    """Gizmo ``g`` (stored with ``mode: b``; for apply-create the missing gizmo ``new``)
    written by ``verb`` so that the written object lacks the required ``spec.mode``."""
    path = f"{GIZMOS}/g"
    if verb == "put":
        body = call(client, "GET", path).body
        del body["spec"]["mode"]
        return call(client, "PUT", path, body=body)
    if verb == "merge":
        return call(client, "PATCH", path, body={"spec": {"mode": None}},
                    content_type="application/merge-patch+json")
    if verb == "json":
        return call(client, "PATCH", path, body=[{"op": "remove", "path": "/spec/mode"}],
                    content_type="application/json-patch+json")
    if verb == "dry-run":
        return call(client, "PATCH", path, body={"spec": {"mode": None}},
                    content_type="application/merge-patch+json", query={"dryRun": "All"})
    name = "g" if verb == "apply" else new
    return call(client, "PATCH", f"{GIZMOS}/{name}", body=gizmo(name, {}),
                content_type=APPLY, query={"fieldManager": "m"})


@pytest.mark.parametrize("verb", ["put", "merge", "json", "apply", "apply-create", "dry-run"])
def test_an_update_is_validated_after_the_mutating_webhooks(
        embedded_api_client: kubernetes.client.ApiClient, verb: str) -> None:
    """kube-apiserver 1.20 validates an update after mutating admission (``rest.BeforeUpdate``
    after ``DefaultUpdatedObjectInfo``'s transformers): an update lacking the required
    ``spec.mode`` is 422 without a webhook, accepted when one fills it (the webhook saw it
    without), and 422 naming the value when a webhook sets one its enum refuses; the
    differential test is ``test_updates_are_validated_after_the_mutating_webhooks``."""
    client = embedded_api_client
    assert call(client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                body=GIZMO_CRD).status == 201
    assert call(client, "PATCH", f"{GIZMOS}/g", body=gizmo("g", {"mode": "b"}),
                content_type=APPLY, query={"fieldManager": "m"}).status == 201
    missing = _write_without_mode(client, verb)
    assert (missing.status, missing.body["message"]) == (
        422, f'Gizmo.ex.com "{"new" if verb == "apply-create" else "g"}" is invalid: '
        'spec.mode: Required value')
    value = "a"
    with webhook_double(lambda request: json_patch([{
            "op": "add", "path": "/spec/mode", "value": value}])) as wh:
        register(client, "MutatingWebhookConfiguration", [
            hook("fill.example.com", wh.url("/m"), wh.ca_bundle, resources=[], operations=[],
                 rules=[{"apiGroups": ["ex.com"], "apiVersions": ["v1"],
                         "resources": ["gizmos"], "operations": ["CREATE", "UPDATE"]}])])
        filled = _write_without_mode(client, verb)
        assert (filled.status, filled.body["spec"]) == (
            201 if verb == "apply-create" else 200, {"mode": "a"}), filled.body
        assert "mode" not in wh.requests[0]["object"]["spec"]
        assert wh.requests[0]["operation"] == ("CREATE" if verb == "apply-create" else "UPDATE")
        value = "c"
        broken = _write_without_mode(client, verb, new="other")
    assert (broken.status, broken.body["message"].split(": ", 1)[1]) == (
        422, 'spec.mode: Unsupported value: "c": supported values: "a", "b"'), broken.body
    stored = call(client, "GET", f"{GIZMOS}/g").body["spec"]
    assert stored == {"mode": "b" if verb in ("dry-run", "apply-create") else "a"}
    assert call(client, "GET", f"{GIZMOS}/other").status == 404


def test_a_status_update_drops_a_webhooks_change_of_spec_and_validates_status(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """On the status subresource the mutating webhook sees the object as sent; 1.20's
    PrepareForUpdate then keeps the stored ``spec`` (a webhook's change of it is dropped,
    not refused) before validation, which refuses the ``status`` a webhook made invalid
    (here: not a string)."""
    client = embedded_api_client
    assert call(client, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                body=GIZMO_CRD).status == 201
    assert call(client, "POST", GIZMOS, body=gizmo("g", {"mode": "b"})).status == 201
    ops = [{"op": "add", "path": "/spec/mode", "value": "c"}]
    with webhook_double(lambda request: json_patch(ops)) as wh:
        register(client, "MutatingWebhookConfiguration", [
            hook("st.example.com", wh.url("/m"), wh.ca_bundle, resources=[], operations=[],
                 rules=[{"apiGroups": ["ex.com"], "apiVersions": ["v1"],
                         "resources": ["gizmos/status"], "operations": ["UPDATE"]}])])
        kept = call(client, "PATCH", f"{GIZMOS}/g/status", body={"status": {"phase": "Ready"}},
                    content_type="application/merge-patch+json")
        assert kept.status == 200, kept.body
        assert (kept.body["spec"], kept.body["status"]) == ({"mode": "b"}, {"phase": "Ready"})
        ops[:] = [{"op": "add", "path": "/status/phase", "value": 7}]
        body = call(client, "GET", f"{GIZMOS}/g").body
        refused = call(client, "PUT", f"{GIZMOS}/g/status", body=body)
    assert refused.status == 422, refused.body
    assert [c["field"] for c in refused.body["details"]["causes"]] == ["status.phase"]
    assert [r["subResource"] for r in wh.requests] == ["status"] * 3   # a failed try: twice


def test_a_created_pods_status_is_reset_after_the_mutating_webhooks(
        embedded_api_client: kubernetes.client.ApiClient) -> None:
    """1.20's PrepareForCreate runs after mutating admission: the webhook sees the status as
    sent, and the qosClass follows the limits it added (differential test
    ``test_a_create_is_prepared_after_the_mutating_webhooks``)."""
    with webhook_double(lambda request: json_patch([{
            "op": "add", "path": "/spec/containers/0/resources",
            "value": {"limits": {"cpu": "1", "memory": "1Gi"}}}])) as wh:
        register(embedded_api_client, "MutatingWebhookConfiguration", [
            hook("qos.example.com", wh.url("/q"), wh.ca_bundle, resources=["pods"],
                 operations=["CREATE"])])
        made = call(embedded_api_client, "POST", "/api/v1/namespaces/default/pods", body={
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            "status": {"phase": "Running"}})
    assert made.status == 201, made.body
    assert made.body["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    assert wh.requests[0]["object"]["status"] == {"phase": "Running"}
