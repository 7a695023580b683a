"""Differential tests: the embedded API server must answer like the real kube-apiserver.

Each scenario replays one request sequence against a server (``Target``) and returns a
normalized outcome. Every test first pins the real server's outcome (so a test fails if our
understanding of Kubernetes is wrong), then asserts the embedded server's outcome equals it.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
import urllib3

from .conftest import Pair, Target
from .normalize import (cm_path, configmap, create, deployment, event, event_view, merge_patch,
                        names, rv, status_view)
from .rawkube import RawKube

CONFLICT_MSG = ("the object has been modified; please apply your changes to the latest version "
                "and try again")


def check(pair: Pair, scenario: Any) -> Any:
    """Run ``scenario`` on both servers, assert equal outcomes, return the real one."""
    real, embedded = pair.run(scenario)
    assert embedded == real, "embedded server differs from kube-apiserver:\n" + "\n".join(
        differences(real, embedded))
    return real


def differences(real: Any, embedded: Any, path: str = "") -> list[str]:
    """Lines ``path: kube-apiserver=X embedded=Y`` for every leaf where the outcomes differ."""
    if isinstance(real, dict) and isinstance(embedded, dict):
        return [line for key in sorted(set(real) | set(embedded), key=str)
                for line in differences(real.get(key, "<absent>"), embedded.get(key, "<absent>"),
                                        f"{path}.{key}")]
    if real == embedded:
        return []
    return [f"{path or '.'}: kube-apiserver={real!r} embedded={embedded!r}"]


# -- errors ----------------------------------------------------------------------------------


def test_get_missing_object_is_404_notfound(both: Pair) -> None:
    """GET of a missing object: 404 Status NotFound with name and kind in details."""
    def scenario(t: Target) -> Any:
        return status_view(t.kube.get(cm_path(t.ns, "missing")))

    real, embedded = both.run(scenario)
    assert real == {"code": 404, "kind": "Status", "status": "Failure", "reason": "NotFound",
                    "message": 'configmaps "missing" not found',
                    "details": {"name": "missing", "kind": "configmaps"}}
    assert embedded == real


def test_create_existing_is_409_alreadyexists(both: Pair) -> None:
    """POST of an existing name: 409 AlreadyExists."""
    def scenario(t: Target) -> Any:
        create(t.kube, cm_path(t.ns), configmap("dup"))
        return status_view(t.kube.request("POST", cm_path(t.ns), configmap("dup")))

    real = check(both, scenario)
    assert (real["code"], real["reason"]) == (409, "AlreadyExists")


def test_update_with_stale_resource_version_is_409_conflict(both: Pair) -> None:
    """PUT carrying an old resourceVersion: 409 Conflict, object unchanged."""
    def scenario(t: Target) -> Any:
        old = create(t.kube, cm_path(t.ns), configmap("c", k="1"))
        first = t.kube.request("PUT", cm_path(t.ns, "c"), dict(old, data={"k": "2"}))
        stale = t.kube.request("PUT", cm_path(t.ns, "c"), dict(old, data={"k": "3"}))
        after = t.kube.get(cm_path(t.ns, "c")).body
        return {"first": first.status, "stale": status_view(stale), "data": after["data"]}

    real = check(both, scenario)
    assert real["stale"]["message"] == f'Operation cannot be fulfilled on configmaps "c": {CONFLICT_MSG}'
    assert real["data"] == {"k": "2"}


def test_create_in_missing_namespace_is_404(both: Pair) -> None:
    """POST into a namespace that does not exist: 404 naming the namespace."""
    def scenario(t: Target) -> Any:
        return status_view(t.kube.request("POST", cm_path(f"{t.ns}-absent"), configmap("x")))

    real = check(both, scenario)
    assert (real["code"], real["details"]["kind"]) == (404, "namespaces")


def test_invalid_name_is_422_with_causes(both: Pair) -> None:
    """An invalid metadata.name: 422 Invalid with a FieldValueInvalid cause on metadata.name."""
    def scenario(t: Target) -> Any:
        view = status_view(t.kube.request("POST", cm_path(t.ns), configmap("Bad_Name")))
        causes = view.pop("details", {}).get("causes", [])
        view.pop("message")  # wording of the name regex differs across releases
        return {**view, "causes": [(c.get("reason"), c.get("field")) for c in causes]}

    real = check(both, scenario)
    assert real["code"] == 422 and ("FieldValueInvalid", "metadata.name") in real["causes"]


def test_delete_answers_status_success_then_404(both: Pair) -> None:
    """DELETE of a ConfigMap answers 200 Status Success; a second DELETE answers 404."""
    def scenario(t: Target) -> Any:
        create(t.kube, cm_path(t.ns), configmap("gone"))
        first = t.kube.request("DELETE", cm_path(t.ns, "gone"))
        second = t.kube.request("DELETE", cm_path(t.ns, "gone"))
        return {"first": status_view(first), "second": status_view(second)}

    real = check(both, scenario)
    assert real["first"]["code"] == 200 and real["second"]["code"] == 404


def test_unsupported_field_selector_is_400(both: Pair) -> None:
    """A field selector on an unsupported field: 400 BadRequest naming the field."""
    def scenario(t: Target) -> Any:
        return status_view(t.kube.get(cm_path(t.ns), fieldSelector="data.k=v"))

    real = check(both, scenario)
    assert (real["code"], real["reason"]) == (400, "BadRequest")


# -- resourceVersion and generation ---------------------------------------------------------


def test_resource_version_changes_on_writes_only(both: Pair) -> None:
    """resourceVersion: new on every real write, unchanged by no-op writes, list RV >= items'."""
    def scenario(t: Target) -> Any:
        made = create(t.kube, cm_path(t.ns), configmap("r", k="1"))
        got = t.kube.get(cm_path(t.ns, "r")).body
        changed = t.kube.request("PUT", cm_path(t.ns, "r"), dict(got, data={"k": "2"})).body
        noop_put = t.kube.request("PUT", cm_path(t.ns, "r"), changed).body
        noop_patch = merge_patch(t.kube, cm_path(t.ns, "r"), {"data": {"k": "2"}}).body
        listed = t.kube.get(cm_path(t.ns)).body
        return {"get_same": rv(got) == rv(made), "write_increases": rv(changed) > rv(made),
                "noop_put_same": rv(noop_put) == rv(changed),
                "noop_patch_same": rv(noop_patch) == rv(changed),
                "list_rv_ge_items": all(rv(listed) >= rv(i) for i in listed["items"])}

    real = check(both, scenario)
    assert all(real.values()), real


def test_generation_bumps_on_spec_change_only(both: Pair) -> None:
    """Deployment generation: 1 at create, same after a label change, +1 after a spec change,
    same after a status write; the main resource ignores status and /status ignores spec."""
    def scenario(t: Target) -> Any:
        path = f"/apis/apps/v1/namespaces/{t.ns}/deployments"
        made = create(t.kube, path, deployment("d"))
        labels = merge_patch(t.kube, f"{path}/d", {"metadata": {"labels": {"x": "y"}}}).body
        spec = merge_patch(t.kube, f"{path}/d", {"spec": {"replicas": 3}}).body
        status = merge_patch(t.kube, f"{path}/d/status",
                             {"status": {"observedGeneration": 2}, "spec": {"replicas": 9}}).body
        main = merge_patch(t.kube, f"{path}/d", {"status": {"replicas": 7}}).body
        return {"generations": [o["metadata"]["generation"]
                                for o in (made, labels, spec, status, main)],
                "status_kept_spec": status["spec"]["replicas"],
                "status_written": status.get("status", {}).get("observedGeneration"),
                "main_ignored_status": main.get("status", {}).get("replicas")}

    real = check(both, scenario)
    assert real == {"generations": [1, 1, 2, 2, 2], "status_kept_spec": 3, "status_written": 2,
                    "main_ignored_status": None}


# -- selectors and paging ----------------------------------------------------------------------

LABEL_SELECTORS = ["app=web", "app!=web", "app==web,tier=front", "app in (web,db)",
                   "app notin (web)", "tier", "!tier", "app=web,!tier"]


def test_label_selectors_select_the_same_objects(both: Pair) -> None:
    """Equality and set-based label selectors pick the same names on both servers."""
    objects = {"a": {"app": "web", "tier": "front"}, "b": {"app": "web"}, "c": {"app": "db"},
               "d": {"tier": "back"}, "e": {}}

    def scenario(t: Target) -> Any:
        for name, labels in objects.items():
            create(t.kube, cm_path(t.ns), configmap(name, labels))
        out = {s: sorted(names(t.kube.get(cm_path(t.ns), labelSelector=s).body["items"]))
               for s in LABEL_SELECTORS}
        return out

    real = check(both, scenario)
    assert real["app!=web"] == ["c", "d", "e"] and real["!tier"] == ["b", "c", "e"]


@pytest.mark.parametrize("selector", ["app in (", "app in (a", "app notin (a,", "a=b,,c"])
def test_malformed_label_selector_is_400(envtest_raw: RawKube, isolated_embedded_raw: RawKube,
                                         selector: str) -> None:
    """A malformed label selector answers 400 BadRequest promptly (the embedded server runs in
    a child process here, so a hang cannot stall the session)."""
    outcomes = {}
    for kube in (envtest_raw, isolated_embedded_raw):
        try:
            resp = kube.request("GET", "/api/v1/namespaces/default/configmaps",
                                query={"labelSelector": selector}, timeout=5)
            outcomes[kube.label] = (resp.status, resp.body.get("reason"))
        except urllib3.exceptions.ReadTimeoutError:
            outcomes[kube.label] = "no answer within 5 s"
    assert outcomes["envtest"] == (400, "BadRequest")
    assert outcomes["embedded"] == outcomes["envtest"], differences(outcomes["envtest"],
                                                                    outcomes["embedded"])


def test_field_selector_metadata_name(both: Pair) -> None:
    """fieldSelector metadata.name= and != and metadata.namespace= filter like the real server."""
    def scenario(t: Target) -> Any:
        for name in ("f1", "f2"):
            create(t.kube, cm_path(t.ns), configmap(name))
        sel = {s: names(t.kube.get(cm_path(t.ns), fieldSelector=s).body["items"])
               for s in ("metadata.name=f1", "metadata.name!=f1", f"metadata.namespace={t.ns}")}
        every = t.kube.get("/api/v1/configmaps", fieldSelector="metadata.name=f2").body
        sel["cluster-wide"] = [(i["metadata"]["namespace"] == t.ns) for i in every["items"]]
        return sel

    real = check(both, scenario)
    assert real["metadata.name=f1"] == ["f1"] and real["metadata.name!=f1"] == ["f2"]


def test_paging_is_a_consistent_snapshot(both: Pair) -> None:
    """limit/continue: pages in name order, remainingItemCount, one resourceVersion, and an
    object created between pages is not in later pages."""
    def scenario(t: Target) -> Any:
        for i in range(5):
            create(t.kube, cm_path(t.ns), configmap(f"p{i}"))
        pages, token, first_rv = [], None, None
        while True:
            query = {"limit": 2, **({"continue": token} if token else {})}
            page = t.kube.get(cm_path(t.ns), **query).body
            meta = page["metadata"]
            first_rv = first_rv or meta["resourceVersion"]
            pages.append({"names": names(page["items"]), "remaining": meta.get("remainingItemCount"),
                          "has_continue": bool(meta.get("continue")),
                          "same_rv": meta["resourceVersion"] == first_rv})
            if len(pages) == 1:
                create(t.kube, cm_path(t.ns), configmap("p9-late"))
            token = meta.get("continue")
            if not token:
                return pages

    real = check(both, scenario)
    assert [p["names"] for p in real] == [["p0", "p1"], ["p2", "p3"], ["p4"]]


def test_expired_continue_token_is_410_with_inconsistent_token(both: Pair) -> None:
    """A continue token older than the retained history answers 410 Expired; the Status carries
    a fresh token that continues the list at the latest state."""
    def scenario(t: Target) -> Any:
        for i in range(3):
            create(t.kube, cm_path(t.ns), configmap(f"e{i}"))
        first = t.kube.get(cm_path(t.ns), limit=1).body
        t.expire_continue_tokens()
        resp = t.kube.get(cm_path(t.ns), limit=1, **{"continue": first["metadata"]["continue"]})
        view = status_view(resp)
        view.pop("message")
        new_token = (resp.body.get("metadata") or {}).get("continue") if isinstance(
            resp.body, dict) else None
        rest = names(t.kube.get(cm_path(t.ns), **{"continue": new_token}).body["items"]) \
            if new_token else None
        return {**view, "has_new_token": bool(new_token), "rest": rest}

    real = check(both, scenario)
    assert (real["code"], real["reason"]) == (410, "Expired")


# -- watch -----------------------------------------------------------------------------------


def test_watch_from_list_rv_sees_later_changes_in_order(both: Pair) -> None:
    """WATCH from a list's resourceVersion replays ADDED, MODIFIED, DELETED in write order,
    with increasing resourceVersions (DELETED carries the deletion's)."""
    def scenario(t: Target) -> Any:
        list_rv = t.kube.get(cm_path(t.ns)).body["metadata"]["resourceVersion"]
        create(t.kube, cm_path(t.ns), configmap("w", k="1"))
        merge_patch(t.kube, cm_path(t.ns, "w"), {"data": {"k": "2"}})
        t.kube.request("DELETE", cm_path(t.ns, "w"))
        got = t.kube.watch(cm_path(t.ns), {"resourceVersion": list_rv, "timeoutSeconds": 10},
                           max_events=3)
        rvs = [rv(e["object"]) for e in got.events]
        return {"events": [event_view(e) for e in got.events],
                "increasing": rvs == sorted(set(rvs)) and rvs[0] > int(list_rv),
                "data": [e["object"].get("data") for e in got.events]}

    real = check(both, scenario)
    assert real["events"] == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


def test_watch_without_resource_version_starts_with_synthetic_adds(both: Pair) -> None:
    """WATCH with no resourceVersion (and with "0") first sends ADDED for existing objects."""
    def scenario(t: Target) -> Any:
        for name in ("s1", "s2"):
            create(t.kube, cm_path(t.ns), configmap(name))
        out = {}
        for label, query in (("unset", {}), ("zero", {"resourceVersion": "0"})):
            got = t.kube.watch(cm_path(t.ns), {**query, "timeoutSeconds": 10}, max_events=2)
            out[label] = sorted(event_view(e) for e in got.events)
        return out

    real = check(both, scenario)
    assert real["unset"] == [("ADDED", "s1"), ("ADDED", "s2")]


def test_watch_with_label_selector_reports_objects_leaving_and_entering(both: Pair) -> None:
    """A selector watch turns 'stops matching' into DELETED and 'starts matching' into ADDED."""
    def scenario(t: Target) -> Any:
        list_rv = t.kube.get(cm_path(t.ns)).body["metadata"]["resourceVersion"]
        create(t.kube, cm_path(t.ns), configmap("l", {"app": "web"}))
        merge_patch(t.kube, cm_path(t.ns, "l"), {"metadata": {"labels": {"app": "db"}}})
        merge_patch(t.kube, cm_path(t.ns, "l"), {"metadata": {"labels": {"app": "web"}}})
        t.kube.request("DELETE", cm_path(t.ns, "l"))
        got = t.kube.watch(cm_path(t.ns), {"resourceVersion": list_rv, "labelSelector": "app=web",
                                           "timeoutSeconds": 10}, max_events=4)
        return [(*event_view(e), e["object"]["metadata"].get("labels")) for e in got.events]

    real = check(both, scenario)
    assert [e[0] for e in real] == ["ADDED", "DELETED", "ADDED", "DELETED"]


def test_watch_from_too_old_resource_version_is_410(both: Pair) -> None:
    """WATCH from a resourceVersion older than the server's history: 410 Expired, delivered
    as the real server delivers it (HTTP status vs. ERROR event). Events are used because
    kube-apiserver serves their watches from etcd (no watch cache), where compaction bites."""
    def scenario(t: Target) -> Any:
        path = f"/api/v1/namespaces/{t.ns}/events"
        create(t.kube, path, event("e1", t.ns))
        old_rv = t.kube.get(path).body["metadata"]["resourceVersion"]
        create(t.kube, path, event("e2", t.ns))
        t.expire_history()
        got = t.kube.watch(path, {"resourceVersion": old_rv, "timeoutSeconds": 10}, max_events=1)
        body = got.events[0]["object"] if got.events else got.body
        return {"http": got.status, "events": [e["type"] for e in got.events],
                "code": (body or {}).get("code"), "reason": (body or {}).get("reason"),
                "kind": (body or {}).get("kind")}

    real = check(both, scenario)
    assert (real["code"], real["reason"]) == (410, "Expired")


def test_bookmark_shape(both: Pair) -> None:
    """With allowWatchBookmarks, a BOOKMARK event carries only kind, apiVersion and a
    resourceVersion no older than the watch's start. (kube-apiserver 1.20 sends one 2 s
    before timeoutSeconds ends, and only if the resource type saw a write since the watch
    began: a write in another namespace provides one.)"""
    def scenario(t: Target) -> Any:
        list_rv = t.kube.get(cm_path(t.ns)).body["metadata"]["resourceVersion"]
        stream = t.kube.open_watch(cm_path(t.ns), {"resourceVersion": list_rv,
                                                   "timeoutSeconds": 4,
                                                   "allowWatchBookmarks": True},
                                   read_timeout=8)
        other = f"other-{t.ns[-6:]}"
        if t.kube.get(f"/api/v1/namespaces/{other}").status == 404:
            t.kube.request("POST", "/api/v1/namespaces",
                           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
        create(t.kube, cm_path(other), configmap("elsewhere"))
        got = stream.read()
        marks = [e for e in got.events if e["type"] == "BOOKMARK"]
        others = [e["type"] for e in got.events if e["type"] != "BOOKMARK"]
        if not marks:
            return {"bookmark": None, "others": others}
        obj = marks[0]["object"]
        return {"bookmark": {"kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
                             "metadata_keys": sorted(k for k, v in obj["metadata"].items()
                                                     if v is not None),
                             "rv_not_older": rv(obj) >= int(list_rv)},
                "others": others}

    real = check(both, scenario)
    assert real["bookmark"] is not None and real["others"] == []


# -- patch, apply, discovery -------------------------------------------------------------------


def test_patch_types_give_same_results(both: Pair) -> None:
    """merge, JSON and strategic-merge patches, and a failing JSON-patch test op, agree."""
    def scenario(t: Target) -> Any:
        path = cm_path(t.ns, "pt")
        create(t.kube, cm_path(t.ns), configmap("pt", a="1", b="2"))
        merge = merge_patch(t.kube, path, {"data": {"a": None, "c": "3"}}).body["data"]
        json_patch = t.kube.request("PATCH", path, [{"op": "add", "path": "/data/d", "value": "4"},
                                                    {"op": "remove", "path": "/data/b"}],
                                    content_type="application/json-patch+json").body["data"]
        strategic = t.kube.request("PATCH", path, {"data": {"e": "5"}},
                                   content_type="application/strategic-merge-patch+json").body
        failed = t.kube.request("PATCH", path, [{"op": "test", "path": "/data/c", "value": "x"}],
                                content_type="application/json-patch+json")
        missing = merge_patch(t.kube, cm_path(t.ns, "nope"), {"data": {"a": "1"}})
        return {"merge": merge, "json": json_patch, "strategic": strategic["data"],
                "failed": (failed.status, failed.body.get("reason")),
                "missing": (missing.status, missing.body.get("reason"))}

    real = check(both, scenario)
    assert real["json"] == {"c": "3", "d": "4"}


def test_server_side_apply_ownership_and_conflicts(both: Pair) -> None:
    """Apply creates (201) with an Apply managedFields entry; another manager changing the same
    field gets 409 Conflict naming the field; force takes ownership."""
    def scenario(t: Target) -> Any:
        path = cm_path(t.ns, "ssa")

        def apply(manager: str, value: str, force: bool = False) -> Any:
            query = {"fieldManager": manager, **({"force": True} if force else {})}
            return t.kube.request("PATCH", path, configmap("ssa", k=value), query=query,
                                  content_type="application/apply-patch+yaml")

        first = apply("one", "1")
        same = apply("one", "1")
        clash = apply("two", "2")
        forced = apply("two", "2", force=True)

        def managers(obj: dict) -> list[tuple[str, str]]:
            return sorted((m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"])

        causes = (clash.body.get("details") or {}).get("causes", [])
        return {"first": (first.status, managers(first.body)),
                "same_rv": rv(same.body) == rv(first.body),
                "clash": (clash.status, clash.body.get("reason"),
                          [(c.get("reason"), c.get("field"), c.get("message")) for c in causes]),
                "forced": (forced.status, forced.body["data"], managers(forced.body))}

    real = check(both, scenario)
    assert real["first"] == (201, [("one", "Apply")])
    assert real["clash"] == (409, "Conflict",
                             [("FieldManagerConflict", ".data.k", 'conflict with "one"')])


def _resources(t: Target, path: str) -> dict[str, tuple[Any, ...]]:
    body = t.kube.get(path).body
    return {r["name"]: (r["kind"], r["namespaced"], "watch" in r.get("verbs", []))
            for r in body["resources"]}


def test_discovery_agrees_on_served_resources(both: Pair) -> None:
    """Every resource the embedded server lists in /api/v1 and /apis/apps/v1 exists on the real
    server with the same kind, scope and watchability; /apis lists its groups likewise."""
    for path in ("/api/v1", "/apis/apps/v1", "/apis/coordination.k8s.io/v1"):
        real = _resources(both.envtest, path)
        embedded = _resources(both.embedded, path)
        assert {k: real.get(k) for k in embedded} == embedded, path
    assert _resources(both.envtest, "/api/v1")["configmaps"] == ("ConfigMap", True, True)
    real_groups = {g["name"]: g["preferredVersion"]["groupVersion"]
                   for g in both.envtest.kube.get("/apis").body["groups"]}
    embedded_groups = {g["name"]: g["preferredVersion"]["groupVersion"]
                       for g in both.embedded.kube.get("/apis").body["groups"]}
    assert {k: real_groups.get(k) for k in embedded_groups} == embedded_groups


# -- more request semantics ------------------------------------------------------------------


def test_write_edge_cases_answer_alike(both: Pair) -> None:
    """PUT of a missing ConfigMap (404, no create-on-update), a body namespace that differs
    from the URL's (400), generateName (prefix + 5 characters), and a DELETE whose uid
    precondition fails (409 Conflict)."""
    def scenario(t: Target) -> Any:
        put_missing = t.kube.request("PUT", cm_path(t.ns, "nope"), configmap("nope"))
        wrong_ns = configmap("w")
        wrong_ns["metadata"]["namespace"] = f"{t.ns}-elsewhere"
        mismatch = t.kube.request("POST", cm_path(t.ns), wrong_ns)
        generated = create(t.kube, cm_path(t.ns),
                           {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"generateName": "gen-"}})
        name = generated["metadata"]["name"]
        uid = create(t.kube, cm_path(t.ns), configmap("pre"))["metadata"]["uid"]
        precondition = t.kube.request("DELETE", cm_path(t.ns, "pre"),
                                      {"apiVersion": "v1", "kind": "DeleteOptions",
                                       "preconditions": {"uid": "not-the-uid"}})
        view = status_view(precondition)
        view["message"] = view["message"].replace(uid, "<uid>")
        return {"put_missing": status_view(put_missing), "mismatch": status_view(mismatch),
                "generated": (name.startswith("gen-"), len(name)), "precondition": view}

    real = check(both, scenario)
    assert real["put_missing"]["code"] == 404 and real["mismatch"]["code"] == 400
    assert real["precondition"]["code"] == 409


def test_list_at_expired_exact_resource_version_is_410(both: Pair) -> None:
    """LIST with resourceVersionMatch=Exact at a resourceVersion older than the history: 410."""
    def scenario(t: Target) -> Any:
        create(t.kube, cm_path(t.ns), configmap("x1"))
        old_rv = t.kube.get(cm_path(t.ns)).body["metadata"]["resourceVersion"]
        exact_now = names(t.kube.get(cm_path(t.ns), resourceVersion=old_rv,
                                     resourceVersionMatch="Exact").body["items"])
        create(t.kube, cm_path(t.ns), configmap("x2"))
        t.expire_history()
        later = status_view(t.kube.get(cm_path(t.ns), resourceVersion=old_rv,
                                       resourceVersionMatch="Exact"))
        return {"exact_before": exact_now, "after": later}

    real = check(both, scenario)
    assert real["exact_before"] == ["x1"] and real["after"]["code"] == 410


def test_list_from_future_resource_version_is_504_too_large(both: Pair) -> None:
    """LIST from a resourceVersion the server has not reached: 504 Timeout with a
    ResourceVersionTooLarge cause, retryAfterSeconds 1 and a Retry-After: 1 header (the real
    server first waits ~3 s). A WATCH from one is accepted: see the watch test below."""
    def scenario(t: Target) -> Any:
        future = str(int(t.kube.get(cm_path(t.ns)).body["metadata"]["resourceVersion"]) + 10**6)
        resp = t.kube.get(cm_path(t.ns), resourceVersion=future)
        listed = status_view(resp)
        listed["message"] = re.sub(r"\d+", "N", listed["message"])
        listed["retry_after_header"] = resp.headers.get("Retry-After")
        return listed

    real = check(both, scenario)
    assert (real["code"], real["reason"]) == (504, "Timeout")
    assert real["retry_after_header"] == "1"


# -- pods and namespaces (objects whose deletion needs a kubelet or a controller) ------------


def _pod(name: str, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def test_pod_create_defaults_and_field_selectors(both: Pair) -> None:
    """A created Pod is Pending (BestEffort, no generation in 1.20 here), keeps its defaulted
    restartPolicy, and spec.nodeName / status.phase field selectors select it."""
    def scenario(t: Target) -> Any:
        path = f"/api/v1/namespaces/{t.ns}/pods"
        made = create(t.kube, path, _pod("p1", node="n1"))
        create(t.kube, path, _pod("p2"))
        select = {s: names(t.kube.get(path, fieldSelector=s).body["items"])
                  for s in ("spec.nodeName=n1", "spec.nodeName=", "status.phase=Pending",
                            "status.phase!=Pending")}
        return {"phase": made.get("status", {}).get("phase"),
                "qosClass": made.get("status", {}).get("qosClass"),
                "has_generation": "generation" in made["metadata"],
                "restartPolicy": made["spec"].get("restartPolicy"), "select": select}

    real = check(both, scenario)
    assert real["phase"] == "Pending" and real["select"]["spec.nodeName=n1"] == ["p1"]


def test_pod_delete_is_graceful_only_when_scheduled(both: Pair) -> None:
    """DELETE of an unscheduled Pod removes it at once; of a scheduled Pod (no kubelet here)
    it sets deletionTimestamp with a 30 s grace period and the Pod stays; both answer 200 with
    the Pod, not a Status."""
    def scenario(t: Target) -> Any:
        path = f"/api/v1/namespaces/{t.ns}/pods"
        create(t.kube, path, _pod("free"))
        create(t.kube, path, _pod("bound", node="n1"))
        out = {}
        for name in ("free", "bound"):
            resp = t.kube.request("DELETE", f"{path}/{name}")
            after = t.kube.get(f"{path}/{name}")
            meta = after.body.get("metadata", {}) if after.status == 200 else {}
            out[name] = {"code": resp.status, "kind": resp.body.get("kind"),
                         "still_there": after.status == 200,
                         "terminating": "deletionTimestamp" in meta,
                         "grace": meta.get("deletionGracePeriodSeconds")}
        return out

    real = check(both, scenario)
    assert real["free"]["still_there"] is False and real["bound"]["terminating"] is True


def _phase(obj: dict[str, Any]) -> Any:
    """status.phase of an object; None for a metav1.Status (whose ``status`` is a string)."""
    return obj["status"].get("phase") if isinstance(obj.get("status"), dict) else None


def test_deleted_namespace_stays_terminating(both: Pair) -> None:
    """DELETE of a namespace answers 200 with it in phase Terminating; with no controller it
    stays; creating an object in it is then refused (403 Forbidden)."""
    def scenario(t: Target) -> Any:
        ns = f"doomed-{t.ns[-6:]}"
        t.kube.request("POST", "/api/v1/namespaces",
                       {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        resp = t.kube.request("DELETE", f"/api/v1/namespaces/{ns}")
        after = t.kube.get(f"/api/v1/namespaces/{ns}")
        refused = json.loads(json.dumps(status_view(
            t.kube.request("POST", cm_path(ns), configmap("late")))).replace(ns, "<ns>"))
        return {"code": resp.status, "kind": resp.body.get("kind"), "phase": _phase(resp.body),
                "after": (after.status, _phase(after.body)), "create_in_it": refused}

    real = check(both, scenario)
    assert real["after"] == (200, "Terminating")


# -- custom resources ---------------------------------------------------------------------------


def crd_manifest(group: str, kind: str, schema: dict[str, Any], *,
                 status: bool = False) -> dict[str, Any]:
    """A namespaced CRD of ``kind`` (plural ``kind.lower() + "s"``) in ``group``, one served
    and stored version ``v1`` with ``schema`` (``openAPIV3Schema``); ``status``: with a
    status subresource."""
    plural = kind.lower() + "s"
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}
    if status:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               "listKind": f"{kind}List"},
                     "versions": [version]}}


def _crd(group: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return crd_manifest(group, "Widget", schema, status=True)


def _wait_served(t: Target, path: str, timeout: float = 30.0) -> None:
    """Poll ``path`` until it answers 200: a new CRD is served asynchronously (bounded wait)."""
    deadline = time.monotonic() + timeout
    while t.kube.get(path).status != 200:
        assert time.monotonic() < deadline, f"{t.name}: {path} not served after {timeout} s"
        time.sleep(0.2)


def test_custom_resource_generation_status_and_discovery(both: Pair) -> None:
    """A CRD with a status subresource: discovery lists it; CR generation bumps on spec changes
    only; the main resource ignores status and /status ignores spec; unknown kinds 404."""
    def scenario(t: Target) -> Any:
        group = f"g{t.ns[-6:]}.kinrun.dev"
        crd = create(t.kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                     _crd(group))
        path = f"/apis/{group}/v1/namespaces/{t.ns}/widgets"
        _wait_served(t, path)
        made = create(t.kube, path, {"apiVersion": f"{group}/v1", "kind": "Widget",
                                     "metadata": {"name": "w"}, "spec": {"size": 1},
                                     "status": {"ready": True}})
        label = merge_patch(t.kube, f"{path}/w", {"metadata": {"labels": {"a": "b"}}}).body
        spec = merge_patch(t.kube, f"{path}/w", {"spec": {"size": 2}, "status": {"x": 1}}).body
        status = merge_patch(t.kube, f"{path}/w/status",
                             {"status": {"ready": True}, "spec": {"size": 9}}).body
        resources = t.kube.get(f"/apis/{group}/v1").body["resources"]
        return {"crd_generation": crd["metadata"].get("generation"),
                "generations": [o["metadata"]["generation"] for o in (made, label, spec, status)],
                "created_status": made.get("status"), "main_status": spec.get("status"),
                "status_spec": status["spec"], "status_status": status.get("status"),
                "discovery": sorted((r["name"], r["kind"], r["namespaced"]) for r in resources),
                "missing": t.kube.get(f"/apis/{group}/v1/namespaces/{t.ns}/gadgets").status}

    real = check(both, scenario)
    assert real["generations"] == [1, 1, 2, 2] and real["status_spec"] == {"size": 2}


# -- server-side apply against create/update/patch managers (fieldmanager of 1.20) ------------

APPLY = "application/apply-patch+yaml"


def ssa(t: Target, path: str, body: dict[str, Any], manager: str, force: bool = False) -> Any:
    """Server-side apply ``body`` at ``path`` as ``manager``."""
    query = {"fieldManager": manager, **({"force": True} if force else {})}
    return t.kube.request("PATCH", path, body, query=query, content_type=APPLY)


def conflict_view(resp: Any) -> dict[str, Any]:
    """A 409 apply conflict as the client sees it: status_view with its causes as (reason,
    field, message), sorted (kube-apiserver orders the causes of several managers at random)."""
    view = status_view(resp)
    details = dict(view.pop("details", {}) or {})
    causes = details.pop("causes", [])
    view["details"] = details
    view["causes"] = sorted((c.get("reason"), c.get("field"), c.get("message")) for c in causes)
    return view


def owners(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The managedFields entries as (manager, operation, apiVersion), sorted; an Apply entry
    also carries its fieldsV1 (Update entries' sets differ in the '.' markers kube-apiserver
    writes for maps it saw added, which the embedded server leaves out)."""
    out = []
    for m in obj["metadata"].get("managedFields") or []:
        entry = (m["manager"], m["operation"], m["apiVersion"])
        out.append(entry + ((m.get("fieldsV1"),) if m["operation"] == "Apply" else ()))
    return sorted(out, key=repr)


def _deploy_path(ns: str, name: str = "") -> str:
    base = f"/apis/apps/v1/namespaces/{ns}/deployments"
    return f"{base}/{name}" if name else base


def _replicas(name: str, replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas}}


def test_apply_after_patch_conflicts_with_the_patch_manager(both: Pair) -> None:
    """A merge patch as kubectl-patch owns spec.replicas: a later apply changing it is a 409
    naming ".spec.replicas" and "kubectl-patch" using apps/v1; the same value is no conflict."""
    def scenario(t: Target) -> Any:
        create_resp = t.kube.request("POST", _deploy_path(t.ns), deployment("web"),
                                     query={"fieldManager": "creator"})
        patched = t.kube.request("PATCH", _deploy_path(t.ns, "web"), {"spec": {"replicas": 3}},
                                 query={"fieldManager": "kubectl-patch"},
                                 content_type="application/merge-patch+json")
        clash = ssa(t, _deploy_path(t.ns, "web"), _replicas("web", 5), "ctrl")
        after = t.kube.get(_deploy_path(t.ns, "web")).body
        same = ssa(t, _deploy_path(t.ns, "web"), _replicas("web", 3), "ctrl")
        return {"created": create_resp.status, "patched": (patched.status, owners(patched.body)),
                "clash": conflict_view(clash), "replicas_after_clash": after["spec"]["replicas"],
                "same_value": (same.status, owners(same.body))}

    real = check(both, scenario)
    assert real["clash"]["code"] == 409 and real["clash"]["reason"] == "Conflict"
    assert real["clash"]["message"] == ('Apply failed with 1 conflict: conflict with '
                                        '"kubectl-patch" using apps/v1: .spec.replicas')
    assert real["clash"]["causes"] == [("FieldManagerConflict", ".spec.replicas",
                                        'conflict with "kubectl-patch" using apps/v1')]
    assert real["replicas_after_clash"] == 3


def test_apply_after_update_conflicts_with_the_update_manager(both: Pair) -> None:
    """A PUT with fieldManager=updater owns the data key it changed (the creator keeps the
    others): an apply changing that key conflicts with "updater" using v1 only."""
    def scenario(t: Target) -> Any:
        made = t.kube.request("POST", cm_path(t.ns), configmap("u", k="1", other="x"),
                              query={"fieldManager": "creator"}).body
        put = t.kube.request("PUT", cm_path(t.ns, "u"), dict(made, data={"k": "2", "other": "x"}),
                             query={"fieldManager": "updater"})
        clash = ssa(t, cm_path(t.ns, "u"), configmap("u", k="3"), "ctrl")
        other = ssa(t, cm_path(t.ns, "u"), configmap("u", other="y"), "ctrl2")
        return {"put": (put.status, owners(put.body)), "clash": conflict_view(clash),
                "other": conflict_view(other)}

    real = check(both, scenario)
    assert real["clash"]["causes"] == [("FieldManagerConflict", ".data.k",
                                        'conflict with "updater" using v1')]
    assert real["other"]["causes"] == [("FieldManagerConflict", ".data.other",
                                        'conflict with "creator" using v1')]


def test_apply_after_create_conflicts_with_the_user_agent_manager(both: Pair) -> None:
    """A create without fieldManager is owned by the User-Agent before its first '/'; an apply
    of the same value shares the field, then a third manager's change conflicts with both
    (message lists managers sorted, one '- path' line each)."""
    def scenario(t: Target) -> Any:
        made = t.kube.request("POST", cm_path(t.ns), configmap("a", k="1"),
                              user_agent="difftest-agent/1.0 (linux/amd64) kinrun")
        clash = ssa(t, cm_path(t.ns, "a"), configmap("a", k="2"), "ctrl")
        shared = ssa(t, cm_path(t.ns, "a"), configmap("a", k="1"), "ctrl")
        both_clash = ssa(t, cm_path(t.ns, "a"), configmap("a", k="9"), "third")
        return {"made": (made.status, owners(made.body)), "clash": conflict_view(clash),
                "shared": (shared.status, owners(shared.body)), "both": conflict_view(both_clash)}

    real = check(both, scenario)
    assert real["made"][1] == [("difftest-agent", "Update", "v1")]
    assert real["clash"]["causes"] == [("FieldManagerConflict", ".data.k",
                                        'conflict with "difftest-agent" using v1')]
    assert real["both"]["message"] == ('Apply failed with 2 conflicts: conflicts with "ctrl":\n'
                                       '- .data.k\nconflicts with "difftest-agent" using v1:\n'
                                       '- .data.k')


def test_force_apply_takes_the_field_and_a_later_patch_takes_it_back(both: Pair) -> None:
    """force=true moves spec.replicas from kubectl-patch to the applier (the patch manager,
    left with nothing, disappears); a later patch takes it back and the applier conflicts
    again."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        t.kube.request("POST", _deploy_path(t.ns), deployment("web"),
                       query={"fieldManager": "creator"})
        t.kube.request("PATCH", path, {"spec": {"replicas": 3}},
                       query={"fieldManager": "kubectl-patch"},
                       content_type="application/merge-patch+json")
        forced = ssa(t, path, _replicas("web", 5), "ctrl", force=True)
        repatched = t.kube.request("PATCH", path, {"spec": {"replicas": 7}},
                                   query={"fieldManager": "kubectl-patch"},
                                   content_type="application/merge-patch+json")
        again = ssa(t, path, _replicas("web", 5), "ctrl")
        return {"forced": (forced.status, forced.body["spec"]["replicas"], owners(forced.body)),
                "repatched": (repatched.status, owners(repatched.body)),
                "again": conflict_view(again)}

    real = check(both, scenario)
    assert real["forced"][:2] == (200, 5)
    assert ("kubectl-patch", "Update", "apps/v1") not in real["forced"][2]
    assert real["again"]["code"] == 409


def test_two_appliers_share_prune_and_conflict(both: Pair) -> None:
    """Two Apply managers: a different value conflicts with the other applier; the same value
    is shared; a field one applier drops stays while the other still applies it, and goes
    when neither does."""
    def scenario(t: Target) -> Any:
        path = cm_path(t.ns, "two")
        first = ssa(t, path, configmap("two", x="1", y="2"), "a")
        clash = ssa(t, path, configmap("two", y="3"), "b")
        shared = ssa(t, path, configmap("two", y="2"), "b")
        a_drops = ssa(t, path, configmap("two", x="1"), "a")
        b_drops = ssa(t, path, {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": "two"}}, "b")
        return {"first": (first.status, owners(first.body)), "clash": conflict_view(clash),
                "shared": owners(shared.body),
                "a_drops": (a_drops.body["data"], owners(a_drops.body)),
                "b_drops": (b_drops.body["data"], owners(b_drops.body))}

    real = check(both, scenario)
    assert real["clash"]["message"] == 'Apply failed with 1 conflict: conflict with "a": .data.y'
    assert real["a_drops"][0] == {"x": "1", "y": "2"}
    assert real["b_drops"][0] == {"x": "1"}


# -- watch from a future resourceVersion -------------------------------------------------------


def test_watch_from_future_resource_version_is_accepted_and_skips_up_to_it(both: Pair) -> None:
    """1.20's watch cache accepts a watch from a resourceVersion newer than its own (no 504,
    unlike LIST) and sends only events newer than it; a watch from the current one sees the
    same write."""
    def scenario(t: Target) -> Any:
        now = rv(t.kube.get(cm_path(t.ns)).body)
        future = t.kube.open_watch(cm_path(t.ns), {"resourceVersion": str(now + 100000),
                                                   "timeoutSeconds": 2})
        current = t.kube.open_watch(cm_path(t.ns), {"resourceVersion": str(now)})
        create(t.kube, cm_path(t.ns), configmap("later"))
        seen = current.read(max_events=1)
        skipped = future.read()
        return {"future": (skipped.status, [event_view(e) for e in skipped.events],
                           skipped.ended),
                "current": (seen.status, [event_view(e) for e in seen.events])}

    real = check(both, scenario)
    assert real == {"future": (200, [], True), "current": (200, [("ADDED", "later")])}


def test_reset_managed_fields_then_apply_conflicts_with_before_first_apply(both: Pair) -> None:
    """A PUT with managedFields: [] clears them and a later patch is not tracked; the next
    apply finds every field owned by "before-first-apply" (changing one conflicts)."""
    def scenario(t: Target) -> Any:
        made = t.kube.request("POST", cm_path(t.ns), configmap("r", k="1"),
                              query={"fieldManager": "creator"}).body
        made["metadata"]["managedFields"] = []
        reset = t.kube.request("PUT", cm_path(t.ns, "r"), made).body
        patched = t.kube.request("PATCH", cm_path(t.ns, "r"), {"data": {"k": "2"}},
                                 query={"fieldManager": "patcher"},
                                 content_type="application/merge-patch+json").body
        clash = ssa(t, cm_path(t.ns, "r"), configmap("r", k="3"), "ctrl")
        same = ssa(t, cm_path(t.ns, "r"), configmap("r", k="2"), "ctrl")
        return {"reset": owners(reset), "patched": owners(patched),
                "clash": conflict_view(clash), "same": (same.status, owners(same.body))}

    real = check(both, scenario)
    assert real["reset"] == [] and real["patched"] == []
    assert real["clash"]["message"] == ('Apply failed with 1 conflict: conflict with '
                                        '"before-first-apply" using v1: .data.k')


def test_kubectl_server_side_apply_upgrades_from_client_side_apply(both: Pair) -> None:
    """Manager "kubectl" takes, without force, the fields whose live value still equals the
    last-applied annotation, and rewrites that annotation; a field changed since conflicts."""
    def scenario(t: Target) -> Any:
        last = configmap("l", k="1", j="1")
        body = configmap("l", k="1", j="1")
        body["metadata"]["annotations"] = {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(last)}
        t.kube.request("POST", cm_path(t.ns), body,
                       query={"fieldManager": "kubectl-client-side-apply"})
        t.kube.request("PATCH", cm_path(t.ns, "l"), {"data": {"j": "2"}},
                       query={"fieldManager": "kubectl-patch"},
                       content_type="application/merge-patch+json")
        clash = ssa(t, cm_path(t.ns, "l"), configmap("l", k="5", j="5"), "kubectl")
        taken = ssa(t, cm_path(t.ns, "l"), configmap("l", k="5"), "kubectl")
        annotation = taken.body["metadata"]["annotations"][
            "kubectl.kubernetes.io/last-applied-configuration"]
        return {"clash": conflict_view(clash), "taken": (taken.status, taken.body["data"]),
                "annotation": annotation, "owners": owners(taken.body)}

    real = check(both, scenario)
    assert real["clash"]["causes"] == [("FieldManagerConflict", ".data.j",
                                        'conflict with "kubectl-patch" using v1')]
    assert real["taken"] == (200, {"k": "5", "j": "2"})


def _fields(obj: dict[str, Any], manager: str) -> Any:
    """The fieldsV1 of ``manager``'s Apply entry in ``obj`` (None without one)."""
    for m in obj["metadata"].get("managedFields") or []:
        if m["manager"] == manager and m["operation"] == "Apply":
            return m.get("fieldsV1")
    return None


def test_apply_owns_only_the_fields_it_sends_not_their_defaults(both: Pair) -> None:
    """An applier owns the fields of its body, not the defaults the server adds
    (``spec.replicas``, ``spec.strategy``...): a second manager may then apply
    ``spec.replicas`` without a conflict, and the first one's re-apply leaves it alone
    (kube-apiserver 1.20's fieldmanager: the managed set is the applied configuration's)."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        body = deployment("web")
        del body["spec"]["replicas"]
        first = ssa(t, path, body, "a")
        scaled = ssa(t, path, _replicas("web", 3), "b")
        again = ssa(t, path, body, "a")
        return {"first": (first.status, first.body["spec"]["replicas"],
                          "f:replicas" in _fields(first.body, "a")["f:spec"],
                          "f:strategy" in _fields(first.body, "a")["f:spec"]),
                "scaled": (scaled.status, scaled.body.get("spec", {}).get("replicas"),
                           sorted(m["manager"] for m in
                                  scaled.body["metadata"].get("managedFields") or [])),
                "again": (again.status, again.body.get("spec", {}).get("replicas"),
                          again.body.get("metadata", {}).get("generation"))}

    real = check(both, scenario)
    assert real["first"] == (201, 1, False, False)
    assert real["scaled"] == (200, 3, ["a", "b"])
    assert real["again"] == (200, 3, 2)


def test_apply_does_not_own_a_custom_resource_default(both: Pair) -> None:
    """A CRD schema ``default`` (spec.size: 1) fills an applied custom resource, but the
    applier does not own it: a second manager applies spec.size without a conflict."""
    def scenario(t: Target) -> Any:
        group = f"d{t.ns[-6:]}.kinrun.dev"
        crd = _crd(group)
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = {
            "type": "object", "properties": {"size": {"type": "integer", "default": 1},
                                             "color": {"type": "string"}}}
        create(t.kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        path = f"/apis/{group}/v1/namespaces/{t.ns}/widgets"
        _wait_served(t, path)
        body = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"color": "red"}}
        first = ssa(t, f"{path}/w", body, "a")
        sized = ssa(t, f"{path}/w", dict(body, spec={"size": 3}), "b")
        again = ssa(t, f"{path}/w", body, "a")
        return {"first": (first.status, first.body["spec"],
                          sorted(_fields(first.body, "a")["f:spec"])),
                "sized": (sized.status, sized.body.get("spec")),
                "again": (again.status, again.body.get("spec"))}

    real = check(both, scenario)
    assert real["first"] == (201, {"color": "red", "size": 1}, ["f:color"])
    assert real["sized"] == (200, {"color": "red", "size": 3})
