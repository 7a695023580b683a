"""SharedInformerFactory: one informer per distinct key, started and stopped together."""

from __future__ import annotations

import pytest
from pipeline_fakes import WAIT, pod

from kinrun.cache import IndexConflictError, InformerKey, SharedInformerFactory
from kinrun.testing.memory import MemoryListerWatcher


@pytest.fixture
def factory():
    servers: dict[InformerKey, MemoryListerWatcher] = {}

    def lister_watcher_for(key):
        servers[key] = MemoryListerWatcher()
        servers[key].create(pod("seed"))
        return servers[key]
    f = SharedInformerFactory(lister_watcher_for)
    f.servers = servers
    yield f
    f.stop()


def test_same_key_gives_the_same_informer(factory):
    """Two requests for one key share one informer and one ListerWatcher."""
    key = InformerKey("v1/pods", "default", "app=web")
    assert factory.informer_for(key) is factory.informer_for(InformerKey("v1/pods", "default", "app=web"))
    assert len(factory.servers) == 1


@pytest.mark.parametrize("other", [
    InformerKey("v1/pods", "other", "app=web"),
    InformerKey("v1/pods", "default", "app=db"),
    InformerKey("v1/pods", "default", "app=web", "status.phase=Running"),
    InformerKey("v1/pods", "default", "app=web", "", "stripManagedFields"),
    InformerKey("v1/configmaps", "default", "app=web"),
], ids=["namespace", "label", "field", "transform", "resource"])
def test_any_difference_in_the_key_gives_another_informer(factory, other):
    """Resource, namespace, selectors and transform each distinguish informers."""
    base = factory.informer_for(InformerKey("v1/pods", "default", "app=web"))
    assert factory.informer_for(other) is not base


def test_start_starts_all_and_stop_stops_all(factory):
    """start runs every informer (also ones requested later); stop ends them all."""
    first = factory.informer_for(InformerKey("v1/pods"))
    factory.start()
    late = factory.informer_for(InformerKey("v1/configmaps"))
    assert all(factory.wait_for_cache_sync(WAIT).values())
    assert first.lister.get("default/seed") and late.lister.get("default/seed")
    factory.stop()
    assert all(not s.open_watches() for s in factory.servers.values())


def test_later_requests_add_their_indexers(factory):
    """Indexers from a second request are added to the shared informer; a clashing name raises."""
    key = InformerKey("v1/pods")
    def by_name(o):
        return [o["metadata"]["name"]]
    informer = factory.informer_for(key, indexers={"a": by_name})
    factory.informer_for(key, indexers={"a": by_name, "b": by_name})
    assert set(informer.indexer.get_indexers()) >= {"a", "b"}
    with pytest.raises(IndexConflictError):
        factory.informer_for(key, indexers={"a": lambda o: []})


def test_several_namespaces_give_one_logical_informer_over_shared_ones(factory):
    """namespaces [a, b]: one informer per namespace, shared with single-namespace requests;
    the lister routes keys by namespace and handlers hear from both."""
    from pipeline_fakes import Recorder

    base = InformerKey("v1/pods")
    multi = factory.informer_for_namespaces(base, ["b", "a"])
    assert multi.informers["a"] is factory.informer_for(InformerKey("v1/pods", "a"))
    assert factory.informer_for_namespaces(base, None) is factory.informer_for(base)
    assert factory.informer_for_namespaces(base, ["a"]) is multi.informers["a"]
    rec = Recorder()
    multi.add_event_handler(rec)
    factory.start()
    assert multi.wait_for_sync(WAIT)
    assert rec.wait_count(2)
    factory.servers[InformerKey("v1/pods", "b")].create(pod("x", "b"))
    assert rec.wait_count(3)
    assert multi.lister.get("b/x")["metadata"]["name"] == "x"
    assert multi.lister.get("a/x") is None and multi.lister.get("zz/x") is None
    assert len(multi.lister.list()) == 3 and len(multi.lister.list("b")) == 1
