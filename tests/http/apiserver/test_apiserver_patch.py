"""Strategic merge patch approximation and JSON/merge patch helpers (pure functions)."""

from __future__ import annotations

import pytest

from kinrun.testing.apiserver.patch import json_patch, merge_patch, strategic_merge_patch
from kinrun.testing.apiserver.status import StatusError

POD = {"spec": {"containers": [{"name": "a", "image": "x", "ports": [{"containerPort": 80}]},
                               {"name": "b", "image": "y"}]},
       "metadata": {"finalizers": ["f1"]}}


def test_strategic_merge_merges_containers_by_name():
    """A container patch keyed by name changes that container only, keeping its other fields."""
    out = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "a", "image": "z"}]}})
    assert out["spec"]["containers"] == [{"name": "a", "image": "z", "ports": [{"containerPort": 80}]},
                                         {"name": "b", "image": "y"}]


def test_strategic_merge_directives():
    """$patch: delete removes a keyed item; $setElementOrder reorders; directives are not stored."""
    patch = {"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                      "containers": [{"name": "b", "$patch": "delete"}, {"name": "c", "image": "w"}]}}
    out = strategic_merge_patch(POD, patch)
    assert [c["name"] for c in out["spec"]["containers"]] == ["c", "a"]
    assert not any(k.startswith("$") for k in out["spec"])


def test_strategic_merge_finalizers_union_and_delete_from_primitive_list():
    """finalizers merge as a set; $deleteFromPrimitiveList removes entries."""
    added = strategic_merge_patch(POD, {"metadata": {"finalizers": ["f2"]}})
    assert added["metadata"]["finalizers"] == ["f1", "f2"]
    removed = strategic_merge_patch(added, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f1"]}})
    assert removed["metadata"]["finalizers"] == ["f2"]


def test_strategic_merge_replaces_unknown_lists_and_does_not_mutate():
    """Lists without a known merge key are replaced; inputs are left untouched."""
    target = {"spec": {"args": ["a", "b"]}}
    assert strategic_merge_patch(target, {"spec": {"args": ["c"]}}) == {"spec": {"args": ["c"]}}
    assert target == {"spec": {"args": ["a", "b"]}}


def test_merge_patch_replaces_lists():
    """RFC 7386 replaces lists whole."""
    assert merge_patch(POD, {"spec": {"containers": []}})["spec"]["containers"] == []


def test_json_patch_move_and_copy():
    """move and copy operations work on nested paths, with ~1 escapes."""
    doc = {"a": {"x/y": 1}, "b": []}
    out = json_patch(doc, [{"op": "copy", "from": "/a/x~1y", "path": "/b/-"},
                           {"op": "move", "from": "/a/x~1y", "path": "/c"}])
    assert out == {"a": {}, "b": [1], "c": 1}


@pytest.mark.parametrize("ops", [
    pytest.param({"op": "add"}, id="not-a-list"),
    pytest.param([{"op": "frobnicate", "path": "/a"}], id="unknown-op"),
    pytest.param([{"op": "add", "path": "/a"}], id="missing-value"),
])
def test_malformed_json_patch_is_bad_request(ops):
    """Malformed JSON patches raise 400."""
    with pytest.raises(StatusError) as info:
        json_patch({}, ops)
    assert info.value.code == 400
