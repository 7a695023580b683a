"""Sharding at admission (kinrun.sharding.admission): the shard webhook assigns a new object
the member the sharder would (decide_primary), a child its controller owner's, and leaves
alone what it cannot decide; `sharding.admission` adds the webhook to what is served,
deployed and granted."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.sharding.admission import (ShardLabeller, bind_views, effective_admission,
                                       shard_webhook)
from kinrun.sharding.keys import object_key
from kinrun.sharding.membership import Snapshot
from kinrun.sharding.ring import Ring
from kinrun.sharding.sharder import decide_primary

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"
CONFIG = HEAD + textwrap.dedent("""\
    informers:
      databases: {apiVersion: v1, kind: ConfigMap}
      dsns: {apiVersion: v1, kind: Secret}
    controllers:
      - name: c
        for: databases
        watches: [{informer: dsns, mapTo: owner}]
        reconcile: {actions: [{log: "{{ key }}"}]}
    sharding: {ring: db, admission: true}
    """)
RING = Ring(["r1", "r2", "r3"])


def labeller() -> ShardLabeller:
    config = load_text(CONFIG, file="c.yaml")
    spec = shard_webhook(config)
    assert spec is not None
    out = ShardLabeller(spec, "db", {("", "v1", "configmaps"): ("primary", "ConfigMap"),
                                     ("", "v1", "secrets"): ("owned", "Secret")})
    out.view = lambda: RING
    return out


def request(resource: str, obj: dict[str, Any], operation: str = "CREATE") -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u1", "operation": operation, "namespace": "ns",
                        "resource": {"group": "", "version": "v1", "resource": resource},
                        "object": obj}}


def patch_of(answer: dict[str, Any]) -> list[dict[str, Any]] | None:
    response = answer["response"]
    assert response["allowed"] is True and response["uid"] == "u1"
    return orjson.loads(base64.b64decode(response["patch"])) if "patch" in response else None


def test_a_new_primary_gets_the_member_the_sharder_would_assign() -> None:
    """The label is decide_primary's for the same object and ring (the stored object has its
    namespace from the URL)."""
    obj = {"metadata": {"name": "db1", "labels": {"app": "x"}}}
    ops = patch_of(labeller().review(request("configmaps", obj)))
    stored = {"metadata": {"name": "db1", "namespace": "ns"}}
    wanted = decide_primary({}, object_key("", "ConfigMap", stored), RING, Snapshot({}, {}),
                            "db").labels["shard.kinrun.dev/db"]
    assert ops == [{"op": "add", "path": "/metadata/labels/shard.kinrun.dev~1db",
                    "value": wanted}]


def test_an_owned_child_follows_its_controller_owner() -> None:
    """A Secret owned by ConfigMap db1 gets db1's member; without labels the whole map."""
    owner = patch_of(labeller().review(request("configmaps", {"metadata": {"name": "db1"}})))
    child = {"metadata": {"name": "db1-dsn", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "db1", "uid": "x",
         "controller": True}]}}
    ops = patch_of(labeller().review(request("secrets", child)))
    assert owner is not None and ops == [{"op": "add", "path": "/metadata/labels",
                                          "value": {"shard.kinrun.dev/db": owner[0]["value"]
                                                    ["shard.kinrun.dev/db"]}}]


@pytest.mark.parametrize("resource,obj,operation", [
    ("configmaps", {"metadata": {"name": "a", "labels": {"shard.kinrun.dev/db": "r9"}}},
     "CREATE"),
    ("configmaps", {"metadata": {"generateName": "a-"}}, "CREATE"),
    ("secrets", {"metadata": {"name": "orphan"}}, "CREATE"),
    ("pods", {"metadata": {"name": "p"}}, "CREATE"),
    ("configmaps", {"metadata": {"name": "a"}}, "UPDATE"),
], ids=["labelled-already", "generate-name", "child-without-owner", "not-sharded", "update"])
def test_what_cannot_or_need_not_be_decided_is_allowed_unchanged(
        resource: str, obj: dict[str, Any], operation: str) -> None:
    """The sharder's watch labels these (or they need nothing)."""
    assert patch_of(labeller().review(request(resource, obj, operation))) is None


def test_no_ring_yet_allows_unchanged() -> None:
    """Before the view has listed the Leases (or with no live member) nothing is decided."""
    unbound = labeller()
    unbound.view = lambda: None
    assert patch_of(unbound.review(request("configmaps", {"metadata": {"name": "a"}}))) is None


def test_the_config_adds_the_shard_webhook_to_what_is_served() -> None:
    """Without admission: an admission of defaults with the one webhook, Ignore, CREATE of
    each sharded resource; bind_views gives the compiled labeller its ring view."""
    config = load_text(CONFIG, file="c.yaml")
    spec = effective_admission(config)
    assert spec is not None and [w.name for w in spec.webhooks] == ["db.shard.kinrun.dev"]
    hook = spec.webhooks[0]
    assert (hook.type, hook.failure_policy, hook.builtin) == ("mutating", "Ignore", "shard")
    assert [r["resources"] for r in hook.rules] == [["configmaps"], ["secrets"]]
    from kinrun.plan import plan
    compiled = plan(config)
    assert compiled.settings.webhooks
    assert bind_views(compiled.admission, object(), _membership()) == 1


def _membership() -> Any:
    from kinrun.sharding.membership import MembershipSpec
    return MembershipSpec("db", "default", 15.0, 10.0, 2.0)


def test_a_custom_kind_without_its_crd_is_refused_naming_the_informer(tmp_path: Path) -> None:
    """The rules need the plural: without a cluster it comes from crds: (never guessed)."""
    text = CONFIG.replace("{apiVersion: v1, kind: ConfigMap}",
                          "{apiVersion: example.com/v1, kind: Database}")
    with pytest.raises(ConfigError, match="informer 'databases'.*crds:"):
        shard_webhook(load_text(text, file=str(tmp_path / "c.yaml")))


def test_admission_without_webhooks_needs_sharding_admission() -> None:
    """`admission:` may leave webhooks out only when sharding.admission adds one."""
    text = HEAD + textwrap.dedent("""\
        informers:
          x: {apiVersion: v1, kind: ConfigMap}
        controllers: [{name: c, for: x, reconcile: {actions: [{log: hi}]}}]
        admission: {port: 0}
        """)
    with pytest.raises(ConfigError, match="no webhooks to serve"):
        load_text(text, file="c.yaml")
    load_text(text + "sharding: {ring: r, admission: true}\n", file="c.yaml")
