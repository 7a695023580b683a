"""Differential: the embedded API server calls admission webhooks as kube-apiserver 1.20 does
(issue 33). One webhook double (``tests/webhook_double.py``) answers both servers; each
server's configurations are limited by a namespaceSelector to the test's namespace and
deleted afterwards. What is compared: the answers the client gets (codes, Status, stored
objects, Warning headers) and the AdmissionReview requests the webhook receives.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from webhook_double import configuration, hook, json_patch, webhook_double

from .conftest import Pair, Target
from .normalize import status_view
from .test_differential import APPLY, _wait_served, check, crd_manifest

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
WAIT = 30.0  # seconds: kube-apiserver notices a new configuration through an informer


def answer(request: dict[str, Any]) -> dict[str, Any]:
    """Deny ``forbidden`` keys (403, or without explanation for ``silent``), label creates,
    warn on dry runs."""
    obj = request.get("object") or {}
    data = obj.get("data") or {}
    if "forbidden" in data:
        return {"allowed": False, "status": {"code": 403, "reason": "Forbidden",
                                             "message": "no forbidden keys"}}
    if "silent" in data or (request["operation"] == "DELETE" and
                            "keep" in ((request.get("oldObject") or {}).get("data") or {})):
        return {"allowed": False}
    out: dict[str, Any] = {"allowed": True}
    if request["operation"] == "CREATE" and "uid" not in obj.get("metadata", {}):
        out = json_patch([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}])
    if request.get("dryRun"):
        out["warnings"] = ["saw a dry run"]
    return out


def seen(request: dict[str, Any]) -> dict[str, Any]:
    """The fields of a request that do not depend on the server (not uid, userInfo, times)."""
    obj, old = request.get("object"), request.get("oldObject")
    return {k: request.get(k) for k in ("kind", "resource", "requestKind", "requestResource",
                                          "subResource", "operation", "dryRun", "name",
                                          "namespace")} | {
        "object": None if obj is None else {"labels": obj["metadata"].get("labels"),
                                            "data": obj.get("data"),
                                            "has_uid": "uid" in obj["metadata"]},
        "oldObject": None if old is None else {"data": old.get("data")},
        "options": (request.get("options") or {}).get("kind")}


def until(check_: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check_():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def registered(t: Target, hooks_of: Callable[[str], list[dict[str, Any]]],
               kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    """Label the namespace, create one configuration per kind named after it."""
    patched = t.kube.request("PATCH", f"/api/v1/namespaces/{t.ns}",
                             {"metadata": {"labels": {"webhook-test": t.ns}}},
                             content_type="application/merge-patch+json")
    assert patched.status == 200, patched.body
    made = []
    for kind in kinds:
        plural = kind.lower() + "s"
        resp = t.kube.request("POST", f"{ADMISSION}/{plural}",
                              configuration(kind, f"diff-{t.ns}", hooks_of(kind)))
        assert resp.status == 201, resp.body
        made.append((plural, f"diff-{t.ns}"))
    return made


def unregister(t: Target, made: list[tuple[str, str]]) -> None:
    for plural, name in made:
        t.kube.request("DELETE", f"{ADMISSION}/{plural}/{name}")


def go_error_cut(message: str) -> str:
    """``...webhook "NAME": Post "URL"`` without the connection error after it (Go's and
    Python's words for a refused connection differ)."""
    return '": '.join(message.split('": ', 2)[:2])


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_webhooks_mutate_deny_warn_and_see_what_kube_apiserver_sends(both: Pair) -> None:
    """Creates, a dry run, a patch and deletes through a mutating and a validating webhook:
    the same answers and the same requests on both servers."""
    with webhook_double(answer) as wh:
        def scenario(t: Target) -> Any:
            def hooks_of(kind: str) -> list[dict[str, Any]]:
                name = "m.diff.example.com" if kind.startswith("Mutating") else \
                    "v.diff.example.com"
                return [hook(name, wh.url("/" + name), wh.ca_bundle, resources=["configmaps"],
                             operations=["CREATE", "UPDATE", "DELETE"], namespace=t.ns)]
            made = registered(t, hooks_of, ("MutatingWebhookConfiguration",
                                             "ValidatingWebhookConfiguration"))
            cms = f"/api/v1/namespaces/{t.ns}/configmaps"
            try:
                until(lambda: t.kube.request("POST", cms, cm("probe", forbidden="1"),
                                             query={"dryRun": "All"}).status == 403,
                      f"{t.name}: the webhooks in force")
                wh.requests.clear()
                out: dict[str, Any] = {}
                out["denied"] = status_view(t.kube.request("POST", cms, cm("a", forbidden="1")))
                out["silent"] = status_view(t.kube.request("POST", cms, cm("b", silent="1")))
                made_ok = t.kube.request("POST", cms, cm("c", keep="1"))
                out["created"] = (made_ok.status, made_ok.body["metadata"].get("labels"))
                dry = t.kube.request("POST", cms, cm("d", k="v"), query={"dryRun": "All"})
                out["dry"] = (dry.status, dry.body["metadata"].get("labels"),
                              dry.headers.get("Warning"),
                              t.kube.get(f"{cms}/d").status)
                out["patch_denied"] = status_view(t.kube.request(
                    "PATCH", f"{cms}/c", {"data": {"forbidden": "1"}},
                    content_type="application/merge-patch+json"))
                out["delete_denied"] = status_view(t.kube.request("DELETE", f"{cms}/c"))
                out["requests"] = [seen(r) for r in wh.requests]
                return out
            finally:
                unregister(t, made)

        check(both, scenario)


def test_failure_policy_when_the_webhook_cannot_be_called(both: Pair) -> None:
    """Nothing listening at the URL: Fail answers 500 InternalError naming the webhook and
    the URL; Ignore lets the create through."""
    with webhook_double(answer) as wh:
        wh.close()   # its port now refuses connections

        def scenario(t: Target) -> Any:
            def hooks_of(kind: str) -> list[dict[str, Any]]:
                return [hook(f"{p}.diff.example.com", wh.url("/" + p), wh.ca_bundle,
                             resources=["configmaps"], operations=["CREATE"], namespace=t.ns,
                             policy=policy, objectSelector={"matchLabels": {"policy": p}})
                        for p, policy in (("fail", "Fail"), ("ignore", "Ignore"))]
            made = registered(t, hooks_of, ("ValidatingWebhookConfiguration",))
            cms = f"/api/v1/namespaces/{t.ns}/configmaps"

            def create(name: str, policy: str) -> Any:
                body = cm(name)
                body["metadata"]["labels"] = {"policy": policy}
                return t.kube.request("POST", cms, body)
            try:
                until(lambda: create("probe", "fail").status == 500,
                      f"{t.name}: the webhook in force")
                refused = status_view(create("a", "fail"))
                refused["message"] = go_error_cut(refused["message"])
                for cause in refused["details"]["causes"]:
                    cause["message"] = go_error_cut(cause["message"])
                return {"fail": refused, "ignore": create("b", "ignore").status}
            finally:
                unregister(t, made)

        real = check(both, scenario)
        assert real["ignore"] == 201 and real["fail"]["code"] == 500


def test_webhook_configurations_are_defaulted_and_validated_as_kube_apiserver(
        both: Pair) -> None:
    """A configuration is stored with 1.20's defaults (failurePolicy, matchPolicy, selectors,
    timeoutSeconds, reinvocationPolicy, a rule's scope); one with an http URL, a bad
    selector operator, an out-of-range timeout or a duplicate name is 422 on both, naming
    the same fields."""
    def scenario(t: Target) -> Any:
        name = f"diff-{t.ns}"
        path = f"{ADMISSION}/mutatingwebhookconfigurations"
        good = hook("m.diff.example.com", "https://127.0.0.1:1/m", None,
                    resources=["configmaps"], operations=["CREATE"])
        for field in ("failurePolicy", "timeoutSeconds"):
            del good[field]
        made = t.kube.request("POST", path, configuration("MutatingWebhookConfiguration", name,
                                                           [good]))
        t.kube.request("DELETE", f"{path}/{name}")
        bad = dict(good, timeoutSeconds=31, clientConfig={"url": "http://127.0.0.1:1/m"},
                   objectSelector={"matchExpressions": [{"key": "a", "operator": "Foo"}]})
        refused = t.kube.request("POST", path, configuration(
            "MutatingWebhookConfiguration", name, [bad, dict(good)]))
        return {"created": (made.status, made.body["webhooks"],
                            made.body["metadata"].get("generation")),
                "refused": (refused.status, refused.body.get("reason"), sorted(
                    (c["field"], c["message"]) for c in refused.body["details"]["causes"]))}

    check(both, scenario)


def test_apply_status_and_selectors_as_kube_apiserver(both: Pair) -> None:
    """A server-side apply that creates and then changes an object, a write of the status
    subresource and an objectSelector that matches only the old object: the same webhook
    requests and answers on both servers."""
    def labelled(request: dict[str, Any]) -> dict[str, Any]:
        return {"allowed": True}

    with webhook_double(labelled) as wh:
        def scenario(t: Target) -> Any:
            def hooks_of(kind: str) -> list[dict[str, Any]]:
                return [hook("sel.diff.example.com", wh.url("/sel"), wh.ca_bundle,
                             resources=["configmaps", "pods/status"],
                             operations=["CREATE", "UPDATE"], namespace=t.ns,
                             objectSelector={"matchLabels": {"watched": "yes"}})]
            made = registered(t, hooks_of, ("ValidatingWebhookConfiguration",))
            cms = f"/api/v1/namespaces/{t.ns}/configmaps"
            try:
                until(lambda: (wh.requests.clear(), t.kube.request(
                    "POST", cms, {**cm("probe"), "metadata": {
                        "name": "probe", "labels": {"watched": "yes"}}},
                    query={"dryRun": "All"}))[1].status == 201 and bool(wh.requests),
                    f"{t.name}: the webhook in force")
                wh.requests.clear()
                applied = {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "a", "labels": {"watched": "yes"}},
                           "data": {"k": "1"}}
                out: dict[str, Any] = {}
                for step, data in (("create", "1"), ("update", "2")):
                    applied["data"] = {"k": data}
                    resp = t.kube.request("PATCH", f"{cms}/a", applied,
                                          content_type="application/apply-patch+yaml",
                                          query={"fieldManager": "diff"})
                    out[step] = resp.status
                # the label goes: the old object still matches, so the webhook is called
                resp = t.kube.request("PATCH", f"{cms}/a", {"metadata": {"labels": None}},
                                      content_type="application/merge-patch+json")
                out["unlabel"] = resp.status
                resp = t.kube.request("PATCH", f"{cms}/a", {"data": {"k": "3"}},
                                      content_type="application/merge-patch+json")
                out["unwatched"] = resp.status
                pods = f"/api/v1/namespaces/{t.ns}/pods"
                pod = {"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "p", "labels": {"watched": "yes"}},
                       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
                out["pod"] = t.kube.request("POST", pods, pod).status
                out["pod_status"] = t.kube.request(
                    "PATCH", f"{pods}/p/status", {"status": {"phase": "Running"}},
                    content_type="application/merge-patch+json").status
                out["requests"] = [seen(r) for r in wh.requests]
                return out
            finally:
                unregister(t, made)

        real = check(both, scenario)
        assert [(r["operation"], r["resource"]["resource"], r["subResource"])
                for r in real["requests"]] == [
            ("CREATE", "configmaps", None), ("UPDATE", "configmaps", None),
            ("UPDATE", "configmaps", None), ("UPDATE", "pods", "status")], real["requests"]


def _gizmo_crd(group: str) -> dict[str, Any]:
    """Gizmos: ``spec.mode`` required, one of a/b; ``status.phase`` one of Ready/Pending; a
    status subresource."""
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "required": ["mode"],
                 "properties": {"mode": {"type": "string", "enum": ["a", "b"]}}},
        "status": {"type": "object",
                   "properties": {"phase": {"type": "string", "enum": ["Ready", "Pending"]}}}}}
    return crd_manifest(group, "Gizmo", schema, status=True)


def gizmo_answer(request: dict[str, Any]) -> dict[str, Any]:
    """Driven by the object's labels: ``fill`` adds a missing ``spec.mode`` (a), ``break``
    sets it to c (not in its enum); on the status subresource ``status: spec`` sets
    ``spec.mode`` to c (PrepareForUpdate drops it) and ``status: bad`` sets ``status.phase``
    to Bad."""
    obj = request.get("object") or {}
    labels = (obj.get("metadata") or {}).get("labels") or {}
    spec = obj.get("spec")

    def mode(value: str) -> dict[str, Any]:   # an applied ``spec: {}`` may come as null
        return {"op": "add", "path": "/spec/mode", "value": value} if isinstance(spec, dict) \
            else {"op": "add", "path": "/spec", "value": {"mode": value}}
    ops: list[dict[str, Any]] = []
    if request.get("subResource") == "status":
        if labels.get("status") == "spec":
            ops.append(mode("c"))
        if labels.get("status") == "bad":
            ops.append({"op": "add", "path": "/status", "value": {"phase": "Bad"}})
    elif labels.get("break") == "yes":
        ops.append(mode("c"))
    elif labels.get("fill") == "yes" and "mode" not in (spec or {}):
        ops.append(mode("a"))
    return json_patch(ops) if ops else {"allowed": True}


def test_updates_are_validated_after_the_mutating_webhooks(both: Pair) -> None:
    """As 1.20 (``rest.BeforeUpdate`` after the mutating admission transformers): a PUT, a
    merge and a JSON patch, a server-side apply (and one that creates) and a dry run that
    lack a required field are accepted when a webhook fills it, refused (422, the same
    message) when a webhook makes them invalid; on the status subresource a webhook's
    change of ``spec`` is dropped by PrepareForUpdate, an invalid ``status`` refused."""
    with webhook_double(gizmo_answer) as wh:
        def scenario(t: Target) -> Any:
            group = f"u{t.ns[-6:]}.kinrun.dev"
            made = t.kube.request("POST", "/apis/apiextensions.k8s.io/v1/"
                                  "customresourcedefinitions", _gizmo_crd(group))
            assert made.status == 201, made.body
            path = f"/apis/{group}/v1/namespaces/{t.ns}/gizmos"
            _wait_served(t, path)

            def hooks_of(kind: str) -> list[dict[str, Any]]:
                return [hook("g.diff.example.com", wh.url("/g"), wh.ca_bundle, resources=[],
                             operations=[], namespace=t.ns, rules=[{
                                 "apiGroups": [group], "apiVersions": ["v1"],
                                 "resources": ["gizmos", "gizmos/status"],
                                 "operations": ["CREATE", "UPDATE"]}])]
            registered_ = registered(t, hooks_of, ("MutatingWebhookConfiguration",))
            try:
                until(lambda: t.kube.request("POST", path, gizmo(group, "probe", {}, fill="yes"),
                                             query={"dryRun": "All"}).status == 201,
                      f"{t.name}: the webhook in force")
                wh.requests.clear()
                # which calls, not how many: kube-apiserver tries a failed update again
                # only when its first try used the watch cache's copy (timing)
                return _update_steps(t, group, path) | {"requests": sorted(
                    {(r["operation"], r.get("subResource") or "") for r in wh.requests})}
            finally:
                unregister(t, registered_)

        real = check(both, scenario)
        filled = [k for k, v in real.items() if isinstance(v, tuple) and v[1] == {"mode": "a"}]
        assert sorted(filled) == ["apply_create_filled", "apply_filled", "dry_filled",
                                  "json_filled", "merge_filled", "put_filled"], real
        refused = {k: (v["code"], v["message"].split(": ", 1)[1]) for k, v in real.items()
                   if isinstance(v, dict) and "code" in v}
        assert refused == {"put_unfilled": (422, "spec.mode: Required value")} | {
            k: (422, 'spec.mode: Unsupported value: "c": supported values: "a", "b"')
            for k in ("put_broken", "merge_broken", "apply_broken", "apply_create_broken")} | {
            "status_broken": (422, 'status.phase: Unsupported value: "Bad": supported values: '
                              '"Ready", "Pending"')}, refused
        assert real["status_spec_dropped"] == (200, {"mode": "b"}, {"phase": "Ready"})
        assert real["dry_kept"] == {"mode": "b"}


def gizmo(group: str, name: str, spec: dict[str, Any], **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    return {"apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": meta, "spec": spec}


def _update_steps(t: Target, group: str, path: str) -> dict[str, Any]:
    """The writes of :func:`test_updates_are_validated_after_the_mutating_webhooks`: each
    answer as (code, spec, status) or, when refused, its status_view."""
    def out(resp: Any) -> Any:
        if resp.status >= 300:
            return status_view(resp)
        return resp.status, resp.body.get("spec"), resp.body.get("status")

    def write(method: str, name: str, body: Any, content_type: str = "application/json",
              **query: str) -> Any:
        return out(t.kube.request(method, f"{path}/{name}", body, content_type=content_type,
                                  query=query or None))

    def put(name: str, spec: dict[str, Any], **labels: str) -> Any:
        current = t.kube.get(f"{path}/{name}").body
        body = gizmo(group, name, spec, **labels)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        return write("PUT", name, body)

    merge, jsonp = "application/merge-patch+json", "application/json-patch+json"
    steps: dict[str, Any] = {}
    for name, labels in (("p", {}), ("m", {"fill": "yes"}), ("j", {"fill": "yes"}),
                         ("d", {"fill": "yes"}), ("s", {"status": "spec"})):
        t.kube.request("POST", path, gizmo(group, name, {"mode": "b"}, **labels))
    steps["put_unfilled"] = put("p", {})
    steps["put_filled"] = put("p", {}, fill="yes")
    steps["put_broken"] = put("p", {"mode": "b"}, **{"break": "yes"})
    steps["merge_filled"] = write("PATCH", "m", {"spec": {"mode": None}}, merge)
    steps["json_filled"] = write("PATCH", "j", [{"op": "remove", "path": "/spec/mode"}], jsonp)
    steps["merge_broken"] = write("PATCH", "j", {"metadata": {"labels": {"break": "yes"}}},
                                  merge)
    steps["dry_filled"] = write("PATCH", "d", {"spec": {"mode": None}}, merge, dryRun="All")
    steps["dry_kept"] = t.kube.get(f"{path}/d").body["spec"]
    apply = {"content_type": APPLY, "fieldManager": "diff"}
    steps["apply_create_filled"] = write("PATCH", "a", gizmo(group, "a", {}, fill="yes"),
                                         **apply)
    write("PATCH", "b", gizmo(group, "b", {"mode": "b"}), **apply)
    steps["apply_filled"] = write("PATCH", "b", gizmo(group, "b", {}, fill="yes"), **apply)
    write("PATCH", "k", gizmo(group, "k", {"mode": "a"}), **apply)
    steps["apply_broken"] = write("PATCH", "k", gizmo(group, "k", {"mode": "a"},
                                                      **{"break": "yes"}), **apply)
    steps["apply_create_broken"] = write("PATCH", "n", gizmo(group, "n", {"mode": "a"},
                                                             **{"break": "yes"}), **apply)
    steps["status_spec_dropped"] = write("PATCH", "s/status", {"status": {"phase": "Ready"}},
                                         merge)
    write("PATCH", "s", {"metadata": {"labels": {"status": "bad"}}}, merge)
    steps["status_broken"] = write("PATCH", "s/status", {"status": {"phase": "Pending"}}, merge)
    steps["stored"] = {o["metadata"]["name"]: (o["spec"], o.get("status"))
                       for o in t.kube.get(path).body["items"]}
    return steps


def test_a_create_is_prepared_after_the_mutating_webhooks(both: Pair) -> None:
    """1.20's ``rest.BeforeCreate`` (PrepareForCreate) runs after mutating admission: the
    webhook sees a Pod's status as sent, and the stored ``qosClass`` follows the limits the
    webhook added (Guaranteed, not BestEffort)."""
    limits = {"cpu": "100m", "memory": "64Mi"}
    with webhook_double(lambda request: json_patch([{
            "op": "add", "path": "/spec/containers/0/resources",
            "value": {"limits": limits}}])) as wh:
        def scenario(t: Target) -> Any:
            def hooks_of(kind: str) -> list[dict[str, Any]]:
                return [hook("qos.diff.example.com", wh.url("/q"), wh.ca_bundle,
                             resources=["pods"], operations=["CREATE"], namespace=t.ns)]
            made = registered(t, hooks_of, ("MutatingWebhookConfiguration",))
            pods = f"/api/v1/namespaces/{t.ns}/pods"
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                   "spec": {"containers": [{"name": "c", "image": "busybox"}]},
                   "status": {"phase": "Running"}}
            try:
                until(lambda: bool(t.kube.request("POST", pods, pod, query={
                    "dryRun": "All"}).body["spec"]["containers"][0].get("resources")),
                    f"{t.name}: the webhook in force")
                wh.requests.clear()
                created = t.kube.request("POST", pods, pod)
                return {"code": created.status, "status": created.body.get("status"),
                        "resources": created.body["spec"]["containers"][0].get("resources"),
                        "seen": [r["object"].get("status") for r in wh.requests]}
            finally:
                unregister(t, made)

        real = check(both, scenario)
        assert real["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}, real
        assert real["seen"] == [{"phase": "Running"}], real


def test_a_webhook_patch_that_cannot_be_decoded_is_an_internal_error(both: Pair) -> None:
    """A mutating webhook's patch giving a ConfigMap a number in ``data``: 500 InternalError
    (1.20's mutating dispatcher decodes the patched object: ``apierrors.NewInternalError``
    of the decoder's error), on a create and an update alike; nothing stored. The text after
    ``Internal error occurred:`` is the decoder's (json-iterator's on the real server)."""
    with webhook_double(lambda request: json_patch([
            {"op": "add", "path": "/data/n", "value": 9}])) as wh:
        def scenario(t: Target) -> Any:
            cms = f"/api/v1/namespaces/{t.ns}/configmaps"
            assert t.kube.request("POST", cms, cm("a", k="v")).status == 201

            def hooks_of(kind: str) -> list[dict[str, Any]]:
                return [hook("num.diff.example.com", wh.url("/n"), wh.ca_bundle,
                             resources=["configmaps"], operations=["CREATE", "UPDATE"],
                             namespace=t.ns)]
            made = registered(t, hooks_of, ("MutatingWebhookConfiguration",))
            try:
                until(lambda: t.kube.request("POST", cms, cm("probe"),
                                             query={"dryRun": "All"}).status != 201,
                      f"{t.name}: the webhook in force")
                out = {}
                for step, resp in (
                        ("create", t.kube.request("POST", cms, cm("b"))),
                        ("update", t.kube.request(
                            "PATCH", f"{cms}/a", {"data": {"k": "w"}},
                            content_type="application/merge-patch+json"))):
                    view = status_view(resp)
                    out[step] = (view["code"], view["reason"],
                                 str(view["message"]).split(": ")[0],
                                 len((view.get("details") or {}).get("causes") or []))
                out["stored"] = (t.kube.get(f"{cms}/a").body["data"],
                                 t.kube.get(f"{cms}/b").status)
                return out
            finally:
                unregister(t, made)

        real = check(both, scenario)
        assert real["create"] == (500, "InternalError", "Internal error occurred", 1)
