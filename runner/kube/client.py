"""Client: kinrun's access to one Kubernetes API server.

Built on the official ``kubernetes`` client for what it does well (kubeconfig and in-cluster
loading, auth, TLS, the urllib3 connection pool) and around it for the rest: requests are sent
through that pool directly and bodies are plain dicts decoded with orjson, never the generated
model classes (about ten times slower, see ``benchmarks/decode.py``).

One Client is shared by every informer and worker of a process: its TokenBucket
(``qps``/``burst``) is the process-wide request budget, as a client-go ``rest.Config``'s, and
its pool has ``pool_size`` connections (one per concurrent request: each informer's watch holds
one for its lifetime, each worker one per write).

Dry-run mode (``dry_run=True``, ``kinrun CONFIG --dry-run``): reads are real, and every write
(create, update, apply, patch, delete, Events, Leases; ``execute`` and the helpers alike) is
sent with ``dryRun=All`` (Kubernetes API dry-run, KEP-576): the server validates, admits and
answers with the result, and persists nothing. Each write then logs, on the
``kinrun.kube.dry_run`` logger at INFO, what it would have changed (summary format: module
``kinrun.kube.dry_run``): ``dry-run: would patch Deployment ns/web: spec.replicas 1 -> 3``.
Changes are computed against the current object: the one the caller passes as ``current``, else
a GET just before the write (one extra request per apply/patch/update, needing ``get``; not
atomic with the write, so a concurrent change in between shows up as if the write made it).
A dry-run write fails as the real one would (the same RBAC, validation, conflicts, 404s) and
raises the same ApiError; the methods return the server's dry-run answer.
"""

from __future__ import annotations

import enum
import logging
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import urllib3
from kubernetes import client as k8s_client

from kinrun import __version__
from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import NotFoundError
from kinrun.kube import dry_run as dr
from kinrun.kube import writes
from kinrun.kube.discovery import Discovery
from kinrun.kube.events import event_for
from kinrun.kube.kubeconfig import load_configuration
from kinrun.kube.listwatch import KubeListerWatcher
from kinrun.kube.projection import Projection, refuse_whole_write
from kinrun.kube.ratelimit import TokenBucket
from kinrun.kube.request import ApiRequest
from kinrun.kube.resources import ResourceRef
from kinrun.kube.retry import RetryPolicy
from kinrun.kube.transport import Transport
from kinrun.redact import redact_request

_log = logging.getLogger("kinrun.kube")
_dry_log = logging.getLogger("kinrun.kube.dry_run")

USER_AGENT = f"kinrun/{__version__}"
DEFAULT_POOL_SIZE = 64

LEASE = ResourceRef("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
EVENT = ResourceRef("", "v1", "events", "Event", namespaced=True)

Obj = dict[str, Any]


class _Fetch(enum.Enum):
    """``current=FETCH``: the caller does not hold the object a write is about; in dry-run mode
    the Client GETs it (``current=None`` says it does not exist)."""

    FETCH = 0


FETCH = _Fetch.FETCH
Current = Obj | None | _Fetch


class Client:
    """Kubernetes API access: discovery, raw LIST/WATCH, writes, Events and Leases.

    Construct with ``from_config`` (kubeconfig / in-cluster) or ``from_api_client`` (an
    existing ``kubernetes.client.ApiClient``, e.g. in tests). ``qps``/``burst``: client-side
    request budget (``qps <= 0``: unlimited); ``retry``: 429/5xx policy; ``clock``: the
    rate limiter's time, the retry waits and ``create_event``'s timestamps (a FakeClock in
    tests); ``dry_run``: send every write with
    ``dryRun=All`` and log what it would change (see the module docstring).

    Thread-safe: every method may be called from any thread at once; ``dry_run`` is fixed at
    construction.
    """

    def __init__(self, api_client: Any, *, qps: float = 50.0, burst: int = 100,
                 retry: RetryPolicy | None = None, connect_timeout: float = 10.0,
                 read_timeout: float = 60.0, clock: Clock = REAL_CLOCK,
                 dry_run: bool = False) -> None:
        api_client.user_agent = USER_AGENT  # the given ApiClient now identifies as kinrun
        self.api_client = api_client
        self.dry_run = dry_run  # read-only: every write of this Client is a dry run, or none is
        self.clock = clock  # read-only: the retries', the rate limiter's and Events' time
        self.rate_limiter = TokenBucket(qps, burst, clock=clock)
        self.transport = Transport(api_client, rate_limiter=self.rate_limiter, retry=retry,
                                   connect_timeout=connect_timeout, read_timeout=read_timeout,
                                   clock=clock)
        self.discovery = Discovery(lambda path: self.transport.request("GET", path))

    @classmethod
    def from_config(cls, *, kubeconfig: str | None = None, context: str | None = None,
                    qps: float = 50.0, burst: int = 100, pool_size: int | None = None,
                    dry_run: bool = False, **kwargs: Any) -> Client:
        """A Client from kubeconfig or in-cluster config (order: ``kinrun.kube.kubeconfig``).

        ``pool_size``: connections kept per host (default 64); size it to informers + workers.
        ``dry_run``: every write with ``dryRun=All``, nothing persisted (module docstring).
        Raises ClusterConfigError (one line saying what was tried).
        """
        config = load_configuration(kubeconfig=kubeconfig, context=context)
        config.connection_pool_maxsize = pool_size or DEFAULT_POOL_SIZE
        if not config.verify_ssl:
            _warn_insecure_once(config.host)
        return cls(k8s_client.ApiClient(config), qps=qps, burst=burst, dry_run=dry_run, **kwargs)

    @classmethod
    def from_api_client(cls, api_client: Any, **kwargs: Any) -> Client:
        """A Client over an existing ``kubernetes.client.ApiClient`` (its pool, auth, host)."""
        return cls(api_client, **kwargs)

    @property
    def host(self) -> str:
        """The API server's base URL."""
        return self.transport.host

    def close(self) -> None:
        """Close the connection pool (open watches break)."""
        self.api_client.rest_client.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- discovery, list and watch -------------------------------------------------------

    def resolve(self, api_version: str, kind_or_resource: str) -> ResourceRef:
        """The ResourceRef of a kind (or plural/singular/short name) in ``api_version``.

        Cached; refetched once on a miss. Raises UnknownKindError naming the closest matches.
        """
        return self.discovery.resolve(api_version, kind_or_resource)

    def prefetch(self, api_versions: Iterable[str]) -> None:
        """Fetch the discovery of several group versions at once before resolving kinds in
        them (``Discovery.prefetch``: concurrent, errors left to ``resolve``)."""
        self.discovery.prefetch(api_versions)

    def lister_watcher(self, ref: ResourceRef, *, namespace: str | None = None,
                       label_selector: str | None = None, field_selector: str | None = None,
                       page_size: int = 500, watch_read_timeout: float | None = None,
                       drop_managed_fields: bool = False, metadata_only: bool = False,
                       projection: Projection | None = None) -> KubeListerWatcher:
        """A ListerWatcher of ``ref`` in ``namespace`` (None = all namespaces).

        ``page_size``: LIST page size (0 = unpaged). ``watch_read_timeout``: socket read
        timeout of watches in seconds (None = the watch's timeoutSeconds + 30).
        ``drop_managed_fields``: cut ``metadata.managedFields`` before decoding where possible;
        ``metadata_only``: list and watch PartialObjectMetadata (see ``KubeListerWatcher``);
        ``projection``: decode only its paths (``kinrun.kube.projection``).
        """
        return KubeListerWatcher(self.transport, ref, namespace=namespace,
                                 label_selector=label_selector, field_selector=field_selector,
                                 page_size=page_size, watch_read_timeout=watch_read_timeout,
                                 drop_managed_fields=drop_managed_fields,
                                 metadata_only=metadata_only, projection=projection)

    # -- single objects ----------------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
            subresource: str | None = None) -> Obj:
        """GET one object. Raises NotFoundError when absent, UnknownKindError for the kind."""
        ref = self.resolve(api_version, kind)
        return writes.get_object(self.transport, ref, name, namespace=namespace,
                                 subresource=subresource)

    def create(self, body: Mapping[str, Any], *, namespace: str | None = None,
               params: Mapping[str, Any] | None = None) -> Obj:
        """Create ``body`` (a full manifest). Raises ConflictError when it exists."""
        return self._create(self._ref_of(body), body, namespace, params)

    def update(self, body: Mapping[str, Any], *, namespace: str | None = None,
               subresource: str | None = None, params: Mapping[str, Any] | None = None,
               current: Current = FETCH) -> Obj:
        """Replace (PUT) ``body``; with metadata.resourceVersion, ConflictError on a race.
        ``current``: the object now, if the caller holds it (dry-run compares with it)."""
        return self._update(self._ref_of(body), body, namespace, subresource, params, current)

    def apply(self, body: Mapping[str, Any], *, namespace: str | None = None,
              force: bool = False, field_manager: str = writes.FIELD_MANAGER,
              subresource: str | None = None, params: Mapping[str, Any] | None = None,
              current: Current = FETCH) -> Obj:
        """Server-side apply ``body`` as field manager ``kinrun``; ConflictError on a field
        owned by another manager unless ``force``. ``current``: as for ``update``."""
        return self._apply(self._ref_of(body), body, namespace, force, field_manager,
                           subresource, params, current)

    def patch(self, api_version: str, kind: str, name: str, patch: Any, *,
              namespace: str | None = None, patch_type: str = "merge",
              subresource: str | None = None, params: Mapping[str, Any] | None = None,
              current: Current = FETCH) -> Obj:
        """Patch one object: ``patch_type`` ``merge`` | ``json`` | ``strategic``.
        ``current``: as for ``update``."""
        ref = self.resolve(api_version, kind)
        return self._patch(ref, name, patch, namespace, patch_type, subresource, params, current)

    def patch_status(self, api_version: str, kind: str, name: str, patch: Any, *,
                     namespace: str | None = None, patch_type: str = "merge") -> Obj:
        """Patch the ``status`` subresource of one object."""
        return self.patch(api_version, kind, name, patch, namespace=namespace,
                          patch_type=patch_type, subresource="status")

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None, *,
               propagation_policy: str | None = None,
               preconditions: Mapping[str, str] | None = None,
               grace_period_seconds: int | None = None, missing_ok: bool = False,
               params: Mapping[str, Any] | None = None) -> Obj | None:
        """Delete one object; returns the server's answer (the object while finalizers run, or
        a Status). ``propagation_policy``: Orphan | Background | Foreground;
        ``preconditions``: ``{"uid": ..., "resourceVersion": ...}`` (ConflictError when they
        fail). NotFoundError when absent, unless ``missing_ok`` (then None)."""
        ref = self.resolve(api_version, kind)
        options = writes.delete_options(propagation_policy=propagation_policy,
                                        preconditions=preconditions,
                                        grace_period_seconds=grace_period_seconds)
        try:
            return self._delete(ref, name, namespace, options, params)
        except NotFoundError:
            if missing_ok:
                return None
            raise

    # -- writes, real or dry-run -----------------------------------------------------------

    def _create(self, ref: ResourceRef, body: Mapping[str, Any], namespace: str | None,
                params: Mapping[str, Any] | None) -> Obj:
        refuse_whole_write(body, "create")

        def send(query: Mapping[str, Any] | None) -> Obj:
            return writes.create_object(self.transport, ref, body, namespace=namespace,
                                        params=query)
        if not self.dry_run:
            return send(params)
        name = str((body.get("metadata") or {}).get("name") or "")  # "" with generateName
        target = dr.Target(ref.kind, writes.object_namespace(ref, body, namespace), name)
        return self._dry_write("create", ref, target, params, send, None)

    def _update(self, ref: ResourceRef, body: Mapping[str, Any], namespace: str | None,
                subresource: str | None, params: Mapping[str, Any] | None,
                current: Current) -> Obj:
        refuse_whole_write(body, "update")

        def send(query: Mapping[str, Any] | None) -> Obj:
            return writes.replace_object(self.transport, ref, body, namespace=namespace,
                                         subresource=subresource, params=query)
        if not self.dry_run:
            return send(params)
        target = _body_target(ref, body, namespace, subresource)
        return self._dry_write("update", ref, target, params, send, current)

    def _apply(self, ref: ResourceRef, body: Mapping[str, Any], namespace: str | None,
               force: bool, field_manager: str, subresource: str | None,
               params: Mapping[str, Any] | None, current: Current) -> Obj:
        refuse_whole_write(body, "apply")

        def send(query: Mapping[str, Any] | None) -> Obj:
            return writes.apply_object(self.transport, ref, body, namespace=namespace,
                                       force=force, field_manager=field_manager,
                                       subresource=subresource, params=query)
        if not self.dry_run:
            return send(params)
        target = _body_target(ref, body, namespace, subresource)
        return self._dry_write("apply", ref, target, params, send, current)

    def _patch(self, ref: ResourceRef, name: str, patch: Any, namespace: str | None,
               patch_type: str, subresource: str | None, params: Mapping[str, Any] | None,
               current: Current) -> Obj:
        def send(query: Mapping[str, Any] | None) -> Obj:
            return writes.patch_object(self.transport, ref, name, patch, namespace=namespace,
                                       patch_type=patch_type, subresource=subresource,
                                       params=query)
        if not self.dry_run:
            return send(params)
        target = dr.Target(ref.kind, namespace if ref.namespaced else None, name, subresource)
        return self._dry_write("patch", ref, target, params, send, current)

    def _delete(self, ref: ResourceRef, name: str, namespace: str | None,
                options: Mapping[str, Any] | None, params: Mapping[str, Any] | None) -> Obj:
        """DELETE; NotFoundError when absent (dry-run too: the server answers 404)."""
        def send(query: Mapping[str, Any] | None) -> Obj:
            return writes.delete_object(self.transport, ref, name, namespace=namespace,
                                        options=options, params=query)
        if not self.dry_run:
            return send(params)
        target = dr.Target(ref.kind, namespace if ref.namespaced else None, name)
        try:
            answer = send(dr.with_dry_run(params))
        except NotFoundError:
            _dry_log.info("dry-run: %s", dr.absent_summary(target))
            raise
        _dry_log.info("dry-run: %s", dr.delete_summary(target, answer))
        return answer

    def _dry_write(self, verb: dr.Change, ref: ResourceRef, target: dr.Target,
                   params: Mapping[str, Any] | None,
                   send: Callable[[Mapping[str, Any] | None], Obj], current: Current) -> Obj:
        """Send a create/update/apply/patch with ``dryRun=All`` and log what it would change
        against ``current`` (FETCH: GET it first; a create needs no current object)."""
        if current is FETCH:
            current = self._current(ref, target)
        answer = send(dr.with_dry_run(params))
        _dry_log.info("dry-run: %s", dr.change_summary(verb, target, current, answer))
        return answer

    def _current(self, ref: ResourceRef, target: dr.Target) -> Obj | None:
        """The object ``target`` names as the server has it now, or None when absent."""
        try:
            return writes.get_object(self.transport, ref, target.name,
                                     namespace=target.namespace, subresource=target.subresource)
        except NotFoundError:
            return None

    def _ref_of(self, body: Mapping[str, Any]) -> ResourceRef:
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if not api_version or not kind:
            raise ValueError("the object needs apiVersion and kind")
        return self.resolve(str(api_version), str(kind))

    # -- ApiRequest ------------------------------------------------------------------------

    def execute(self, req: ApiRequest, *, current: Current = FETCH) -> Obj | None:
        """Send one ApiRequest (rendered by an action) and return the server's answer.

        ``delete`` returns None when the object was already gone (deleting is idempotent for a
        controller). ``params``: ``fieldManager`` and ``force`` steer apply,
        ``propagationPolicy`` and ``gracePeriodSeconds`` steer delete, the rest are sent as
        query parameters. ``current``: the object the request is about as the caller holds it
        (dry-run mode compares the server's answer with it; FETCH: GET it). Raises
        UnknownKindError, ApiError subclasses, ValueError for a request that cannot be sent (no
        name, namespace missing for a namespaced kind).
        """
        ref = self.resolve(req.api_version, req.kind)
        handler = _EXECUTORS.get(req.verb)
        if handler is None:
            raise ValueError(f"unknown verb {req.verb!r} in {redact_request(req.describe())}")
        return handler(self, ref, req, current)

    def _exec_get(self, ref: ResourceRef, req: ApiRequest, current: Current) -> Obj:
        return writes.get_object(self.transport, ref, req.name, namespace=req.namespace,
                                 subresource=req.subresource, params=req.params or None)

    def _exec_create(self, ref: ResourceRef, req: ApiRequest, current: Current) -> Obj:
        return self._create(ref, _named(ref, req), req.namespace, req.params or None)

    def _exec_update(self, ref: ResourceRef, req: ApiRequest, current: Current) -> Obj:
        return self._update(ref, _named(ref, req), req.namespace, req.subresource,
                            req.params or None, current)

    def _exec_apply(self, ref: ResourceRef, req: ApiRequest, current: Current) -> Obj:
        params = dict(req.params)
        manager = str(params.pop("fieldManager", writes.FIELD_MANAGER))
        force = _truthy(params.pop("force", False))
        return self._apply(ref, _named(ref, req), req.namespace, force, manager,
                           req.subresource, params, current)

    def _exec_patch(self, ref: ResourceRef, req: ApiRequest, current: Current) -> Obj:
        return self._patch(ref, req.name, req.body, req.namespace, req.patch_type or "merge",
                           req.subresource, req.params or None, current)

    def _exec_delete(self, ref: ResourceRef, req: ApiRequest, current: Current) -> Obj | None:
        params = dict(req.params)
        options = dict(req.body or {})
        for key in ("propagationPolicy", "gracePeriodSeconds", "preconditions"):
            if key in params:
                options[key] = params.pop(key)
        if options:
            options = {"apiVersion": "v1", "kind": "DeleteOptions", **options}
        try:
            return self._delete(ref, req.name, req.namespace, options or None, params or None)
        except NotFoundError:
            return None

    # -- Events and Leases -----------------------------------------------------------------

    def create_event(self, involved: Mapping[str, Any], *, type: str, reason: str,
                     message: str, component: str = "kinrun") -> Obj:
        """Record a core/v1 Event about ``involved`` (an object dict) and return it.

        ``type``: Normal | Warning. Raises ApiError (e.g. ForbiddenError without RBAC for
        events), ValueError when ``involved`` has no name.
        """
        event = event_for(dict(involved), type=type, reason=reason, message=message,
                          component=component, clock=self.clock)
        return self._create(EVENT, event, None, None)

    def get_lease(self, name: str, namespace: str) -> Obj:
        """GET a coordination.k8s.io/v1 Lease. Raises NotFoundError when absent."""
        return writes.get_object(self.transport, LEASE, name, namespace=namespace)

    def create_lease(self, lease: Mapping[str, Any]) -> Obj:
        """Create a Lease (a dict with metadata.name/namespace and spec). ConflictError when it
        exists (another candidate created it first). A dry-run Client only pretends (see
        ``kinrun.app``: a dry run takes part in no election)."""
        return self._create(LEASE, lease, None, None)

    def update_lease(self, lease: Mapping[str, Any]) -> Obj:
        """Replace a Lease; its metadata.resourceVersion makes this a compare-and-swap
        (ConflictError when another holder updated it meanwhile)."""
        return self._update(LEASE, lease, None, None, None, FETCH)


def _body_target(ref: ResourceRef, body: Mapping[str, Any], namespace: str | None,
                 subresource: str | None) -> dr.Target:
    """The Target of a write that carries the object (update, apply); ValueError as the write
    itself raises it (no name, no namespace for a namespaced kind)."""
    return dr.Target(ref.kind, writes.object_namespace(ref, body, namespace),
                     writes.object_name(ref, body), subresource)


def _named(ref: ResourceRef, req: ApiRequest) -> Mapping[str, Any]:
    """The request's body, with the request's name (and namespace, for a namespaced kind)
    filled in when the body lacks them; a new dict then, the request's body is not modified."""
    body = req.body
    if not isinstance(body, Mapping):
        raise ValueError(f"{req.verb} needs an object body: {redact_request(req.describe())}")
    meta = body.get("metadata") or {}
    namespace = req.namespace if ref.namespaced else None
    if (req.name and not meta.get("name")) or (namespace and not meta.get("namespace")):
        meta = {**meta, "name": meta.get("name") or req.name}
        if namespace:
            meta["namespace"] = meta.get("namespace") or namespace
        body = {**body, "metadata": meta}
    return body


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes")
    return bool(value)


_EXECUTORS: dict[str, Callable[[Client, ResourceRef, ApiRequest, Current], Obj | None]] = {
    "get": Client._exec_get,
    "create": Client._exec_create,
    "update": Client._exec_update,
    "apply": Client._exec_apply,
    "patch": Client._exec_patch,
    "delete": Client._exec_delete,
}


def _warn_insecure_once(host: str) -> None:
    """Say once per host that TLS is not verified (kubeconfig ``insecure-skip-tls-verify``),
    instead of urllib3's InsecureRequestWarning on every request."""
    warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    if host not in _INSECURE_HOSTS_WARNED:
        _INSECURE_HOSTS_WARNED.add(host)
        _log.warning("TLS certificate of %s is not verified (insecure-skip-tls-verify)", host)


_INSECURE_HOSTS_WARNED: set[str] = set()
