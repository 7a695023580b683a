"""Discovery: kind/plural/short-name resolution, caching, one refetch on a miss, suggestions."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from kinrun.kube.discovery import Discovery, UnknownKindError
from kinrun.kube.resources import ResourceRef
from kube_fakes import APPS_V1, DISCOVERY, discovery_get

DEPLOYMENTS = ResourceRef("apps", "v1", "deployments", "Deployment", namespaced=True)


class CountingGet:
    """A discovery `get` over mutable docs that counts fetches per path."""

    def __init__(self) -> None:
        self.docs: dict[str, Any] = copy.deepcopy(DISCOVERY)
        self.fetches: list[str] = []
        self._get = discovery_get(self.docs)

    def __call__(self, path: str) -> Any:
        self.fetches.append(path)
        return self._get(path)


@pytest.mark.parametrize("name", ["Deployment", "deployments", "deployment", "deploy",
                                  "DEPLOYMENT", "Deploy"])
def test_every_name_form_resolves_to_the_resource(name: str) -> None:
    """Kind, plural, singular and short names (any case) all find Deployment."""
    assert Discovery(discovery_get()).resolve("apps/v1", name) == DEPLOYMENTS


def test_core_group_and_cluster_scope() -> None:
    """`v1` is the core group; Namespace is cluster-scoped."""
    ref = Discovery(discovery_get()).resolve("v1", "Namespace")
    assert ref == ResourceRef("", "v1", "namespaces", "Namespace", namespaced=False)
    assert ref.api_version == "v1" and ref.id == "v1/namespaces"


def test_ref_identity_strings() -> None:
    """ResourceRef exposes apiVersion and the group/version/resource id."""
    assert DEPLOYMENTS.api_version == "apps/v1"
    assert DEPLOYMENTS.id == "apps/v1/deployments"


def test_group_version_is_fetched_once_then_cached() -> None:
    """Two resolves in one group version fetch its resource list once."""
    get = CountingGet()
    d = Discovery(get)
    d.resolve("apps/v1", "Deployment")
    d.resolve("apps/v1", "sts")
    assert get.fetches == ["/apis/apps/v1"]


def test_miss_refetches_once_and_finds_a_new_kind() -> None:
    """A kind added after the first fetch (a new CRD version) is found by one refetch."""
    get = CountingGet()
    d = Discovery(get)
    d.resolve("apps/v1", "Deployment")
    get.docs["/apis/apps/v1"]["resources"].append(
        {"name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget"})
    assert d.resolve("apps/v1", "Widget").resource == "widgets"
    assert get.fetches == ["/apis/apps/v1", "/apis/apps/v1"]


def test_new_group_version_is_found_without_restart() -> None:
    """A group version that appears later (a CRD installed after start) resolves."""
    get = CountingGet()
    d = Discovery(get)
    with pytest.raises(UnknownKindError):
        d.resolve("example.com/v1", "Widget")
    get.docs["/apis/example.com/v1"] = {"resources": [
        {"name": "widgets", "namespaced": False, "kind": "Widget"}]}
    assert d.resolve("example.com/v1", "Widget").namespaced is False


def test_unknown_kind_names_the_closest_matches() -> None:
    """A misspelt kind is UnknownKindError suggesting the real one."""
    with pytest.raises(UnknownKindError) as info:
        Discovery(discovery_get()).resolve("apps/v1", "Deploymnet")
    assert info.value.suggestions[0] == "Deployment"
    assert "Deploymnet" in str(info.value) and "Deployment" in str(info.value)
    assert info.value.api_version == "apps/v1" and info.value.name == "Deploymnet"


def test_unknown_kind_without_close_match_lists_what_is_served() -> None:
    """When nothing is similar, the message lists the group version's kinds."""
    with pytest.raises(UnknownKindError) as info:
        Discovery(discovery_get()).resolve("apps/v1", "Zebra")
    assert info.value.suggestions == []
    assert "Deployment" in str(info.value) and "StatefulSet" in str(info.value)


def test_unknown_group_version_suggests_served_ones() -> None:
    """An apiVersion the server does not serve suggests the closest served one."""
    with pytest.raises(UnknownKindError) as info:
        Discovery(discovery_get()).resolve("apps/v2", "Deployment")
    assert info.value.suggestions == ["apps/v1"]
    assert "apps/v2" in str(info.value)


def test_subresources_are_never_matched() -> None:
    """`deployments/status` is not a resource name of its own."""
    with pytest.raises(UnknownKindError):
        Discovery(discovery_get()).resolve("apps/v1", "deployments/status")


def test_malformed_api_version_is_unknown_kind_error() -> None:
    """An apiVersion with two slashes is reported, not sent."""
    with pytest.raises(UnknownKindError, match="malformed apiVersion"):
        Discovery(discovery_get()).resolve("a/b/c", "X")


def test_invalidate_forces_a_fetch() -> None:
    """After invalidate() the next resolve fetches again."""
    get = CountingGet()
    d = Discovery(get)
    d.resolve("apps/v1", "Deployment")
    d.invalidate()
    d.resolve("apps/v1", "Deployment")
    assert get.fetches.count("/apis/apps/v1") == 2


def test_resources_lists_the_group_version() -> None:
    """resources() gives every non-subresource of the group version."""
    names = {r.resource for r in Discovery(discovery_get()).resources("apps/v1")}
    assert names == {r["name"] for r in APPS_V1["resources"] if "/" not in r["name"]}


class RendezvousGet(CountingGet):
    """A `get` whose group-version fetches each wait until ``parties`` of them are in flight at
    once (a Barrier): sequential fetches break it (after ``timeout`` seconds) and fail."""

    def __init__(self, parties: int, timeout: float = 10.0) -> None:
        super().__init__()
        self.barrier = threading.Barrier(parties, timeout=timeout)

    def __call__(self, path: str) -> Any:
        if path.count("/") >= 2:  # /api/v1, /apis/GROUP/VERSION (not /api, /apis)
            self.barrier.wait()
        return super().__call__(path)


def test_prefetch_fetches_group_versions_concurrently_and_caches_them() -> None:
    """Three group versions are fetched at once (each fetch waits for the other two), once
    each; resolving in them afterwards sends nothing."""
    get = RendezvousGet(parties=3)
    d = Discovery(get)
    d.prefetch(["apps/v1", "v1", "coordination.k8s.io/v1", "apps/v1"])
    assert not get.barrier.broken
    assert sorted(get.fetches) == ["/api/v1", "/apis/apps/v1", "/apis/coordination.k8s.io/v1"]
    assert d.resolve("apps/v1", "deploy") == DEPLOYMENTS
    d.resolve("v1", "Pod")
    d.resolve("coordination.k8s.io/v1", "Lease")
    assert len(get.fetches) == 3


def test_prefetch_skips_cached_and_single_group_versions() -> None:
    """With one group version left to fetch, prefetch sends nothing (resolve fetches it)."""
    get = CountingGet()
    d = Discovery(get)
    d.resolve("v1", "Pod")
    d.prefetch(["v1", "apps/v1", "not a version/x/y"])
    assert get.fetches == ["/api/v1"]


def test_prefetch_leaves_failures_to_resolve() -> None:
    """A group version the server does not serve is not cached by prefetch; resolve reports
    it as before, with the served versions as suggestions."""
    get = CountingGet()
    d = Discovery(get)
    d.prefetch(["apps/v1", "example.com/v1"])
    assert "/apis/example.com/v1" in get.fetches
    with pytest.raises(UnknownKindError, match="unknown apiVersion 'example.com/v1'"):
        d.resolve("example.com/v1", "Widget")
    assert get.fetches.count("/apis/example.com/v1") == 2  # not cached: fetched again
    assert d.resolve("apps/v1", "Deployment") == DEPLOYMENTS
    assert get.fetches.count("/apis/apps/v1") == 1
