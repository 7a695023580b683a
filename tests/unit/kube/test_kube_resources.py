"""ResourceRef REST paths and apiVersion parsing."""

from __future__ import annotations

import pytest

from kinrun.kube.resources import ResourceRef, split_api_version

PODS = ResourceRef("", "v1", "pods", "Pod", namespaced=True)
DEPLOY = ResourceRef("apps", "v1", "deployments", "Deployment", namespaced=True)
NODES = ResourceRef("", "v1", "nodes", "Node", namespaced=False)


@pytest.mark.parametrize(("ref", "args", "path"), [
    pytest.param(PODS, (None,), "/api/v1/pods", id="all-namespaces"),
    pytest.param(PODS, ("ns",), "/api/v1/namespaces/ns/pods", id="namespace"),
    pytest.param(PODS, ("ns", "p"), "/api/v1/namespaces/ns/pods/p", id="object"),
    pytest.param(PODS, ("ns", "p", "status"), "/api/v1/namespaces/ns/pods/p/status",
                 id="subresource"),
    pytest.param(DEPLOY, ("ns", "d"), "/apis/apps/v1/namespaces/ns/deployments/d", id="group"),
    pytest.param(NODES, ("ignored", "n1"), "/api/v1/nodes/n1", id="cluster-scoped"),
    pytest.param(PODS, ("ns", "a b/c"), "/api/v1/namespaces/ns/pods/a%20b%2Fc", id="quoted"),
])
def test_paths(ref: ResourceRef, args: tuple, path: str) -> None:
    """Paths follow /api vs /apis, namespaces, names and subresources."""
    assert ref.path(*args) == path


def test_namespaced_object_needs_namespace() -> None:
    """A namespaced object path without a namespace is refused."""
    with pytest.raises(ValueError, match="namespaced"):
        PODS.path(None, "p")


def test_subresource_needs_name() -> None:
    """A subresource of a collection is refused."""
    with pytest.raises(ValueError):
        PODS.path("ns", None, "status")


@pytest.mark.parametrize(("value", "expected"), [
    ("v1", ("", "v1")), ("apps/v1", ("apps", "v1")), (" batch/v1 ", ("batch", "v1"))])
def test_split_api_version(value: str, expected: tuple[str, str]) -> None:
    """apiVersion splits into group and version; core has no group."""
    assert split_api_version(value) == expected


@pytest.mark.parametrize("value", ["", "/v1", "a/", "a/b/c"])
def test_split_api_version_rejects_malformed(value: str) -> None:
    """Malformed apiVersions raise ValueError."""
    with pytest.raises(ValueError):
        split_api_version(value)
