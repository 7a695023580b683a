"""Differential tests of schema validation, defaulting and pruning (kinrun.openapi): the same
request to kube-apiserver 1.20 and the embedded server gives the same code, reason and causes'
fields and reasons. Intended differences (docs/embedded.md): the text after ``cannot be
handled as a <Kind>:`` of a 400 (json-iterator's on the real server), and the server-side
apply of a list entry without its list-map key (real: 500, embedded: 422 naming the field).
"""

from __future__ import annotations

from typing import Any

from .conftest import Pair, Target
from .test_differential import APPLY, _crd, _wait_served, check, crd_manifest


def outcome(resp: Any) -> dict[str, Any]:
    """Code, reason, the 400 message's head and the causes as sorted (field, reason) pairs
    (the real server's cause order follows its validator's map walk)."""
    body = resp.body if isinstance(resp.body, dict) else {}
    out: dict[str, Any] = {"code": resp.status, "reason": body.get("reason")}
    if resp.status == 400:
        out["message"] = str(body.get("message", "")).split(": ")[0]
    causes = (body.get("details") or {}).get("causes") or []
    if causes and resp.status == 422:
        out["causes"] = sorted((c.get("field"), c.get("reason")) for c in causes)
    return out


def post(t: Target, path: str, body: dict[str, Any]) -> Any:
    return t.kube.request("POST", path, body)


def test_builtin_values_of_the_wrong_type_are_400(both: Pair) -> None:
    """ConfigMap data: {a: 9}, Pod containers: "notalist", metadata: "x": 400 BadRequest."""
    def scenario(t: Target) -> Any:
        cms, pods = f"/api/v1/namespaces/{t.ns}/configmaps", f"/api/v1/namespaces/{t.ns}/pods"
        return [outcome(post(t, cms, {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "a"}, "data": {"a": 9}})),
                outcome(post(t, pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                       "spec": {"containers": "notalist"}})),
                outcome(post(t, cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}))]

    real = check(both, scenario)
    assert real[0] == {"code": 400, "reason": "BadRequest",
                       "message": 'ConfigMap in version "v1" cannot be handled as a ConfigMap'}


def test_builtin_required_fields_are_422_with_go_field_paths(both: Pair) -> None:
    """A Pod without containers, a container without name: 422 naming spec.containers[0].name."""
    def scenario(t: Target) -> Any:
        pods = f"/api/v1/namespaces/{t.ns}/pods"
        return [outcome(post(t, pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                       "spec": {}})),
                outcome(post(t, pods, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                       "spec": {"containers": [{"image": "i"}]}}))]

    real = check(both, scenario)
    assert real[1]["causes"] == [("spec.containers[0].name", "FieldValueRequired")]


def test_secret_string_data_merged_and_unknown_fields_dropped(both: Pair) -> None:
    """stringData is merged into data (base64) with type Opaque; a Service's unknown field is
    dropped and its port gets protocol TCP."""
    def scenario(t: Target) -> Any:
        secret = post(t, f"/api/v1/namespaces/{t.ns}/secrets", {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "stringData": {"p": "x"}, "data": {"q": "eQ=="}}).body
        svc = post(t, f"/api/v1/namespaces/{t.ns}/services", {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80}], "bogus": 1}}).body
        return {"data": secret.get("data"), "type": secret.get("type"),
                "stringData": secret.get("stringData"), "bogus": "bogus" in svc["spec"],
                "protocol": svc["spec"]["ports"][0].get("protocol")}

    real = check(both, scenario)
    assert real["data"] == {"p": "eA==", "q": "eQ=="} and real["protocol"] == "TCP"


def test_apply_of_a_port_without_protocol(both: Pair) -> None:
    """A Service port without its list-map key ``protocol``: 500, a typed-patch failure that
    no retry changes, on both servers; a container port without it is keyed by its
    in-process default ``TCP`` (1.20's ``+default`` marker) and applied."""
    def scenario(t: Target) -> Any:
        body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"ports": [{"port": 80}]}}
        service = t.kube.request("PATCH", f"/api/v1/namespaces/{t.ns}/services/s", body,
                                 query={"fieldManager": "m"}, content_type=APPLY)
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
            "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}]}}
        made = t.kube.request("PATCH", f"/api/v1/namespaces/{t.ns}/pods/p", pod,
                              query={"fieldManager": "m"}, content_type=APPLY)
        fields = made.body["metadata"]["managedFields"][0]["fieldsV1"] \
            if made.status == 201 else None
        return (service.status, service.body.get("message")), (made.status, fields)

    real = check(both, scenario)
    assert real[0][0] == 500 and 'omits key field "protocol"' in real[0][1]
    assert real[1][0] == 201


def test_apply_of_a_field_the_schema_does_not_declare_is_500(both: Pair) -> None:
    """A server-side apply of a built-in kind with an unknown field (a misspelt ``data``, a
    metadata field, a container's) fails with the typed-patch error naming it, on both; an
    update drops such a field instead (test above)."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dat": {"a": "b"}}
    meta = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "foo": "bar"}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "nginx", "imagee": "x"}]}}

    def scenario(t: Target) -> Any:
        out = []
        for path, body in ((f"/api/v1/namespaces/{t.ns}/configmaps/c", cm),
                           (f"/api/v1/namespaces/{t.ns}/configmaps/m", meta),
                           (f"/api/v1/namespaces/{t.ns}/pods/p", pod)):
            resp = t.kube.request("PATCH", path, body, query={"fieldManager": "m"},
                                  content_type=APPLY)
            body_out = resp.body if isinstance(resp.body, dict) else {}
            out.append((resp.status, body_out.get("reason"), body_out.get("message")))
        return out

    real, embedded = both.run(scenario)
    assert real == embedded
    assert [m for _, _, m in real] == [
        f"failed to create typed patch object: {p}: field not declared in schema"
        for p in (".dat", ".metadata.foo", '.spec.containers[name="c"].imagee')]


def test_apply_with_several_undeclared_fields_names_one_of_them(both: Pair) -> None:
    """With several undeclared fields (a null one counts too), kube-apiserver names one of them,
    chosen by Go's map order, so it differs from run to run; the embedded server names the
    first in sorted order. Both answer 500 naming one of the fields."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "dat": {"a": "b"},
          "zzz": None}

    def scenario(t: Target) -> Any:
        resp = t.kube.request("PATCH", f"/api/v1/namespaces/{t.ns}/configmaps/c", cm,
                              query={"fieldManager": "m"}, content_type=APPLY)
        return resp.status, (resp.body if isinstance(resp.body, dict) else {}).get("message")

    named = {f"failed to create typed patch object: {p}: field not declared in schema"
             for p in (".dat", ".zzz")}
    for status, message in both.run(scenario):
        assert status == 500
        assert message in named


def _schema_crd(group: str) -> dict[str, Any]:
    spec_props = {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
        "items": {"type": "array", "maxItems": 2,
                  "items": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["mode"], "properties": spec_props}}}
    return crd_manifest(group, "Gizmo", schema)


def test_custom_resources_are_validated_pruned_and_defaulted(both: Pair) -> None:
    """A CRD's structural schema: type, enum, pattern, maxLength, maxItems, minimum and
    required violations are 422 with the validator's field names (``spec.items.n``, no
    index); unknown fields are pruned except under preserve-unknown-fields; defaults fill
    absent and null fields."""
    def scenario(t: Target) -> Any:
        group = f"s{t.ns[-6:]}.kinrun.dev"
        post(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", _schema_crd(group))
        path = f"/apis/{group}/v1/namespaces/{t.ns}/gizmos"
        _wait_served(t, path)

        def gizmo(name: str, spec: dict[str, Any], **extra: Any) -> Any:
            return post(t, path, {"apiVersion": f"{group}/v1", "kind": "Gizmo",
                                  "metadata": {"name": name}, "spec": spec, **extra})
        bad = gizmo("a", {"mode": "c", "name": "ABCDEFG", "items": [{"n": "s"}, {}, {}]})
        low = gizmo("b", {"mode": "a", "replicas": 0})
        missing = gizmo("c", {})
        kept = gizmo("d", {"mode": "a", "unknown": 1, "free": {"x": 1}}, top=1).body
        nulled = gizmo("e", {"mode": "a", "replicas": None}).body
        return {"bad": outcome(bad), "low": outcome(low), "missing": outcome(missing),
                "kept": {"spec": kept["spec"], "top": "top" in kept},
                "nulled": nulled["spec"]}

    real = check(both, scenario)
    assert real["kept"] == {"spec": {"mode": "a", "free": {"x": 1}, "replicas": 1}, "top": False}
    assert ("spec.items.n", "FieldValueInvalid") in real["bad"]["causes"]


def test_deployment_scale_subresource(both: Pair) -> None:
    """GET and merge-PATCH of deployments/scale; a negative replicas is 422 on spec.replicas;
    the Deployment's replicas (defaulted to 1) follow."""
    def scenario(t: Target) -> Any:
        path = f"/apis/apps/v1/namespaces/{t.ns}/deployments"
        post(t, path, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                       "spec": {"selector": {"matchLabels": {"app": "web"}},
                                "template": {"metadata": {"labels": {"app": "web"}},
                                             "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        first = t.kube.get(f"{path}/web/scale").body
        patched = t.kube.request("PATCH", f"{path}/web/scale", {"spec": {"replicas": 3}},
                                 content_type="application/merge-patch+json").body
        bad = t.kube.request("PATCH", f"{path}/web/scale", {"spec": {"replicas": -1}},
                             content_type="application/merge-patch+json")
        deploy = t.kube.get(f"{path}/web").body
        return {"first": (first["kind"], first["apiVersion"], first["spec"], first["status"]),
                "patched": patched["spec"], "bad": outcome(bad),
                "deploy": (deploy["spec"]["replicas"], deploy["metadata"]["generation"])}

    real = check(both, scenario)
    assert real["deploy"] == (3, 2)


def test_delete_propagation_finalizers_without_a_garbage_collector(both: Pair) -> None:
    """Foreground and Orphan deletes add their finalizer and keep the object (no
    controller-manager runs in envtest, nor with controllers off); Background deletes it."""
    def scenario(t: Target) -> Any:
        cms = f"/api/v1/namespaces/{t.ns}/configmaps"
        out = {}
        for policy in ("Background", "Foreground", "Orphan"):
            post(t, cms, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": policy.lower()}})
            t.kube.request("DELETE", f"{cms}/{policy.lower()}", {"propagationPolicy": policy})
            got = t.kube.get(f"{cms}/{policy.lower()}")
            out[policy] = (got.status, (got.body.get("metadata") or {}).get("finalizers")
                           if got.status == 200 else None)
        return out

    real = check(both, scenario)
    assert real["Foreground"] == (200, ["foregroundDeletion"])


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def test_tables_and_access_reviews(both: Pair) -> None:
    """Server-side Tables of ConfigMaps, Secrets and Pods have the same columns and cells (ages
    aside); a SelfSubjectAccessReview of an admin is allowed."""
    def scenario(t: Target) -> Any:
        base = f"/api/v1/namespaces/{t.ns}"
        post(t, f"{base}/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "c"}, "data": {"a": "b"}})
        post(t, f"{base}/secrets", {"apiVersion": "v1", "kind": "Secret",
                                    "metadata": {"name": "s"}, "stringData": {"p": "x"}})
        post(t, f"{base}/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                 "spec": {"containers": [{"name": "c", "image": "x"}]}})
        out = {}
        for plural in ("configmaps", "secrets", "pods"):
            table = t.kube.request("GET", f"{base}/{plural}", accept=TABLE).body
            names = [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0]
            rows = [[cell for cell, c in zip(r["cells"], table["columnDefinitions"])
                     if c["name"] != "Age" and c["priority"] == 0] for r in table["rows"]
                    if r["cells"][0] != "default-token" and not str(r["cells"][0]).startswith("default-token")]
            out[plural] = (table["kind"], names, rows)
        review = post(t, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "delete", "resource": "pods"}}})
        out["review"] = (review.status, review.body["status"]["allowed"])
        return out

    real = check(both, scenario)
    assert real["pods"] == ("Table", ["Name", "Ready", "Status", "Restarts", "Age"],
                            [["p", "0/1", "Pending", 0]])


def test_services_get_a_cluster_ip_at_create(both: Pair) -> None:
    """A Service without clusterIP gets one (an IPv4 address; clusterIPs repeats it); a
    headless one keeps None; an ExternalName one gets none. The addresses differ (the real
    server draws them at random from its range): only their shape is compared."""
    def scenario(t: Target) -> Any:
        services = f"/api/v1/namespaces/{t.ns}/services"
        out = []
        for name, spec in (("plain", {"ports": [{"port": 80}]}),
                           ("headless", {"clusterIP": "None", "ports": [{"port": 80}]}),
                           ("external", {"type": "ExternalName",
                                         "externalName": "db.example.com"})):
            got = post(t, services, {"apiVersion": "v1", "kind": "Service",
                                     "metadata": {"name": name}, "spec": spec}).body["spec"]
            ip = got.get("clusterIP")
            shape = "ipv4" if ip and ip.count(".") == 3 else ip
            out.append({"clusterIP": shape, "clusterIPs": [shape] * len(got.get("clusterIPs")
                                                                      or []),
                        "same": got.get("clusterIPs", [ip])[0] == ip})
        return out

    real = check(both, scenario)
    assert [r["clusterIP"] for r in real] == ["ipv4", "None", None]


PRINTER_COLUMNS = [
    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
    {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "How big"},
    {"name": "SizeText", "type": "string", "jsonPath": ".spec.size"},
    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
    {"name": "RatioInt", "type": "integer", "jsonPath": ".spec.ratio"},
    {"name": "On", "type": "boolean", "jsonPath": ".spec.on"},
    {"name": "OnText", "type": "string", "jsonPath": ".spec.on"},
    {"name": "ColorNumber", "type": "number", "jsonPath": ".spec.color"},
    {"name": "Since", "type": "date", "jsonPath": ".spec.since"},
    {"name": "Bad", "type": "date", "jsonPath": ".spec.color"},
    {"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"},
    {"name": "First", "type": "string", "jsonPath": ".spec.list[0]", "priority": 1},
    {"name": "List", "type": "string", "jsonPath": ".spec.list"},
    {"name": "Map", "type": "string", "jsonPath": ".spec.map"},
    {"name": "Null", "type": "string", "jsonPath": ".spec.gone"},
    {"name": "NullNumber", "type": "number", "jsonPath": ".spec.gone"},
    {"name": "Float", "type": "string", "jsonPath": ".spec.float"},
    {"name": "SizeDate", "type": "date", "jsonPath": ".spec.size"},
    {"name": "Created", "type": "date", "jsonPath": ".metadata.creationTimestamp",
     "format": "date-time"},
    {"name": "Ready", "type": "string", "jsonPath": '.spec.conditions[?(@.type=="Ready")].status'},
    {"name": "NotReady", "type": "string", "jsonPath": '.spec.conditions[?(@.type!="Ready")].type'},
    {"name": "Big", "type": "integer", "jsonPath": ".spec.conditions[?(@.n>2)].n"},
    {"name": "HasN", "type": "string", "jsonPath": ".spec.conditions[?(@.n)].type"},
    {"name": "NoMatch", "type": "string", "jsonPath": '.spec.conditions[?(@.type=="X")].type'},
]


def _table_view(table: dict[str, Any]) -> dict[str, Any]:
    """A Table's columns and cells; a cell of a creation-time column (a few seconds' age, or
    the raw timestamp) is reduced to its shape."""
    definitions = table.get("columnDefinitions") or []
    fresh = {i for i, c in enumerate(definitions) if c["name"] in ("Age", "Created")}
    rows = [[_age_shape(cell) if i in fresh else cell for i, cell in enumerate(r["cells"])]
            for r in table.get("rows") or []]
    return {"kind": table.get("kind"), "columns": definitions, "rows": rows,
            "objects": [(r.get("object") or {}).get("kind") for r in table.get("rows") or []]}


def _age_shape(cell: Any) -> Any:
    text = str(cell)
    if text.endswith("s") and text[:-1].isdigit():
        return "<seconds>"
    return "<timestamp>" if text.endswith("Z") else cell


def test_custom_resource_tables(both: Pair) -> None:
    """``kubectl get`` of custom resources: the server-side Table's columns (NAME and AGE
    without additionalPrinterColumns; the declared ones with their types, descriptions and
    formats) and cells (ages, numbers, booleans, strings of other types, missing values,
    JSONPath filters such as ``[?(@.type=="Ready")]``);
    a built-in kind's NAME column has the same description."""
    def scenario(t: Target) -> Any:
        out = {}
        for kind, columns in (("age", None), ("columns", PRINTER_COLUMNS)):
            group = f"{kind[0]}t{t.ns[-6:]}.kinrun.dev"
            crd = _crd(group)
            if columns:
                crd["spec"]["versions"][0]["additionalPrinterColumns"] = columns
            post(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
            path = f"/apis/{group}/v1/namespaces/{t.ns}/widgets"
            _wait_served(t, path)
            post(t, path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                           "metadata": {"name": "web"}, "spec": {
                               "color": "red", "size": 3, "ratio": 2.5, "on": True,
                               "since": "2019-03-01T10:00:00Z", "list": ["a", "b"],
                               "map": {"b": 1, "a": "x"}, "gone": None, "float": 1234567.5,
                               "conditions": [{"type": "Other", "status": "False"},
                                              {"type": "Ready", "status": "True", "n": 3}]}})
            post(t, path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                           "metadata": {"name": "empty"}, "spec": {"size": 1.5, "on": "yes", "float": 0.00001}})
            out[kind] = _table_view(t.kube.request("GET", path, accept=TABLE).body)
        configmaps = t.kube.request("GET", f"/api/v1/namespaces/{t.ns}/configmaps", accept=TABLE)
        out["configmap-name-column"] = configmaps.body["columnDefinitions"][0]
        return out

    real, embedded = both.run(scenario)
    assert real == embedded


def test_an_update_is_validated_after_prepare_for_update_and_its_version_check(
        both: Pair) -> None:
    """No webhook: as 1.20's ``Store.Update`` (resourceVersion check, then
    ``rest.BeforeUpdate``: PrepareForUpdate, then validation), a PUT of a custom resource
    whose ``status`` breaks the schema is accepted (the stored status is kept), a PUT of
    ``/status`` whose ``spec`` breaks it too (the stored spec is kept), and a stale PUT
    that is invalid too is 409, not 422."""
    def scenario(t: Target) -> Any:
        group = f"p{t.ns[-6:]}.kinrun.dev"
        crd = _schema_crd(group)
        version = crd["spec"]["versions"][0]
        version["subresources"] = {"status": {}}
        version["schema"]["openAPIV3Schema"]["properties"]["status"] = {
            "type": "object", "properties": {"phase": {"type": "string", "enum": ["Ready"]}}}
        post(t, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        path = f"/apis/{group}/v1/namespaces/{t.ns}/gizmos"
        _wait_served(t, path)
        made = post(t, path, {"apiVersion": f"{group}/v1", "kind": "Gizmo",
                              "metadata": {"name": "g"}, "spec": {"mode": "a"}}).body
        out = {}
        for step, at, change in (("main", "g", {"status": {"phase": "Bad"}}),
                                 ("status", "g/status", {"spec": {"mode": "c"}})):
            body = {**t.kube.get(f"{path}/g").body, **change}
            resp = t.kube.request("PUT", f"{path}/{at}", body)
            out[step] = outcome(resp) if resp.status >= 300 else (
                resp.status, resp.body["spec"], resp.body.get("status"))
        stale = {**made, "spec": {"mode": "c"}}
        out["stale"] = outcome(t.kube.request("PUT", f"{path}/g", stale))
        return out

    real = check(both, scenario)
    assert real["main"] == (200, {"mode": "a", "replicas": 1}, None)
    assert real["stale"]["code"] == 409
