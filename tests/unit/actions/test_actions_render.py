"""Rendering each built-in action kind against fixture objects, compared as ApiRequest.describe()."""

from __future__ import annotations

from typing import Any

import pytest
from actions_fakes import FIXED_NOW, RecordingClient, frozen_copy, load_object

from kinrun.clock import FakeClock
from kinrun.actions import LogLine, RequeueAfter, compile_actions
from kinrun.hooks import ReconcileContext

POD_UID = "6a1e0c52-0000-4000-8000-000000000001"
OWNER = {"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": POD_UID,
         "controller": True, "blockOwnerDeletion": True}


def program(*specs: dict[str, Any], **kw: Any):
    kw.setdefault("controller", "web")
    kw.setdefault("source", ("web.yaml", 10, "controllers[0].reconcile.actions"))
    return compile_actions(list(specs), clock=FakeClock(wall=FIXED_NOW), **kw)


def described(result) -> list[dict[str, Any]]:
    return [r.describe() for r in result.requests]


# --- log and when ------------------------------------------------------------------------------


def test_log_renders_message_with_object_fields(pod):
    """A log action renders its template against obj, key and controller."""
    result = program({"log": "{{ controller }}: Sync/Add/Update for Pod {{ obj.metadata.name }} "
                             "({{ key }})"}).render(key="shop/web-1", obj=pod)
    assert result.steps == (LogLine("info", "web: Sync/Add/Update for Pod web-1 (shop/web-1)"),)


def test_log_mapping_form_sets_level(pod):
    """log: {message, level} produces a LogLine at that level."""
    result = program({"log": {"message": "careful", "level": "warning"}}).render(
        key="shop/web-1", obj=pod)
    assert result.steps == (LogLine("warning", "careful"),)


@pytest.mark.parametrize("when, expected", [
    pytest.param("obj.metadata.labels.get('tier') == 'web'", True, id="expression-true"),
    pytest.param("obj.metadata.labels.get('tier') == 'db'", False, id="expression-false"),
    pytest.param("{{ obj.status.phase == 'Running' }}", True, id="wrapped-true"),
    pytest.param("{{ 'yes' if obj.spec.nodeName == 'node-b' else '' }}", False, id="wrapped-empty"),
    pytest.param("{{ obj.metadata.name }}-{{ obj.spec.nodeName }}", True, id="template-text"),
    pytest.param(False, False, id="literal-false"),
])
def test_when_condition_selects_actions(pod, when, expected):
    """An action runs only when its when: condition holds; the others still run."""
    result = program({"log": "first"}, {"log": "conditional", "when": when},
                     {"log": "last"}).render(key="shop/web-1", obj=pod)
    messages = [s.message for s in result.steps]
    assert messages == (["first", "conditional", "last"] if expected else ["first", "last"])


def test_on_delete_program_sees_key_without_object():
    """In onDelete, obj is None and the key is still available to templates."""
    result = program({"log": "Pod {{ key }} does not exist anymore"},
                     {"log": "never", "when": "obj is not none"}).render(key="shop/web-1", obj=None)
    assert result.steps == (LogLine("info", "Pod shop/web-1 does not exist anymore"),)


# --- apply -------------------------------------------------------------------------------------

CHILD = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: "{{ obj.metadata.name }}-info"
  labels: {app: "{{ obj.metadata.labels.app }}"}
data:
  node: "{{ obj.spec.nodeName }}"
  image: "{{ obj.spec.containers[0].image }}"
"""


def test_apply_sets_owner_reference_and_defaults_namespace(pod):
    """apply renders the manifest, takes the object's namespace and makes it the controller owner."""
    result = program({"apply": {"manifest": CHILD}}).render(key="shop/web-1", obj=pod)
    assert described(result) == [{
        "verb": "apply", "apiVersion": "v1", "kind": "ConfigMap", "name": "web-1-info",
        "namespace": "shop", "params": {"fieldManager": "kinrun"},
        "body": {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "web-1-info", "labels": {"app": "web"}, "namespace": "shop",
                              "ownerReferences": [OWNER]},
                 "data": {"node": "node-a", "image": "nginx:1.25"}},
    }]


def test_apply_without_owner_reference_and_with_force(pod):
    """ownerReference: false leaves the manifest unowned; force: true is sent as a parameter."""
    result = program({"apply": {"manifest": CHILD, "ownerReference": False,
                                "force": True}}).render(key="shop/web-1", obj=pod)
    (req,) = result.requests
    assert req.params == {"fieldManager": "kinrun", "force": True}
    assert "ownerReferences" not in req.body["metadata"]


def test_apply_keeps_explicit_namespace_and_cluster_scope(pod):
    """A manifest's own namespace wins; namespace "" means cluster-scoped (no namespace)."""
    manifests = [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": "x", "namespace": "other"}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "{{ obj.metadata.name }}-reader", "namespace": ""}},
    ]
    result = program(*({"apply": {"manifest": m, "ownerReference": False}} for m in manifests)
                     ).render(key="shop/web-1", obj=pod)
    assert [(r.kind, r.name, r.namespace) for r in result.requests] == [
        ("ConfigMap", "x", "other"), ("ClusterRole", "web-1-reader", None)]
    assert "namespace" not in result.requests[1].body["metadata"]


def test_apply_replaces_existing_owner_reference_of_same_object(pod):
    """An ownerReference to the same uid in the manifest is replaced, not duplicated."""
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "c", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web-1",
                                          "uid": POD_UID}]}}
    (req,) = program({"apply": {"manifest": manifest}}).render(key="shop/web-1", obj=pod).requests
    assert req.body["metadata"]["ownerReferences"] == [OWNER]


def test_apply_in_on_delete_skips_owner_reference():
    """Without an object (onDelete) apply sends the manifest unowned, in the key's namespace."""
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tombstone-{{ key | replace('/', '-') }}}"
    (req,) = program({"apply": {"manifest": manifest}}).render(key="shop/web-1", obj=None).requests
    assert req.describe() == {
        "verb": "apply", "apiVersion": "v1", "kind": "ConfigMap", "name": "tombstone-shop-web-1",
        "namespace": "shop", "params": {"fieldManager": "kinrun"},
        "body": {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "tombstone-shop-web-1", "namespace": "shop"}}}


def test_render_never_modifies_the_cached_object(pod):
    """Rendering (owner references, namespace defaults, lookups) leaves obj byte-identical."""
    before = frozen_copy(pod)
    program({"apply": {"manifest": CHILD}}, {"patch": {"patch": {"metadata": {"labels": {
        "seen": "yes"}}}}}).render(key="shop/web-1", obj=pod)
    assert frozen_copy(pod) == before


# --- patch -------------------------------------------------------------------------------------


def test_patch_merge_status_targets_reconciled_object(pod):
    """A merge patch of the status subresource defaults to the reconciled object."""
    result = program({"patch": {"type": "merge", "subresource": "status",
                                "patch": "status: {observedNode: '{{ obj.spec.nodeName }}'}"}}
                     ).render(key="shop/web-1", obj=pod)
    assert described(result) == [{
        "verb": "patch", "apiVersion": "v1", "kind": "Pod", "name": "web-1", "namespace": "shop",
        "subresource": "status", "patchType": "merge",
        "body": {"status": {"observedNode": "node-a"}}}]


def test_patch_json_with_explicit_target(pod):
    """A json patch renders a list of operations against an explicit target."""
    spec = {"type": "json",
            "patch": "- {op: add, path: /metadata/labels/node, value: '{{ obj.spec.nodeName }}'}",
            "target": {"apiVersion": "apps/v1", "kind": "Deployment",
                       "name": "{{ obj.metadata.labels.app }}"}}
    result = program({"patch": spec}).render(key="shop/web-1", obj=pod)
    assert described(result) == [{
        "verb": "patch", "apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
        "namespace": "shop", "patchType": "json",
        "body": [{"op": "add", "path": "/metadata/labels/node", "value": "node-a"}]}]


def test_patch_strategic_from_mapping_form(pod):
    """A patch given as a mapping renders its strings; strategic is passed through."""
    spec = {"type": "strategic", "patch": {"metadata": {"annotations": {
        "kinrun.dev/image": "{{ obj.spec.containers[0].image }}"}}}}
    (req,) = program({"patch": spec}).render(key="shop/web-1", obj=pod).requests
    assert (req.patch_type, req.subresource, req.body) == (
        "strategic", None, {"metadata": {"annotations": {"kinrun.dev/image": "nginx:1.25"}}})


# --- delete ------------------------------------------------------------------------------------


def test_delete_explicit_target_with_propagation_policy(pod):
    """delete renders its target and carries the propagation policy."""
    spec = {"target": {"apiVersion": "v1", "kind": "ConfigMap",
                       "name": "{{ obj.metadata.name }}-info"},
            "propagationPolicy": "Foreground"}
    result = program({"delete": spec}).render(key="shop/web-1", obj=pod)
    assert described(result) == [{
        "verb": "delete", "apiVersion": "v1", "kind": "ConfigMap", "name": "web-1-info",
        "namespace": "shop", "params": {"propagationPolicy": "Foreground"}}]


def test_delete_defaults_to_reconciled_object(pod):
    """delete without a target deletes the reconciled object itself."""
    (req,) = program({"delete": {}}).render(key="shop/web-1", obj=pod).requests
    assert req.describe() == {"verb": "delete", "apiVersion": "v1", "kind": "Pod",
                              "name": "web-1", "namespace": "shop"}


# --- event -------------------------------------------------------------------------------------


def test_event_is_created_on_the_object(pod):
    """event creates a core/v1 Event referring to the object, named like client-go's recorder."""
    spec = {"type": "Warning", "reason": "Seen", "message": "pod on {{ obj.spec.nodeName }}"}
    result = program({"event": spec}).render(key="shop/web-1", obj=pod)
    name = "web-1.187cc366ba2d4000"
    assert described(result) == [{
        "verb": "create", "apiVersion": "v1", "kind": "Event", "name": name, "namespace": "shop",
        "body": {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": name, "namespace": "shop"},
                 "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web-1",
                                    "namespace": "shop", "uid": POD_UID,
                                    "resourceVersion": "1001"},
                 "type": "Warning", "reason": "Seen", "message": "pod on node-a",
                 "source": {"component": "kinrun"}, "reportingComponent": "kinrun",
                 "firstTimestamp": "2025-11-30T10:53:20Z",
                 "lastTimestamp": "2025-11-30T10:53:20Z", "count": 1}}]


def test_event_on_cluster_scoped_object_goes_to_default_namespace():
    """Events about cluster-scoped objects live in namespace default, as client-go's recorder."""
    node = load_object("node-a")
    (req,) = program({"event": {"reason": "Checked", "message": "ok"}}).render(
        key="node-a", obj=node).requests
    assert req.namespace == "default"
    assert req.body["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "node-a",
                                          "uid": "9c2b7a44-0000-4000-8000-000000000020",
                                          "resourceVersion": "3001"}


# --- requeueAfter ------------------------------------------------------------------------------


@pytest.mark.parametrize("value, seconds", [
    pytest.param("30s", 30.0, id="duration"),
    pytest.param("1m30s", 90.0, id="combined"),
    pytest.param("500ms", 0.5, id="millis"),
    pytest.param(12, 12.0, id="number"),
    pytest.param("{{ '2m' if obj.status.phase == 'Running' else '5s' }}", 120.0, id="template"),
])
def test_requeue_after_parses_durations(pod, value, seconds):
    """requeueAfter accepts durations, numbers and templates rendering a duration."""
    result = program({"requeueAfter": value}).render(key="shop/web-1", obj=pod)
    assert result.steps == (RequeueAfter(seconds),)
    assert result.requeue_after == seconds


def test_run_returns_smallest_requeue_and_sends_in_order(pod):
    """run sends requests in action order and returns the smallest requeue delay."""
    client = RecordingClient()
    delay = program({"requeueAfter": "1m"}, {"apply": {"manifest": CHILD}}, {"requeueAfter": "10s"},
                    {"delete": {}}).run(key="shop/web-1", obj=pod, client=client)
    assert delay == 10.0
    assert [r.verb for r in client.requests] == ["apply", "delete"]


# --- lookups and filters -----------------------------------------------------------------------


def test_templates_look_up_other_objects_through_listers(pod, ctx):
    """get, list and by_index read the informers' caches."""
    result = program(
        {"log": "{{ get('nodes', obj.spec.nodeName).metadata.labels.zone }}"},
        {"log": "{{ list('pods') | map(attribute='metadata.name') | sort | join(',') }}"},
        {"log": "{{ by_index('pods', 'byNode', obj.spec.nodeName) | length }} on node"},
        {"log": "{{ get('pods', 'shop/missing') is none }}"},
    ).render(key="shop/web-1", obj=pod, ctx=ctx)
    assert [s.message for s in result.steps] == ["eu-1", "batch-7,db-0,web-1", "2 on node", "True"]


@pytest.mark.parametrize("template, expected", [
    pytest.param("{{ obj.metadata.labels | to_yaml }}", "app: web\ntier: web", id="to_yaml"),
    pytest.param("{{ obj.metadata.labels | to_json }}", '{"app": "web", "tier": "web"}',
                 id="to_json"),
    pytest.param("{{ ('{\"a\": [1, 2]}' | from_json).a[1] }}", "2", id="from_json"),
    pytest.param("{{ ('a: {b: c}' | from_yaml).a.b }}", "c", id="from_yaml"),
    pytest.param("{{ 'hello' | b64encode }}", "aGVsbG8=", id="b64encode"),
    pytest.param("{{ 'aGVsbG8=' | b64decode }}", "hello", id="b64decode"),
    pytest.param("{{ 'abc' | sha256 }}",
                 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", id="sha256"),
    pytest.param("{{ {'b': 1, 'a': 2} | sha256 == {'a': 2, 'b': 1} | sha256 }}", "True",
                 id="sha256-canonical"),
    pytest.param("x:\n{{ obj.metadata.labels | to_yaml | indent(2, true) }}",
                 "x:\n  app: web\n  tier: web", id="indent"),
])
def test_filters(pod, template, expected):
    """kinrun's filters (and Jinja2's indent) produce the documented text."""
    (line,) = program({"log": template}).render(key="shop/web-1", obj=pod).steps
    assert line.message == expected


def test_old_object_is_visible_from_argument_or_context(pod):
    """old comes from render(old=...) or, failing that, from ctx.old."""
    old = load_object("pod-web")
    old["metadata"]["resourceVersion"] = "999"
    prog = program({"log": "{{ old.metadata.resourceVersion if old else 'none' }}"})
    ctx = ReconcileContext(controller="web", key="shop/web-1", old=old)
    assert prog.render(key="shop/web-1", obj=pod, old=old).steps[0].message == "999"
    assert prog.render(key="shop/web-1", obj=pod, ctx=ctx).steps[0].message == "999"
    assert prog.render(key="shop/web-1", obj=pod).steps[0].message == "none"


def test_dry_run_execute_logs_requests_instead_of_sending(pod, caplog):
    """With no client, execute logs each request as dry-run and sends nothing."""
    caplog.set_level("INFO", logger="kinrun.controller.web")
    program({"delete": {}}).run(key="shop/web-1", obj=pod)
    assert any(r.getMessage().startswith('dry-run: {"apiVersion": "v1", "kind": "Pod"')
               for r in caplog.records)


def test_block_scalar_log_drops_trailing_newline(pod):
    """A log message written as a block scalar has no trailing newline."""
    (line,) = program({"log": "Pod {{ obj.metadata.name }}\n"}).render(key="k", obj=pod).steps
    assert line.message == "Pod web-1"


def test_one_program_renders_concurrently_for_different_keys():
    """Workers share a program: concurrent renders for different objects do not mix."""
    import threading
    prog = program({"apply": {"manifest": CHILD}})
    pods = []
    for i in range(8):
        p = load_object("pod-web")
        p["metadata"]["name"] = f"web-{i}"
        pods.append(p)
    barrier = threading.Barrier(len(pods))
    results: dict[str, list[str]] = {}

    def work(p: dict[str, Any]) -> None:
        barrier.wait(timeout=10)
        names = [prog.render(key="shop/" + p["metadata"]["name"], obj=p).requests[0].name
                 for _ in range(50)]
        results[p["metadata"]["name"]] = names

    threads = [threading.Thread(target=work, args=(p,)) for p in pods]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert results == {f"web-{i}": [f"web-{i}-info"] * 50 for i in range(8)}


def test_lookups_follow_each_renders_listers():
    """The lookup functions are made once per listers mapping and reused: every render reads
    the mapping its context carries, a mapping changed after the first render included."""
    from actions_fakes import FakeLister
    prog = compile_actions([{"log": "{{ list('pods') | map(attribute='metadata.name') "
                                    "| join(',') }}"}], controller="w")
    web, db = load_object("pod-web"), load_object("pod-db")
    first = {"pods": FakeLister([web])}
    second = {"pods": FakeLister([db])}

    def names(listers):
        ctx = ReconcileContext(controller="w", key="shop/web-1", listers=listers)
        return prog.render(key="shop/web-1", obj=web, ctx=ctx).steps[0].message

    assert names(first) == "web-1"
    assert names(second) == "db-0"
    assert names(first) == "web-1"
    first["pods"] = FakeLister([web, db])   # the same mapping, changed (a reload's listers)
    assert names(first) == "web-1,db-0"
