"""The subset of kube-controller-manager the embedded server runs: the garbage collector and
the namespace controller (``EmbeddedAPIServer(controllers=True)``; on by default in
``kinrun --embedded`` and ``kinrun test``, off with ``KINRUN_EMBEDDED_CONTROLLERS=off``).

Garbage collector (as ``pkg/controller/garbagecollector``), keyed by ``ownerReferences[].uid``:

- an object whose owners are all gone is deleted (background); one with owners left loses the
  references to the gone ones;
- an owner deleted with ``propagationPolicy: Orphan`` (the API server adds the ``orphan``
  finalizer) has its references removed from every dependent, then the finalizer;
- an owner deleted with ``Foreground`` (finalizer ``foregroundDeletion``) has its dependents
  deleted; the finalizer goes once no dependent with ``blockOwnerDeletion: true`` is left
  (dependents with finalizers hold it until they go);
- ``Background`` (the default): the owner goes at once, then its dependents as above.

Namespace controller (as ``pkg/controller/namespace``): a Namespace marked for deletion
(Terminating) has every namespaced object in it deleted (grace period 0; finalizers are
respected, so an object with finalizers stays until they are removed); once it is empty its
``kubernetes`` spec finalizer is removed and it goes.

Differences: both run synchronously after each write, under the store's lock (the real ones
are asynchronous, seconds later): a DELETE answers after the cascade it starts has run as far
as finalizers allow. Owner references are matched by uid only; no namespace conditions
(``NamespaceContentRemaining``, ...) are written; every kind's default policy is Background.

Concurrency: called by the store with its lock held (``on_write_locked``); writes go through
the store's public methods, whose events come back here queued (the store runs them after the
current one), never recursively.
"""

from __future__ import annotations

import logging
from typing import Any

from . import status as st
from .registry import ResourceType

log = logging.getLogger(__name__)
ORPHAN, FOREGROUND = "orphan", "foregroundDeletion"
NAMESPACE_FINALIZER = "kubernetes"
Ref = tuple[tuple[str, str], str]            # (resource key, object key)


class Controllers:
    """The garbage collector and namespace controller over one ``Store`` (see module
    docstring). ``_by_uid``: uid -> Ref of every stored object; ``_dependents``: owner uid ->
    Refs of objects naming it; both kept in step with every write."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._by_uid: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}
        with store.lock:
            for rtype in store.registry.types():
                for entry in store.entries_locked(rtype).values():
                    self._index(rtype, entry, None)

    def _index(self, rtype: ResourceType, entry: Any, old: Any) -> None:
        ref = (rtype.key, entry.key)
        for uid in old.owners if old is not None else ():
            self._dependents.get(uid, set()).discard(ref)
        self._by_uid[entry.uid] = ref
        for uid in entry.owners:
            self._dependents.setdefault(uid, set()).add(ref)

    def _unindex(self, rtype: ResourceType, entry: Any) -> None:
        self._by_uid.pop(entry.uid, None)
        for uid in entry.owners:
            self._dependents.get(uid, set()).discard((rtype.key, entry.key))

    def on_write_locked(self, rtype: ResourceType, event_type: str, entry: Any, old: Any) -> None:
        """React to one stored event (store lock held)."""
        if event_type == "DELETED":
            self._unindex(rtype, entry)
            self._owner_changed(entry.uid)
            self._owners_changed(entry.owners)
            if rtype.namespaced and entry.namespace:
                self._namespace_changed(entry.namespace)
            return
        self._index(rtype, entry, old)
        if old is not None:
            self._owners_changed(set(old.owners) - set(entry.owners))
        if entry.deleting:
            self._owner_changed(entry.uid)
            if rtype.key == ("", "namespaces"):
                self._namespace_changed(entry.name)

    # -- garbage collector -----------------------------------------------------------------

    def _lookup(self, ref: Ref) -> tuple[ResourceType, Any] | None:
        rtype = self.store.registry.get(ref[0])
        entry = self.store.entries_locked(rtype).get(ref[1]) if rtype else None
        return (rtype, entry) if entry is not None else None

    def _owner_changed(self, uid: str) -> None:
        """The owner ``uid`` went, or is being deleted: act on its dependents, then on its own
        orphan/foreground finalizer."""
        owner = self._lookup(self._by_uid[uid]) if uid in self._by_uid else None
        finalizers = owner[1].finalizers if owner else ()
        for ref in sorted(self._dependents.get(uid, set())):
            if ORPHAN in finalizers:
                self._edit(ref, lambda obj: _drop_owner_refs(obj, {uid}))
            else:
                self._check_dependent(ref)
        if owner and ORPHAN in finalizers:
            self._remove_finalizer(owner, ORPHAN)
        elif owner and FOREGROUND in finalizers and not self._blocking(uid):
            self._remove_finalizer(owner, FOREGROUND)

    def _owners_changed(self, uids: Any) -> None:
        """Dependents changed or went: owners waiting for them in foreground may finish."""
        for uid in uids:
            owner = self._lookup(self._by_uid[uid]) if uid in self._by_uid else None
            if owner and FOREGROUND in owner[1].finalizers and not self._blocking(uid):
                self._remove_finalizer(owner, FOREGROUND)

    def _blocking(self, uid: str) -> bool:
        """Whether a dependent with ``blockOwnerDeletion: true`` still names owner ``uid``."""
        for ref in self._dependents.get(uid, set()):
            found = self._lookup(ref)
            refs = (found[1].decode()["metadata"].get("ownerReferences") or []) if found else []
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in refs):
                return True
        return False

    def _check_dependent(self, ref: Ref) -> None:
        """Delete a dependent whose owners are all gone (or being deleted in foreground);
        drop its references to gone owners when some remain."""
        found = self._lookup(ref)
        if found is None:
            return
        rtype, entry = found
        gone = {uid for uid in entry.owners if not self._alive(uid)}
        if not gone:
            return
        if gone == set(entry.owners):
            if not entry.deleting:
                self._delete(rtype, entry)
        else:
            self._edit(ref, lambda obj: _drop_owner_refs(obj, gone))

    def _alive(self, uid: str) -> bool:
        owner = self._lookup(self._by_uid[uid]) if uid in self._by_uid else None
        return owner is not None and FOREGROUND not in owner[1].finalizers

    # -- namespace controller ----------------------------------------------------------------

    def _namespace_changed(self, name: str) -> None:
        """A Namespace being deleted: delete its content; once empty, remove its finalizer."""
        ns_type = self.store.registry.get(("", "namespaces"))
        entry = self.store.entries_locked(ns_type).get(name)
        if entry is None or not entry.deleting:
            return
        for rtype, item in self._content(name):
            if not item.deleting:
                self._delete(rtype, item)
        if not self._content(name):
            self._edit((ns_type.key, name), _drop_namespace_finalizer)

    def _content(self, namespace: str) -> list[tuple[ResourceType, Any]]:
        """Every object stored in ``namespace``."""
        return [(rtype, e) for rtype in self.store.registry.types() if rtype.namespaced
                for e in list(self.store.entries_locked(rtype).values())
                if e.namespace == namespace]

    # -- writes --------------------------------------------------------------------------------

    def _delete(self, rtype: ResourceType, entry: Any) -> None:
        try:
            self.store.delete_object(rtype, entry.namespace or None, entry.name, grace_period=0)
        except st.StatusError as exc:
            log.debug("controllers: delete %s %s: %s", rtype.kind, entry.key, exc)

    def _edit(self, ref: Ref, change: Any) -> None:
        rtype = self.store.registry.get(ref[0])
        found = self._lookup(ref)
        if rtype is None or found is None:
            return
        namespace, _, name = ref[1].rpartition("/")
        try:
            self.store.guaranteed_update(rtype, namespace or None, name,
                                         lambda obj: change(obj) or obj,
                                         check_resource_version=False)
        except st.StatusError as exc:
            log.debug("controllers: update %s %s: %s", rtype.kind, ref[1], exc)

    def _remove_finalizer(self, owner: tuple[ResourceType, Any], finalizer: str) -> None:
        def change(obj: dict[str, Any]) -> None:
            meta = obj["metadata"]
            meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != finalizer]
            if not meta["finalizers"]:
                del meta["finalizers"]
        self._edit((owner[0].key, owner[1].key), change)


def _drop_owner_refs(obj: dict[str, Any], uids: set[str]) -> None:
    meta = obj["metadata"]
    refs = [r for r in meta.get("ownerReferences") or [] if r.get("uid") not in uids]
    if refs:
        meta["ownerReferences"] = refs
    else:
        meta.pop("ownerReferences", None)


def _drop_namespace_finalizer(obj: dict[str, Any]) -> None:
    spec = obj.setdefault("spec", {})
    spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != NAMESPACE_FINALIZER]
    if not spec["finalizers"]:
        del spec["finalizers"]
