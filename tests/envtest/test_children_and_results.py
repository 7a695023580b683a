"""applySet and results of earlier actions on the real kube-apiserver, through ActionProgram
with the real Client: children in two namespaces (additional-namespaces), pruned in the other
one; a stale parent cache is a 409 (retried), never a smaller record; create with generateName
whose uid a later action reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.actions import compile_actions
from kinrun.actions.applyset import GROUP_KINDS, ID_LABEL, NAMESPACES, PART_OF, applyset_id
from kinrun.errors import ConflictError, NotFoundError
from kinrun.kube import Client
from kinrun.testing.envtest import EnvtestServer, unique_namespace_name


@pytest.fixture
def client(envtest_server: EnvtestServer) -> Iterator[Client]:
    with Client.from_config(kubeconfig=envtest_server.kubeconfig_path) as c:
        yield c


def _parent(client: Client, ns: str, names: str) -> dict[str, Any]:
    try:
        current = client.get("v1", "ConfigMap", "team", ns)
    except NotFoundError:
        return client.create({"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "team", "namespace": ns},
                              "data": {"names": names}})
    return client.patch("v1", "ConfigMap", "team", {"data": {"names": names}}, namespace=ns) \
        if current["data"]["names"] != names else current


def _program(other: str):
    manifests = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
                 "  name: 'team-{{ n.split(\":\")[0] }}'\n"
                 "  namespace: '{{ \"" + other + "\" if \":far\" in n"
                 " else obj.metadata.namespace }}'\n"
                 "data: {n: '{{ n }}'}\n")
    return compile_actions([{"applySet": {"forEach": "obj.data.names.split()", "as": "n",
                                          "manifests": manifests}}], controller="c")


def test_children_in_another_namespace_are_recorded_and_pruned_there(
        client: Client, envtest_server: EnvtestServer, envtest_namespace: str) -> None:
    ns, other = envtest_namespace, unique_namespace_name("applyset-other")
    envtest_server.create_namespace(other)
    prog = _program(other)
    parent = _parent(client, ns, "a b:far")
    prog.run(key=f"{ns}/team", obj=parent, client=client)
    parent = client.get("v1", "ConfigMap", "team", ns)
    set_id = applyset_id("team", ns, "ConfigMap", "")
    assert parent["metadata"]["labels"][ID_LABEL] == set_id
    assert parent["metadata"]["annotations"][NAMESPACES] == other
    far = client.get("v1", "ConfigMap", "team-b", other)
    assert far["metadata"]["labels"][PART_OF] == set_id
    assert "ownerReferences" not in far["metadata"]  # another namespace: no owner reference
    assert client.get("v1", "ConfigMap", "team-a", ns)["metadata"]["ownerReferences"]

    parent = _parent(client, ns, "a")
    prog.run(key=f"{ns}/team", obj=parent, client=client)
    with pytest.raises(NotFoundError):
        client.get("v1", "ConfigMap", "team-b", other)
    parent = client.get("v1", "ConfigMap", "team", ns)
    assert NAMESPACES not in parent["metadata"]["annotations"]
    assert parent["metadata"]["annotations"][GROUP_KINDS] == "ConfigMap"


def test_a_stale_parent_is_a_conflict_not_a_smaller_record(
        client: Client, envtest_namespace: str) -> None:
    """The parent patch carries the cached resourceVersion: with a stale cache the server
    answers 409 (the controller retries) and what the parent records is left as it was."""
    ns = envtest_namespace
    stale = _parent(client, ns, "a")
    prog = compile_actions([{"applySet": {"manifests": [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]}}], controller="c")
    prog.run(key=f"{ns}/team", obj=stale, client=client)  # records Secret
    other = compile_actions([{"applySet": {"manifests": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "team-x"}}]}}],
        controller="c")
    with pytest.raises(ConflictError):
        other.run(key=f"{ns}/team", obj=stale, client=client)  # the cache predates the record
    parent = client.get("v1", "ConfigMap", "team", ns)
    assert parent["metadata"]["annotations"][GROUP_KINDS] == "Secret"


def test_a_created_childs_uid_is_read_by_a_later_action(
        client: Client, envtest_namespace: str) -> None:
    ns = envtest_namespace
    parent = _parent(client, ns, "a")
    prog = compile_actions([
        {"name": "make-run", "create": {"manifest": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: 'run-'}\n")}},
        {"apply": {"manifest": (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: last-run}\n"
            "data: {name: \"{{ results['make-run'].metadata.name }}\","
            " uid: \"{{ results['make-run'].metadata.uid }}\"}\n")}},
    ], controller="c")
    prog.run(key=f"{ns}/team", obj=parent, client=client)
    record = client.get("v1", "ConfigMap", "last-run", ns)["data"]
    created = client.get("v1", "ConfigMap", record["name"], ns)
    assert record["name"].startswith("run-") and len(record["name"]) > len("run-")
    assert record["uid"] == created["metadata"]["uid"]
