"""The applySet action: ApplySet id and metadata (KEP-3659), children, and prune's safety."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.actions import compile_actions
from kinrun.actions.applyset import (
    GROUP_KINDS, ID_LABEL, NAMESPACES, PART_OF, TOOLING, TOOLING_VALUE, applyset_id,
)
from kinrun.actions.errors import RenderError
from kinrun.cache.listwatch import ObjectList
from kinrun.errors import ConfigError, ConflictError
from kinrun.kube.request import ApiRequest
from kinrun.kube.resources import ResourceRef

CM = ResourceRef("", "v1", "configmaps", "ConfigMap", namespaced=True)
NS = ResourceRef("", "v1", "namespaces", "Namespace", namespaced=False)
DEPLOY = ResourceRef("apps", "v1", "deployments", "Deployment", namespaced=True)


def parent(names: str = "a,b", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"names": names},
            "metadata": {"name": "team", "namespace": "ns", "uid": "parent-uid",
                         "resourceVersion": "7", **meta}}


SET_ID = applyset_id("team", "ns", "ConfigMap", "")
CHILDREN = {"name": "kids", "applySet": {
    "forEach": "obj.data.names.split(',') if obj.data.names else []", "as": "n",
    "manifests": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 'team-{{ n }}'}\n"}}


def program(*actions: dict[str, Any]):
    return compile_actions(list(actions or [CHILDREN]), controller="c")


def recorded(gks: str = "ConfigMap", **extra: str) -> dict[str, Any]:
    return {"labels": {ID_LABEL: SET_ID},
            "annotations": {TOOLING: TOOLING_VALUE, GROUP_KINDS: gks, **extra}}


class FakeServer:
    """What prune talks to: resolve, lister_watcher(...).list(), transport.request (group
    discovery) and execute (records every write; answers a patch with a new resourceVersion)."""

    def __init__(self, objects: list[dict[str, Any]] = (), *, refs=(CM, DEPLOY, NS),
                 ignore_selector: bool = False, conflict_on: str | None = None) -> None:
        self.objects = list(objects)
        self.refs = {(r.api_version, r.kind): r for r in refs}
        self.sent: list[ApiRequest] = []
        self.lists: list[tuple[str, str | None, str]] = []
        self.ignore_selector, self.conflict_on = ignore_selector, conflict_on
        self.transport = self

    def resolve(self, api_version: str, kind: str) -> ResourceRef:
        return self.refs[(api_version, kind)]

    def request(self, method: str, path: str) -> dict[str, Any]:
        assert (method, path) == ("GET", "/apis/apps")
        return {"preferredVersion": {"groupVersion": "apps/v1"}}

    def lister_watcher(self, ref, *, namespace=None, label_selector=None):
        self.lists.append((ref.kind, namespace, label_selector))
        key, _, value = label_selector.partition("=")
        items = [o for o in self.objects if o["kind"] == ref.kind
                 and (namespace is None or o["metadata"].get("namespace") == namespace)
                 and (self.ignore_selector
                      or (o["metadata"].get("labels") or {}).get(key) == value)]
        return type("LW", (), {"list": lambda _self: ObjectList(items, "1")})()

    def execute(self, req: ApiRequest) -> Any:
        self.sent.append(req)
        if req.verb == "delete" and req.name == self.conflict_on:
            raise ConflictError("precondition failed", status=409)
        if req.verb == "patch":
            return {"metadata": {"resourceVersion": "8"}}
        return req.body


def child(name: str, *, set_id: str | None = SET_ID, namespace: str = "ns",
          kind: str = "ConfigMap", **meta: Any) -> dict[str, Any]:
    labels = {PART_OF: set_id} if set_id else {}
    return {"apiVersion": "v1", "kind": kind, "metadata": {
        "name": name, "namespace": namespace, "uid": f"uid-{name}", "labels": labels, **meta}}


def run(obj: dict[str, Any], server: FakeServer, prog=None) -> list[str]:
    (prog or program()).run(key="ns/team", obj=obj, client=server)
    return [f"{r.verb} {r.name}" for r in server.sent]


def test_applyset_id_matches_kubectl() -> None:
    """The id is kubectl's (KEP-3659): a cluster-scoped WorkspaceSet 'sgs' of group
    sgs.snucse.org has an id starting applyset-eGaq9sV3nwMTqoxo in a public config that
    kubectl made (github.com/bacchus-snu/sgs deploy manifests)."""
    value = applyset_id("sgs", None, "WorkspaceSet", "sgs.snucse.org")
    assert value.startswith("applyset-eGaq9sV3nwMTqoxo") and value.endswith("-v1")
    assert len(value) == 55 and "=" not in value  # unpadded: a valid label value


def test_first_reconcile_records_the_set_then_applies_labelled_owned_children() -> None:
    """Parent patch first (the union, with the cached resourceVersion), then the applies with
    the part-of label and an owner reference; nothing to prune yet."""
    server = FakeServer()
    assert run(parent(), server) == ["patch team", "apply team-a", "apply team-b"]
    patch = server.sent[0].body["metadata"]
    assert patch == {"labels": {ID_LABEL: SET_ID}, "resourceVersion": "7",
                     "annotations": {TOOLING: TOOLING_VALUE, GROUP_KINDS: "ConfigMap"}}
    meta = server.sent[1].body["metadata"]
    assert meta["labels"] == {PART_OF: SET_ID}
    assert meta["ownerReferences"][0]["uid"] == "parent-uid"
    assert server.lists == [("ConfigMap", "ns", f"{PART_OF}={SET_ID}")]


def test_steady_state_writes_nothing_to_the_parent() -> None:
    """When the parent already records the wanted set, no parent patch is sent (no loop)."""
    server = FakeServer([child("team-a"), child("team-b")])
    assert run(parent(**recorded()), server) == ["apply team-a", "apply team-b"]


def test_prune_deletes_only_unwanted_objects_labelled_with_this_set() -> None:
    """An unwanted child is deleted with a uid precondition; an object labelled for another
    set, one without the label and the parent itself are not, even when the server ignores
    the label selector; a terminating child is not deleted again."""
    server = FakeServer([
        child("team-a"), child("team-gone"),
        child("team-other", set_id="applyset-other-v1"),
        child("team-plain", set_id=None),
        child("team-dying", deletionTimestamp="2024-01-01T00:00:00Z"),
        {**parent(), "metadata": {**parent()["metadata"], "labels": {PART_OF: SET_ID}}},
    ], ignore_selector=True)
    assert run(parent("a", **recorded()), server) == ["apply team-a", "delete team-gone"]
    delete = server.sent[1]
    assert delete.body == {"preconditions": {"uid": "uid-team-gone"}}
    assert delete.params == {"propagationPolicy": "Background"}


def test_prune_leaves_an_object_replaced_since_the_list() -> None:
    """A 409 on the uid precondition: the listed object is gone and a new one took its
    name: left alone, the reconcile goes on."""
    server = FakeServer([child("team-x"), child("team-y")], conflict_on="team-x")
    assert run(parent("", **recorded()), server) == ["delete team-x", "delete team-y", "patch team"]


def test_prune_lists_recorded_kinds_and_namespaces_then_shrinks_the_parent() -> None:
    """A kind recorded but no longer rendered is listed at its group's preferred version, in
    the parent's and the additional namespaces; the parent is then patched to what is wanted,
    with the resourceVersion the first patch answered."""
    old = {**child("web", namespace="other"), "apiVersion": "apps/v1", "kind": "Deployment"}
    server = FakeServer([child("team-a"), old])
    obj = parent("a", **recorded("ConfigMap,Deployment.apps", **{NAMESPACES: "other"}))
    assert run(obj, server) == ["apply team-a", "delete web", "patch team"]
    assert ("Deployment", "other", f"{PART_OF}={SET_ID}") in server.lists
    assert ("Deployment", "ns", f"{PART_OF}={SET_ID}") in server.lists
    end = server.sent[-1].body["metadata"]
    assert end == {"annotations": {GROUP_KINDS: "ConfigMap", NAMESPACES: None},
                   "resourceVersion": "7"}


def test_children_in_another_namespace_are_recorded_and_get_no_owner_reference() -> None:
    prog = program({"applySet": {"manifests": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "far", "namespace": "b"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "near"}}]}})
    server = FakeServer()
    assert run(parent(), server, prog) == ["patch team", "apply far", "apply near"]
    assert server.sent[0].body["metadata"]["annotations"][NAMESPACES] == "b"
    assert "ownerReferences" not in server.sent[1].body["metadata"]
    assert server.sent[2].body["metadata"]["ownerReferences"][0]["name"] == "team"


def test_prune_false_neither_lists_nor_shrinks() -> None:
    prog = program({"applySet": {**CHILDREN["applySet"], "prune": False}})
    server = FakeServer([child("team-gone")])
    obj = parent("a", **recorded("ConfigMap,Deployment.apps"))
    assert run(obj, server, prog) == ["apply team-a"]
    assert server.lists == []


@pytest.mark.parametrize("meta,match", [
    ({"annotations": {TOOLING: "kubectl/v1.27.0"}}, "another tool"),
    ({"labels": {ID_LABEL: "applyset-something-else-v1"}}, "not its id"),
])
def test_a_parent_of_another_set_or_tool_is_refused(meta, match) -> None:
    """kubectl's rule (KEP-3659): a tool does not change a set another tool manages."""
    server = FakeServer()
    with pytest.raises(RenderError, match=match):
        run(parent(**meta), server)
    assert server.sent == []


def test_bad_children_are_refused_before_anything_is_sent() -> None:
    server = FakeServer()
    twice = program({"applySet": {"manifests": "- {apiVersion: v1, kind: ConfigMap, metadata: "
                                  "{name: x}}\n- {apiVersion: v1, kind: ConfigMap, metadata: "
                                  "{name: x}}\n"}})
    with pytest.raises(RenderError, match="given twice"):
        run(parent(), server, twice)
    other = program({"applySet": {"manifests": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                 "metadata": {"name": "x", "labels": {
                                                     PART_OF: "applyset-x-v1"}}}]}})
    with pytest.raises(RenderError, match="another ApplySet"):
        run(parent(), server, other)
    with pytest.raises(RenderError, match="onDelete"):
        program().run(key="ns/team", obj=None, client=server)
    assert server.sent == []


def test_multi_document_templates_and_lists_are_children() -> None:
    prog = program({"applySet": {"manifests": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: one}\n---\n---\n"
        "- {apiVersion: v1, kind: ConfigMap, metadata: {name: two}}\n"
        "- {apiVersion: apps/v1, kind: Deployment, metadata: {name: three}}\n")}})
    steps = prog.render(key="ns/team", obj=parent()).describe()
    assert [(s.get("verb"), s.get("name")) for s in steps] == [
        ("patch", "team"), ("apply", "one"), ("apply", "two"), ("apply", "three"),
        (None, None)]
    assert steps[0]["body"]["metadata"]["annotations"][GROUP_KINDS] == "ConfigMap,Deployment.apps"
    assert steps[-1]["prune"]["keep"] == ["ConfigMap ns/one", "ConfigMap ns/two",
                                          "Deployment.apps ns/three"]


def test_two_apply_sets_in_one_list_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="second applySet"):
        program(CHILDREN, {**CHILDREN, "name": "more"})


def test_apply_set_in_on_delete_is_a_config_error(tmp_path) -> None:
    """validate refuses it (file:line of the action): there is no parent in onDelete."""
    from kinrun.config import load_text
    from kinrun.plan import plan

    config = load_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
                       "informers: {cms: {apiVersion: v1, kind: ConfigMap}}\ncontrollers:\n"
                       "  - name: c\n    for: cms\n    reconcile:\n      actions: [{log: x}]\n"
                       "      onDelete:\n        - applySet: {manifests: '[]'}\n", file="c.yaml")
    with pytest.raises(ConfigError, match=r"c.yaml:10:11: .*onDelete\[0\]: applySet cannot run"):
        plan(config)


@pytest.mark.parametrize("for_each,manifest_name,line,key", [
    ("obj.nope.split()", "x", 8, "forEach"),             # the forEach line, not name: (6)
    # a key validate cannot see (a built subscript): a typo it can see fails at validate
    ("['a']", "{{ obj.metadata[('nm' ~ 'ae')] }}", 9, "manifests"),  # the manifests line (+3)
])
def test_a_render_error_names_the_line_of_its_key(for_each, manifest_name, line, key) -> None:
    """An error while rendering forEach or manifests is located at that key's own line (as
    the config's field locations give it), not at the action's first line."""
    from kinrun.config import load_text
    from kinrun.plan import plan

    config = load_text(
        "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"       # 1, 2
        "informers: {cms: {apiVersion: v1, kind: ConfigMap}}\ncontrollers:\n"  # 3, 4
        "  - {name: c, for: cms, reconcile: {actions: [\n"                # 5
        "      {name: kids,\n"                                             # 6
        "       applySet: {\n"                                             # 7
        f"         forEach: \"{for_each}\",\n"                             # 8
        "         manifests: \"apiVersion: v1\\nkind: ConfigMap\\n"        # 9
        f"metadata: {{name: '{manifest_name}'}}\"}}}}]}}}}\n", file="c.yaml")
    actions = plan(config).controller("c").actions
    with pytest.raises(RenderError, match=rf"^c.yaml:{line}: .*applySet\.{key}: controller 'c' "
                                          r"action \[0\] \(kids\): UndefinedError") as info:
        actions.render(key="ns/team", obj=parent())
    assert info.value.location.line == line
