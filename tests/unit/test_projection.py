"""kinrun.kube.projection: what a projected decode keeps and never loses, the refused whole
write of a projected object, and a reload that reads new fields relisting that informer."""

from __future__ import annotations

import orjson
import pytest

from kinrun.config import load_text
from kinrun.errors import PermanentError
from kinrun.kube.projection import Projection, ProjectedObject, refuse_whole_write
from kinrun.plan import plan
from kinrun.reload import diff

POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "p", "namespace": "d", "labels": {"a": "b"},
                    "managedFields": [{"manager": "x"}]},
       "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i", "env": []}]},
       "status": {"phase": "Running"}}


def test_only_the_paths_and_metadata_are_decoded() -> None:
    projection = Projection([("spec", "containers", "[]", "image")])
    assert projection.loads_object(orjson.dumps(POD)) == {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "d", "labels": {"a": "b"}},
        "spec": {"containers": [{"image": "i"}]}}


def test_a_value_of_another_type_is_kept_as_it_is() -> None:
    projection = Projection([("spec", "nodeName", "length")])
    for value in ("n", 3, 1.5, None, True, ["a"]):
        obj = {**POD, "spec": {"nodeName": value}}
        assert projection.project(obj)["spec"] == {"nodeName": value}


def test_watch_events_and_pages() -> None:
    projection = Projection([("status", "phase")])
    event = projection.loads_event(orjson.dumps({"type": "MODIFIED", "object": POD}))
    assert event["type"] == "MODIFIED" and event["object"]["status"] == {"phase": "Running"}
    assert "spec" not in event["object"]
    status = {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}
    error = projection.loads_event(orjson.dumps({"type": "ERROR", "object": status}))
    assert error["object"] == status  # an ERROR's Status whole
    page = projection.loads_page(orjson.dumps({"kind": "PodList", "metadata": {
        "resourceVersion": "7"}, "items": [POD]}))
    assert page["metadata"] == {"resourceVersion": "7"}
    assert [i["status"] for i in page["items"]] == [{"phase": "Running"}]
    with pytest.raises(orjson.JSONDecodeError):
        projection.loads_object(b"{not json")
    with pytest.raises(orjson.JSONDecodeError):
        projection.loads_object(b"[1, 2]")


def test_equal_paths_are_one_projection() -> None:
    a = Projection([("spec", "x"), ("spec",), ("metadata", "labels", "app")])
    b = Projection([("spec",)])
    assert a == b and hash(a) == hash(b) and a.paths == b.paths


def test_a_projected_object_is_never_written_whole() -> None:
    obj = ProjectedObject(Projection([("spec",)]).project(POD))
    with pytest.raises(PermanentError, match="projected"):
        refuse_whole_write(obj, "update")
    refuse_whole_write(dict(obj), "update")  # a plain dict the hook built is its own


CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {apiVersion: v1, kind: Pod}
  nodes: {apiVersion: v1, kind: Node}
controllers:
  - name: c
    for: pods
    reconcile:
      actions:
        - log: "{{ TEMPLATE }}"
"""


def test_a_reload_that_reads_new_fields_relists_only_that_informer() -> None:
    old = plan(load_text(CONFIG.replace("TEMPLATE", "obj.spec.nodeName")))
    new = plan(load_text(CONFIG.replace("TEMPLATE", "obj.spec.nodeName ~ obj.status.phase")))
    change = diff(old, new)
    assert change.informers_changed == ("pods",)
    assert change.relisted == {"pods": "+status.phase"}
    assert "relisted for the fields read: pods +status.phase" in change.summary()
    same = diff(old, plan(load_text(CONFIG.replace("TEMPLATE", "obj.spec.nodeName ~ '!'"))))
    assert not same.informers_changed and "nodes" in same.informers_kept


def test_a_hook_gets_projected_objects_it_cannot_write_whole() -> None:
    """obj, ctx.old and the primary lister's answers of a projected cache are
    ProjectedObjects; an update of one through kinrun's client is refused, a patch is not."""
    from kinrun.cache import KeyedIndexer, Lister
    from kinrun.hooks import ReconcileContext, hookimpl
    from kinrun.kube.client import Client
    from kinrun.plugin_manager import new_plugin_manager, reconcile_caller

    seen: dict[str, object] = {}

    class Writer:
        @hookimpl
        def kinrun_reconcile(self, controller, key, obj, ctx):
            seen["obj"], seen["old"] = obj, ctx.old
            seen["listed"] = ctx.listers["pods"].get(key)
            seen["other"] = ctx.listers["nodes"].get("n")
            with pytest.raises(PermanentError, match="projected"):
                Client.update(client, obj)  # refused before anything is sent

    client = object.__new__(Client)
    client._ref_of = lambda body: None  # type: ignore[method-assign]  # no discovery here
    pm = new_plugin_manager()
    pm.register(Writer())
    pods, nodes = KeyedIndexer(), KeyedIndexer()
    cached = Projection([("spec", "nodeName")]).project(POD)
    pods.add(cached)
    nodes.add({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
    ctx = ReconcileContext(controller="c", key="d/p", old=cached,
                           listers={"pods": Lister(pods), "nodes": Lister(nodes)})
    reconcile_caller(pm, True, frozenset({"pods"}), "pods")("c", "d/p", cached, ctx)
    assert all(type(seen[k]) is ProjectedObject for k in ("obj", "old", "listed"))
    assert type(seen["other"]) is dict  # a whole cache's objects are plain copies
