"""Keys, ThreadSafeStore and the Indexer (client-go store.go, thread_safe_store.go, index.go)."""

from __future__ import annotations

import threading

import pytest
from pipeline_fakes import pod

from kinrun.cache import (
    NAMESPACE_INDEX,
    DeletedFinalStateUnknown,
    IndexConflictError,
    IndexFuncError,
    KeyFuncError,
    ThreadSafeStore,
    UnknownIndexError,
    deletion_handling_meta_namespace_key,
    meta_namespace_key,
    new_indexer,
    split_meta_namespace_key,
)


def by_label_values(obj):
    return list((obj["metadata"].get("labels") or {}).values())


def test_meta_namespace_key_is_ns_slash_name_for_namespaced_objects():
    """A namespaced object's key is "ns/name"."""
    assert meta_namespace_key(pod("a", "ns1")) == "ns1/a"


def test_meta_namespace_key_is_name_for_cluster_scoped_objects():
    """A cluster-scoped object's key is its bare name."""
    assert meta_namespace_key(pod("node-1", ns=None)) == "node-1"


def test_meta_namespace_key_rejects_objects_without_name():
    """An object without metadata.name raises KeyFuncError carrying the object."""
    with pytest.raises(KeyFuncError) as info:
        meta_namespace_key({"metadata": {}})
    assert info.value.obj == {"metadata": {}}


def test_deletion_handling_key_unwraps_tombstones():
    """A DeletedFinalStateUnknown yields its own key, a plain object its computed key."""
    assert deletion_handling_meta_namespace_key(DeletedFinalStateUnknown("x/y", None)) == "x/y"
    assert deletion_handling_meta_namespace_key(pod("a")) == "default/a"


@pytest.mark.parametrize(("key", "parts"), [("ns/a", ("ns", "a")), ("a", ("", "a"))])
def test_split_meta_namespace_key_splits_valid_keys(key, parts):
    """Valid keys split into (namespace, name)."""
    assert split_meta_namespace_key(key) == parts


@pytest.mark.parametrize("key", ["a/b/c", "", "ns/"])
def test_split_meta_namespace_key_rejects_malformed_keys(key):
    """Malformed keys raise ValueError."""
    with pytest.raises(ValueError):
        split_meta_namespace_key(key)


def test_indexer_add_get_update_delete_round_trip():
    """add/get/get_by_key/update/delete behave as a keyed map of shared objects."""
    idx = new_indexer()
    a = pod("a")
    idx.add(a)
    assert idx.get_by_key("default/a") is a
    assert idx.get(pod("a")) is a
    a2 = pod("a", rv="2")
    idx.update(a2)
    assert idx.get_by_key("default/a") is a2
    idx.delete(a2)
    assert idx.get_by_key("default/a") is None
    assert idx.list() == [] and idx.list_keys() == []


def test_indexer_delete_accepts_tombstones():
    """Deleting a DeletedFinalStateUnknown removes the object under its key."""
    idx = new_indexer()
    idx.add(pod("a"))
    idx.delete(DeletedFinalStateUnknown("default/a", None))
    assert idx.list_keys() == []


def test_replace_swaps_content_and_rebuilds_indexes():
    """replace drops objects not listed and re-indexes the new ones."""
    idx = new_indexer()
    idx.add(pod("old", "ns1"))
    idx.replace([pod("b", "ns2"), pod("c", "ns2")], "7")
    assert sorted(idx.list_keys()) == ["ns2/b", "ns2/c"]
    assert idx.by_index(NAMESPACE_INDEX, "ns1") == []
    assert sorted(idx.index_keys(NAMESPACE_INDEX, "ns2")) == ["ns2/b", "ns2/c"]


def test_resync_on_a_store_changes_nothing():
    """A plain store's resync is a no-op."""
    idx = new_indexer()
    idx.add(pod("a"))
    idx.resync()
    assert idx.list_keys() == ["default/a"]


def test_namespace_index_is_built_in():
    """Objects are findable by namespace without registering anything."""
    idx = new_indexer()
    idx.add(pod("a", "ns1"))
    idx.add(pod("b", "ns2"))
    assert [o["metadata"]["name"] for o in idx.by_index(NAMESPACE_INDEX, "ns1")] == ["a"]


def test_index_function_may_return_several_values():
    """An object is filed under every value its index function returns."""
    idx = new_indexer(indexers={"labels": by_label_values})
    idx.add(pod("a", meta={"labels": {"x": "red", "y": "blue"}}))
    assert idx.index_keys("labels", "red") == ["default/a"]
    assert idx.index_keys("labels", "blue") == ["default/a"]
    assert sorted(idx.list_index_func_values("labels")) == ["blue", "red"]


def test_update_moves_index_entries_and_drops_empty_values():
    """After an update the old values no longer list the object and empty values vanish."""
    idx = new_indexer(indexers={"labels": by_label_values})
    idx.add(pod("a", meta={"labels": {"x": "red"}}))
    idx.update(pod("a", meta={"labels": {"x": "green"}}))
    assert idx.by_index("labels", "red") == []
    assert idx.index_keys("labels", "green") == ["default/a"]
    assert idx.list_index_func_values("labels") == ["green"]


def test_delete_removes_index_entries():
    """A deleted object disappears from every index."""
    idx = new_indexer(indexers={"labels": by_label_values})
    idx.add(pod("a", meta={"labels": {"x": "red"}}))
    idx.delete(pod("a"))
    assert idx.list_index_func_values("labels") == []
    assert idx.list_index_func_values(NAMESPACE_INDEX) == []


def test_index_returns_objects_sharing_a_value():
    """index(name, obj) finds objects sharing any index value with obj."""
    idx = new_indexer(indexers={"labels": by_label_values})
    idx.add(pod("a", meta={"labels": {"x": "red"}}))
    idx.add(pod("b", meta={"labels": {"x": "blue"}}))
    found = idx.index("labels", pod("q", meta={"labels": {"k": "red"}}))
    assert [o["metadata"]["name"] for o in found] == ["a"]


def test_unknown_index_raises_key_error():
    """Querying an index that was never registered raises UnknownIndexError, a KeyError that
    names the index asked for and the registered ones."""
    with pytest.raises(KeyError) as info:
        new_indexer().by_index("nope", "x")
    assert isinstance(info.value, UnknownIndexError)
    assert str(info.value) == "the cache has no index 'nope' (its indexes: namespace)"
    assert info.value.index_name == "nope" and info.value.known == ("namespace",)


def test_adding_an_indexer_after_objects_exist_indexes_them():
    """add_indexers indexes every stored object at once."""
    idx = new_indexer()
    idx.add(pod("a", meta={"labels": {"x": "red"}}))
    idx.add_indexers({"labels": by_label_values})
    assert idx.index_keys("labels", "red") == ["default/a"]


def test_adding_an_existing_index_name_conflicts():
    """Registering a name twice raises IndexConflictError and keeps the first function."""
    idx = new_indexer(indexers={"labels": by_label_values})
    with pytest.raises(IndexConflictError):
        idx.add_indexers({"labels": lambda o: ["z"]})
    assert idx.get_indexers()["labels"] is by_label_values


def test_failing_index_function_leaves_store_unchanged():
    """An index function that raises stores neither the object nor any index entry."""
    def picky(obj):
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("boom")
        return ["ok"]
    idx = new_indexer(indexers={"picky": picky})
    with pytest.raises(IndexFuncError):
        idx.add(pod("bad"))
    assert idx.list_keys() == [] and idx.list_index_func_values(NAMESPACE_INDEX) == []


def test_readers_never_see_an_object_without_its_index_entries():
    """Under concurrent updates, by_index always agrees with the object it returns."""
    store = ThreadSafeStore({"color": lambda o: [o["color"]]})
    stop = threading.Event()
    errors = []

    def writer():
        i = 0
        while not stop.is_set():
            store.update("k", {"color": "red" if i % 2 else "blue"})
            i += 1

    def reader():
        for _ in range(3000):
            for color in ("red", "blue"):
                for obj in store.by_index("color", color):
                    if obj["color"] != color:
                        errors.append(obj)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        reader()
    finally:
        stop.set()
        thread.join()
    assert errors == []
