"""Delegated authentication and authorization: who a bearer token is, and may they GET a path,
asked of the API server (TokenReview, SubjectAccessReview).

controller-runtime's secure metrics (``metrics/filters.WithAuthenticationAndAuthorization``,
0.16+) and every aggregated API server work this way (k8s.io/apiserver's delegating
authenticator and authorizer): a request's ``Authorization: Bearer TOKEN`` goes to a
``TokenReview``; the user it names (username, uid, groups, extra) and the request's
non-resource path and verb go to a ``SubjectAccessReview``. So ``kubectl get --raw /metrics
--as=...``, Prometheus with its ServiceAccount token, and RBAC rules on ``nonResourceURLs``
(``/metrics``, verb ``get``) decide who reads the metrics. The ServiceAccount kinrun runs as
needs ``create`` on ``tokenreviews`` and ``subjectaccessreviews`` (the ``system:auth-delegator``
ClusterRole), which ``kinrun manifests`` binds.

Decisions are cached per (token, path, verb) for :data:`CACHE_TTL` seconds, as the apiserver's
delegating defaults (10 s for authentication and for both authorization answers), so a scrape
every 15-30 s costs two reviews at most. A review that fails (the API server unreachable) is
not cached and answers 500 (never "allowed").

Thread-safety: :meth:`DelegatedAuth.check` may be called from any thread.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import ApiError

CACHE_TTL = 10.0
"""Seconds a decision is reused (k8s.io/apiserver's delegating authn/authz defaults)."""
CACHE_SIZE = 1024
"""Decisions kept at most (the oldest go first)."""
VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
         "DELETE": "delete"}
"""HTTP method -> the verb of a non-resource request (the apiserver's request info)."""


@dataclass(frozen=True)
class Decision:
    """``status``: 200 (allowed), 401 (no or invalid token), 403 (denied), 500 (a review
    failed); ``reason``: one line for the answer's body and the log (never the token);
    ``user``: the username, when authenticated."""

    status: int
    reason: str
    user: str = ""

    @property
    def allowed(self) -> bool:
        return self.status == 200


Post = Callable[[str, dict[str, Any]], Any]
"""(path, body) -> the decoded answer: ``client.transport.request("POST", ...)``."""


class DelegatedAuth:
    """TokenReview + SubjectAccessReview through ``post`` (see the module docstring)."""

    def __init__(self, post: Post, *, clock: Clock | None = None, ttl: float = CACHE_TTL) -> None:
        self._post, self._ttl = post, ttl
        self._clock = clock or REAL_CLOCK
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str, str], tuple[float, Decision]] = {}

    @classmethod
    def for_client(cls, client: Any, **kwargs: Any) -> DelegatedAuth:
        """Reviews sent through a ``kinrun.kube.Client``."""
        return cls(lambda path, body: client.transport.request("POST", path, body=body), **kwargs)

    def check(self, authorization: str | None, path: str, method: str = "GET") -> Decision:
        """The decision for a request with header ``Authorization`` (None: absent) to
        ``path`` with ``method``."""
        token = _bearer(authorization)
        if token is None:
            return Decision(401, "a bearer token is required")
        verb = VERBS.get(method.upper(), method.lower())
        key = (hashlib.sha256(token.encode()).hexdigest(), path, verb)
        now = self._clock.now()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        decision = self._review(token, path, verb)
        if decision.status != 500:
            with self._lock:
                if len(self._cache) >= CACHE_SIZE:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[key] = (now, decision)
        return decision

    def _review(self, token: str, path: str, verb: str) -> Decision:
        try:
            user = self._authenticate(token)
            if user is None:
                return Decision(401, "the token is not valid")
            allowed, why = self._authorize(user, path, verb)
        except ApiError as exc:
            return Decision(500, f"the access review failed: {type(exc).__name__} "
                                 f"{exc.status}")
        name = user.get("username", "")
        if not allowed:
            return Decision(403, f'user "{name}" cannot {verb} path "{path}"'
                                 + (f": {why}" if why else ""), name)
        return Decision(200, "allowed", name)

    def _authenticate(self, token: str) -> dict[str, Any] | None:
        review = self._post("/apis/authentication.k8s.io/v1/tokenreviews", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})
        status = (review or {}).get("status") or {}
        return status.get("user") or {} if status.get("authenticated") else None

    def _authorize(self, user: dict[str, Any], path: str, verb: str) -> tuple[bool, str]:
        spec = {"user": user.get("username", ""), "uid": user.get("uid", ""),
                "groups": user.get("groups") or [], "extra": user.get("extra") or {},
                "nonResourceAttributes": {"path": path, "verb": verb}}
        review = self._post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": spec})
        status = (review or {}).get("status") or {}
        return bool(status.get("allowed")), str(status.get("reason") or "")


def _bearer(header: str | None) -> str | None:
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None
