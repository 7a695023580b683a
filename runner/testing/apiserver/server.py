"""``EmbeddedAPIServer``: the in-process Kubernetes API server for tests, benchmarks and
``kinrun --embedded``.

    with EmbeddedAPIServer() as srv:          # port 0: a free port
        srv.url, srv.kubeconfig_path          # http://127.0.0.1:PORT, a kubeconfig for it
        srv.load([pod, configmap])            # seed objects directly
        srv.store.create(obj)                 # fast in-process writes (benchmarks)
        srv.faults.expire_next_watch()        # misbehave on demand

The unmodified ``kubernetes`` Python client and kubectl work against it over plain HTTP (any
bearer token, or none, is accepted).

It emulates kube-apiserver 1.20.2 (``rest.EMULATED_VERSION``); docs/embedded.md is
the user's account. How it differs from a real kube-apiserver (see also the module docstrings
of ``patch``, ``store``, ``watch``, ``schemas``, ``gc``, ``tables``, ``protobuf``):

- No authentication, authorization (SelfSubjectAccessReviews allow everything), built-in
  admission plugins, audit, TLS, API priority and fairness. ``/openapi/v2`` (JSON and
  protobuf, ``openapi_proto``) and ``/openapi/v3`` serve ``kinrun.openapi``'s schemas plus
  CRDs' (``openapi``). No aggregated discovery
  (clients fall back to the legacy documents). JSON answers; protobuf request bodies only
  for Namespace, ConfigMap, Secret and the access reviews (``protobuf``). Tables for GET,
  LIST and WATCH (``tables``; built-in kinds' columns and cells: ``printers``).
  Subresources: ``status`` and ``scale`` (no ``log``, ``exec``, ``eviction``, ``binding``,
  namespace ``finalize``).
- Writes: ``dryRun=All`` works for create/update/patch/delete (not deletecollection); a
  ``metadata.resourceVersion`` sent on create is ignored (the real server refuses it); no
  create-on-update for any kind; deletes answer the object for pods, namespaces, CRDs and
  custom resources and a Success Status otherwise; graceful deletion is not modelled.
- Validation: names, label keys and values, CRD names/scope/storage version, and the
  schemas (``schemas``): built-in kinds' JSON types (400), required fields (422), a few Go
  defaults, pruning; CRDs' structural schemas (prune, default, validate). Not the rest of
  the per-kind Go validation. No conversion between a CRD's versions (only ``apiVersion``
  is rewritten).
- Strategic merge patch knows no schemas: well-known merge lists (containers, env, volumes,
  ports, conditions, ...) merge by key, other lists are replaced (see ``patch``).
  Field ownership follows 1.20's fieldmanager (see ``managed_fields``, ``apply``): creates,
  updates and patches own the fields they change (manager: ``fieldManager``, else the
  User-Agent's prefix), server-side apply conflicts with every other owner (409 with
  FieldManagerConflict causes, the real messages), ``force`` takes ownership, fields a manager
  stops applying are removed, ``before-first-apply`` and kubectl's last-applied upgrade work;
  lists merge as structured-merge-diff v4 does (``typed``: by key per the schema's list
  type or patch merge key, ``k:{...}``/``v:...`` items, ``"."`` for what a manager added),
  but for the ``"."`` of a built-in struct held by pointer (docs/embedded.md).
  ``fieldManager`` is required for apply (422 otherwise), ``force`` only with apply (400).
- Controllers: with ``controllers=True`` a garbage collector and a namespace controller
  (``gc``); without (the default, as envtest) dependents are never deleted (Foreground/Orphan
  add their finalizer, which then stays) and a deleted Namespace stays Terminating with its
  content (new content is refused with 403). No kubelet (a scheduled Pod deleted with a grace period stays
  terminating until deleted with ``gracePeriodSeconds=0``; unscheduled pods go at once;
  nothing sets pod status), no scheduler. Deleting a CRD deletes its custom resources (that
  cleanup runs inside the real API server too). Defaulting is limited to a few Pod spec
  fields, the ``schemas`` defaults, Namespace phase/finalizer and CRD status.
- One process, one store: resourceVersions are a dense global counter; the watch history is
  kept per resource with at least ``history_size`` events (the real watch cache sizes itself);
  an exact LIST (``resourceVersionMatch=Exact``, or a continue token) is rebuilt from that
  history. A LIST from a future resourceVersion answers 504 at once (the real server waits
  up to 3 s); a WATCH from one is accepted and sends nothing up to it (as 1.20's watch cache).
  ``resourceVersion=0`` LISTs ignore ``limit`` (as the real watch cache does).
- A watch from a resourceVersion older than the history is answered as the cacher does: 200,
  then one ERROR event (Status 410 Expired), then the end (``faults.expire_next_watch`` gives
  the HTTP 410 form instead). A watcher that falls behind the history gets the same event.
- Watches without ``timeoutSeconds`` stay open until the client leaves, ``close_watches`` or
  shutdown (the real server closes them after a random 30-60 min). Bookmarks come every
  ``bookmark_interval`` seconds (real: about every minute) and carry the global
  resourceVersion.

Concurrency: ``start``/``stop`` from one thread; ``store``, ``faults`` and ``load`` are
thread-safe.
"""

from __future__ import annotations

import copy
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kinrun.threads import SupervisedThread

from . import managed_fields
from .faults import Faults
from .gc import Controllers
from .handlers import APIHTTPServer
from .kubeconfig import write_kubeconfig
from .registry import Registry
from .rest import Api
from .store import Store
from .validation import check_decodable

Obj = dict[str, Any]
CONTROLLERS_ENV = "KINRUN_EMBEDDED_CONTROLLERS"


def controllers_default() -> bool:
    """Whether ``kinrun --embedded`` and ``kinrun test`` run the embedded controllers (garbage
    collector, namespace controller): yes, unless ``$KINRUN_EMBEDDED_CONTROLLERS`` is ``off``
    (or ``0``/``false``)."""
    return os.environ.get(CONTROLLERS_ENV, "on").strip().lower() not in ("off", "0", "false")


class EmbeddedAPIServer:
    """An API server in a background thread (see module docstring).

    ``port``: 0 picks a free one; ``host``: bind address; ``bookmark_interval``: seconds
    between watch BOOKMARK events; ``history_size``: events retained per resource (older
    resourceVersions answer 410); ``kubeconfig``: where to write the kubeconfig (default a
    temp file removed at ``stop``).

    Determinism (for a test runner that needs byte-identical output): ``seed`` makes uids and
    ``generateName`` suffixes reproducible, ``clock`` (a callable giving wall-clock epoch
    seconds, e.g. ``lambda: 1_700_000_000 + fake_clock.now()``) supplies every timestamp the
    server writes (creationTimestamp, deletionTimestamp, managedFields times, CRD conditions).
    With both, the same writes give identical objects. Defaults: random, ``time.time``.
    Not covered: the timing of watch BOOKMARKs (``bookmark_interval``, real time), and what
    clients put in objects themselves (an Event's timestamps and name come from the client).

    ``controllers``: run the garbage collector and namespace controller (``gc``) after every
    write; off by default here (as envtest, which the differential tests compare with);
    ``kinrun --embedded`` and ``kinrun test`` turn them on (``controllers_default``).

    ``webhook_caller(webhook, url, body) -> answer bytes``: how admission webhooks are called
    (``webhooks``; default HTTPS; ``kinrun test`` answers in-process). It may raise OSError
    or ValueError (a failed call)."""

    def __init__(self, port: int = 0, *, host: str = "127.0.0.1", bookmark_interval: float = 60.0,
                 history_size: int = 10000, kubeconfig: str | os.PathLike[str] | None = None,
                 seed: int | None = None, clock: Callable[[], float] | None = None,
                 controllers: bool = False,
                 webhook_caller: Callable[[Any, str, bytes], bytes] | None = None) -> None:
        self.store = Store(Registry(), history_size=history_size, clock=clock or time.time,
                           seed=seed)
        if controllers:
            self.store.controllers.append(Controllers(self.store).on_write_locked)
        self.faults = Faults(self.store)
        self._api = Api(self.store, self.faults, bookmark_interval=bookmark_interval,
                        webhook_caller=webhook_caller)
        self._host, self._port = host, port
        self._kubeconfig_arg = kubeconfig
        self._httpd: APIHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self.kubeconfig_path: str = ""

    @property
    def port(self) -> int:
        """The bound port (after ``start``)."""
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of the running server."""
        return f"http://{self._host}:{self.port}"

    @property
    def bookmark_interval(self) -> float:
        """Seconds between BOOKMARK events on watches that allow them (settable)."""
        return self._api.bookmark_interval

    @bookmark_interval.setter
    def bookmark_interval(self, seconds: float) -> None:
        self._api.bookmark_interval = seconds

    def start(self) -> EmbeddedAPIServer:
        """Bind, serve in a daemon thread, write the kubeconfig; returns self."""
        if self._httpd is not None:
            return self
        self._httpd = APIHTTPServer((self._host, self._port), self._api)
        self._api.server_address = f"{self._host}:{self.port}"
        self._thread = SupervisedThread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.02},
                                        name=f"embedded-apiserver:{self.port}", daemon=True)
        self._thread.start()
        if self._kubeconfig_arg is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="kinrun-apiserver-")
            path: str | os.PathLike[str] = Path(self._tmpdir.name) / "kubeconfig"
        else:
            path = self._kubeconfig_arg
        self.kubeconfig_path = str(self.write_kubeconfig(path))
        return self

    def stop(self) -> None:
        """End every watch, stop listening, remove the temp kubeconfig. Idempotent."""
        if self._httpd is None:
            return
        self.store.close()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None

    def __enter__(self) -> EmbeddedAPIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def write_kubeconfig(self, path: str | os.PathLike[str], *, namespace: str = "default") -> Path:
        """Write a kubeconfig for this server to ``path`` (context ``embedded``)."""
        return write_kubeconfig(path, self.url, namespace=namespace)

    def admit(self, obj: Obj, *, validate: bool = True) -> Obj:
        """A copy of ``obj`` as a write through the API would store it: decode-checked,
        pruned, defaulted and validated against its kind's schema (``schemas``);
        ``validate=False``: not validated, as admission webhooks see a create's body. Raises
        StatusError (400, 404 for an unknown kind, 422)."""
        rtype = self.store.resolve(str(obj.get("apiVersion") or ""), str(obj.get("kind") or ""))
        version = str(obj["apiVersion"]).rpartition("/")[2]
        out = copy.deepcopy(obj)
        check_decodable(rtype, version, out)
        if validate:
            self._api.schemas.admit(rtype, version, out)
        else:
            self._api.schemas.decode(rtype, version, out)
        return out

    def load(self, objs: Iterable[Obj], *, field_manager: str | None = None,
             admit: bool = False) -> list[Obj]:
        """Seed objects: create each (``apiVersion``/``kind`` select the type; status kept),
        or replace it when it exists. Missing namespaces are created first. Returns the
        stored objects. Errors as ``Store.create`` (StatusError).

        ``field_manager``: record every field as owned by this Update manager, as a create by
        it through the API would (e.g. ``"kubectl-create"``); None: no managedFields, so the
        first server-side apply finds the fields owned by ``before-first-apply`` (as
        kube-apiserver 1.20 does for objects without managedFields). ``admit``: each object
        goes through ``admit`` first (the defaults and checks of a write through the API)."""
        out = []
        for obj in objs:
            if admit:
                obj = self.admit(obj)
            rtype = self.store.resolve(obj.get("apiVersion", ""), obj.get("kind", ""))
            if field_manager is not None:
                api_version = str(obj.get("apiVersion") or "")
                schema = self._api.schemas.schema(rtype, api_version.rpartition("/")[2])
                obj = managed_fields.update(None, obj, manager=field_manager,
                                            api_version=api_version, now=self.store.now(),
                                            schema=schema)
            namespace = (obj.get("metadata") or {}).get("namespace")
            if rtype.namespaced and namespace and not self.store.namespace_exists(namespace):
                self.store.upsert({"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": namespace}})
            out.append(self.store.upsert(obj))
        return out

    def wait_for_watchers(self, api_version: str, kind: str, count: int = 1,
                          timeout: float = 10.0) -> bool:
        """Block until ``count`` watch streams on the kind are open (e.g. an informer synced
        and started watching); False after ``timeout`` seconds."""
        return self.store.wait_for_watchers(self.store.resolve(api_version, kind), count, timeout)

    def watcher_count(self, api_version: str, kind: str) -> int:
        """How many watch streams on the kind are open now."""
        return self.store.watcher_count(self.store.resolve(api_version, kind))

    def close_watches(self) -> None:
        """End every open watch stream (same as ``faults.close_watches``)."""
        self.store.close_watches()
