"""Sharding at admission: new sharded objects are labelled by a mutating webhook at create.

As timebertt/kubernetes-controller-sharding's second iteration (docs/design.md "Don't Watch
Sharded Objects": the sharder's webhook assigns new objects), with ``sharding.admission:
true`` every replica's webhook server (``kinrun.admission``) also serves the mutating webhook
``<ring>.shard.kinrun.dev`` (:func:`shard_webhook`): CREATE of each sharded resource,
``failurePolicy: Ignore``, 5 s. For a new object without the ring's shard label it answers a
JSON patch adding ``shard.kinrun.dev/<ring>=<member>``, the member the consistent-hash ring of
the live members gives for the object's hash key (a primary: its own
``group/Kind/namespace/name``; an owned child: its controller owner's, so it lands where its
owner is in the steady state), exactly what the sharder's :func:`decide_primary` /
:func:`decide_owned` would write. The ring comes from the members' Leases, listed at most
once per ``retryPeriod`` by each replica (:class:`MemberView`, judged on the replica's own
clock as the sharder judges them). No live member, a view not bound yet, or an object already
labelled: allowed unchanged. The sharder's watch stays: it labels what admission missed
(webhook down: Ignore), corrects a child whose owner was being moved, and moves objects when
membership changes.

Where kinrun departs from timebertt's: the webhook runs in every replica (no separate sharder
deployment), and its objectSelector is not narrowed to the informers' label selectors (an
object of a sharded resource that no informer selects gets a label nothing reads).

Thread-safety: :class:`ShardLabeller` answers from any webhook worker; its view is replaced
whole; :class:`MemberView` lists under a lock.
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.config.model import AdmissionSpec, Config, WebhookSpec
from kinrun.crds import CrdSet
from kinrun.errors import ConfigError, KinrunError
from kinrun.kube.builtin_kinds import builtin_kind, builtin_resource
from kinrun.kube.client import LEASE
from kinrun.sharding.keys import (RING_LABEL, controller_key, group_of, labels_of, object_key,
                                  shard_label)
from kinrun.sharding.membership import MembershipSpec, MemberTracker
from kinrun.sharding.ring import Ring
from kinrun.sharding.scope import OWNED, sharded_informers

_log = logging.getLogger("kinrun.sharding")

SHARD = "shard"
"""``WebhookSpec.builtin`` of the shard webhook (served by :class:`ShardLabeller`)."""
TIMEOUT_SECONDS = 5


def webhook_name(ring: str) -> str:
    """``<ring>.shard.kinrun.dev``: the shard webhook's name (and path ``/mutate/<name>``)."""
    return f"{ring}.shard.kinrun.dev"


def sharded_resources(config: Config) -> dict[tuple[str, str, str], tuple[str, str]]:
    """(group, version, plural) -> (role, kind) of every sharded informer, resolved offline:
    built-in kinds, the informer's ``resource``, or the config's ``crds:``. Raises
    ConfigError naming the informer when its plural or kind cannot be known so."""
    crds: CrdSet | None = None
    out = {}
    for name, role in sharded_informers(config).items():
        inf = config.informers[name]
        group, version = group_of(inf.api_version), inf.api_version.rpartition("/")[2]
        plural = inf.resource or builtin_resource(inf.api_version, inf.kind or "")
        kind = inf.kind or builtin_kind(inf.api_version, inf.resource or "")
        if plural is None or kind is None:
            crds = crds if crds is not None else CrdSet.load(config.crds, config.base_dir)
            found = crds.lookup(inf.api_version, inf.kind or inf.resource or "")
            if found is None:
                raise ConfigError(
                    f"sharding.admission: the plural and kind of informer {name!r} "
                    f"({inf.api_version} {inf.kind or inf.resource}) are not known without a "
                    "cluster: give its CRD under crds:", file=config.file)
            plural, kind = found.plural, found.kind
        out[(group, version, plural)] = (role, kind)
    return out


def shard_webhook(config: Config) -> WebhookSpec | None:
    """The shard webhook of ``config`` (None without ``sharding.admission``); ConfigError as
    :func:`sharded_resources`."""
    if config.sharding is None or not config.sharding.admission:
        return None
    rules = tuple({"apiGroups": [group], "apiVersions": [version], "resources": [plural],
                   "operations": ["CREATE"]}
                  for group, version, plural in sharded_resources(config))
    return WebhookSpec(name=webhook_name(config.sharding.ring), type="mutating", rules=rules,
                       failure_policy="Ignore", timeout_seconds=TIMEOUT_SECONDS, builtin=SHARD)


def effective_admission(config: Config) -> AdmissionSpec | None:
    """``admission:`` with the shard webhook added (an ``admission:`` of defaults when the
    config has none): what the run serves, ``kinrun manifests`` registers and ``kinrun
    rbac`` grants for."""
    shard = shard_webhook(config)
    if shard is None:
        return config.admission
    base = config.admission or AdmissionSpec(webhooks=())
    return dataclasses.replace(base, webhooks=(*base.webhooks, shard))


def builtin_webhooks(config: Config, spec: AdmissionSpec | None) -> dict[str, ShardLabeller]:
    """path -> program of the webhooks of ``spec`` that kinrun serves itself (the shard
    webhook), for ``kinrun.admission.compile_admission``."""
    out = {}
    for hook in spec.webhooks if spec is not None else ():
        if hook.builtin == SHARD and config.sharding is not None:
            out[hook.path] = ShardLabeller(hook, config.sharding.ring, sharded_resources(config))
    return out


def bind_views(program: Any, client: Any, spec: MembershipSpec, clock: Clock = REAL_CLOCK
               ) -> int:
    """Give each ShardLabeller of ``program`` (a ``kinrun.admission.AdmissionProgram``, or
    None) a MemberView of ``spec`` through ``client``; returns how many."""
    labellers = [p for p in (program.webhooks.values() if program is not None else ())
                 if isinstance(p, ShardLabeller)]
    for labeller in labellers:
        labeller.view = MemberView(client, spec, clock).ring
    return len(labellers)


class MemberView:
    """The ring of live members as one replica sees it: the ring's Leases listed through
    ``client`` at most once per ``spec.retry_period`` seconds of ``clock`` (a failed list
    keeps the last ring), judged by a MemberTracker on this replica's clock."""

    def __init__(self, client: Any, spec: MembershipSpec, clock: Clock = REAL_CLOCK) -> None:
        self.client, self.spec, self.clock = client, spec, clock
        self._tracker = MemberTracker(clock, spec.lease_duration, spec.election_lease)
        self._lock = threading.Lock()
        self._ring: Ring | None = None
        self._listed = float("-inf")

    def ring(self) -> Ring | None:
        """The ring of the live members (None before the first successful list)."""
        with self._lock:
            now = self.clock.now()
            if now - self._listed >= self.spec.retry_period:
                self._listed = now
                try:
                    listed = self.client.lister_watcher(
                        LEASE, namespace=self.spec.namespace,
                        label_selector=f"{RING_LABEL}={self.spec.ring}").list()
                    self._ring = Ring(self._tracker.observe(listed.items).live)
                except KinrunError as exc:
                    _log.warning("sharding admission: cannot list the ring's Leases: %s", exc)
            return self._ring


class ShardLabeller:
    """The shard webhook's answers (the interface of ``kinrun.admission.WebhookProgram``):
    ``spec`` (its WebhookSpec), ``ring`` name, ``resources`` ((group, version, plural) ->
    (role, kind)), ``view``: a callable giving the current Ring or None, set by the run."""

    def __init__(self, spec: WebhookSpec, ring: str,
                 resources: Mapping[tuple[str, str, str], tuple[str, str]]) -> None:
        self.spec, self.label, self.resources = spec, shard_label(ring), dict(resources)
        self.view: Callable[[], Ring | None] = lambda: None

    def review(self, review: Mapping[str, Any], listers: Mapping[str, Any] | None = None
               ) -> dict[str, Any]:
        """The AdmissionReview (v1) answering ``review``: always allowed, with a patch adding
        the shard label when one is decided. Raises ValueError for a body that is not an
        AdmissionReview with a request."""
        request = review.get("request") if isinstance(review, Mapping) else None
        if not isinstance(request, Mapping) or not request.get("uid"):
            raise ValueError("not an AdmissionReview with a request and its uid")
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        member = self.decide(request)
        if member is not None:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(orjson.dumps(
                self._ops(request.get("object") or {}, member))).decode()
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                "response": response}

    def decide(self, request: Mapping[str, Any]) -> str | None:
        """The member a new object goes to, or None (not a CREATE of a sharded resource,
        labelled already, no controller owner for a child, a primary named by
        ``generateName`` (its name is made after admission), no ring yet)."""
        obj = request.get("object")
        res = request.get("resource") or {}
        found = self.resources.get((res.get("group", ""), res.get("version", ""),
                                    res.get("resource", "")))
        if request.get("operation") != "CREATE" or not isinstance(obj, Mapping) \
                or found is None or self.label in labels_of(obj):
            return None
        role, kind = found
        meta = dict(obj.get("metadata") or {})  # as stored: the namespace of the request's URL
        meta["namespace"] = meta.get("namespace") or request.get("namespace") or ""
        if role == OWNED:
            key = controller_key({"metadata": meta})
        elif not meta.get("name"):
            return None  # generateName: the name comes after admission; the sharder labels it
        else:
            key = object_key(res.get("group", ""), kind, {"metadata": meta})
        ring = self.view()
        return ring.owner(key) if ring is not None and key is not None else None

    def _ops(self, obj: Mapping[str, Any], member: str) -> list[dict[str, Any]]:
        meta = obj.get("metadata") or {}
        if not meta.get("labels"):
            return [{"op": "add", "path": "/metadata/labels", "value": {self.label: member}}]
        escaped = self.label.replace("~", "~0").replace("/", "~1")
        return [{"op": "add", "path": f"/metadata/labels/{escaped}", "value": member}]
