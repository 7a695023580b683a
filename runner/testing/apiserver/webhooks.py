"""Admission webhooks called by the embedded API server, as kube-apiserver 1.20 calls them.

The ``MutatingWebhookConfiguration`` and ``ValidatingWebhookConfiguration`` objects stored
in the server (admissionregistration.k8s.io/v1) are read at each write through the API
(create, update, patch, apply, delete, deletecollection; the ``status`` and ``scale``
subresources too). For one request (semantics of k8s.io/apiserver's ``plugin/pkg/admission/
webhook`` in 1.20):

- **Which webhooks.** Configurations by name, webhooks in their list order. A webhook is
  called when one of its ``rules`` matches the operation, group, version, resource
  (``pods``, ``pods/status``; ``*`` matches every resource but no subresource, ``*/*``
  everything, ``*/status`` every status) and ``scope`` (``Cluster``, ``Namespaced``, ``*``);
  its ``namespaceSelector`` matches the labels of the object's namespace (of a Namespace: its
  own; other cluster-scoped objects always match); its ``objectSelector`` matches the
  labels of the object or of the old object. Writes of the webhook configurations
  themselves are never sent to webhooks.
- **Order.** Mutating webhooks first, one after the other, each seeing the object the ones
  before patched (``patchType: JSONPatch``); the patched object is admitted again against
  its schema (pruned, defaulted, checked). Then the object is prepared as it will be stored
  (name generated, uid, generation) and validated; then the validating webhooks. The first
  denial ends the request.
- **Answers.** A denial is the webhook's Status with the message ``admission webhook "NAME"
  denied the request: MESSAGE`` (code 400 when the webhook gave none below 400). A webhook
  that cannot be called (refused connection, timeout, TLS, an answer that is no
  AdmissionReview of the request's uid) is ``failed calling webhook "NAME": ...``: 500
  InternalError with ``failurePolicy: Fail`` (the default), skipped with ``Ignore``.
  ``warnings`` become ``Warning: 299 - "..."`` headers of the answer. A ``dryRun`` request
  calls the webhooks too, with ``dryRun: true`` (v1 configurations, the only ones served,
  declare ``sideEffects`` ``None`` or ``NoneOnDryRun``: validation refuses any other).
- **Calls.** HTTPS POST of an ``admission.k8s.io/v1`` AdmissionReview to
  ``clientConfig.url`` with ``?timeout=Ns`` added, trusting ``caBundle`` (else the system's
  roots), within ``timeoutSeconds`` (default 10) per socket operation (kube-apiserver bounds
  the whole call: a webhook that trickles its answer can take longer here). Each call
  outside the store's lock: an update is then committed only if the object did not change
  meanwhile (else the whole read, patch, webhooks, validation is done again, as the
  registry's GuaranteedUpdate does).

Departures (docs/embedded.md): ``clientConfig.service`` cannot be reached (no cluster
network): such a webhook fails to be called, and its ``failurePolicy`` decides;
``reinvocationPolicy: IfNeeded`` is not honoured (no second round); ``matchPolicy:
Equivalent`` matches only the requested version (the embedded server serves one version of
each built-in kind); writes by the embedded garbage collector and namespace controller and
``EmbeddedAPIServer.load``/``Store`` calls are not sent to webhooks;
validating webhooks run one after the other (kube-apiserver calls them in parallel; the
denial reported is then the first in order, not the first to answer). No ``userInfo`` but
a fixed admin user: the embedded server authenticates no one.

Thread-safety: :class:`Webhooks` is shared by every request thread; its cache of the parsed
configurations is replaced whole under a lock.
"""

from __future__ import annotations

import base64
import http.client
import logging
import ssl
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson

from kinrun.selectors import LabelSelector, label_selector_from

from . import status as st
from .registry import ResourceType
from .store import NAMESPACES, Store

Obj = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
MUTATING = (GROUP, "mutatingwebhookconfigurations")
VALIDATING = (GROUP, "validatingwebhookconfigurations")
DEFAULT_TIMEOUT = 10
"""Seconds a webhook may take when ``timeoutSeconds`` is not set (admissionregistration/v1)."""
USER = {"username": "kinrun-embedded", "groups": ["system:masters", "system:authenticated"]}
"""``userInfo`` of every request: the embedded server authenticates no one."""


@dataclass(frozen=True)
class Attributes:
    """One write as the webhooks see it: ``rtype`` at ``version``, ``subresource`` ("" or
    ``status``/``scale``), ``operation`` (CREATE, UPDATE, DELETE), ``namespace`` (None:
    cluster-scoped), ``name`` ("" for a create with ``generateName``), ``dry_run``."""

    rtype: ResourceType
    version: str
    subresource: str
    operation: str
    namespace: str | None
    name: str
    dry_run: bool = False


@dataclass(frozen=True)
class Webhook:
    """One webhook of a configuration, parsed: ``mutating``, its ``name``, ``config`` (the
    configuration's name) and the v1 fields kube-apiserver reads."""

    mutating: bool
    name: str
    config: str
    rules: tuple[Mapping[str, Any], ...]
    url: str | None
    ca_bundle: bytes | None
    failure_policy: str
    timeout: int
    namespace_selector: LabelSelector
    object_selector: LabelSelector
    service_url: str = ""
    """``clientConfig.service`` as the URL kube-apiserver would call
    (``https://NAME.NAMESPACE.svc:PORT/PATH``), for messages: it cannot be reached here."""

    def matches(self, attrs: Attributes) -> bool:
        """Whether one of the rules matches ``attrs`` (see the module docstring)."""
        namespaced = attrs.rtype.namespaced
        for rule in self.rules:
            scope = rule.get("scope") or "*"
            if scope != "*" and (scope == "Namespaced") != namespaced:
                continue
            if _has(rule.get("operations"), attrs.operation) and \
                    _has(rule.get("apiGroups"), attrs.rtype.group) and \
                    _has(rule.get("apiVersions"), attrs.version) and \
                    _resource_matches(rule.get("resources") or [], attrs):
                return True
        return False


def _has(values: Any, value: str) -> bool:
    return isinstance(values, list) and ("*" in values or value in values)


def _resource_matches(resources: list[Any], attrs: Attributes) -> bool:
    plural, sub = attrs.rtype.plural, attrs.subresource
    for item in resources:
        res, _, want_sub = str(item).partition("/")
        if res not in ("*", plural):
            continue
        if (not sub and not want_sub) or want_sub == "*" or (sub and want_sub == sub):
            return True
    return False


@dataclass
class Review:
    """The admission of one request: what it collected (``warnings``) and its steps
    (:meth:`mutate`, :meth:`validate`). Made by :meth:`Webhooks.review`."""

    webhooks: Webhooks
    attrs: Attributes
    hooks: list[Webhook]
    warnings: list[str] = field(default_factory=list)

    def mutate(self, obj: Obj | None, old: Obj | None,
               readmit: Callable[[Obj], None] | None = None) -> Obj | None:
        """``obj`` after every matching mutating webhook (a new dict when one patched it);
        ``readmit(obj)`` checks and defaults a patched object again (the schema step).
        Raises StatusError (a denial, a failed call, a patch that does not apply)."""
        for hook in self.hooks:
            if not hook.mutating:
                continue
            response = self.webhooks.call(hook, self.attrs, obj, old, self.warnings)
            if response is None or self.attrs.operation == "DELETE" or obj is None:
                continue
            patch = response.get("patch")
            if not patch:
                continue
            obj = _patched(hook, obj, patch, response.get("patchType"))
            if readmit is not None:
                readmit(obj)
        return obj

    def validate(self, obj: Obj | None, old: Obj | None) -> None:
        """Call every matching validating webhook on ``obj``/``old``; raises StatusError."""
        for hook in self.hooks:
            if not hook.mutating:
                self.webhooks.call(hook, self.attrs, obj, old, self.warnings)

    @property
    def validating(self) -> bool:
        """Whether any validating webhook matched."""
        return any(not h.mutating for h in self.hooks)


def _patched(hook: Webhook, obj: Obj, patch: Any, patch_type: Any) -> Obj:
    if patch_type != "JSONPatch":
        raise st.internal_error(f'failed calling webhook "{hook.name}": unsupported patch '
                                f'type "{patch_type}"')
    try:
        ops = orjson.loads(base64.b64decode(str(patch), validate=True))
        patched = jsonpatch.apply_patch(obj, ops)
    except (ValueError, TypeError, jsonpatch.JsonPatchException,
            jsonpatch.JsonPointerException) as exc:
        raise st.internal_error(f'admission webhook "{hook.name}" returned a patch that does '
                                f"not apply: {exc}") from None
    if not isinstance(patched, dict):
        raise st.internal_error(f'admission webhook "{hook.name}" patched the object into '
                                "something that is not an object")
    return patched


class Webhooks:
    """The webhook configurations of ``store``, and the calls (module docstring).
    ``opener``: how a call is sent (tests replace it); default HTTPS."""

    def __init__(self, store: Store, opener: Callable[[Webhook, str, bytes], bytes] | None = None
                 ) -> None:
        self.store = store
        self._open = opener or https_post
        self._lock = threading.Lock()
        self._cache: tuple[tuple[tuple[str, int], ...], tuple[Webhook, ...]] = ((), ())

    def review(self, attrs: Attributes, obj: Obj | None, old: Obj | None) -> Review | None:
        """The Review of a write (None when no webhook's rules and selectors match: the write
        goes on as without webhooks)."""
        if (attrs.rtype.group, attrs.rtype.plural) in (MUTATING, VALIDATING):
            return None
        hooks = [h for h in self._hooks() if h.matches(attrs)]
        if not hooks:
            return None
        hooks = [h for h in hooks if self._selected(h, attrs, obj, old)]
        if not hooks:
            return None
        return Review(self, attrs, hooks)

    def _selected(self, hook: Webhook, attrs: Attributes, obj: Obj | None,
                  old: Obj | None) -> bool:
        labels = [((o or {}).get("metadata") or {}).get("labels") or {} for o in (obj, old)
                  if o is not None]
        if not hook.object_selector.empty and not any(
                hook.object_selector.matches(lab) for lab in labels or [{}]):
            return False
        if hook.namespace_selector.empty:
            return True
        if attrs.rtype.key == NAMESPACES:
            return any(hook.namespace_selector.matches(lab) for lab in labels or [{}])
        if not attrs.rtype.namespaced or attrs.namespace is None:
            return True
        return hook.namespace_selector.matches(self._namespace_labels(attrs.namespace))

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        ns_type = self.store.registry.get(NAMESPACES)
        assert ns_type is not None
        try:
            entry = self.store.get_entry(ns_type, None, namespace)
        except st.StatusError:
            return {}
        return (entry.decode().get("metadata") or {}).get("labels") or {}

    def _hooks(self) -> tuple[Webhook, ...]:
        """Every webhook, mutating then validating, configurations by name (cached by the
        configurations' resourceVersions)."""
        found: list[tuple[bool, Any]] = []
        for mutating, key in ((True, MUTATING), (False, VALIDATING)):
            rtype = self.store.registry.get(key)
            if rtype is None:
                continue
            with self.store.lock:
                entries = list(self.store.entries_locked(rtype).values())
            found += [(mutating, e) for e in entries]
        stamp = tuple((f"{m}/{e.name}", e.rv) for m, e in found)
        with self._lock:
            if self._cache[0] == stamp:
                return self._cache[1]
        hooks = tuple(hook for mutating, entry in sorted(found, key=lambda f: (not f[0],
                                                                              f[1].name))
                      for hook in _parse(mutating, entry.decode()))
        with self._lock:
            self._cache = (stamp, hooks)
        return hooks

    def call(self, hook: Webhook, attrs: Attributes, obj: Obj | None, old: Obj | None,
             warnings: list[str]) -> Obj | None:
        """Send one AdmissionReview; the response (allowed), or None when the call failed
        and ``failurePolicy`` is Ignore; the answer's warnings are appended to ``warnings``
        (a denial's too). Raises StatusError: the denial, or the failed call (500) under
        Fail."""
        uid = str(uuid.uuid4())
        body = orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                             "request": _request(uid, hook, attrs, obj, old)})
        url = _with_timeout(hook.url or hook.service_url, hook.timeout)
        try:
            if hook.url is None:
                raise OSError("clientConfig.service cannot be reached from the embedded API "
                              "server (no cluster network); use clientConfig.url")
            answer = orjson.loads(self._open(hook, url, body))
            response = _response_of(answer, uid)
        except (OSError, ValueError, http.client.HTTPException, ssl.SSLError) as exc:
            if hook.failure_policy == "Ignore":
                logging.getLogger("kinrun.embedded").info(
                    "admission webhook %s failed, ignored (failurePolicy Ignore): %s",
                    hook.name, exc)
                return None
            raise st.new_internal_error(
                f'failed calling webhook "{hook.name}": Post "{url}": {exc}') from None
        warnings += [str(w) for w in response.get("warnings") or []]
        if not response.get("allowed"):
            raise _denial(hook.name, response.get("status"))
        return response


def _response_of(answer: Any, uid: str) -> Obj:
    if not isinstance(answer, dict) or not isinstance(answer.get("response"), dict):
        raise ValueError("the answer is no AdmissionReview with a response")
    if answer.get("apiVersion") != "admission.k8s.io/v1" or answer.get("kind") != \
            "AdmissionReview":
        raise ValueError(f"expected admission.k8s.io/v1 AdmissionReview, got "
                         f"{answer.get('apiVersion')}/{answer.get('kind')}")
    response = answer["response"]
    if response.get("uid") != uid:
        raise ValueError(f"expected response.uid={uid!r}, got {response.get('uid')!r}")
    return response


def _with_timeout(url: str, timeout: int) -> str:
    parts = urllib.parse.urlsplit(url)
    query = "&".join(q for q in (parts.query, f"timeout={timeout}s") if q)
    return urllib.parse.urlunsplit(parts._replace(query=query))


def _denial(name: str, status: Any) -> st.StatusError:
    """The StatusError of a denial (as 1.20's webhookerrors.ToStatusErr)."""
    status = dict(status) if isinstance(status, dict) else {}
    code = status.get("code") if isinstance(status.get("code"), int) else 0
    code = code if code >= 400 else 400
    prefix = f'admission webhook "{name}" denied the request'
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    text = f"{prefix}: {message}" if message else f"{prefix}: {reason}" if reason else \
        f"{prefix} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return st.StatusError(code, reason, text, details)


def _request(uid: str, hook: Webhook, attrs: Attributes, obj: Obj | None,
             old: Obj | None) -> Obj:
    rtype = attrs.rtype
    gvk = {"group": rtype.group, "version": attrs.version, "kind": rtype.kind}
    gvr = {"group": rtype.group, "version": attrs.version, "resource": rtype.plural}
    name = attrs.name or str(((obj or old or {}).get("metadata") or {}).get("name") or "")
    options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions",
                    "DELETE": "DeleteOptions"}[attrs.operation]
    deleting = attrs.operation == "DELETE"
    request: Obj = {"uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk,
                    "requestResource": gvr, "name": name, "operation": attrs.operation,
                    "userInfo": USER, "object": None if deleting else obj,
                    "oldObject": old,
                    "dryRun": attrs.dry_run,
                    "options": {"kind": options_kind, "apiVersion": "meta.k8s.io/v1"}}
    if attrs.subresource:
        request["subResource"] = request["requestSubResource"] = attrs.subresource
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return request


def _parse(mutating: bool, config: Obj) -> list[Webhook]:
    """The webhooks of one configuration (fields as stored: the schema admitted them)."""
    out = []
    for item in config.get("webhooks") or []:
        if not isinstance(item, dict):
            continue
        client = item.get("clientConfig") or {}
        bundle = client.get("caBundle")
        out.append(Webhook(
            mutating=mutating, name=str(item.get("name") or ""),
            config=str((config.get("metadata") or {}).get("name") or ""),
            rules=tuple(r for r in item.get("rules") or [] if isinstance(r, dict)),
            url=client.get("url"), ca_bundle=base64.b64decode(bundle) if bundle else None,
            failure_policy=str(item.get("failurePolicy") or "Fail"),
            timeout=int(item.get("timeoutSeconds") or DEFAULT_TIMEOUT),
            namespace_selector=label_selector_from(item.get("namespaceSelector")),
            object_selector=label_selector_from(item.get("objectSelector")),
            service_url=_service_url(client.get("service"))))
    return out


def _service_url(service: Any) -> str:
    """The URL of a ``clientConfig.service`` (port 443 unless given), as kube-apiserver's
    webhook client builds it; "" without one."""
    if not isinstance(service, dict):
        return ""
    return (f"https://{service.get('name')}.{service.get('namespace')}.svc:"
            f"{service.get('port') or 443}{service.get('path') or ''}")


def https_post(hook: Webhook, url: str, body: bytes) -> bytes:
    """POST ``body`` (JSON) to ``url`` over HTTPS trusting ``hook.ca_bundle`` (else the
    system's roots), within ``hook.timeout`` seconds; the answer's body. Raises OSError,
    ssl.SSLError, http.client.HTTPException, ValueError (not https, or not 200)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError(f"webhook URL {url!r} is not https://HOST[:PORT]/PATH")
    context = ssl.create_default_context(
        cadata=hook.ca_bundle.decode("ascii", "replace") if hook.ca_bundle else None)
    conn = http.client.HTTPSConnection(parts.hostname, parts.port or 443, context=context,
                                       timeout=hook.timeout)
    try:
        path = parts.path or "/"
        conn.request("POST", f"{path}?{parts.query}" if parts.query else path, body,
                     {"Content-Type": "application/json", "Accept": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
    finally:
        conn.close()
    if resp.status != 200:
        raise ValueError(f"the webhook answered {resp.status}: {data[:200]!r}")
    return data
