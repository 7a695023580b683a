"""The REST layer: one HTTP request (already parsed) -> one store operation -> one answer.

Routes ``/version``, ``/healthz``, discovery, and the resource paths
``/api/v1[/namespaces/NS]/PLURAL[/NAME[/status]]`` and ``/apis/G/V[/namespaces/NS]/...``
(plus the legacy ``.../watch/...`` prefix). Verbs: GET (get, list, watch), POST (create), PUT
(update), PATCH (merge, strategic-as-merge, JSON patch, apply), DELETE (delete,
deletecollection). Query parameters follow metav1.ListOptions / PatchOptions / DeleteOptions.
Failures are ``StatusError``; ``Api.handle`` turns them into Status answers. Watches come back
as a ``WatchAnswer`` that the HTTP layer streams.

Concurrency: ``Api`` is stateless apart from the store and faults it wraps; ``handle`` is called
from many connection threads at once.
"""

from __future__ import annotations

import copy
import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from kinrun import safe_yaml

from . import apply as server_side_apply
from . import managed_fields, openapi, openapi_proto
from . import partial, printers, protobuf, tables
from . import patch as patches
from . import status as st
from .admission import AdmittedWrites
from .faults import Faults
from .registry import ResourceType
from kinrun.selectors import SelectorError, parse_field_selector, parse_label_selector
from .scale import scale_of, with_replicas
from .schemas import SchemaCheck
from .store import CRDS, Entry, Store
from .validation import check_decodable
from .watch import Watcher, error_line
from .webhooks import Webhooks

Obj = dict[str, Any]
log = logging.getLogger(__name__)
EMULATED_VERSION = (1, 20, 2)
"""The kube-apiserver release the embedded server emulates (schemas and behaviour alike), said
once: ``/version`` and ``docs/embedded.md`` derive from it; the envtest tier runs the same
release, so differential tests compare like with like."""
VERSION_INFO = {"major": str(EMULATED_VERSION[0]), "minor": str(EMULATED_VERSION[1]),
                "gitVersion": "v%d.%d.%d-kinrun.embedded" % EMULATED_VERSION,
                "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
                "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.15.5", "compiler": "gc",
                "platform": "linux/amd64"}
REVIEWS_GROUP = "authorization.k8s.io"
NO_AUTHORIZATION = "the embedded API server has no authorization: everything is allowed"
EVERYTHING = {"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
              "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
              "incomplete": False}


def review(body: Obj) -> Obj:
    """The answer to a SelfSubjectAccessReview (allowed) or SelfSubjectRulesReview (every
    rule): the embedded server authorizes everything. Not stored, as kube-apiserver."""
    answer = {**body, "metadata": {"creationTimestamp": None, **(body.get("metadata") or {})}}
    if body.get("kind") == "SelfSubjectRulesReview":
        answer["status"] = EVERYTHING
    else:
        answer["status"] = {"allowed": True, "reason": NO_AUTHORIZATION}
    return answer


PROPAGATION = ("Foreground", "Background", "Orphan")
RETURNS_OBJECT_ON_DELETE = {("", "pods"), ("", "namespaces"),
                            ("apiextensions.k8s.io", "customresourcedefinitions")}


_BODY_TYPES = ("application/json", "application/yaml", "*/*")
"""Request body media types the embedded server decodes (no protobuf, no CBOR)."""


@dataclass(frozen=True, slots=True)
class Request:
    """A parsed HTTP request: ``method`` (upper case), ``path`` (no query), ``query`` (last
    value of each parameter), ``headers`` (case-insensitive mapping), ``body``."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes = b""


@dataclass(slots=True)
class Answer:
    """A complete HTTP answer: ``code``, ``body`` bytes, ``content_type``, extra ``headers``."""

    code: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class WatchAnswer:
    """A watch to stream: ``watcher``; ``timeout`` seconds (None = until closed); ``stall``
    (send headers then nothing until the store's ``watch_epoch`` moves past ``stall_epoch``,
    the epoch when the stall was answered: a ``close_watches`` right after the answer still
    ends it); ``first_lines`` (sent before the watcher's, e.g. an ERROR); ``end_after_first``
    (close once those are sent)."""

    watcher: Watcher | None
    timeout: float | None = None
    stall: bool = False
    stall_epoch: int = 0
    first_lines: list[bytes] = field(default_factory=list)
    end_after_first: bool = False


@dataclass(frozen=True, slots=True)
class Target:
    """What a resource path names: ``rtype`` served at ``version``, ``namespace`` (None =
    all / cluster-scoped), ``name`` ("" = the collection), ``subresource`` ("" or
    "status"), ``legacy_watch`` (the ``/watch/`` prefix was used)."""

    rtype: ResourceType
    version: str
    namespace: str | None
    name: str
    subresource: str
    legacy_watch: bool = False


def json_answer(code: int, obj: Any, headers: dict[str, str] | None = None) -> Answer:
    """An Answer carrying ``obj`` as JSON."""
    return Answer(code, orjson.dumps(obj), headers=headers or {})


def _not_found_path() -> st.StatusError:
    return st.StatusError(404, "NotFound", "the server could not find the requested resource",
                          {"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]})


def _dry_run(req: Request) -> bool:
    """Whether the request asks for ``dryRun=All`` (400 for any other value)."""
    value = req.query.get("dryRun")
    if value is None or value == "":
        return False
    if value != "All":
        raise st.bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return True


def _error_headers(error: st.StatusError) -> dict[str, str]:
    """The headers of an error answer: its own, plus ``Retry-After`` when the Status carries
    ``details.retryAfterSeconds`` > 0 (as apiserver's responsewriters.ErrorNegotiated)."""
    headers = dict(error.headers)
    seconds = (error.details or {}).get("retryAfterSeconds")
    if isinstance(seconds, int) and seconds > 0 and "Retry-After" not in headers:
        headers["Retry-After"] = str(seconds)
    return headers


def _accepts_json(accept: str) -> bool:
    """Whether an Accept header allows JSON (empty: anything)."""
    types = [part.split(";")[0].strip() for part in accept.split(",") if part.strip()]
    return not types or any(t in ("application/json", "*/*", "application/*") for t in types)


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("true", "1")


class Api:
    """The request router over a ``Store`` and its ``Faults``; ``bookmark_interval`` seconds
    between watch bookmarks; ``server_address`` ``host:port`` for ``/api``;
    ``webhook_caller``: how admission webhooks are called (``webhooks.Webhooks``)."""

    def __init__(self, store: Store, faults: Faults, *, bookmark_interval: float = 60.0,
                 server_address: str = "127.0.0.1:0",
                 webhook_caller: Callable[[Any, str, bytes], bytes] | None = None) -> None:
        self.store = store
        self.faults = faults
        self.bookmark_interval = bookmark_interval
        self.server_address = server_address
        self.schemas = SchemaCheck(store)
        self.writes = AdmittedWrites(store, self.schemas, Webhooks(store, webhook_caller))

    def handle(self, req: Request) -> Answer | WatchAnswer:
        """Answer one request; never raises for request problems (they become Status)."""
        try:
            if self.faults.latency > 0:
                time.sleep(self.faults.latency)
            failure = self.faults.take_failure()
            if failure is not None:
                raise self._injected(*failure)
            return self._route(req)
        except st.StatusError as exc:
            return Answer(exc.code, exc.to_json(), headers=_error_headers(exc))
        except Exception as exc:  # noqa: BLE001 - a server bug must not kill the connection
            log.exception("embedded API server failed on %s %s", req.method, req.path)
            error = st.internal_error(f"embedded API server error: {type(exc).__name__}: {exc}")
            return Answer(500, error.to_json())

    @staticmethod
    def _injected(code: int, retry_after: float | None) -> st.StatusError:
        if code == 429:
            return st.too_many_requests(retry_after)
        if code == 410:
            return st.expired("injected failure")
        error = st.internal_error("injected failure", code) if code >= 500 else \
            st.StatusError(code, "BadRequest" if code == 400 else "Unknown", "injected failure")
        if retry_after is not None:
            error.headers["Retry-After"] = str(int(-(-retry_after // 1)))
        return error

    # -- routing --------------------------------------------------------------------------

    def _route(self, req: Request) -> Answer | WatchAnswer:
        path = req.path.rstrip("/") or "/"
        if path == "/openapi/v2" and not _accepts_json(req.headers.get("Accept", "")):
            return self._openapi_v2_protobuf(req.headers.get("Accept", ""))
        fixed = self._fixed(path)
        if fixed is not None:
            if req.method not in ("GET", "HEAD"):
                raise st.StatusError(405, "MethodNotAllowed", "the server does not allow this method")
            return fixed
        target = self._target(path)
        if target is None:
            raise _not_found_path()
        try:
            return self._dispatch(req, target)
        except SelectorError as exc:
            raise st.bad_request(str(exc)) from None

    def _openapi_v2_protobuf(self, accept: str) -> Answer:
        """``/openapi/v2`` for a client that accepts only other forms: the protobuf form
        (``openapi_proto``) when it accepts that, else 404 (a 406 makes newer kubectl's
        validation fail, where a 404 means "no v2 document")."""
        if openapi_proto.MEDIA_TYPE not in accept:
            raise _not_found_path()
        doc = openapi.v2_document(self.store.registry, self.schemas.schema)
        return Answer(200, openapi_proto.document_message(doc), "application/octet-stream")

    def _fixed(self, path: str) -> Answer | None:
        reg = self.store.registry
        if path in ("/healthz", "/readyz", "/livez"):
            return Answer(200, b"ok", "text/plain; charset=utf-8")
        if path == "/version":
            return json_answer(200, VERSION_INFO)
        if path == "/api":
            return json_answer(200, reg.api_versions(self.server_address))
        if path == "/apis":
            return json_answer(200, reg.api_group_list())
        parts = path.strip("/").split("/")
        doc: Any = None
        schema_of = self.schemas.schema
        if parts == ["openapi", "v2"]:
            doc = openapi.v2_document(reg, schema_of)
        elif parts[0] == "openapi" and len(parts) >= 2 and parts[1] == "v3":
            doc = (openapi.root_document(reg, schema_of) if len(parts) == 2 else
                   openapi.gv_document(reg, "", parts[3], schema_of)
                   if parts[2] == "api" and len(parts) == 4 else
                   openapi.gv_document(reg, parts[3], parts[4], schema_of)
                   if len(parts) == 5 else None)
        elif parts[0] == "api" and len(parts) == 2:
            doc = reg.resource_list("", parts[1])
        elif parts[0] == "apis" and len(parts) == 2:
            doc = reg.api_group(parts[1])
        elif parts[0] == "apis" and len(parts) == 3:
            doc = reg.resource_list(parts[1], parts[2])
        else:
            return None
        if doc is None:
            raise _not_found_path()
        return json_answer(200, doc)

    def _target(self, path: str) -> Target | None:
        parts = path.strip("/").split("/")
        if parts[0] == "api" and len(parts) >= 3:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None
        legacy_watch = rest[0] == "watch"
        if legacy_watch:
            rest = rest[1:]
        reg = self.store.registry
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            inner = reg.by_path(group, version, rest[2])
            if inner is not None and inner.namespaced:
                namespace, rest = rest[1], rest[2:]
        if not rest or len(rest) > 3:
            return None
        rtype = reg.by_path(group, version, rest[0])
        if rtype is None or (namespace and not rtype.namespaced):
            return None
        name = rest[1] if len(rest) > 1 else ""
        sub = rest[2] if len(rest) > 2 else ""
        if sub and not ((sub == "status" and rtype.has_status) or
                        (sub == "scale" and rtype.scale is not None)):
            return None
        if name and rtype.namespaced and namespace is None:
            return None
        return Target(rtype, version, namespace, name, sub, legacy_watch)

    def _dispatch(self, req: Request, t: Target) -> Answer | WatchAnswer:
        method = "GET" if req.method == "HEAD" else req.method
        verb = {("GET", True): "get", ("GET", False): "list", ("POST", False): "create",
                ("PUT", True): "update", ("PATCH", True): "patch", ("DELETE", True): "delete",
                ("DELETE", False): "deletecollection"}.get((method, bool(t.name)))
        if verb == "list" and (t.legacy_watch or _truthy(req.query.get("watch"))):
            verb = "watch"
        if verb is None or (verb not in t.rtype.verbs and verb != "get"):
            action = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())
            raise st.method_not_supported(t.rtype.group, t.rtype.plural, action)
        if verb == "create" and t.rtype.namespaced and t.namespace is None:
            raise st.method_not_supported(t.rtype.group, t.rtype.plural, "create")
        return getattr(self, f"_{verb}")(req, t)

    # -- helpers --------------------------------------------------------------------------

    def _out(self, t: Target, obj: Obj) -> Obj:
        obj["apiVersion"] = t.rtype.api_version(t.version)
        return obj

    def _raw(self, t: Target, entry: Entry) -> bytes:
        if t.version == t.rtype.storage_version:
            return entry.raw
        return orjson.dumps(self._out(t, entry.decode()))

    @staticmethod
    def _decode_body(req: Request) -> Obj:
        content_type = req.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type == protobuf.MEDIA_TYPE:
            return protobuf.decode_body(req.body)
        if content_type and content_type not in _BODY_TYPES:
            # Protobuf or CBOR (kubectl create's typed clients send protobuf): not decoded here;
            # 415 as kube-apiserver answers a media type it does not accept.
            raise st.unsupported_media_type(content_type, list(_BODY_TYPES))
        try:
            if content_type == "application/yaml":
                body = safe_yaml.load(req.body or b"null", safe_yaml.ObjectLoader)
            else:
                body = orjson.loads(req.body or b"null")
        except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
            raise st.bad_request(f"the object provided is unrecognized: {exc}") from None
        if not isinstance(body, dict):
            raise st.bad_request("the object provided is unrecognized: not a JSON object")
        return body

    @staticmethod
    def _check_type(t: Target, body: Obj) -> None:
        check_decodable(t.rtype, t.version, body)
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if kind and kind != t.rtype.kind:
            raise st.bad_request(f"the kind in the data ({kind}) does not match the expected kind "
                                 f"({t.rtype.kind})")
        if api_version and api_version not in [t.rtype.api_version(v) for v in t.rtype.versions]:
            raise st.bad_request(f"the API version in the data ({api_version}) does not match the "
                                 f"expected API version ({t.rtype.api_version(t.version)})")

    @staticmethod
    def _check_identity(t: Target, body: Obj, *, need_name: bool) -> None:
        meta = body.get("metadata") or {}
        if t.namespace and meta.get("namespace") and meta["namespace"] != t.namespace:
            raise st.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
        if need_name and meta.get("name") != t.name:
            raise st.bad_request(f"the name of the object ({meta.get('name')}) does not match the "
                                 f"name on the URL ({t.name})")

    def _manager(self, req: Request, required: bool = False) -> str:
        """The request's field manager: ``fieldManager``, else (not for apply: 422) derived
        from the User-Agent as kube-apiserver's managerOrUserAgent."""
        manager = req.query.get("fieldManager", "")
        if not manager and required:
            raise st.invalid("PatchOptions", "meta.k8s.io", "", [(
                "fieldManager", "FieldValueRequired", "Required value: is required for apply patch")])
        return manager or managed_fields.manager_from_user_agent(req.headers.get("User-Agent", ""))

    def _record(self, req: Request, t: Target, live: Obj | None, obj: Obj) -> Obj:
        """``obj`` with managedFields after this create/update/patch over ``live`` (None: a
        create), as the fieldmanager's Update."""
        return managed_fields.update(live, obj, manager=self._manager(req),
                                     api_version=t.rtype.api_version(t.version),
                                     now=self.store.now(),
                                     schema=self.schemas.schema(t.rtype, t.version))

    # -- verbs ----------------------------------------------------------------------------

    def _table_columns(self, t: Target) -> list[Any] | None:
        """The Table columns of ``t``'s kind (a built-in's ``printers.columns``, a custom
        resource's ``tables.crd_columns``); None: NAME and AGE."""
        if not t.rtype.custom:
            return printers.columns(t.rtype.group, t.rtype.kind)
        crd_type = self.store.registry.get(CRDS)
        crd = self.store.get_entry(crd_type, None,  # type: ignore[arg-type]
                                   f"{t.rtype.plural}.{t.rtype.group}").decode()
        versions = [v for v in (crd.get("spec") or {}).get("versions") or []
                    if v.get("name") == t.version]
        return tables.crd_columns(versions[0].get("additionalPrinterColumns") or []
                                  if versions else [])

    @staticmethod
    def _row_conditions(t: Target) -> Any:
        """The row conditions of ``t``'s kind (``printers.ROW_CONDITIONS``), or None."""
        if t.rtype.custom:
            return None
        return printers.ROW_CONDITIONS.get((t.rtype.group, t.rtype.kind))

    def _table(self, req: Request, t: Target, objs: list[Obj], meta: Obj) -> Answer:
        include = req.query.get("includeObject") or "Metadata"
        return json_answer(200, tables.table(self._table_columns(t), objs, self.store.epoch(),
                                             meta, include, self._row_conditions(t)))

    def _get(self, req: Request, t: Target) -> Answer:
        if tables.wants_table(req.headers.get("Accept", "")) and not t.subresource:
            entry = self.store.get_entry(t.rtype, t.namespace, t.name)
            return self._table(req, t, [self._out(t, entry.decode())],
                               {"resourceVersion": str(entry.rv)})
        if t.subresource == "scale":
            return json_answer(200, scale_of(t.rtype, self.store.get_entry(
                t.rtype, t.namespace, t.name).decode()))
        form = self._metadata_form(req, t, is_list=False)
        entry = self.store.get_entry(t.rtype, t.namespace, t.name)
        return Answer(200, partial.partial_raw(entry.raw) if form else self._raw(t, entry))

    @staticmethod
    def _metadata_form(req: Request, t: Target, *, is_list: bool) -> partial.Form:
        """The PartialObjectMetadata form the Accept header asks for ("" = whole objects);
        406 for the list form of an object or the object form of a list (``partial``)."""
        form = partial.requested_form(req.headers.get("Accept", ""))
        if form and (form == "list") != is_list:
            go_type = f"*{t.rtype.group.split('.')[0] or 'core'}.{t.rtype.kind}"
            raise partial.not_acceptable(form, go_type + ("List" if is_list else ""))
        return form

    def _list(self, req: Request, t: Target) -> Answer:
        q = req.query
        rv, match, cont = q.get("resourceVersion", ""), q.get("resourceVersionMatch", ""), q.get("continue", "")
        self._check_list_params(rv, match, cont)
        form = self._metadata_form(req, t, is_list=True)
        if (rv or cont) and self.faults.take("list"):
            raise st.too_old(int(rv) if rv.isdigit() else 0, self.store.resource_version)
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"))
        fields.check(t.rtype.field_keys, t.rtype.plural)
        try:
            limit = int(q.get("limit") or 0)
        except ValueError:
            raise st.bad_request(f"invalid limit: {q.get('limit')!r}") from None
        result = self.store.list_entries(t.rtype, namespace=t.namespace, labels=labels,
                                         fields=fields, resource_version=rv, match=match,
                                         limit=max(0, limit), continue_token=cont)
        meta: Obj = {"resourceVersion": str(result.resource_version)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        if result.remaining is not None:
            meta["remainingItemCount"] = result.remaining
        if tables.wants_table(req.headers.get("Accept", "")):
            return self._table(req, t, [self._out(t, e.decode()) for e in result.entries], meta)
        if form:
            items = b",".join(partial.partial_raw(e.raw) for e in result.entries)
            return Answer(200, partial.list_head(meta) + b',"items":[' + items + b"]}")
        head = orjson.dumps({"kind": t.rtype.list_kind_name,
                             "apiVersion": t.rtype.api_version(t.version), "metadata": meta})
        items = b",".join(self._raw(t, e) for e in result.entries)
        return Answer(200, head[:-1] + b',"items":[' + items + b"]}")

    @staticmethod
    def _check_list_params(rv: str, match: str, cont: str) -> None:
        if match and not rv:
            raise st.bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
        if match and match not in ("Exact", "NotOlderThan"):
            raise st.bad_request(f"resourceVersionMatch: Unsupported value: {match!r}")
        if match == "Exact" and rv == "0":
            raise st.bad_request('resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
        if cont and rv and rv != "0":
            raise st.bad_request("specifying resource version is not allowed when using continue")

    def _watch(self, req: Request, t: Target) -> WatchAnswer:
        q = req.query
        metadata_only = partial.requested_form(req.headers.get("Accept", "")) == "object"
        labels = parse_label_selector(q.get("labelSelector"))
        fields = parse_field_selector(q.get("fieldSelector"))
        fields.check(t.rtype.field_keys, t.rtype.plural)
        namespace = t.namespace
        timeout = _watch_timeout(q)
        faulted = self._faulted_watch(q)
        if faulted is not None:
            return faulted
        if t.name:
            fields = parse_field_selector(f"metadata.name={t.name}" + (
                "," + q["fieldSelector"] if q.get("fieldSelector") else ""))
        try:
            watcher = Watcher.open(
                self.store, t.rtype, version=t.version, resource_version=q.get("resourceVersion", ""),
                namespace=namespace, labels=labels, fields=fields,
                bookmarks=_truthy(q.get("allowWatchBookmarks")),
                bookmark_interval=self.bookmark_interval,
                send_initial_events=_truthy(q.get("sendInitialEvents")),
                metadata_only=metadata_only)
        except st.StatusError as exc:
            if exc.code != 410:
                raise
            # as the cacher: the watch is accepted (200), then one ERROR event ends it
            return WatchAnswer(None, first_lines=[error_line(exc)], end_after_first=True)
        if tables.wants_table(req.headers.get("Accept", "")):
            columns, include = self._table_columns(t), q.get("includeObject") or "Metadata"
            conditions = self._row_conditions(t)
            watcher.table = lambda obj: tables.table(
                columns, [obj], self.store.epoch(),
                {"resourceVersion": obj["metadata"].get("resourceVersion", "")}, include,
                conditions)
        return WatchAnswer(watcher, timeout=timeout)

    def _faulted_watch(self, q: Mapping[str, str]) -> WatchAnswer | None:
        """The answer of a watch fault taken now (``faults``), or None."""
        if self.faults.take("watch"):
            raise st.too_old(int(q.get("resourceVersion") or 0), self.store.resource_version)
        if self.faults.take("stall"):
            epoch = self.store.watch_epoch  # taken before a test can see ``stalled``
            self.faults.stalled.set()
            return WatchAnswer(None, timeout=None, stall=True, stall_epoch=epoch)
        if self.faults.take("watch_event"):
            error = st.too_old(int(q.get("resourceVersion") or 0), self.store.resource_version)
            return WatchAnswer(None, first_lines=[error_line(error)], end_after_first=True)
        return None

    def _create(self, req: Request, t: Target) -> Answer:
        body = self._decode_body(req)
        self._check_type(t, body)
        if t.rtype.group == REVIEWS_GROUP:
            return json_answer(201, self._out(t, review(body)))
        self._check_identity(t, body, need_name=False)
        self.schemas.decode(t.rtype, t.version, body)   # validated after mutating admission
        body = self._record(req, t, None, body)   # status reset after mutating admission
        warnings: list[str] = []
        created = self.writes.create(t.rtype, t.version, body, namespace=t.namespace,
                                     dry_run=_dry_run(req), warnings=warnings)
        return json_answer(201, self._out(t, created), _warning_headers(warnings))

    def _update(self, req: Request, t: Target) -> Answer:
        body = self._decode_body(req)
        if t.subresource == "scale":
            return self._write_scale(req, t, lambda _scale: body)
        self._check_type(t, body)
        self._check_identity(t, body, need_name=True)
        self.schemas.decode(t.rtype, t.version, body)   # validated after mutating admission

        def mutate(current: Obj) -> Obj:
            # as 1.20: ownership is computed before the strategy resets status (or spec),
            # which AdmittedWrites.update does after the mutating webhooks
            return self._record(req, t, current, body)

        return self._admitted_update(req, t, mutate)

    def _patch(self, req: Request, t: Target) -> Answer:
        content_type = req.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type not in t.rtype.patch_types:
            raise st.unsupported_media_type(content_type, list(t.rtype.patch_types))
        is_apply = content_type == patches.APPLY
        if "force" in req.query and not is_apply:
            raise st.bad_request("force may only be specified with apply patch")
        patch_body = patches.decode_patch(content_type, req.body)
        if t.subresource == "scale" and not is_apply:
            merge = patches.MERGE if content_type == patches.STRATEGIC else content_type
            return self._write_scale(req, t, lambda scale: patches.apply_patch(
                merge, scale, patch_body))
        if is_apply:
            return self._apply(req, t, patch_body)

        def mutate(current: Obj) -> Obj:
            patched = patches.apply_patch(content_type, current, patch_body)
            check_decodable(t.rtype, t.version, patched)
            self.schemas.decode(t.rtype, t.version, patched)   # validated after admission
            return self._record(req, t, current, patched)

        return self._admitted_update(req, t, mutate)

    def _write_scale(self, req: Request, t: Target, new_scale: Any) -> Answer:
        """PUT/PATCH of ``/scale``: ``new_scale(current Scale) -> Scale`` gives the desired
        replicas; answers the Scale after the write."""
        def mutate(current: Obj) -> Obj:
            scale = new_scale(scale_of(t.rtype, current))
            return with_replicas(t.rtype, copy.deepcopy(current), scale)

        obj, _ = self.store.guaranteed_update(t.rtype, t.namespace, t.name, mutate,
                                              dry_run=_dry_run(req))
        return json_answer(200, scale_of(t.rtype, obj))

    def _apply(self, req: Request, t: Target, applied: Any) -> Answer:
        manager = self._manager(req, required=True)
        if not isinstance(applied, dict):
            raise st.bad_request("apply patch body must be an object")
        self._check_type(t, applied)
        self._check_identity(t, applied, need_name=True)
        self.schemas.check_apply(t.rtype, t.version, applied)
        applied = self.schemas.applied_body(t.rtype, applied)
        force = _truthy(req.query.get("force"))
        api_version = t.rtype.api_version(t.version)
        defaults = functools.partial(self.schemas.defaulted, t.rtype, t.version)
        schema = self.schemas.schema(t.rtype, t.version)

        def mutate(current: Obj) -> Obj:
            merged = server_side_apply.apply(current, applied, manager=manager, force=force,
                                             api_version=api_version, now=self.store.now(),
                                             defaults=defaults, schema=schema)
            self.schemas.decode(t.rtype, t.version, merged)   # validated after admission
            return merged

        def create() -> Obj:
            if t.subresource:
                raise st.not_found(t.rtype.group, t.rtype.plural, t.name)
            obj = server_side_apply.apply(None, applied, manager=manager, force=force,
                                          api_version=api_version, now=self.store.now(),
                                          defaults=defaults, schema=schema)
            self.schemas.decode(t.rtype, t.version, obj)   # status reset, validated after
            return obj                                      # mutating admission

        return self._admitted_update(req, t, mutate, create)

    def _admitted_update(self, req: Request, t: Target, mutate: Any,
                         create: Any = None) -> Answer:
        """``mutate`` (``admission.Mutate``; ``create`` for an apply) through the admission
        webhooks, which prepare and validate the result after the mutating ones."""
        warnings: list[str] = []
        obj, created = self.writes.update(t.rtype, t.version, t.subresource, t.namespace,
                                          t.name, mutate, dry_run=_dry_run(req),
                                          warnings=warnings, create=create)
        return json_answer(201 if created else 200, self._out(t, obj),
                           _warning_headers(warnings))

    def _delete_options(self, req: Request) -> Obj:
        options: Obj = {}
        if req.body.strip():
            options = self._decode_body(req)
        for key in ("propagationPolicy", "gracePeriodSeconds", "orphanDependents"):
            if key in req.query:
                options[key] = req.query[key]
        policy = options.get("propagationPolicy")
        if policy is not None and policy not in PROPAGATION:
            raise st.invalid("DeleteOptions", "meta.k8s.io", "", [(
                "propagationPolicy", "FieldValueNotSupported",
                f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"')])
        return options

    def _delete(self, req: Request, t: Target) -> Answer:
        options = self._delete_options(req)
        pre = options.get("preconditions") or {}
        grace = options.get("gracePeriodSeconds")
        try:
            grace = None if grace is None else int(grace)
        except (TypeError, ValueError):
            raise st.bad_request(f"invalid gracePeriodSeconds: {grace!r}") from None
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if _truthy(str(options["orphanDependents"])) else "Background"
        warnings: list[str] = []
        obj, gone = self.writes.delete(t.rtype, t.version, t.namespace, t.name,
                                       uid=pre.get("uid"),
                                       resource_version=pre.get("resourceVersion"),
                                       grace_period=grace, propagation=policy,
                                       dry_run=_dry_run(req), warnings=warnings)
        headers = _warning_headers(warnings)
        if gone and not t.rtype.custom and t.rtype.key not in RETURNS_OBJECT_ON_DELETE:
            return json_answer(200, st.success(t.rtype.group, t.rtype.plural, t.name,
                                               obj["metadata"].get("uid", "")), headers)
        return json_answer(200, self._out(t, obj), headers)

    def _deletecollection(self, req: Request, t: Target) -> Answer:
        self._delete_options(req)
        labels = parse_label_selector(req.query.get("labelSelector"))
        fields = parse_field_selector(req.query.get("fieldSelector"))
        fields.check(t.rtype.field_keys, t.rtype.plural)
        result = self.store.list_entries(t.rtype, namespace=t.namespace, labels=labels, fields=fields)
        items, warnings = [], []
        for entry in result.entries:
            try:
                obj, _ = self.writes.delete(t.rtype, t.version, entry.namespace or None,
                                            entry.name, dry_run=False, warnings=warnings)
                items.append(self._out(t, obj))
            except st.StatusError as exc:
                if exc.code != 404:
                    raise
        return json_answer(200, {"kind": t.rtype.list_kind_name,
                                 "apiVersion": t.rtype.api_version(t.version),
                                 "metadata": {"resourceVersion": str(self.store.resource_version)},
                                 "items": items}, _warning_headers(warnings))


def _warning_headers(warnings: list[str]) -> dict[str, str]:
    """The ``Warning`` header of admission warnings (RFC 7234 code 299), each text once, as
    kube-apiserver's warning recorder drops repeats."""
    if not warnings:
        return {}
    return {"Warning": ", ".join('299 - "' + w.replace('"', "'") + '"'
                                 for w in dict.fromkeys(warnings))}


def _watch_timeout(q: Mapping[str, str]) -> float | None:
    """A watch's ``timeoutSeconds`` (None: none; 0 means none too); 400 when not a number."""
    if not q.get("timeoutSeconds"):
        return None
    try:
        return max(0.0, float(q["timeoutSeconds"])) or None
    except ValueError:
        raise st.bad_request("invalid timeoutSeconds") from None
