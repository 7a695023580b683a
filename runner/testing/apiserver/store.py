"""The object store: one global resourceVersion counter, objects per resource, event history.

This is the embedded server's etcd plus the generic registry (``apiserver/pkg/registry/generic/
registry/store.go``): every write gets the next resourceVersion and appends one event to the
resource's ``EventLog``; create sets ``uid``, ``creationTimestamp`` and ``generation``; updates
are optimistic (a stale ``metadata.resourceVersion`` is a 409 Conflict), keep the immutable
fields, bump ``generation`` when anything but metadata/status changes, and are no-ops (no new
resourceVersion, no event) when nothing changes; a delete of an object with finalizers only sets
``deletionTimestamp`` (the object goes when an update removes the last finalizer); a scheduled
Pod is deleted gracefully and, with no kubelet, stays until deleted with grace 0. A deleted
Namespace turns Terminating and stays unless ``gc`` runs (as in envtest otherwise); a deleted
CustomResourceDefinition deletes its custom resources first, then goes (the apiextensions
cleanup finalizer runs inside the real API server too).

Objects are held serialised (``Entry.raw``, the bytes every LIST and watch reuses) with the few
fields selectors need; they are decoded only when a write needs the previous state.

Direct use (tests, benchmarks): ``create``, ``update``, ``delete``, ``get``, ``list``,
``upsert`` take and return plain dicts and bypass HTTP but not the storage semantics above.

Concurrency: every public method is thread-safe; one re-entrant lock (``lock``) guards all
state, and the event logs' conditions are built on it. Methods named ``*_locked`` expect it
held. Returned dicts are the caller's own.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from . import status as st
from .history import Event, EventLog
from .registry import Registry, ResourceType
from kinrun.selectors import FieldSelector, LabelSelector, selectable_fields
from .strategy import apply_defaults
from .validation import generate_name, validate_object

Obj = dict[str, Any]
ResourceKey = tuple[str, str]
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES: ResourceKey = ("", "namespaces")
CRDS: ResourceKey = ("apiextensions.k8s.io", "customresourcedefinitions")


def _then_controllers(method: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``method`` under the store's lock, then the controllers on the events it wrote."""
    @functools.wraps(method)
    def wrapper(self: Store, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            try:
                return method(self, *args, **kwargs)
            finally:
                self.run_controllers_locked()
    return wrapper


def object_key(namespace: str | None, name: str) -> str:
    """The storage key ``namespace/name`` (cluster-scoped: ``name``), as client-go's
    MetaNamespaceKeyFunc; keys sort like etcd's."""
    return f"{namespace}/{name}" if namespace else name


SERVICE_IP_RANGE = ipaddress.ip_network("10.96.0.0/12")
"""Where new Services' cluster IPs come from (kube-apiserver's default
``--service-cluster-ip-range``); the first ten addresses are left out, as the real range's
first one is the ``kubernetes`` Service's."""

class Entry:
    """One stored object version: ``raw`` (its JSON bytes, apiVersion = storage version),
    ``key``, ``namespace`` ("" when cluster-scoped), ``name``, ``rv``, ``uid``, ``labels``,
    ``finalizers``, ``deleting`` (deletionTimestamp set), ``owners`` (ownerReferences' uids);
    ``field(name)`` gives field-selector values.
    Immutable once built."""

    __slots__ = ("raw", "key", "namespace", "name", "rv", "uid", "labels", "_field_keys",
                 "_fields", "finalizers", "deleting", "owners")

    def __init__(self, rtype: ResourceType, obj: Obj, rv: int) -> None:
        meta = obj["metadata"]
        self.namespace = meta.get("namespace") or ""
        self.name = meta["name"]
        self.key = object_key(self.namespace, self.name)
        self.rv = rv
        self.uid = meta.get("uid", "")
        self.labels = dict(meta.get("labels") or {})
        self._field_keys = rtype.field_keys
        self._fields: dict[str, str] | None = None       # decoded on first use
        self.finalizers = tuple(meta.get("finalizers") or ())
        self.deleting = bool(meta.get("deletionTimestamp"))
        self.owners = tuple(str(r.get("uid")) for r in meta.get("ownerReferences") or ()
                            if isinstance(r, dict) and r.get("uid"))
        try:
            self.raw = orjson.dumps(obj)
        except TypeError as exc:
            raise st.bad_request(f"object cannot be encoded as JSON: {exc}") from None

    def decode(self) -> Obj:
        """A fresh dict of this object (the caller owns it)."""
        return orjson.loads(self.raw)

    def field(self, name: str) -> str:
        """The field-selector value of ``name`` ("" when absent). Fields other than
        metadata.name/namespace are extracted from ``raw`` on first use (benign race: two
        threads may both compute the same dict)."""
        if name == "metadata.name":
            return self.name
        if name == "metadata.namespace":
            return self.namespace
        if self._fields is None:
            self._fields = selectable_fields(orjson.loads(self.raw), self._field_keys)
        return self._fields.get(name, "")

    def matches(self, namespace: str | None, labels: LabelSelector, fields: FieldSelector) -> bool:
        """Whether this object is in ``namespace`` (None = any) and passes both selectors."""
        if namespace and self.namespace != namespace:
            return False
        return labels.matches(self.labels) and fields.matches(self.field)


@dataclass(frozen=True, slots=True)
class ListResult:
    """One LIST page: ``entries`` (in key order), ``resource_version`` (the list's rv),
    ``continue_token`` ("" on the last page), ``remaining`` (items after this page, or None
    when not known, as with selectors)."""

    entries: list[Entry]
    resource_version: int
    continue_token: str
    remaining: int | None


class Store:
    """The embedded server's storage (see module docstring). ``history_size``: events retained
    per resource (at least); ``clock``: wall-clock epoch seconds for every timestamp the server
    writes (creationTimestamp, deletionTimestamp, managedFields times, CRD conditions);
    ``seed``: when given, uids and ``generateName`` suffixes come from ``random.Random(seed)``,
    so two stores with the same seed, clock readings and writes hold byte-identical objects
    (resourceVersions are a counter either way); None: random uids and suffixes."""

    def __init__(self, registry: Registry | None = None, *, history_size: int = 10000,
                 clock: Callable[[], float] = time.time, seed: int | None = None) -> None:
        self.registry = registry or Registry()
        self.lock = threading.RLock()
        self._clock = clock
        self._rng = random.Random(seed) if seed is not None else None  # used under ``lock``
        self._history_size = history_size
        self._rv = 0                                   # last resourceVersion handed out
        self._objects: dict[ResourceKey, dict[str, Entry]] = {}
        self._logs: dict[ResourceKey, EventLog] = {}
        self._continue_serial = 0                      # serial of the last continue token
        self._continue_floor = 0                       # tokens with serial <= this are expired
        self.watch_epoch = 0                           # bumped to end every open watch
        self._defer_finish = False                     # True while a deleted CRD empties itself
        self._watchers: dict[ResourceKey, int] = {}    # open watch streams per resource
        self._now_cache: tuple[int, str] = (-1, "")
        self._service_ips = 9                          # Services' addresses handed out
        first = uuid.UUID(int=self._rng.getrandbits(128), version=4) if self._rng else uuid.uuid4()
        self._uid_prefix = str(first)[:23]             # 8-4-4-4 hex groups
        self._uid_counter = 0
        self.closed = False
        self.controllers: list[Callable[[ResourceType, str, Entry, Entry | None], None]] = []
        # hooks told of every stored event (gc.Controllers); events written while they run
        # wait in _pending and are told after, in order (never recursively)
        self._pending: list[tuple[ResourceType, str, Entry, Entry | None]] = []
        self._notifying = False
        ns_type = self.registry.get(NAMESPACES)
        assert ns_type is not None
        for name in INITIAL_NAMESPACES:
            self.create_object(ns_type, {"metadata": {"name": name}})

    # -- small helpers ----------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        """The last resourceVersion handed out (the global counter)."""
        with self.lock:
            return self._rv

    def epoch(self) -> float:
        """The store clock's current wall-clock epoch seconds."""
        return self._clock()

    def now(self, offset: float = 0) -> str:
        """The current time (plus ``offset`` seconds) as RFC 3339 (seconds, UTC), as
        metav1.Time serialises."""
        if offset:
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._clock() + offset))
        second = int(self._clock())
        if second != self._now_cache[0]:
            self._now_cache = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
        return self._now_cache[1]

    def _new_uid(self) -> str:
        """A unique RFC 4122-shaped uid: a random per-store prefix and a counter (cheaper than
        uuid4 on every create; unique within the process)."""
        self._uid_counter += 1
        return f"{self._uid_prefix}-{self._uid_counter:012x}"

    def log_locked(self, rtype: ResourceType) -> EventLog:
        """The event log of ``rtype`` (created empty on first use)."""
        log = self._logs.get(rtype.key)
        if log is None:
            log = self._logs[rtype.key] = EventLog(self.lock, self._history_size)
            log.floor_rv = 0
        return log

    def log_for_key_locked(self, key: ResourceKey) -> EventLog | None:
        """The event log stored under ``(group, plural)``, or None (e.g. its CRD is gone)."""
        return self._logs.get(key)

    def watcher_count(self, rtype: ResourceType) -> int:
        """How many watch streams on ``rtype`` are open now."""
        with self.lock:
            return self._watchers.get(rtype.key, 0)

    def watcher_changed_locked(self, rtype: ResourceType, delta: int) -> None:
        """Count a watch opening (+1) or closing (-1) and wake whoever waits on the log."""
        self._watchers[rtype.key] = self._watchers.get(rtype.key, 0) + delta
        log = self._logs.get(rtype.key)
        if log is not None:
            log.cond.notify_all()

    def wait_for_watchers(self, rtype: ResourceType, count: int = 1, timeout: float = 10.0) -> bool:
        """Block until at least ``count`` watches on ``rtype`` are open; False on timeout."""
        with self.lock:
            return self.log_locked(rtype).cond.wait_for(
                lambda: self._watchers.get(rtype.key, 0) >= count, timeout)

    def holds_any(self, key: ResourceKey) -> bool:
        """Whether any object of the resource ``key`` (group, plural) is stored: a lock-free
        read (a write racing with it may or may not be seen)."""
        return bool(self._objects.get(key))

    def entries_locked(self, rtype: ResourceType) -> dict[str, Entry]:
        """The live ``key -> Entry`` map of ``rtype`` (read-only; lock held while used)."""
        return self._objects.get(rtype.key, {})

    def _bucket_locked(self, rtype: ResourceType) -> dict[str, Entry]:
        return self._objects.setdefault(rtype.key, {})

    def resolve(self, api_version: str, kind: str) -> ResourceType:
        """The served type for ``apiVersion``/``kind``; 404 NotFound when not served."""
        rtype = self.registry.by_kind(api_version, kind)
        if rtype is None:
            raise st.StatusError(404, "NotFound",
                                 f'the server could not find the requested resource ({kind} {api_version})')
        return rtype

    def _type_of(self, obj: Obj) -> ResourceType:
        if not isinstance(obj, dict) or not obj.get("apiVersion") or not obj.get("kind"):
            raise st.bad_request("object needs apiVersion and kind")
        return self.resolve(obj["apiVersion"], obj["kind"])

    def _write_locked(self, rtype: ResourceType, event_type: str, entry: Entry,
                      old: Entry | None) -> None:
        bucket = self._bucket_locked(rtype)
        if event_type == "DELETED":
            bucket.pop(entry.key, None)
        else:
            bucket[entry.key] = entry
        self.log_locked(rtype).append_locked(Event(event_type, entry.rv, entry, old))
        if self.controllers:
            self._pending.append((rtype, event_type, entry, old))

    def run_controllers_locked(self) -> None:
        """Tell the ``controllers`` hooks of the events written so far, in order, including
        those their own writes cause; called at the end of every public write."""
        if self._notifying or not self._pending:
            return
        self._notifying = True
        try:
            while self._pending:
                event = self._pending.pop(0)
                for hook in self.controllers:
                    hook(*event)
        finally:
            self._notifying = False

    def _stamp_locked(self, rtype: ResourceType, obj: Obj) -> Entry:
        """Give ``obj`` (owned, metadata owned) the next resourceVersion and encode it."""
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        return Entry(rtype, obj, self._rv)

    # -- create ---------------------------------------------------------------------------

    @_then_controllers
    def create_object(self, rtype: ResourceType, obj: Obj, *, namespace: str | None = None,
                      dry_run: bool = False, prepared: bool = False) -> Obj:
        """Store a new object of ``rtype``; returns it as stored.

        ``obj`` is not mutated. Namespaced objects land in ``namespace`` (else the body's,
        else ``default``), which must exist (404) and not be terminating (403). A missing name
        is generated from ``generateName``; raises 409 AlreadyExists, 422 Invalid, 400, and 500
        ServerTimeout when a generated name is taken (as kube-apiserver 1.20).
        ``dry_run``: check everything, store nothing (no resourceVersion). ``prepared``: ``obj``
        is a dry run's answer (validating admission webhooks saw it): its uid and
        creationTimestamp are kept."""
        with self.lock:
            new = self._new_object_locked(rtype, obj, namespace, prepared)
            bucket = self._bucket_locked(rtype)
            meta = new["metadata"]
            key = object_key(meta.get("namespace"), meta["name"])
            if key in bucket:
                if not (obj.get("metadata") or {}).get("name"):
                    raise st.generated_name_taken(rtype.group, rtype.kind)
                raise st.already_exists(rtype.group, rtype.plural, meta["name"])
            if dry_run:
                return new
            entry = self._stamp_locked(rtype, new)
            self._write_locked(rtype, "ADDED", entry, None)
            self._after_create_locked(rtype, new)
            return new

    def _new_object_locked(self, rtype: ResourceType, obj: Obj, namespace: str | None,
                           prepared: bool = False) -> Obj:
        if not isinstance(obj, dict):
            raise st.bad_request("the object must be a JSON object")
        meta = dict(obj.get("metadata") or {})
        new = _with_header(rtype, obj, meta)
        if rtype.namespaced:
            meta["namespace"] = namespace or meta.get("namespace") or "default"
            self._check_namespace_locked(rtype, meta["namespace"], meta.get("name") or "")
        else:
            meta.pop("namespace", None)
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise st.invalid(rtype.kind, rtype.group, "", [
                    ("metadata.name", "FieldValueRequired",
                     "Required value: name or generateName is required")])
            meta["name"] = generate_name(str(meta["generateName"]), self._rng)
        if not (prepared and meta.get("uid") and meta.get("creationTimestamp")):
            meta["uid"] = self._new_uid()
            meta["creationTimestamp"] = self.now()
        for field in ("deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(field, None)
        if rtype.tracks_generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        apply_defaults(rtype, new, meta["creationTimestamp"])
        self._allocate_cluster_ip_locked(rtype, new)
        validate_object(rtype, new)
        return new

    def _allocate_cluster_ip_locked(self, rtype: ResourceType, obj: Obj) -> None:
        """A new Service without ``spec.clusterIP`` gets the next address of
        :data:`SERVICE_IP_RANGE` (kube-apiserver's Service registry allocates one at create,
        at random from ``--service-cluster-ip-range``; here in order), and ``clusterIPs``
        repeats it (1.20); ``None`` (headless) is kept; ``type: ExternalName`` gets none."""
        spec = obj.get("spec")
        if rtype.group or rtype.kind != "Service" or not isinstance(spec, dict) \
                or spec.get("type") == "ExternalName":
            return
        if not spec.get("clusterIP"):
            self._service_ips += 1
            spec["clusterIP"] = str(SERVICE_IP_RANGE[self._service_ips])
        spec.setdefault("clusterIPs", [spec["clusterIP"]])

    def _check_namespace_locked(self, rtype: ResourceType, namespace: str, name: str) -> None:
        ns = self._objects.get(NAMESPACES, {}).get(namespace)
        if ns is None:
            raise st.not_found("", "namespaces", namespace)
        if ns.deleting:
            error = st.forbidden(rtype.group, rtype.plural, name,
                                 f"unable to create new content in namespace {namespace} "
                                 "because it is being terminated")
            assert error.details is not None
            error.details["causes"] = [{"reason": "NamespaceTerminating",
                                        "message": f"namespace {namespace} is being terminated",
                                        "field": "metadata.namespace"}]
            raise error

    def _after_create_locked(self, rtype: ResourceType, obj: Obj) -> None:
        if rtype.key == CRDS:
            self._serve_crd_locked(obj)

    def _serve_crd_locked(self, crd: Obj) -> None:
        new_type = ResourceType.from_crd(crd)
        if not new_type.versions:
            return
        self.registry.add(new_type)

    # -- update ---------------------------------------------------------------------------

    @_then_controllers
    def guaranteed_update(self, rtype: ResourceType, namespace: str | None, name: str,
                          mutate: Callable[[Obj], Obj], *, check_resource_version: bool = True,
                          create: Callable[[], Obj] | None = None,
                          dry_run: bool = False) -> tuple[Obj, bool]:
        """Read-modify-write one object under the lock, as the registry's GuaranteedUpdate.

        ``mutate(current) -> new`` gets the stored object (a fresh dict it must not rely on
        after returning) and returns the desired object; it may raise StatusError. When
        ``check_resource_version`` and the new object carries ``metadata.resourceVersion``, it
        must equal the stored one (else 409 Conflict). A missing object is created from
        ``create()`` when given, else 404. Returns ``(object as stored, created)``.
        ``dry_run``: check everything, store nothing."""
        with self.lock:
            ns = namespace if rtype.namespaced else None
            old = self._bucket_locked(rtype).get(object_key(ns, name))
            if old is None:
                if create is None:
                    raise st.not_found(rtype.group, rtype.plural, name)
                return self.create_object(rtype, create(), namespace=ns, dry_run=dry_run), True
            current = old.decode()
            new = mutate(current)
            return self._update_locked(rtype, old, current, new, check_resource_version,
                                       dry_run), False

    def _update_locked(self, rtype: ResourceType, old: Entry, old_obj: Obj, new: Obj,
                       check_rv: bool, dry_run: bool = False) -> Obj:
        if not isinstance(new, dict):
            raise st.bad_request("the object must be a JSON object")
        meta = dict(new.get("metadata") or {})
        new = _with_header(rtype, new, meta)
        sent_rv = meta.get("resourceVersion")
        if check_rv and sent_rv not in (None, "") and str(sent_rv) != str(old.rv):
            raise st.conflict(rtype.group, rtype.plural, old.name, st.MODIFIED_CONFLICT)
        self._keep_system_fields(rtype, old_obj, meta)
        if old.deleting:
            added = [f for f in meta.get("finalizers") or [] if f not in old.finalizers]
            if added:
                raise st.invalid(rtype.kind, rtype.group, old.name, [(
                    "metadata.finalizers", "FieldValueForbidden",
                    f"Forbidden: no new finalizers can be added if the object is being deleted, "
                    f"found new finalizers {added}")])
        if rtype.tracks_generation and _spec_changed(rtype, old_obj, new):
            meta["generation"] = int(old_obj["metadata"].get("generation") or 1) + 1
        validate_object(rtype, new)
        meta["resourceVersion"] = str(old.rv)
        if dry_run or orjson.dumps(new) == old.raw:
            return new
        entry = self._stamp_locked(rtype, new)
        if entry.deleting and not entry.finalizers and not meta.get("deletionGracePeriodSeconds") \
                and not (rtype.key == NAMESPACES and (new.get("spec") or {}).get("finalizers")):
            self._write_locked(rtype, "DELETED", entry, old)
            self._after_delete_locked(rtype, entry)
        else:
            self._write_locked(rtype, "MODIFIED", entry, old)
            if rtype.key == CRDS:
                self._serve_crd_locked(new)
        return new

    @staticmethod
    def _keep_system_fields(rtype: ResourceType, old_obj: Obj, meta: Obj) -> None:
        old_meta = old_obj["metadata"]
        for field in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "generation"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        meta.pop("selfLink", None)

    # -- delete ---------------------------------------------------------------------------

    @_then_controllers
    def delete_object(self, rtype: ResourceType, namespace: str | None, name: str, *,
                      uid: str | None = None, resource_version: str | None = None,
                      grace_period: int | None = None, propagation: str | None = None,
                      dry_run: bool = False) -> tuple[Obj, bool]:
        """Delete one object, honouring preconditions (409 on a uid/resourceVersion mismatch)
        and finalizers (then only ``deletionTimestamp`` is set). Returns ``(last state,
        gone)``; ``gone`` is False while the object stays. 404 when absent.

        ``propagation`` (``Orphan``, ``Foreground``, ``Background`` or None): as the generic
        registry's deletionFinalizersForGarbageCollection, Orphan adds the ``orphan`` finalizer
        and Foreground ``foregroundDeletion`` (each removing the other), Background removes
        both; the garbage collector (``gc``, when running) acts on them.

        As the generic registry: a scheduled Pod (``spec.nodeName``) is deleted gracefully
        (``grace_period`` seconds, default its terminationGracePeriodSeconds) and, with no
        kubelet, stays terminating until deleted again with grace 0; a Namespace only turns
        Terminating (the namespace controller of ``gc``, when it runs, empties it); a CRD
        deletes its custom resources and goes once they are gone (as apiextensions' cleanup
        finalizer). It runs over 40 lines with this docstring: the registry's rules need
        saying."""
        with self.lock:
            ns = namespace if rtype.namespaced else None
            old = self._bucket_locked(rtype).get(object_key(ns, name))
            if old is None:
                raise st.not_found(rtype.group, rtype.plural, name)
            self._check_preconditions(rtype, old, uid, resource_version)
            obj = old.decode()
            if dry_run:
                return obj, not old.finalizers
            grace = self._grace_period(rtype, obj, grace_period)
            finalizers = _gc_finalizers(old.finalizers, propagation)
            if finalizers != old.finalizers and not old.deleting:
                obj["metadata"]["finalizers"] = list(finalizers)
                if not finalizers:
                    del obj["metadata"]["finalizers"]
            else:
                finalizers = old.finalizers
            if rtype.key == CRDS and not finalizers:
                return self._delete_crd_locked(rtype, old, obj)
            if rtype.key == NAMESPACES or finalizers or grace > 0:
                return self._mark_deleting_locked(rtype, old, obj, grace), False
            return self._remove_locked(rtype, old, obj), True

    @staticmethod
    def _grace_period(rtype: ResourceType, obj: Obj, requested: int | None) -> int:
        """Seconds of graceful deletion: only scheduled Pods have any (rest.BeforeDelete)."""
        if rtype.key != ("", "pods") or not (obj.get("spec") or {}).get("nodeName"):
            return 0
        if requested is not None:
            return max(0, int(requested))
        meta_grace = obj["metadata"].get("deletionGracePeriodSeconds")
        if meta_grace is not None:
            return int(meta_grace)
        return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))

    def _mark_deleting_locked(self, rtype: ResourceType, old: Entry, obj: Obj, grace: int) -> Obj:
        """Set deletionTimestamp (now + grace) and deletionGracePeriodSeconds, bump generation
        on the first mark, and for a Namespace the Terminating phase; a repeated delete only
        shortens the grace period."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and grace >= int(meta.get("deletionGracePeriodSeconds") or 0):
            return obj
        if not meta.get("deletionTimestamp") and int(meta.get("generation") or 0) > 0:
            meta["generation"] = int(meta["generation"]) + 1
        meta["deletionTimestamp"] = self.now(grace)
        meta["deletionGracePeriodSeconds"] = grace
        if rtype.key == NAMESPACES:
            obj["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
        entry = self._stamp_locked(rtype, obj)
        self._write_locked(rtype, "MODIFIED", entry, old)
        return obj

    @staticmethod
    def _check_preconditions(rtype: ResourceType, old: Entry, uid: str | None,
                             resource_version: str | None) -> None:
        # as the generic registry's delete: the "resource" named is the Kind
        if uid and uid != old.uid:
            raise st.conflict(rtype.group, rtype.kind, old.name,
                              f"the UID in the precondition ({uid}) does not match the UID in "
                              f"record ({old.uid}). The object might have been deleted and then "
                              "recreated")
        if resource_version and str(resource_version) != str(old.rv):
            raise st.conflict(rtype.group, rtype.kind, old.name,
                              f"the ResourceVersion in the precondition ({resource_version}) does "
                              f"not match the ResourceVersion in record ({old.rv}). The object "
                              "might have been modified")

    def _remove_locked(self, rtype: ResourceType, old: Entry, obj: Obj) -> Obj:
        entry = self._stamp_locked(rtype, obj)
        self._write_locked(rtype, "DELETED", entry, old)
        self._after_delete_locked(rtype, entry)
        return obj

    def _delete_crd_locked(self, rtype: ResourceType, old: Entry, obj: Obj) -> tuple[Obj, bool]:
        """Mark the CRD terminating, delete its custom resources, go once none is left."""
        if not old.deleting:
            obj = self._mark_deleting_locked(rtype, old, obj, 0)
            crd_type = self._crd_type_locked(old.name)
            self._defer_finish = True
            try:
                for item in list(self._objects.get(crd_type.key, {}).values()) if crd_type else []:
                    self.delete_object(crd_type, item.namespace or None, item.name)
            finally:
                self._defer_finish = False
        current = self._bucket_locked(rtype).get(old.key)
        if current is None:
            return obj, True
        gone = self._maybe_finish_crd_locked(current)
        return (obj if gone else current.decode()), gone

    def _crd_type_locked(self, crd_name: str) -> ResourceType | None:
        plural, _, group = crd_name.partition(".")
        return self.registry.get((group, plural))

    def _maybe_finish_crd_locked(self, crd: Entry) -> bool:
        crd_type = self._crd_type_locked(crd.name)
        if not crd.deleting or crd.finalizers or (crd_type and self._objects.get(crd_type.key)):
            return False
        self._remove_locked(self.registry.get(CRDS), crd, crd.decode())  # type: ignore[arg-type]
        return True

    def _after_delete_locked(self, rtype: ResourceType, entry: Entry) -> None:
        if rtype.key == CRDS:
            crd_type = self._crd_type_locked(entry.name)
            if crd_type is not None:
                self._objects.pop(crd_type.key, None)
                log = self._logs.pop(crd_type.key, None)
                if log is not None:
                    log.cond.notify_all()
                self.registry.remove(crd_type.key)
        elif rtype.custom and not self._defer_finish:
            crd = self._objects.get(CRDS, {}).get(f"{rtype.plural}.{rtype.group}")
            if crd is not None:
                self._maybe_finish_crd_locked(crd)

    # -- read -----------------------------------------------------------------------------

    def get_entry(self, rtype: ResourceType, namespace: str | None, name: str) -> Entry:
        """The stored entry; 404 NotFound when absent."""
        with self.lock:
            ns = namespace if rtype.namespaced else None
            entry = self._objects.get(rtype.key, {}).get(object_key(ns, name))
        if entry is None:
            raise st.not_found(rtype.group, rtype.plural, name)
        return entry

    def namespace_exists(self, namespace: str) -> bool:
        """Whether the Namespace ``namespace`` exists (terminating or not)."""
        with self.lock:
            return namespace in self._objects.get(NAMESPACES, {})

    def list_entries(self, rtype: ResourceType, *, namespace: str | None = None,
                     labels: LabelSelector = LabelSelector(),
                     fields: FieldSelector = FieldSelector(), resource_version: str = "",
                     match: str = "", limit: int = 0, continue_token: str = "") -> ListResult:
        """One LIST page, with the real server's resourceVersion semantics: "" the latest
        state, "0" any (the latest; ``limit`` ignored as the watch cache does), "N" with
        ``match`` "Exact" the state at N (410 when older than the history), "N" otherwise
        not older than N (504 when N is in the future). ``continue_token`` resumes a paged
        list at its first page's resourceVersion (410 when that is no longer retained)."""
        with self.lock:
            if continue_token:
                at, start = self._decode_continue_locked(continue_token)
                objects = self._snapshot_locked(rtype, at,
                                                lambda: self._continue_expired(start))
            else:
                at, start = self._list_rv_locked(rtype, resource_version, match), ""
                if resource_version == "0":
                    limit = 0
                objects = self._snapshot_locked(rtype, at, lambda: st.expired(
                    "The resourceVersion for the provided list is too old."))
            keys = sorted(k for k in objects if k > start) if start else sorted(objects)
            selected: list[Entry] = []
            filtered = not (labels.empty and fields.empty)
            for index, key in enumerate(keys):
                entry = objects[key]
                if entry.matches(namespace, labels, fields):
                    selected.append(entry)
                    if limit and len(selected) == limit:
                        return self._page_locked(selected, at, keys, index, filtered, namespace)
            return ListResult(selected, at, "", None)

    def _page_locked(self, selected: list[Entry], at: int, keys: list[str], index: int,
                     filtered: bool, namespace: str | None) -> ListResult:
        rest = keys[index + 1:]
        if namespace:
            prefix = namespace + "/"
            rest = [k for k in rest if k.startswith(prefix)]
        if not rest:
            return ListResult(selected, at, "", None)
        self._continue_serial += 1
        token = base64.urlsafe_b64encode(orjson.dumps(
            {"v": "meta.k8s.io/v1", "rv": at, "start": selected[-1].key,
             "s": self._continue_serial})).decode()
        return ListResult(selected, at, token, None if filtered else len(rest))

    def _decode_continue_locked(self, token: str) -> tuple[int, str]:
        try:
            data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
            at, start, serial = int(data["rv"]), str(data["start"]), int(data.get("s", 0))
        except (ValueError, KeyError, TypeError):
            raise st.bad_request("continue key is not valid: incorrect encoded start "
                                 "resourceVersion (version meta.k8s.io/v1)") from None
        if serial <= self._continue_floor:
            raise self._continue_expired(start)
        return at, start

    def _continue_expired(self, start: str) -> st.StatusError:
        """410 for a continue token too old to serve consistently; like the real server it
        carries a new token that continues after ``start`` from the latest state."""
        self._continue_serial += 1
        token = base64.urlsafe_b64encode(orjson.dumps(
            {"v": "meta.k8s.io/v1", "rv": self._rv, "start": start,
             "s": self._continue_serial})).decode()
        return st.expired(
            "The provided continue parameter is too old to display a consistent list result. "
            "You can start a new list without the continue parameter, or use the continue "
            "token in this response to retrieve the remainder of the results. Continuing with "
            "the provided token results in an inconsistent list - objects that were created, "
            "modified, or deleted between the time the first chunk was returned and now may "
            "show up in the list.", continue_token=token)

    def _list_rv_locked(self, rtype: ResourceType, resource_version: str, match: str) -> int:
        if resource_version in ("", "0"):
            return self._rv
        requested = parse_rv(resource_version)
        if match == "Exact":
            if requested > self._rv:
                raise too_large(requested, self._rv)
            return requested
        if requested > self._rv:
            raise too_large(requested, self._rv)
        return self._rv

    def _snapshot_locked(self, rtype: ResourceType, at: int,
                         too_old: Callable[[], st.StatusError]) -> dict[str, Entry]:
        """The objects of ``rtype`` as they were at resourceVersion ``at`` (undoing newer
        events); ``too_old()`` is raised when ``at`` predates the retained history."""
        objects = self._objects.get(rtype.key, {})
        if at >= self._rv:
            return objects
        log = self.log_locked(rtype)
        if at < log.floor_rv:
            raise too_old()
        newer = log.after_rv_locked(at)
        if not newer:
            return objects
        snapshot = dict(objects)
        for event in reversed(newer):
            if event.type == "ADDED":
                snapshot.pop(event.entry.key, None)
            elif event.old is not None:
                snapshot[event.old.key] = event.old
        return snapshot

    def expire_continue_tokens(self) -> None:
        """Make every continue token issued so far answer 410 Expired."""
        with self.lock:
            self._continue_floor = self._continue_serial

    def expire_history(self) -> None:
        """Forget every retained event: watches and exact LISTs from any resourceVersion
        handed out so far answer 410 Expired."""
        with self.lock:
            for log in self._logs.values():
                log.clear_locked(self._rv)

    def close_watches(self) -> None:
        """End every open watch stream (cleanly, as a server-side timeout would)."""
        with self.lock:
            self.watch_epoch += 1
            for log in self._logs.values():
                log.cond.notify_all()

    def close(self) -> None:
        """Stop serving watches for good (server shutdown)."""
        with self.lock:
            self.closed = True
        self.close_watches()

    # -- direct helpers for tests and benchmarks ----------------------------------------------

    def create(self, obj: Obj) -> Obj:
        """Create ``obj`` (``apiVersion``/``kind`` select the type); returns it as stored.
        Status is kept as given (unlike a create through the API). Errors as create_object."""
        return self.create_object(self._type_of(obj), obj)

    def update(self, obj: Obj, *, check_resource_version: bool = False) -> Obj:
        """Replace the stored object named by ``obj`` (status included; generation rules and
        finalizer handling apply). 404 when absent; 409 on a stale resourceVersion when
        ``check_resource_version``."""
        rtype = self._type_of(obj)
        meta = obj.get("metadata") or {}
        return self.guaranteed_update(rtype, meta.get("namespace") or "default", meta.get("name", ""),
                                      lambda _current: obj,
                                      check_resource_version=check_resource_version)[0]

    def upsert(self, obj: Obj) -> Obj:
        """Create ``obj``, or replace it (ignoring its resourceVersion) when it exists."""
        rtype = self._type_of(obj)
        meta = obj.get("metadata") or {}
        ns = (meta.get("namespace") or "default") if rtype.namespaced else None
        return self.guaranteed_update(rtype, ns, meta.get("name", ""), lambda _c: obj,
                                      check_resource_version=False, create=lambda: obj)[0]

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """Delete an object with grace period 0 (finalizers still respected); returns its last
        state, None if absent."""
        rtype = self.resolve(api_version, kind)
        try:
            return self.delete_object(rtype, namespace or "default", name, grace_period=0)[0]
        except st.StatusError as exc:
            if exc.code == 404:
                return None
            raise

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        """The stored object (a fresh dict), or None."""
        rtype = self.resolve(api_version, kind)
        try:
            return self.get_entry(rtype, namespace or "default", name).decode()
        except st.StatusError:
            return None

    def list(self, api_version: str, kind: str, namespace: str | None = None) -> list[Obj]:
        """Every stored object of a kind (in ``namespace`` when given), in key order."""
        rtype = self.resolve(api_version, kind)
        return [e.decode() for e in self.list_entries(rtype, namespace=namespace).entries]

    def create_many(self, objs: Iterable[Obj]) -> int:
        """Create objects one by one (each its own resourceVersion and event); returns count."""
        count = 0
        for obj in objs:
            self.create(obj)
            count += 1
        return count


def _gc_finalizers(finalizers: tuple[str, ...], propagation: str | None) -> tuple[str, ...]:
    """``finalizers`` with the garbage collector's ones set for a delete with ``propagation``
    (None: unchanged)."""
    if propagation is None:
        return finalizers
    kept = tuple(f for f in finalizers if f not in ("orphan", "foregroundDeletion"))
    added = {"Orphan": ("orphan",), "Foreground": ("foregroundDeletion",)}.get(propagation, ())
    return kept + added


def parse_rv(text: str) -> int:
    """A resourceVersion query value as an integer; 400 BadRequest when not a number."""
    try:
        value = int(text)
        if value < 0:
            raise ValueError
        return value
    except (TypeError, ValueError):
        raise st.bad_request(f"invalid resource version: {text!r}") from None


def too_large(requested: int, current: int) -> st.StatusError:
    """504 Timeout for a resourceVersion newer than the store's (the watch cache's
    ``Too large resource version`` after its wait)."""
    return st.StatusError(504, "Timeout",
                          f"Timeout: Too large resource version: {requested}, current: {current}",
                          {"causes": [{"reason": "ResourceVersionTooLarge",
                                       "message": "Too large resource version"}],
                           "retryAfterSeconds": 1})


def _with_header(rtype: ResourceType, obj: Obj, meta: Obj) -> Obj:
    """A shallow copy of ``obj`` led by apiVersion, kind and ``meta`` (the wire order)."""
    new = {"apiVersion": rtype.api_version(), "kind": rtype.kind, "metadata": meta}
    for key, value in obj.items():
        if key not in new:
            new[key] = value
    return new


def _spec_changed(rtype: ResourceType, old: Obj, new: Obj) -> bool:
    skip = ("metadata", "status") if rtype.has_status else ("metadata",)
    keys = (set(old) | set(new)) - set(skip) - {"apiVersion", "kind"}
    return any(old.get(k) != new.get(k) for k in keys)
