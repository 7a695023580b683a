"""The shard side of a ring: what one replica does with the objects labelled for it.

* Its sharded informers select ``shard.kinrun.dev/<ring>=<identity>`` besides the config's
  own selectors (:meth:`Shard.selector`), so memory, decoding and reconciles split across
  replicas (timebertt/kubernetes-controller-sharding docs/implement-sharding.md, "Filter Watch
  Events").
* Every reconcile passes the gate (:meth:`Shard.wrap`): none starts while the membership
  fence is down (``MemberLease.valid``; the key is put back after
  ``kinrun.fencing.FENCED_RETRY`` seconds, not dropped); an object the cache shows with the
  drain label is not reconciled but acknowledged (:class:`Drain`): once every controller of
  its informer took the key and so none runs it, one merge patch (with the cached
  resourceVersion) removes the shard and drain labels; the sharder then assigns it anew. An
  object whose label names another replica (in transit) is skipped.
* A drain label reaches the workers whatever the controller's predicates say
  (:meth:`Shard.bypass`), as timebertt's drain predicate.
* A primary object that leaves the informer because it moved is not a deletion
  (``kinrun.reconcile`` reason ``moved``: no ``onDelete``): :meth:`moved_away` tells it from
  the final state, :meth:`still_there` from the live object the reconcile GETs.

Thread-safety: the gate runs on worker threads; a Drain's state is guarded by its lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kinrun.errors import NotFoundError
from kinrun.fencing import FENCED_RETRY
from kinrun.reconcile import Matches, Result
from kinrun.sharding.keys import drain_label, labels_of, shard_label

_log = logging.getLogger("kinrun.sharding")

Obj = dict[str, Any]


class Drain:
    """Acknowledges drains of one primary informer's objects for the ``controllers`` that
    reconcile them (names). ``patch(name, namespace, body)`` sends the merge patch."""

    def __init__(self, controllers: set[str], patch: Callable[[str, str | None, Obj], Any],
                 shard: str, drain: str) -> None:
        self.controllers = set(controllers)
        self._patch, self._shard, self._drain = patch, shard, drain
        self._lock = threading.Lock()
        self._holding: dict[str, set[str]] = {}  # key -> controllers that stopped for it
        self._acked: dict[str, str] = {}  # key -> resourceVersion acknowledged
        self.acknowledged = 0  # drains acknowledged (patches sent) since start

    def stop_for(self, controller: str, key: str, obj: Obj, cause: Any = None) -> Result:
        """``controller`` will not reconcile ``key`` (drained); when it is the last of them,
        acknowledge. A conflict (the object changed) retries: the next look decides again."""
        meta = obj.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        with self._lock:
            holding = self._holding.setdefault(key, set())
            holding.add(controller)
            if holding != self.controllers or self._acked.get(key) == rv:
                return Result("done", cause=cause)
        body = {"metadata": {"resourceVersion": rv,
                             "labels": {self._shard: None, self._drain: None}}}
        try:
            self._patch(meta.get("name"), meta.get("namespace"), body)
        except NotFoundError:
            pass
        except Exception as err:  # noqa: BLE001 - retried; the object may have changed
            return Result.failed(err, cause)
        with self._lock:
            self._acked[key] = rv
            self.acknowledged += 1
        _log.debug("drained %s: handed back to the sharder", key)
        return Result("done", cause=cause)

    def resume(self, controller: str, key: str) -> None:
        """``controller`` sees ``key`` undrained (the sharder withdrew the drain)."""
        if self._holding:
            with self._lock:
                holding = self._holding.get(key)
                if holding is not None:
                    holding.discard(controller)
                    if not holding:
                        del self._holding[key]

    def gone(self, key: str) -> None:
        """``key`` left the cache: forget it."""
        if self._holding or self._acked:
            with self._lock:
                self._holding.pop(key, None)
                self._acked.pop(key, None)


class Shard:
    """This replica's part of ring ``ring``: ``identity`` (its label value and Lease name);
    ``fence``: () -> bool, whether a reconcile may start (``MemberLease.valid``; None: always);
    ``client``: for the drain acknowledgements."""

    def __init__(self, ring: str, identity: str, *, fence: Callable[[], bool] | None = None,
                 client: Any = None) -> None:
        self.ring, self.identity, self.fence, self.client = ring, identity, fence, client
        self.shard_label, self.drain_label = shard_label(ring), drain_label(ring)
        self._drains: dict[str, Drain] = {}  # primary informer name -> its Drain
        self._drain_of: dict[str, Drain] = {}  # controller name -> its primary's Drain
        self._fenced_logged = False

    # -- informers ---------------------------------------------------------------------------

    def selector(self, base: str | None) -> str:
        """``base`` (the informer's labelSelector, may be empty) plus this replica's shard
        requirement."""
        mine = f"{self.shard_label}={self.identity}"
        return f"{base},{mine}" if base else mine

    def matches(self, base: Matches | None) -> Matches:
        """The sharded informer's selector test: this replica's label and ``base``."""
        label, me = self.shard_label, self.identity

        def matches(obj: Obj) -> bool | None:
            if labels_of(obj).get(label) != me:
                return False
            return True if base is None else base(obj)
        return matches

    def moved_away(self, final: Obj) -> bool:
        """Whether a departed object's final state names another replica (or none)."""
        return labels_of(final).get(self.shard_label) != self.identity

    def still_there(self, base: Matches | None) -> Callable[[Obj], bool]:
        """Whether the live object (same uid) of a departure still matches the config's own
        selectors: then it only changed replica (or came back): moved, not left."""
        def still(live: Obj) -> bool:
            return base is None or base(live) is not False
        return still

    # -- controllers -------------------------------------------------------------------------

    def register(self, controller: str, informer: str, api_version: str, kind: str) -> None:
        """``controller`` reconciles the objects of sharded primary ``informer``."""
        drain = self._drains.get(informer)
        if drain is None:
            def patch(name: str, namespace: str | None, body: Obj) -> Any:
                return self.client.patch(api_version, kind, name, body, namespace=namespace,
                                         patch_type="merge")
            drain = self._drains[informer] = Drain(set(), patch, self.shard_label,
                                                   self.drain_label)
        drain.controllers.add(controller)
        self._drain_of[controller] = drain

    def acknowledged(self) -> int:
        """Drains acknowledged since start, over every informer."""
        return sum(d.acknowledged for d in self._drains.values())

    def wrap(self, controller: str, reconcile: Callable[..., Any]) -> Callable[..., Any]:
        """The gate around ``controller``'s reconcile (see the module docstring)."""
        drain = self._drain_of.get(controller)
        label, drain_key, me, fence = self.shard_label, self.drain_label, self.identity, self.fence

        def gated(key: str, obj: Obj | None, cause: Any = None) -> Any:
            if fence is not None and not fence():
                if not self._fenced_logged:
                    self._fenced_logged = True
                    _log.error("ring %s: membership not renewed: no more reconciles start",
                               self.ring)
                return Result("requeue", FENCED_RETRY, cause=cause)  # held back, not dropped
            if obj is not None and drain is not None:
                labels = labels_of(obj)
                if drain_key in labels:
                    return drain.stop_for(controller, key, obj, cause)
                if labels.get(label) != me:
                    return Result("done", cause=cause)  # in transit to another replica
                drain.resume(controller, key)
            elif drain is not None:
                drain.gone(key)
            return reconcile(key, obj, cause)
        return gated

    def bypass(self, filtered: Any, unfiltered: Any) -> Any:
        """The primary's event handler: ``filtered`` (with the controller's predicates), but
        an update that sets or removes the drain label goes to ``unfiltered``."""
        return _DrainBypass(filtered, unfiltered, self.drain_label)


class _DrainBypass:
    __slots__ = ("filtered", "unfiltered", "label")

    def __init__(self, filtered: Any, unfiltered: Any, label: str) -> None:
        self.filtered, self.unfiltered, self.label = filtered, unfiltered, label

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self.filtered.on_add(obj, is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        if (self.label in labels_of(old)) != (self.label in labels_of(new)):
            self.unfiltered.on_update(old, new)
        else:
            self.filtered.on_update(old, new)

    def on_delete(self, obj: Any) -> None:
        self.filtered.on_delete(obj)


__all__ = ["Drain", "Shard"]
