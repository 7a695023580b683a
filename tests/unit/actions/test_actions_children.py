"""The ``children`` action's render (kinrun.actions.children) over fake caches: readiness by
kind, waiting and excluded children, drift decisions, pruning in reverse order (none while a
child waits), the graph's variables and the status action's Ready condition from them, and
the teardown of a terminating parent."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.actions import compile_actions
from kinrun.actions.applyset import applyset_id
from kinrun.actions.children import ChildrenStep, ChildrenTeardown, contains
from kinrun.actions.readiness import default_ready
from kinrun.config.children import PART_OF
from kinrun.hooks import ReconcileContext

PARENT = {"apiVersion": "example.com/v1", "kind": "App",
          "metadata": {"name": "web", "namespace": "ns", "uid": "p-uid",
                       "resourceVersion": "10", "generation": 1}, "spec": {"ingress": False}}
SET_ID = applyset_id("web", "ns", "App", "example.com")
OWNER = [{"apiVersion": "example.com/v1", "kind": "App", "name": "web", "uid": "p-uid",
          "controller": True, "blockOwnerDeletion": True}]


class FakeLister:
    """A cache of one informer: ``objects`` by key; ``by_index('applyset', id)``."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = {f"{o['metadata'].get('namespace')}/{o['metadata']['name']}": o
                        for o in objects}

    def get(self, key: str) -> Any:
        return self.objects.get(key)

    def by_index(self, index: str, value: str) -> list[Any]:
        assert index == "applyset"
        return [o for o in self.objects.values()
                if (o["metadata"].get("labels") or {}).get(PART_OF) == value]


def _obj(kind: str, name: str, api: str = "v1", rv: str = "20", uid: str | None = None,
         **rest: Any) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind,
            "metadata": {"name": name, "namespace": "ns", "uid": uid or f"{name}-uid",
                         "resourceVersion": rv, "labels": {PART_OF: SET_ID},
                         "ownerReferences": OWNER}, **rest}


ACTIONS = [
    {"children": {"resources": [
        {"name": "config", "manifest": {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": "web-config"}, "data": {"a": "b"}}},
        {"name": "deploy", "manifest": {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"c": "{{ children.config.metadata.name }}"}},
            "spec": {"replicas": 2}}},
        {"name": "svc", "dependsOn": ["deploy"],
         "manifest": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}},
        {"name": "ing", "includeWhen": "obj.spec.ingress",
         "manifest": {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                      "metadata": {"name": "web"}}}]}},
    {"status": {"observedGeneration": False}},
]

AVAILABLE = {"observedGeneration": 1, "conditions": [{"type": "Available", "status": "True"}]}


def _render(listers: dict[str, FakeLister], program: Any = None, obj: Any = None) -> Any:
    program = program or compile_actions(ACTIONS, controller="app")
    ctx = ReconcileContext(controller="app", key="ns/web", listers=listers)
    return program, program.render(key="ns/web", obj=obj or PARENT, ctx=ctx).steps


def _caches(**kinds: list[dict[str, Any]]) -> dict[str, FakeLister]:
    names = {"configmap": "app-children-configmap", "deployment": "app-children-deployment",
             "service": "app-children-service", "ingress": "app-children-ingress"}
    return {informer: FakeLister(*kinds.get(short, [])) for short, informer in names.items()}


def _children(steps: Any) -> ChildrenStep:
    return next(s for s in steps if isinstance(s, ChildrenStep))


@pytest.mark.parametrize("obj,ready", [
    pytest.param(None, (False, "not created yet"), id="absent"),
    pytest.param(_obj("ConfigMap", "c"), (True, ""), id="configmap-exists"),
    pytest.param(_obj("Deployment", "d", "apps/v1", status=AVAILABLE,
                      **{"spec": {"replicas": 3}}), (True, ""), id="deployment-available"),
    pytest.param({**_obj("Deployment", "d", "apps/v1", status=AVAILABLE),
                  "metadata": {"generation": 2}},
                 (False, "generation 2 not observed yet"), id="deployment-stale"),
    pytest.param(_obj("Deployment", "d", "apps/v1", spec={"replicas": 3},
                      status={"availableReplicas": 1}),
                 (False, "1 of 3 replicas available"), id="deployment-no-condition"),
    pytest.param(_obj("StatefulSet", "s", "apps/v1", spec={"replicas": 2},
                      status={"readyReplicas": 2}), (True, ""), id="statefulset"),
    pytest.param(_obj("Job", "j", "batch/v1", status={"conditions": [
        {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}),
        (False, "failed: BackoffLimitExceeded"), id="job-failed"),
    pytest.param(_obj("Job", "j", "batch/v1", status={"conditions": [
        {"type": "Complete", "status": "True"}]}), (True, ""), id="job-complete"),
    pytest.param(_obj("Service", "s", spec={"type": "ClusterIP"}), (False, "no cluster IP yet"),
                 id="service-no-ip"),
    pytest.param(_obj("Service", "s", spec={"clusterIP": "10.0.0.3"}), (True, ""), id="service"),
    pytest.param(_obj("Service", "s", spec={"type": "ExternalName"}), (True, ""),
                 id="service-external"),
    pytest.param(_obj("Widget", "w", "example.com/v1", status={"conditions": [
        {"type": "Ready", "status": "False", "message": "warming"}]}),
        (False, "Ready is False: warming"), id="cr-not-ready"),
])
def test_default_readiness(obj: Any, ready: tuple[bool, str]) -> None:
    assert default_ready(obj) == ready


def test_contains_is_what_an_apply_would_leave_unchanged() -> None:
    live = {"spec": {"replicas": 2, "ports": [{"port": 80, "protocol": "TCP"}]}, "status": {}}
    assert contains(live, {"spec": {"ports": [{"port": 80}]}})
    assert not contains(live, {"spec": {"replicas": 3}})
    assert not contains(live, {"spec": {"ports": [{"port": 80}, {"port": 81}]}})


def test_first_render_applies_the_config_only_and_waits() -> None:
    """Empty caches: the ConfigMap is applied; the Deployment reads it, so it waits; the
    Service waits behind it; the Ingress is excluded; nothing is pruned."""
    program, steps = _render(_caches())
    step = _children(steps)
    assert [(r.kind, r.name) for r in step.inner.applies] == [("ConfigMap", "web-config")]
    assert {n: s.state for n, s in step.states} == {
        "config": "not-ready", "deploy": "waiting", "svc": "waiting", "ing": "excluded"}
    assert step.deletes == () and not step.inner.prune
    status = steps[-1]
    assert status.body["status"]["conditions"][0]["message"] == "config: not created yet"


def test_a_ready_graph_applies_nothing_that_did_not_drift() -> None:
    """Everything cached and answered by our own applies: no apply; an unwanted child of
    the set (the Ingress, excluded) is deleted; Ready True."""
    program = compile_actions(ACTIONS, controller="app")
    cm = _obj("ConfigMap", "web-config", data={"a": "b"})
    deploy = _obj("Deployment", "web", "apps/v1", status=AVAILABLE)
    svc = _obj("Service", "web", spec={"clusterIP": "10.0.0.9"})
    ing = _obj("Ingress", "web", "networking.k8s.io/v1")
    caches = _caches(configmap=[cm], deployment=[deploy], service=[svc], ingress=[ing])
    _, steps = _render(caches, program)
    first = _children(steps)
    assert [r.kind for r in first.inner.applies] == ["ConfigMap", "Deployment", "Service"]
    for where, request in zip(first.records, first.inner.applies):
        first.record(where, caches[where[0]].get(where[1]))  # the server answered these
    _, steps = _render(caches, program)
    step = _children(steps)
    assert step.inner.applies == ()
    assert [(r.verb, r.kind) for r in step.deletes] == [("delete", "Ingress")]
    assert steps[-1].body["status"]["conditions"][0]["reason"] == "ChildrenReady"


@pytest.mark.parametrize("live_rv,spec,applied", [
    pytest.param("21", {"replicas": 5}, True, id="edited-field-the-config-sets"),
    pytest.param("21", {"replicas": 2, "paused": True}, False, id="edited-other-field"),
    pytest.param("19", {"replicas": 5}, False, id="cache-older-than-our-write"),
])
def test_drift(live_rv: str, spec: dict[str, Any], applied: bool) -> None:
    """After our apply (answered rv 20): a newer version that changed a field we set is
    re-applied; one that only changed other fields is not; an older one (the cache behind
    our own write) is not."""
    program = compile_actions(ACTIONS, controller="app")
    cm = _obj("ConfigMap", "web-config", data={"a": "b"})
    deploy = _obj("Deployment", "web", "apps/v1", spec={"replicas": 2}, status=AVAILABLE)
    caches = _caches(configmap=[cm], deployment=[deploy])
    _, steps = _render(caches, program)
    for where, _r in zip(_children(steps).records, _children(steps).inner.applies):
        program.actions[0].impl._record(where, caches[where[0]].get(where[1]))
    edited = _obj("Deployment", "web", "apps/v1", rv=live_rv, spec=spec, status=AVAILABLE)
    edited["metadata"]["annotations"] = {"c": "web-config"}  # as the manifest sets it
    caches["app-children-deployment"] = FakeLister(edited)
    _, steps = _render(caches, program)
    kinds = [r.kind for r in _children(steps).inner.applies]
    assert ("Deployment" in kinds) is applied and "ConfigMap" not in kinds


def test_teardown_deletes_the_last_kind_first_and_holds_the_finalizer() -> None:
    """A terminating parent: the Service (the last kind in dependency order with children)
    is deleted, and the finalize stops there; with nothing left it renders nothing."""
    program = compile_actions(ACTIONS, controller="app")
    impl = program.actions[0].impl
    caches = _caches(configmap=[_obj("ConfigMap", "web-config")],
                     service=[_obj("Service", "web")])
    ctx = ReconcileContext(controller="app", key="ns/web", listers=caches)
    from kinrun.actions.program import ActionProgram, CompiledAction
    from kinrun.templating import SourceLocation
    where = SourceLocation("f.yaml", 1, "finalizer")
    finalize = ActionProgram("app", [
        CompiledAction(0, "children", where, None, ChildrenTeardown([impl])),
        CompiledAction(1, "children", where, None, ChildrenTeardown([impl], wait=True)),
        CompiledAction(2, "log", where, None, compile_actions([{"log": "bye"}],
                                                              controller="app").actions[0].impl)])
    steps = finalize.render(key="ns/web", obj=PARENT, ctx=ctx).steps
    assert [(getattr(s, "verb", None), getattr(s, "kind", None)) for s in steps[:1]] == [
        ("delete", "Service")]
    assert "bye" not in [getattr(s, "message", None) for s in steps]
    empty = ReconcileContext(controller="app", key="ns/web", listers=_caches())
    assert [s.message for s in finalize.render(key="ns/web", obj=PARENT, ctx=empty).steps] \
        == ["bye"]


def test_readers_of_a_drifted_child_wait_for_its_corrected_version() -> None:
    """The ConfigMap (read by the Deployment's manifest) was edited by hand after our apply:
    it is re-applied, and the Deployment is not rendered from the edited data (it waits, and
    the reconcile asks to run again as a safety net)."""
    program = compile_actions(ACTIONS, controller="app")
    cm = _obj("ConfigMap", "web-config", data={"a": "b"})
    deploy = _obj("Deployment", "web", "apps/v1", spec={"replicas": 2}, status=AVAILABLE)
    caches = _caches(configmap=[cm], deployment=[deploy])
    _, steps = _render(caches, program)
    for where in _children(steps).records:
        program.actions[0].impl._record(where, caches[where[0]].get(where[1]))
    caches["app-children-configmap"] = FakeLister(
        _obj("ConfigMap", "web-config", rv="30", data={"a": "edited"}))
    _, steps = _render(caches, program)
    step = _children(steps)
    assert [r.kind for r in step.inner.applies] == ["ConfigMap"]
    assert dict(step.states)["deploy"].state == "waiting"
    assert any(getattr(s, "seconds", None) for s in steps)


@pytest.mark.parametrize("manifest,message", [
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap",
                  "metadata": {"name": "x", "namespace": "elsewhere"}},
                 "a child lives in its parent's namespace", id="another-namespace"),
])
def test_a_child_outside_its_parents_namespace_is_refused(manifest: dict, message: str) -> None:
    program = compile_actions([{"children": {"resources": [{"name": "c", "manifest": manifest}]}}],
                              controller="app")
    from kinrun.actions.errors import RenderError
    with pytest.raises(RenderError, match=message):
        _render(_caches(), program)


def test_a_namespaced_child_of_a_cluster_scoped_parent_needs_a_namespace() -> None:
    from kinrun.actions.errors import RenderError
    program = compile_actions([{"children": {"resources": [{"name": "c", "manifest": {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}}]}}],
        controller="app")
    ns = {"apiVersion": "v1", "kind": "Namespace",
          "metadata": {"name": "team", "uid": "n-uid", "resourceVersion": "1"}}
    ctx = ReconcileContext(controller="app", key="team", listers=_caches())
    with pytest.raises(RenderError, match="is namespaced and the parent is cluster-scoped"):
        program.render(key="team", obj=ns, ctx=ctx)


def test_an_object_of_someone_else_is_never_taken_over() -> None:
    """A child absent from the cache is read first: an object of that name without this
    set's label is refused (never applied, owned or pruned); one of this set is applied."""
    from kinrun.actions.children import ChildTakenError
    from kinrun.errors import NotFoundError

    _, steps = _render(_caches())
    step = _children(steps)

    class Server:
        def __init__(self, labels: dict | None) -> None:
            self.labels, self.sent = labels, []

        def get(self, api_version: str, kind: str, name: str, namespace: str) -> Any:
            if self.labels is None:
                raise NotFoundError("absent")
            return {"metadata": {"name": name, "labels": self.labels}}

    for labels, taken in ((None, False), ({PART_OF: SET_ID}, False), ({"owner": "db"}, True)):
        server = Server(labels)
        send = lambda request: server.sent.append(request.verb) or {}  # noqa: E731
        if taken:
            with pytest.raises(ChildTakenError, match="does not take over an object"):
                step.execute(send, server)
            assert "apply" not in server.sent
        else:
            step.execute(send, server)
            assert "apply" in server.sent
