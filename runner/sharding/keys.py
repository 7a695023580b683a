"""The labels of a ring and the hash keys of objects.

Labels (one ring per config, ``sharding.ring``; kinrun's own prefix, in the form of
timebertt/kubernetes-controller-sharding's ``shard.alpha.sharding.timebertt.dev/<ring>``):

* ``shard.kinrun.dev/<ring>: <replica>`` on every sharded object: which replica reconciles it.
  Each replica's informers select ``shard.kinrun.dev/<ring>=<itself>``.
* ``drain.kinrun.dev/<ring>: "true"`` while the sharder moves an object away from a live
  replica: that replica stops reconciling it and acknowledges by removing both labels.
* ``kinrun.dev/ring: <ring>`` on each replica's membership Lease.

Hash keys (timebertt ``pkg/sharding/key``): ``group/Kind/namespace/name`` of the object, or of
its controller (the owner reference with ``controller: true``) for an owned child, so that an
object and its children hash alike and land on the same replica. The object's own uid is not
part of it (owner references carry only the name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PREFIX = "kinrun.dev"
RING_LABEL = f"{PREFIX}/ring"
"""The label on a membership Lease naming its ring."""


def shard_label(ring: str) -> str:
    """``shard.kinrun.dev/<ring>``: the label naming an object's replica."""
    return f"shard.{PREFIX}/{ring}"


def drain_label(ring: str) -> str:
    """``drain.kinrun.dev/<ring>``: present while the object is drained from its replica."""
    return f"drain.{PREFIX}/{ring}"


def group_of(api_version: str) -> str:
    """The API group of ``api_version`` ("" for the core group ``v1``)."""
    return api_version.rpartition("/")[0]


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    """``metadata.labels`` of ``obj`` ({} when absent)."""
    return (obj.get("metadata") or {}).get("labels") or {}


def object_key(group: str, kind: str, obj: Mapping[str, Any]) -> str:
    """The hash key of ``obj`` itself, an object of ``group``/``kind``."""
    meta = obj.get("metadata") or {}
    return f"{group}/{kind}/{meta.get('namespace') or ''}/{meta.get('name') or ''}"


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The owner reference of ``obj`` with ``controller: true`` (at most one exists), or
    None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("name") and ref.get("kind"):
            return ref
    return None


def controller_key(obj: Mapping[str, Any]) -> str | None:
    """The hash key of ``obj``'s controller (its namespace is ``obj``'s: owners live in their
    dependent's namespace), or None when it has no controller reference."""
    ref = controller_ref(obj)
    if ref is None:
        return None
    namespace = (obj.get("metadata") or {}).get("namespace") or ""
    return f"{group_of(str(ref.get('apiVersion') or ''))}/{ref['kind']}/{namespace}/{ref['name']}"


__all__ = ["PREFIX", "RING_LABEL", "controller_key", "controller_ref", "drain_label",
           "group_of", "labels_of", "object_key", "shard_label"]
