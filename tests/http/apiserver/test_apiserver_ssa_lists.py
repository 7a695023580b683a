"""Server-side apply of associative lists, as structured-merge-diff v4 (kube-apiserver 1.20)
merges them: the list shapes (``typed``), the ``k:``/``v:`` items of fieldsV1, the merge,
prune and per-item conflicts of ``apply`` (the cases the differential tests do not replay)."""

from __future__ import annotations

from typing import Any

import pytest

from kinrun.openapi import Schema, builtin_schemas, crd_schema
from kinrun.testing.apiserver.apply import apply, merge
from kinrun.testing.apiserver.managed_fields import (compare, decode, field_paths, path_string,
                                                     paths_of, to_fields_v1, update)
from kinrun.testing.apiserver.status import StatusError
from kinrun.openapi.typed import (Item, elements, list_keys, typed_errors,
                                            object_meta)

NOW = "2026-01-01T00:00:00Z"


def deploy_schema() -> Schema:
    schema = builtin_schemas().for_gvk("apps", "v1", "Deployment")
    assert schema is not None
    return schema


def pod_spec() -> Schema:
    found = deploy_schema().at("spec.template.spec")
    assert found is not None
    return found


def crd(spec: dict[str, Any]) -> Schema:
    found = crd_schema({"schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec}}}}})
    assert found is not None
    return found


def deployment(containers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": containers}}}}


def containers_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return obj["spec"]["template"]["spec"]["containers"]


def test_list_shapes_follow_list_type_then_patch_strategy() -> None:
    """containers by their patch merge key, a container's ports by their list-map keys,
    finalizers (patch strategy merge, no key) by value, args atomic; a CRD list is atomic
    without ``x-kubernetes-list-type``."""
    spec = pod_spec()
    assert list_keys(spec.child("containers")) == ("name",)
    assert list_keys(spec.at("containers[].ports")) == ("containerPort", "protocol")
    assert list_keys(spec.at("containers[].args")) is None
    assert list_keys(object_meta().child("finalizers")) == ()
    assert list_keys(object_meta().child("ownerReferences")) == ("uid",)
    custom = crd({"a": {"type": "array", "items": {"type": "string"}},
                  "s": {"type": "array", "x-kubernetes-list-type": "set",
                        "items": {"type": "string"}}})
    assert list_keys(custom.at("spec.a")) is None
    assert list_keys(custom.at("spec.s")) == ()


def test_items_are_named_as_structured_merge_diff_names_them() -> None:
    """A key item's fieldsV1 member has its keys sorted, as compact JSON; a missing key takes
    its schema default; duplicate keys make the list atomic."""
    ports = pod_spec().at("containers[].ports")
    (item,) = elements(ports, [{"protocol": "TCP", "containerPort": 80}])  # type: ignore[misc]
    assert item.fields_key() == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert item.label() == '[containerPort=80,protocol="TCP"]'
    assert Item("v", "x").label() == '[="x"]'
    keyed = crd({"l": {"type": "array", "x-kubernetes-list-type": "map",
                       "x-kubernetes-list-map-keys": ["name", "kind"],
                       "items": {"type": "object", "properties": {
                           "name": {"type": "string"},
                           "kind": {"type": "string", "default": "A"}}}}}).at("spec.l")
    assert elements(keyed, [{"name": "n"}]) == [Item("k", {"kind": "A", "name": "n"})]
    assert elements(keyed, [{"name": "n"}, {"name": "n", "kind": "A"}]) is None


def test_fields_v1_round_trips_items_with_their_dot() -> None:
    """An applied container is owned as its item (``.``) and its fields; decoding the
    document gives the same paths back."""
    obj = deployment([{"name": "c", "image": "i", "env": [{"name": "A", "value": "1"}]}])
    paths = set(field_paths(obj, deploy_schema()))
    doc = to_fields_v1(paths)
    containers = doc["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert containers == {'k:{"name":"c"}': {
        ".": {}, "f:env": {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}},
        "f:image": {}, "f:name": {}}}
    assert paths_of(doc) == paths


def test_label_selector_is_one_leaf() -> None:
    """A LabelSelector is ``x-kubernetes-map-type: atomic``: owned as ``f:selector``."""
    obj = {"spec": {"selector": {"matchLabels": {"app": "x"}}}}
    assert set(field_paths(obj, deploy_schema())) == {("spec", "selector")}


def test_merge_keeps_live_order_then_appends_new_items() -> None:
    """Live items keep their order and merge field by field; new items follow in applied
    order; a set merges by value."""
    live = deployment([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
    applied = deployment([{"name": "z", "image": "9"}, {"name": "b", "args": ["x"]}])
    merged = merge(live, applied, deploy_schema())
    assert containers_of(merged) == [{"name": "a", "image": "1"},
                                     {"name": "b", "image": "2", "args": ["x"]},
                                     {"name": "z", "image": "9"}]
    meta = merge({"metadata": {"finalizers": ["p", "q"]}},
                 {"metadata": {"finalizers": ["r", "p"]}}, None)
    assert meta["metadata"]["finalizers"] == ["p", "q", "r"]


def test_an_atomic_list_is_replaced_whole() -> None:
    """A container's args (atomic) are replaced by the applied ones, not merged."""
    live = deployment([{"name": "a", "args": ["1", "2"]}])
    merged = merge(live, deployment([{"name": "a", "args": ["3"]}]), deploy_schema())
    assert containers_of(merged) == [{"name": "a", "args": ["3"]}]


def test_prune_keeps_an_item_another_manager_owns_and_drops_its_own_fields() -> None:
    """A manager that stops applying container b removes it unless another manager owns the
    item; a field only it owned inside a kept item goes."""
    schema = deploy_schema()
    first = apply(None, deployment([{"name": "a", "image": "1"},
                                    {"name": "b", "image": "2", "args": ["x"]}]),
                  manager="m", force=False, api_version="apps/v1", now=NOW, schema=schema)
    shared = apply(first, deployment([{"name": "b", "image": "2"}]), manager="n",
                   force=False, api_version="apps/v1", now=NOW, schema=schema)
    pruned = apply(shared, deployment([{"name": "a", "image": "1"}]), manager="m",
                   force=False, api_version="apps/v1", now=NOW, schema=schema)
    assert containers_of(pruned) == [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]
    alone = apply(first, deployment([{"name": "a", "image": "1"}]), manager="m",
                  force=False, api_version="apps/v1", now=NOW, schema=schema)
    assert containers_of(alone) == [{"name": "a", "image": "1"}]


def test_conflict_names_the_item_field_and_force_moves_only_it() -> None:
    """Another manager changing container a's image: 409 naming
    ``.spec.template.spec.containers[name="a"].image``; with force only that field moves."""
    schema = deploy_schema()
    first = apply(None, deployment([{"name": "a", "image": "1", "args": ["x"]}]),
                  manager="m", force=False, api_version="apps/v1", now=NOW, schema=schema)
    other = deployment([{"name": "a", "image": "2"}])
    with pytest.raises(StatusError) as err:
        apply(first, other, manager="n", force=False, api_version="apps/v1", now=NOW,
              schema=schema)
    assert err.value.message == ('Apply failed with 1 conflict: conflict with "m": '
                                 '.spec.template.spec.containers[name="a"].image')
    forced = apply(first, other, manager="n", force=True, api_version="apps/v1", now=NOW,
                   schema=schema)
    owned = {m.manager: {path_string(p) for p in m.fields}
             for m in decode(forced["metadata"]["managedFields"])}
    image = '.spec.template.spec.containers[name="a"].image'
    assert image in owned["n"] and image not in owned["m"]
    assert '.spec.template.spec.containers[name="a"].args' in owned["m"]


def test_compare_matches_items_by_key_not_position() -> None:
    """Reordering keyed items is no change; an added item is a path with its fields, and a
    list that was absent is itself added (the ``.`` of an Update manager)."""
    schema = deploy_schema()
    a, b = {"name": "a", "image": "1"}, {"name": "b", "image": "2"}
    assert compare(deployment([a, b]), deployment([b, a]), schema).same
    live = deployment([a])
    grown = deployment([dict(a, env=[{"name": "E", "value": "v"}])])
    change = compare(live, grown, schema)
    env = ("spec", "template", "spec", "containers", Item("k", {"name": "a"}), "env")
    assert env in change.added and env + (Item("k", {"name": "E"}),) in change.added
    created = update(None, grown, manager="u", api_version="apps/v1",
                     now=NOW, schema=schema)
    fields = created["metadata"]["managedFields"][0]["fieldsV1"]
    item = fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"a"}']
    assert "." in item and "." in item["f:env"]


def test_typed_errors_name_each_list_as_smd_validation_does() -> None:
    """Two items of one key, named as SMD's validation names them (the list, then the item);
    an atomic list may repeat values; an entry without its key (a container port's
    ``protocol`` has the in-process default ``TCP``, a Service port's none), a null entry and
    an object in a set each end that list's walk with ``element N: ...``."""
    schema = deploy_schema()
    env = deployment([{"name": "c", "args": ["x", "x"],
                       "env": [{"name": "A"}, {"name": "A", "value": "v"}]}])
    assert typed_errors(schema, env) == [
        '.spec.template.spec.containers[name="c"].env: duplicate entries for key [name="A"]']
    assert typed_errors(schema, deployment([{"name": "c", "args": ["x", "x"],
                                             "ports": [{"containerPort": 80}]}])) == []
    assert typed_errors(None, {"metadata": {"finalizers": ["f", "f"]}}) == [
        '.metadata.finalizers: duplicate entries for key [="f"]']
    assert typed_errors(schema, deployment([{"name": "c", "env": [None, {"name": "A"}]},
                                            {"image": "x"}])) == [
        '.spec.template.spec.containers[name="c"].env: element 0: associative list with keys '
        'may not have a null element',
        '.spec.template.spec.containers: element 1: associative list with keys has an element '
        'that omits key field "name" (and doesn\'t have default value)']
    service = builtin_schemas().for_gvk("", "v1", "Service")
    assert typed_errors(service, {"spec": {"ports": [{"port": 80}]}}) == [
        '.spec.ports: element 0: associative list with keys has an element that omits key '
        'field "protocol" (and doesn\'t have default value)']
    assert typed_errors(None, {"metadata": {"finalizers": [{"a": 1}]}}) == [
        ".metadata.finalizers: element 0: associative list without keys has an element "
        "that's a map type"]


def test_pruning_many_items_walks_each_list_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An apply withdrawing 1,000 of 2,000 env entries reads the env list's items a bounded
    number of times, not once per withdrawn entry (that was quadratic: ~10 s for this apply;
    found by review), and keeps exactly the entries still applied, in order."""
    from kinrun.testing.apiserver import apply as apply_module

    schema = deploy_schema()
    env = [{"name": f"E{i}", "value": str(i)} for i in range(2000)]
    first = apply(None, deployment([{"name": "c", "image": "x", "env": env}]), manager="a",
                  force=False, api_version="apps/v1", now=NOW, schema=schema)
    calls = []
    real_elements = apply_module.elements
    monkeypatch.setattr(apply_module, "elements", lambda s, v: (
        calls.append(1) if isinstance(v, list) and len(v) >= 1000 else None,
        real_elements(s, v))[1])
    second = apply(first, deployment([{"name": "c", "image": "x", "env": env[::2]}]),
                   manager="a", force=False, api_version="apps/v1", now=NOW, schema=schema)
    assert second["spec"]["template"]["spec"]["containers"][0]["env"] == env[::2]
    assert len(calls) <= 4   # the merge reads both env lists, the prune the merged one
