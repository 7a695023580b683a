"""Smoke tests of the envtest fixture through the unmodified official ``kubernetes`` client."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import urllib3
from kubernetes import client as kclient
from kubernetes import config as kconfig
from kubernetes import watch as kwatch

from kinrun.testing.envtest import EnvtestServer


@pytest.fixture(scope="module")
def core_v1(envtest_server: EnvtestServer) -> Iterator[kclient.CoreV1Api]:
    """CoreV1Api built from the fixture's kubeconfig."""
    api = kconfig.new_client_from_config(config_file=envtest_server.kubeconfig_path)
    yield kclient.CoreV1Api(api)
    api.close()


def _configmap(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_kubeconfig_reaches_server_as_admin(envtest_server: EnvtestServer) -> None:
    """The written kubeconfig points at the https URL and its token passes RBAC as admin."""
    api = kconfig.new_client_from_config(config_file=envtest_server.kubeconfig_path)
    try:
        assert api.configuration.host == envtest_server.url
        assert envtest_server.url.startswith("https://127.0.0.1:")
        resp = api.call_api("GET", f"{envtest_server.url}/api/v1/namespaces/kube-system",
                            header_params={"Authorization": f"Bearer {envtest_server.token}"})
        resp.read()
        assert resp.status == 200
        assert json.loads(resp.data)["metadata"]["name"] == "kube-system"
    finally:
        api.close()


def test_official_client_creates_lists_and_watches_configmap(
        core_v1: kclient.CoreV1Api, envtest_namespace: str) -> None:
    """create -> list (raw JSON) -> watch from the list's resourceVersion sees a later update."""
    ns = envtest_namespace
    core_v1.create_namespaced_config_map(ns, _configmap("smoke", k="v1"))
    raw = core_v1.list_namespaced_config_map(ns, _preload_content=False)
    listed = json.loads(raw.read())
    assert [i["metadata"]["name"] for i in listed["items"]] == ["smoke"]
    core_v1.patch_namespaced_config_map("smoke", ns, {"data": {"k": "v2"}})

    stream = kwatch.Watch().stream(core_v1.list_namespaced_config_map, ns,
                                   resource_version=listed["metadata"]["resourceVersion"],
                                   timeout_seconds=5, deserialize=False)
    first = next(iter(stream))
    assert first["type"] == "MODIFIED"
    assert first["object"]["data"] == {"k": "v2"}
    core_v1.delete_namespaced_config_map("smoke", ns)


def test_unknown_token_is_unauthorized(envtest_server: EnvtestServer) -> None:
    """Token authentication is on: a wrong bearer token gets 401, the admin token 200."""
    def status(token: str) -> int:
        http = urllib3.PoolManager(cert_reqs="CERT_NONE")
        resp = http.request("GET", f"{envtest_server.url}/api/v1/namespaces",
                            headers={"Authorization": f"Bearer {token}"}, retries=False)
        return resp.status

    assert status("wrong-token") == 401
    assert status(envtest_server.token) == 200
