"""applySet.parent: a separate ApplySet parent (KEP-3659), so a Namespace or StatefulSet being
reconciled is never written; the parent is read, created or updated by server-side apply."""

from __future__ import annotations

from typing import Any

import pytest
from test_actions_applyset import CM, DEPLOY, NS, FakeServer

from kinrun.actions import compile_actions
from kinrun.actions.applyset import (
    GROUP_KINDS, ID_LABEL, PART_OF, TOOLING, TOOLING_VALUE, applyset_id,
)
from kinrun.actions.errors import RenderError
from kinrun.errors import NotFoundError

NAMESPACE = {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "team-a", "uid": "ns-uid", "resourceVersion": "3"}}
SET_ID = applyset_id("team-a-applyset", "team-a", "ConfigMap", "")
ACTION = {"applySet": {
    "parent": {"apiVersion": "v1", "kind": "ConfigMap", "name": "team-a-applyset",
               "namespace": "{{ obj.metadata.name }}"},
    "manifests": "apiVersion: v1\nkind: ConfigMap\n"
                 "metadata: {name: settings, namespace: '{{ obj.metadata.name }}'}\n"}}


class Server(FakeServer):
    """FakeServer plus GET of the parent (absent until applied)."""

    def __init__(self, objects: list[dict[str, Any]] = ()) -> None:
        super().__init__(objects)
        self.parents: dict[str, dict[str, Any]] = {}

    def get(self, api_version, kind, name, namespace=None):
        if name not in self.parents:
            raise NotFoundError("not found", status=404)
        return self.parents[name]

    def execute(self, req):
        answer = super().execute(req)
        if req.verb == "apply" and req.name == "team-a-applyset":
            self.parents[req.name] = {**req.body, "metadata": {**req.body["metadata"],
                                                               "uid": "p-uid"}}
        return answer


def run(server: Server, obj: dict[str, Any] = NAMESPACE) -> list[str]:
    step, = compile_actions([ACTION], controller="c").render(key="team-a", obj=obj).steps
    step.execute(server.execute, server)
    return [f"{r.verb} {r.kind} {r.name}" for r in server.sent]


def test_the_reconciled_namespace_is_never_written():
    """First reconcile: the ConfigMap parent is created by apply (id label, tooling and
    group-kinds, owned by the Namespace), then the child; no write to the Namespace."""
    server = Server()
    assert run(server) == ["apply ConfigMap team-a-applyset", "apply ConfigMap settings"]
    parent = server.sent[0].body["metadata"]
    assert parent["labels"] == {ID_LABEL: SET_ID}
    assert parent["annotations"] == {TOOLING: TOOLING_VALUE, GROUP_KINDS: "ConfigMap"}
    assert parent["ownerReferences"][0]["uid"] == "ns-uid"
    child = server.sent[1].body["metadata"]
    assert child["labels"] == {PART_OF: SET_ID}
    assert child["ownerReferences"][0]["uid"] == "ns-uid"  # children stay the Namespace's


def test_a_parent_that_records_the_set_is_not_written_again():
    """Steady state: the parent already records what is wanted: only the child is applied."""
    server = Server()
    run(server)
    server.sent.clear()
    assert run(server) == ["apply ConfigMap settings"]


def test_prune_uses_what_the_separate_parent_recorded():
    """The parent records Deployment.apps from before: prune lists it and deletes an unwanted
    labelled Deployment, then the parent shrinks to the wanted kinds."""
    server = Server([{"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "old", "namespace": "team-a", "uid": "d1",
                                   "labels": {PART_OF: SET_ID}}}])
    server.parents["team-a-applyset"] = {"metadata": {
        "uid": "p-uid", "labels": {ID_LABEL: SET_ID},
        "annotations": {TOOLING: TOOLING_VALUE, GROUP_KINDS: "ConfigMap,Deployment.apps"}}}
    assert run(server) == ["apply ConfigMap settings", "delete Deployment old",
                           "apply ConfigMap team-a-applyset"]
    assert server.sent[-1].body["metadata"]["annotations"][GROUP_KINDS] == "ConfigMap"


@pytest.mark.parametrize("kind, message", [
    pytest.param("Namespace", "cannot be an ApplySet parent", id="core-kind"),
])
def test_a_parent_kind_kubectl_cannot_read_is_refused(kind, message):
    """Only ConfigMap, Secret or a custom resource can be a separate parent."""
    action = {"applySet": {**ACTION["applySet"], "parent": {
        "apiVersion": "v1", "kind": kind, "name": "x", "namespace": ""}}}
    with pytest.raises(RenderError, match=message):
        compile_actions([action], controller="c").render(key="team-a", obj=NAMESPACE)


def test_render_shows_the_parent_apply_before_the_children():
    """Without a server (kinrun render), the planned writes start with the parent's apply
    recording the wanted set; the Namespace is not among them."""
    step, = compile_actions([ACTION], controller="c").render(key="team-a", obj=NAMESPACE).steps
    planned = [d for d in step.describe_all() if "verb" in d]
    assert [(d["verb"], d["kind"], d["name"]) for d in planned] == [
        ("apply", "ConfigMap", "team-a-applyset"), ("apply", "ConfigMap", "settings")]
    assert planned[0]["body"]["metadata"]["labels"] == {ID_LABEL: SET_ID}

