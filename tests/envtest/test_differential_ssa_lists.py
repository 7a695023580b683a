"""Differential tests: server-side apply of associative lists (structured-merge-diff v4).

kube-apiserver 1.20 merges the items of a list its schema declares associative
(``x-kubernetes-list-type: map``/``set``, or a built-in's ``x-kubernetes-patch-strategy: merge``
with its merge key) by key, owns them per field (``k:{"name":"c"}`` / ``v:"x"`` in fieldsV1)
and names an item's field in a conflict as ``.spec.containers[name="c"].image``. Each test
pins the real server's outcome, then asserts the embedded server's equals it.
"""

from __future__ import annotations

import copy
from typing import Any

from .conftest import Pair, Target
from .normalize import create, deployment
from .test_differential import (APPLY, _deploy_path, _wait_served, check, conflict_view,
                                crd_manifest, ssa)

SPEC_CONTAINERS = ("f:spec", "f:template", "f:spec", "f:containers")


def _web(containers: list[dict[str, Any]]) -> dict[str, Any]:
    body = deployment("web")
    body["spec"]["template"]["spec"]["containers"] = containers
    return body


def _only_containers(containers: list[dict[str, Any]]) -> dict[str, Any]:
    """A Deployment apply body carrying only ``spec.template.spec.containers``."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": containers}}}}


def _applied(obj: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(manager, operation, fieldsV1) of every Apply entry, sorted by manager."""
    return sorted((m["manager"], m["operation"], m.get("fieldsV1"))
                  for m in obj["metadata"].get("managedFields") or [] if m["operation"] == "Apply")


def _containers_fields(obj: dict[str, Any], manager: str) -> Any:
    """The ``f:containers`` subtree of ``manager``'s entry (None without one)."""
    for m in obj["metadata"].get("managedFields") or []:
        if m["manager"] == manager:
            node = m.get("fieldsV1") or {}
            for step in SPEC_CONTAINERS:
                node = node.get(step) or {}
            return node
    return None


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The containers of a Deployment without the defaulted fields, in list order."""
    out = []
    for c in obj["spec"]["template"]["spec"]["containers"]:
        out.append({k: c[k] for k in ("name", "image", "env", "ports") if k in c})
    return out


C_FULL = {"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}],
          "ports": [{"containerPort": 80, "protocol": "TCP"}]}


def test_apply_merges_a_partial_container_of_another_manager(both: Pair) -> None:
    """A second manager applying only ``name`` and ``env`` of an existing container merges
    into it (no refusal, the image stays); each owns its own fields of the item, both own
    the item's key; env items merge by ``name``."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        first = ssa(t, path, _web([C_FULL]), "a")
        second = ssa(t, path, _only_containers([{"name": "c", "env": [{"name": "B",
                                                                        "value": "2"}]}]), "b")
        return {"first": (first.status, _applied(first.body)),
                "second": (second.status, second.body.get("message"),
                           _containers(second.body) if second.status == 200 else None,
                           _applied(second.body) if second.status == 200 else None)}

    real = check(both, scenario)
    assert real["second"][0] == 200
    assert real["second"][2][0]["image"] == "busybox"
    assert [e["name"] for e in real["second"][2][0]["env"]] == ["A", "B"]


def _without_go_defaults(fields: Any) -> Any:
    """A ``k:{"name":"c"}`` container subtree without ``f:imagePullPolicy`` and
    ``f:resources``: Go defaults the embedded server does not set (docs/embedded.md)."""
    return {k: {f: v for f, v in item.items() if f not in ("f:imagePullPolicy", "f:resources")}
            for k, item in fields.items()}


def test_update_managers_own_list_items_by_key(both: Pair) -> None:
    """A create (Update manager) owns each container, env and port item by key
    (``k:{"name":"c"}`` with ``.``, an added list with ``.``), as the real server records it;
    a strategic merge patch adding an env item owns that item only. (The order a strategic
    merge patch gives the env items differs: kube-apiserver puts the patch's first.)"""
    def scenario(t: Target) -> Any:
        made = t.kube.request("POST", _deploy_path(t.ns), _web([C_FULL]),
                              query={"fieldManager": "creator"})
        patched = t.kube.request(
            "PATCH", _deploy_path(t.ns, "web"),
            {"spec": {"template": {"spec": {"containers": [
                {"name": "c", "env": [{"name": "B", "value": "2"}]}]}}}},
            query={"fieldManager": "patcher"},
            content_type="application/strategic-merge-patch+json")
        env = patched.body["spec"]["template"]["spec"]["containers"][0]["env"]
        return {"made": (made.status,
                         _without_go_defaults(_containers_fields(made.body, "creator"))),
                "patched": (patched.status, sorted(e["name"] for e in env),
                            _without_go_defaults(_containers_fields(patched.body, "creator")),
                            _containers_fields(patched.body, "patcher"))}

    real = check(both, scenario)
    assert real["made"][0] == 201
    assert 'k:{"name":"c"}' in real["made"][1]


def test_apply_conflict_names_the_item_field(both: Pair) -> None:
    """Another manager changing one container's image is a 409 naming
    ``.spec.template.spec.containers[name="c"].image``; with force it takes that field only."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        ssa(t, path, _web([C_FULL]), "a")
        clash = ssa(t, path, _only_containers([{"name": "c", "image": "nginx"}]), "b")
        port = ssa(t, path, _only_containers([{"name": "c", "ports": [
            {"containerPort": 80, "protocol": "TCP", "name": "http"}]}]), "b")
        forced = ssa(t, path, _only_containers([{"name": "c", "image": "nginx"}]), "b",
                     force=True)
        return {"clash": conflict_view(clash), "port": (port.status, port.body.get("message")),
                "forced": (forced.status, _containers(forced.body), _applied(forced.body))}

    real = check(both, scenario)
    assert real["clash"]["code"] == 409
    assert '.spec.template.spec.containers[name="c"].image' in real["clash"]["message"]


def test_apply_prunes_an_item_the_manager_stopped_applying(both: Pair) -> None:
    """An applier that drops a container (and an env item) from its configuration removes
    them when no other manager owns them; an item another manager also applied stays."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        d = {"name": "d", "image": "nginx"}
        e = {"name": "e", "image": "redis"}
        ssa(t, path, _web([C_FULL, d, e]), "a")
        ssa(t, path, _only_containers([{"name": "e", "image": "redis"}]), "b")
        c_less = dict(C_FULL, env=[{"name": "Z", "value": "0"}])
        pruned = ssa(t, path, _web([c_less]), "a")
        return {"pruned": (pruned.status, _containers(pruned.body), _applied(pruned.body))}

    real = check(both, scenario)
    assert [c["name"] for c in real["pruned"][1]] == ["c", "e"]


def _list_crd(group: str, status: bool = False) -> dict[str, Any]:
    """Widgets: ``spec.items`` a list-map by ``name``, ``spec.tags`` atomic, ``spec.flags`` a
    set; ``status``: a status subresource and ``status.phase``."""
    spec = {"type": "object", "properties": {
        "items": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"}, "size": {"type": "integer"},
                      "color": {"type": "string"}}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "flags": {"type": "array", "x-kubernetes-list-type": "set",
                  "items": {"type": "string"}}}}
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": spec}}
    if status:
        schema["properties"]["status"] = {"type": "object",
                                          "properties": {"phase": {"type": "string"}}}
    return crd_manifest(group, "Widget", schema, status=status)


def test_custom_resource_lists_map_set_and_atomic(both: Pair) -> None:
    """A CRD list with ``x-kubernetes-list-type: map`` merges by key (``k:`` entries), a
    ``set`` by value (``v:`` entries), one without a list type is atomic: another manager's
    different value is a conflict on the whole list."""
    def scenario(t: Target) -> Any:
        group = f"l{t.ns[-6:]}.kinrun.dev"
        create(t.kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
               _list_crd(group))
        path = f"/apis/{group}/v1/namespaces/{t.ns}/widgets"
        _wait_served(t, path)

        def body(spec: dict[str, Any]) -> dict[str, Any]:
            return {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"},
                    "spec": copy.deepcopy(spec)}
        first = ssa(t, f"{path}/w", body({"items": [{"name": "x", "size": 1}],
                                          "tags": ["a", "b"], "flags": ["p", "q"]}), "a")
        second = ssa(t, f"{path}/w", body({"items": [{"name": "y", "size": 2},
                                                     {"name": "x", "color": "red"}],
                                           "flags": ["r"]}), "b")
        clash = ssa(t, f"{path}/w", body({"tags": ["c"], "items": [{"name": "x", "size": 5}]}),
                    "b")
        forced = ssa(t, f"{path}/w", body({"tags": ["c"]}), "b", force=True)
        return {"first": (first.status, _applied(first.body)),
                "second": (second.status, second.body.get("spec"), _applied(second.body)),
                "clash": conflict_view(clash),
                "forced": (forced.status, forced.body.get("spec"), _applied(forced.body))}

    real = check(both, scenario)
    assert real["second"][0] == 200
    assert real["clash"]["code"] == 409


def _service(ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"selector": {"app": "x"}, "ports": ports}}


def test_service_ports_merge_by_port_and_protocol(both: Pair) -> None:
    """A Service's ports are keyed by ``port`` + ``protocol`` (``k:{"port":80,
    "protocol":"TCP"}``): a second manager's ``targetPort`` merges into the first one's
    port; a changed ``name`` of the first manager's own port is no conflict."""
    def scenario(t: Target) -> Any:
        path = f"/api/v1/namespaces/{t.ns}/services/s"
        first = ssa(t, path, _service([{"port": 80, "protocol": "TCP", "name": "a"},
                                       {"port": 81, "protocol": "TCP", "name": "b"}]), "a")
        second = ssa(t, path, _service([{"port": 80, "protocol": "TCP",
                                         "targetPort": 8080}]), "b")
        third = ssa(t, path, _service([{"port": 80, "protocol": "TCP", "name": "x"}]), "a")
        return [(r.status, r.body["spec"]["ports"], _applied(r.body))
                for r in (first, second, third)]

    real = check(both, scenario)
    assert [s for s, _, _ in real] == [201, 200, 200]
    assert real[2][1] == [{"name": "x", "port": 80, "protocol": "TCP", "targetPort": 8080}]


def test_before_first_apply_owns_items_and_finalizers_are_a_set(both: Pair) -> None:
    """An object whose managedFields were reset (``[]``) is owned, item by item, by
    ``before-first-apply``: changing a container's image conflicts naming the item's field,
    adding a container does not. ``metadata.finalizers`` merges by value (``v:"a.io/x"``)."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        t.kube.request("POST", _deploy_path(t.ns), _web([{"name": "c", "image": "busybox"}]),
                       query={"fieldManager": "creator"})
        current = t.kube.get(path).body
        current["metadata"]["managedFields"] = []
        reset = t.kube.request("PUT", path, current)
        clash = ssa(t, path, _only_containers([{"name": "c", "image": "redis"}]), "z")
        added = ssa(t, path, _only_containers([{"name": "e", "image": "y"}]), "z")
        finalized = ssa(t, path, {"apiVersion": "apps/v1", "kind": "Deployment",
                                  "metadata": {"name": "web", "finalizers": ["a.io/x"]}}, "f")
        return {"reset": (reset.status, reset.body["metadata"].get("managedFields")),
                "clash": conflict_view(clash),
                "added": (added.status, _containers(added.body),
                          sorted((m["manager"], m["operation"])
                                 for m in added.body["metadata"]["managedFields"])),
                "finalized": (finalized.status, finalized.body["metadata"].get("finalizers"),
                              _applied(finalized.body))}

    real = check(both, scenario)
    assert real["clash"]["code"] == 409
    assert "before-first-apply" in real["clash"]["message"]


def test_apply_with_two_items_of_one_key_is_500(both: Pair) -> None:
    """Two containers named alike, two env items of one name in a container, or a finalizer
    twice: 500 ``failed to create typed patch object: <list>: duplicate entries for key
    <item>``, as kube-apiserver 1.20's typed patch conversion answers."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        twice = _web([{"name": "c", "image": "x"}, {"name": "c", "image": "y"}])
        env = _web([{"name": "c", "image": "x",
                     "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}])
        finalizers = _web([{"name": "c", "image": "x"}])
        finalizers["metadata"]["finalizers"] = ["a.io/x", "a.io/x"]
        return [(r.status, r.body.get("message"))
                for r in (ssa(t, path, body, "a") for body in (twice, env, finalizers))]

    real = check(both, scenario)
    assert real[0] == (500, "failed to create typed patch object: .spec.template.spec."
                            'containers: duplicate entries for key [name="c"]')


def test_update_of_reordered_and_removed_items(both: Pair) -> None:
    """A PUT that reorders the containers, changes one's image and replaces another's env
    takes only those fields (items match by key, not position); a PUT dropping a container
    takes its fields from every manager."""
    def scenario(t: Target) -> Any:
        path = _deploy_path(t.ns, "web")
        t.kube.request("POST", _deploy_path(t.ns),
                       _web([{"name": "c", "image": "busybox"},
                             {"name": "d", "image": "x", "env": [{"name": "A", "value": "1"}]}]),
                       query={"fieldManager": "creator"})
        current = t.kube.get(path).body
        containers = current["spec"]["template"]["spec"]["containers"]
        containers.reverse()
        containers[0]["env"] = [{"name": "B", "value": "2"}]
        containers[1]["image"] = "nginx"
        put = t.kube.request("PUT", path, current, query={"fieldManager": "putter"})
        current = put.body
        current["spec"]["template"]["spec"]["containers"] = \
            current["spec"]["template"]["spec"]["containers"][1:]
        dropped = t.kube.request("PUT", path, current, query={"fieldManager": "dropper"})

        def view(resp: Any, manager: str) -> Any:
            return _without_go_defaults(_containers_fields(resp.body, manager) or {})
        return {"put": (put.status, view(put, "creator"), view(put, "putter")),
                "dropped": (dropped.status, view(dropped, "creator"), view(dropped, "putter"),
                            view(dropped, "dropper"))}

    real = check(both, scenario)
    assert real["put"][2] == {
        'k:{"name":"c"}': {"f:image": {}},
        'k:{"name":"d"}': {"f:env": {'k:{"name":"B"}': {".": {}, "f:name": {}, "f:value": {}}}}}


def test_an_applied_empty_map_filled_by_the_next_apply_is_kept(both: Pair) -> None:
    """A manager that applied ``data: {}`` (it owns ``f:data: {}``) and then applies
    ``data: {k: v}``: the map is kept with its new key, not pruned as a field the manager
    stopped applying (it still applies under it)."""
    def scenario(t: Target) -> Any:
        path = f"/api/v1/namespaces/{t.ns}/configmaps/c"
        first = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}
        ssa(t, path, first, "a")
        second = ssa(t, path, {**first, "data": {"k": "v"}}, "a")
        return second.status, second.body.get("data"), _applied(second.body)

    real = check(both, scenario)
    assert real[1] == {"k": "v"}


def _widgets(t: Target, extra: dict[str, Any] | None = None, required: tuple[str, ...] = (),
             status: bool = False) -> str:
    """A served ``Widget`` CRD (``_list_crd`` plus ``extra`` spec properties, ``required``
    spec fields, ``status``) in a group of ``t``'s own; returns its collection path."""
    group = f"r{t.ns[-6:]}.kinrun.dev"
    crd = _list_crd(group, status)
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"].update(extra or {})
    if required:
        spec["required"] = list(required)
    create(t.kube, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = f"/apis/{group}/v1/namespaces/{t.ns}/widgets"
    _wait_served(t, path)
    return path


def _widget(path: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": path.split("/")[2] + "/v1", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": spec}


def _answer(resp: Any) -> tuple[Any, ...]:
    body = resp.body if isinstance(resp.body, dict) else {}
    return resp.status, body.get("reason"), body.get("message")


def test_an_apply_that_withdraws_the_last_items_of_a_list(both: Pair) -> None:
    """An applier withdrawing the only items of its lists: a built-in kind drops the emptied
    fields (a container's ``ports`` and ``env``, ``metadata.finalizers``: Go omits them); a
    custom resource keeps them as null, which its schema refuses (422); an applier that now
    applies an empty ``spec: {}`` keeps it (found by review)."""
    def scenario(t: Target) -> Any:
        deploy = _deploy_path(t.ns, "web")
        ssa(t, deploy, _web([{"name": "c", "image": "busybox", "env": [{"name": "A"}],
                              "ports": [{"containerPort": 80, "protocol": "TCP"}]}]), "a")
        web = ssa(t, deploy, _web([{"name": "c", "image": "busybox"}]), "a")
        cm = f"/api/v1/namespaces/{t.ns}/configmaps/c"
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
        ssa(t, cm, {**body, "metadata": {"name": "c", "finalizers": ["x/a"]}}, "a")
        config_map = ssa(t, cm, body, "a")
        path = _widgets(t)
        ssa(t, f"{path}/w", _widget(path, {"items": [{"name": "x"}]}), "m")  # one list: 1.20
        # orders the causes of several as its map iteration does
        widget = ssa(t, f"{path}/w", _widget(path, {}), "m")
        return {"web": (web.status, _containers(web.body)),
                "finalizers": (config_map.status, config_map.body["metadata"].get("finalizers")),
                "widget": _answer(widget)}

    real = check(both, scenario)
    assert real["web"] == (200, [{"name": "c", "image": "busybox"}])
    assert real["finalizers"] == (200, None) and real["widget"][0] == 422


def test_an_apply_that_structured_merge_diff_cannot_type_is_500(both: Pair) -> None:
    """Entries an associative list cannot key: a null env entry, an image pull secret
    without ``name``, an object in a CRD ``set`` - each 500 ``failed to create typed patch
    object: ... element 0: ...``; YAML dates in a set and a key are strings, as
    sigs.k8s.io/yaml reads them, not a crash (found by review)."""
    def scenario(t: Target) -> Any:
        pods = f"/api/v1/namespaces/{t.ns}/pods/p"
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "x"}], "imagePullSecrets": [{}]}}
        null_env = _web([{"name": "c", "image": "busybox", "env": [None, {"name": "A"}]}])
        path = _widgets(t, {"objects": {
            "type": "array", "x-kubernetes-list-type": "set",
            "items": {"type": "object", "x-kubernetes-map-type": "atomic",
                      "properties": {"a": {"type": "string"}}}}})
        dates = (f"apiVersion: {path.split('/')[2]}/v1\nkind: Widget\nmetadata: {{name: d}}\n"
                 "spec:\n  flags: [2020-01-01, x]\n  items:\n  - name: 2021-02-03\n")
        made = t.kube.request("PATCH", f"{path}/d", dates, query={"fieldManager": "m"},
                              content_type=APPLY)
        return {"pull-secret": _answer(ssa(t, pods, pod, "a")),
                "null-env": _answer(ssa(t, _deploy_path(t.ns, "web"), null_env, "a")),
                "object-set": _answer(ssa(t, f"{path}/w", _widget(
                    path, {"objects": [{"a": "1"}]}), "m")),
                "dates": (made.status, made.body.get("spec"))}

    real = check(both, scenario)
    assert [real[k][0] for k in ("pull-secret", "null-env", "object-set")] == [500] * 3
    assert real["dates"] == (201, {"flags": ["2020-01-01", "x"], "items": [{"name": "2021-02-03"}]})


def test_fields_v1_item_keys_are_escaped_as_go_writes_json(both: Pair) -> None:
    """``k:``/``v:`` members escape ``<``, ``>`` and ``&`` as Go's encoding/json does
    (``k:{"name":"a\\u003cb\\u0026c"}``; found by review)."""
    def scenario(t: Target) -> Any:
        path = _widgets(t)
        made = ssa(t, f"{path}/w", _widget(path, {"items": [{"name": "a<b&c"}],
                                                  "flags": ["x>y"]}), "m")
        return made.status, _applied(made.body)

    real = check(both, scenario)
    assert 'k:{"name":"a\\u003cb\\u0026c"}' in real[1][0][2]["f:spec"]["f:items"]


def test_a_created_custom_resource_owns_its_required_list_itself(both: Pair) -> None:
    """A create's manager owns a list it added with ``"."``, a required one of a custom
    resource too: only a built-in kind's required field is always encoded by Go (found by
    review)."""
    def scenario(t: Target) -> Any:
        path = _widgets(t, required=("items",))
        made = t.kube.request("POST", path, _widget(path, {"items": [{"name": "x"}]}),
                              query={"fieldManager": "creator"})
        return made.status, [m.get("fieldsV1") for m in made.body["metadata"]["managedFields"]]

    real = check(both, scenario)
    assert "." in real[1][0]["f:spec"]["f:items"]


def test_a_map_a_create_added_is_owned_itself(both: Pair) -> None:
    """A create's manager owns a Go map it added (a ConfigMap's ``data``, ``labels``) with
    ``"."``, a struct field (``metadata``) without; a patch taking one key leaves the creator
    the map and its other keys."""
    def scenario(t: Target) -> Any:
        path = f"/api/v1/namespaces/{t.ns}/configmaps"
        made = t.kube.request("POST", path, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"app": "a"}}, "data": {"x": "1", "y": "1"}},
            query={"fieldManager": "creator"})
        patched = t.kube.request("PATCH", f"{path}/c", {"data": {"x": "2"}},
                                 query={"fieldManager": "patcher"},
                                 content_type="application/merge-patch+json")
        return [sorted((m["manager"], m.get("fieldsV1")) for m in r.body["metadata"][
            "managedFields"]) for r in (made, patched)]

    real = check(both, scenario)
    assert "." in real[0][0][1]["f:data"]


def test_a_status_write_shares_its_managers_entry(both: Pair) -> None:
    """kube-apiserver 1.20's managedFields have no ``subresource`` (1.22 added it): an apply
    of ``/status`` is recorded as its manager's one Apply entry, and a manager that applies
    the object and then its status has one entry holding the status (found by review)."""
    def scenario(t: Target) -> Any:
        path = _widgets(t, {"note": {"type": "string"}}, status=True)
        ssa(t, f"{path}/w", _widget(path, {"note": "a"}), "m")
        status = {k: v for k, v in _widget(path, {}).items() if k != "spec"}
        answer = ssa(t, f"{path}/w/status", {**status, "status": {"phase": "Ready"}}, "m")
        entries = [(m["manager"], m["operation"], m.get("subresource"), m.get("fieldsV1"))
                   for m in answer.body["metadata"]["managedFields"]]
        return answer.status, answer.body.get("spec"), entries

    real = check(both, scenario)
    assert real[0] == 200 and [e[:3] for e in real[2]] == [("m", "Apply", None)]


def test_an_applied_empty_map_is_owned_by_nobody(both: Pair) -> None:
    """An apply of ``spec: {}`` stores it and owns nothing (1.20's ToFieldSet skips an empty
    map), so the object has no managedFields; the next applier's apply first gives every
    field to ``before-first-apply`` (``spec``, as a comparison sees it added), and adding
    under ``spec`` is no conflict with it (found by review)."""
    def scenario(t: Target) -> Any:
        path = _widgets(t)
        first = ssa(t, f"{path}/w", _widget(path, {}), "m")
        second = ssa(t, f"{path}/w", _widget(path, {"tags": []}), "n")
        return [(r.status, r.body.get("spec"), sorted(
            (m["manager"], m.get("fieldsV1")) for m in r.body["metadata"].get(
                "managedFields") or [])) for r in (first, second)]

    real = check(both, scenario)
    assert real[0] == (201, {}, []) and real[1][0] == 200
