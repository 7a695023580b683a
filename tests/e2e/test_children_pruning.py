"""examples/configs/children-pruning.yaml end to end, on the embedded and a real kube-apiserver:
children applied with the ApplySet label, the parent's ApplySet metadata, a removed name pruned,
and what the set did not create left alone (an unlabelled look-alike, another set's child)."""

from __future__ import annotations

import pytest

from kinrun.actions.applyset import GROUP_KINDS, ID_LABEL, PART_OF, TOOLING, applyset_id

from .conftest import Cluster
from .harness import get_or_none, wait_for_object

pytestmark = pytest.mark.e2e

CONFIG = "examples/configs/children-pruning.yaml"


def _cm(name: str, labels: dict | None = None, data: dict | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels or {}}, "data": data or {}}


def test_children_are_applied_pruned_and_others_survive(cluster: Cluster) -> None:
    other_set = {PART_OF: "applyset-some-other-set-v1"}
    proc = cluster.run(CONFIG, seeds=[
        _cm("team", {"kinrun.dev/children": "true"}, {"names": "a, b"}),
        _cm("team-old", data={"name": "old"}),          # named like a child, not labelled
        _cm("team-other", other_set),                    # a child of another ApplySet
    ])
    client, ns = cluster.client, cluster.namespace
    set_id = applyset_id("team", ns, "ConfigMap", "")
    parent = wait_for_object(client, "v1", "ConfigMap", "team", ns, lambda o: bool(
        o and (o["metadata"].get("annotations") or {}).get(GROUP_KINDS) == "ConfigMap"))
    assert parent["metadata"]["labels"][ID_LABEL] == set_id
    assert parent["metadata"]["annotations"][TOOLING].startswith("kinrun/v")
    for name in ("a", "b"):
        child = wait_for_object(client, "v1", "ConfigMap", f"team-{name}", ns,
                                lambda o: o is not None)
        assert child["metadata"]["labels"][PART_OF] == set_id
        assert child["data"] == {"parent": "team", "name": name}
        owner = child["metadata"]["ownerReferences"][0]
        assert (owner["name"], owner["uid"], owner["controller"]) == (
            "team", parent["metadata"]["uid"], True)

    client.patch("v1", "ConfigMap", "team", {"data": {"names": "a"}}, namespace=ns)
    wait_for_object(client, "v1", "ConfigMap", "team-b", ns, lambda o: o is None)
    proc.wait_for(rf"delete ConfigMap {ns}/team-b$")
    assert get_or_none(client, "v1", "ConfigMap", "team-a", ns) is not None
    assert get_or_none(client, "v1", "ConfigMap", "team-old", ns)["data"] == {"name": "old"}
    assert get_or_none(client, "v1", "ConfigMap", "team-other", ns) is not None
    client.delete("v1", "ConfigMap", "team", ns)
    proc.wait_for(rf"{ns}/team is gone: the garbage collector deletes its children")
    assert proc.stop() == 0
    assert proc.count(r"delete ConfigMap .*team-(a|old|other)$") == 0
