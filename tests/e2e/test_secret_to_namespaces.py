"""examples/configs/secret-to-namespaces.yaml as ``kinrun CONFIG`` on the embedded and the real
kube-apiserver: the source Secret created after start fans out to every Namespace (through the
mapTo template's ``list``), a Namespace created later gets its copy, and an update of the
source updates every copy.

On the real server kinrun runs without ``--namespace`` (which would move the source informer
out of kinrun-system): it copies into every namespace of the shared envtest server, each test
namespace so far included; they are never deleted there (no controller-manager), and the
copies are harmless to the other tests (each makes namespaces of its own).
"""

from __future__ import annotations

import base64

import pytest

from kinrun.errors import ConflictError

from .conftest import Cluster
from .harness import KinrunProcess, wait_for_object

pytestmark = pytest.mark.e2e

CONFIG = "examples/configs/secret-to-namespaces.yaml"
SOURCE_NS, NAME = "kinrun-system", "registry-credentials"


def namespace(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def secret(value: str) -> dict:
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": NAME, "namespace": SOURCE_NS},
            "data": {"token": base64.b64encode(value.encode()).decode()}}


def start(cluster: Cluster, namespaces: list[str]) -> KinrunProcess:
    """kinrun on the example with ``namespaces`` (and kinrun-system) existing, no source yet."""
    if cluster.backend == "embedded":
        return cluster.run(CONFIG, seeds=[namespace(n) for n in [SOURCE_NS, *namespaces]])
    client = cluster.client
    for name in [SOURCE_NS, *namespaces]:
        try:
            client.create(namespace(name))
        except ConflictError:  # kinrun-system stays on the shared server
            pass
    try:
        client.delete("v1", "Secret", NAME, SOURCE_NS)
    except Exception:  # noqa: BLE001 - absent is what we want
        pass
    proc = KinrunProcess([CONFIG, "--kubeconfig", cluster.server.kubeconfig_path])
    cluster.processes.append(proc)
    return proc


def has_token(value: str):
    token = base64.b64encode(value.encode()).decode()
    return lambda obj: obj is not None and (obj.get("data") or {}).get("token") == token


def test_secret_fans_out_to_every_namespace(cluster: Cluster) -> None:
    team_a, team_b, late = (cluster.name(n) for n in ("team-a", "team-b", "team-late"))
    proc = start(cluster, [team_a, team_b])
    proc.wait_for(r"controller secret-to-namespaces started with 1 worker")
    proc.wait_for(rf"{team_a}: no source Secret kinrun-system/registry-credentials yet")
    client = cluster.client
    client.create(secret("v1"))
    for ns in (team_a, team_b, "default"):
        copy = wait_for_object(client, "v1", "Secret", NAME, ns, has_token("v1"))
        owner = copy["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("Namespace", ns)
        assert copy["type"] == "Opaque"
    client.create(namespace(late))
    wait_for_object(client, "v1", "Secret", NAME, late, has_token("v1"))
    client.patch("v1", "Secret", NAME, {"data": {"token": base64.b64encode(b"v2").decode()}},
                 namespace=SOURCE_NS)
    for ns in (team_a, team_b, late, "default"):
        wait_for_object(client, "v1", "Secret", NAME, ns, has_token("v2"))
    assert proc.count(r"apply Secret kinrun-system/") == 0  # never into its own namespace
    assert proc.stop() == 0
