"""The pruning transform (``transform.drop``): parse_path and FieldPruner."""

from __future__ import annotations

import copy

import pytest

from kinrun.cache.transform import FieldPruner, parse_path


def pod() -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "3",
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}",
                                         "keep": "1"},
                         "managedFields": [{"manager": "m"}]},
            "spec": {"containers": [{"name": "a", "env": [1]}, {"name": "b"}, "odd"],
                     "volumes": [{"name": "v"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready"}]}}


@pytest.mark.parametrize(("text", "path"), [
    ("status", ("status",)),
    ("spec.containers.env", ("spec", "containers", "env")),
    (r"metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration",
     ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration")),
    (r"a\\b", ("a\\b",)),
])
def test_parse_path_splits_on_unescaped_dots(text: str, path: tuple) -> None:
    assert parse_path(text) == path


@pytest.mark.parametrize("text", ["", "a..b", ".a", "a.", "a\\", "metadata", "metadata.name",
                                  "kind", "metadata.resourceVersion", "metadata.uid"])
def test_parse_path_refuses_empty_keys_and_protected_paths(text: str) -> None:
    with pytest.raises(ValueError):
        parse_path(text)


def test_pruner_drops_paths_through_dicts_and_lists_without_touching_the_input() -> None:
    original = pod()
    before = copy.deepcopy(original)
    pruner = FieldPruner([parse_path(p) for p in (
        "status", "spec.containers.env", "spec.volumes", "missing.path", "spec.containers.name.x",
        r"metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration")])
    out = pruner(original)
    assert original == before  # the decoded object is never mutated
    assert out == {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "3",
                                "annotations": {"keep": "1"}},
                   "spec": {"containers": [{"name": "a"}, {"name": "b"}, "odd"]}}
    # values off the changed paths are shared, not copied
    assert out["spec"]["containers"][1] is original["spec"]["containers"][1]


def test_pruner_keeps_managed_fields_when_told_and_returns_the_object_if_nothing_matched() -> None:
    obj = pod()
    keep = FieldPruner([("nothing",)], strip_managed_fields=False)
    assert keep(obj) is obj
    kept = FieldPruner([("status",)], strip_managed_fields=False)(obj)
    assert "managedFields" in kept["metadata"]


def test_a_shorter_path_wins_over_a_longer_one_and_ids_are_stable() -> None:
    a = FieldPruner([("status",), ("status", "phase")])
    b = FieldPruner([("status", "phase"), ("status",)])
    assert "status" not in a(pod()) and "status" not in b(pod())
    assert a.id == b.id == "stripManagedFields+drop:status,status.phase"
    assert FieldPruner([("status",)], strip_managed_fields=False).id == "drop:status"


def test_pruner_refuses_protected_paths() -> None:
    with pytest.raises(ValueError):
        FieldPruner([("metadata", "name")])
