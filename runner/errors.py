"""The kinrun error tree. Every error carries the data it is about.

    KinrunError
    ├── ConfigError                 bad config file; CLI exit 2; carries file, line, column, path
    ├── ClusterConfigError          no usable cluster access (kubeconfig missing/broken, no context)
    ├── ApiError                    an API server answered with a failure (or did not answer)
    │   ├── BadRequestError         400
    │   ├── UnauthorizedError       401
    │   ├── ForbiddenError          403
    │   ├── NotFoundError           404
    │   ├── ConflictError           409 (also AlreadyExists)
    │   │   └── ApplyConflictError  409 server-side apply conflict: fields owned by other managers
    │   ├── ExpiredError            410 Gone / Expired: a resourceVersion or continue token too old
    │   ├── InvalidError            422
    │   ├── TooManyRequestsError    429, with retry_after (seconds) when the server sent one
    │   ├── ServerError             5xx
    │   └── ApiConnectionError      no HTTP answer: refused, reset, timed out
    ├── ActionError                 (kinrun.actions) an action failed; retried with backoff
    │   └── RenderError             a template failed to render or its result was refused
    ├── UnknownKindError            (kinrun.kube) discovery has no such kind; names the closest
    └── ReconcileError              raised by a reconcile (hook or action) to steer the retry
        ├── PermanentError          do not retry this key (until it changes again)
        └── TemporaryError          retry after `delay` seconds (instead of the rate limiter's)

Semantics follow the Kubernetes API conventions (metav1.Status reasons) and kopf's
permanent/temporary split.
"""

from __future__ import annotations

import json
import re
from typing import Any


class KinrunError(Exception):
    """Base of every error kinrun raises on purpose."""


class ConfigError(KinrunError):
    """A config file is invalid.

    Attributes: ``file`` (path as given), ``line``/``column`` (1-based, or None when unknown),
    ``path`` (key path such as ``controllers[0].workers``, or ""), ``message`` (what is wrong).
    ``str()`` gives ``file:line:column: path: message``, the form the CLI prints (exit 2).
    """

    def __init__(self, message: str, *, file: str = "<config>", line: int | None = None,
                 column: int | None = None, path: str = "") -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        prefix = f"{self.path}: " if self.path else ""
        return f"{where}: {prefix}{self.message}"


class ClusterConfigError(KinrunError):
    """No usable cluster access: kubeconfig missing or broken, unknown context, not in-cluster.

    ``str()`` is one line that says what was tried (the CLI prints it and suggests ``--embedded``).
    """


class ApiError(KinrunError):
    """An API request failed.

    Attributes: ``status`` (HTTP status code, 0 when there was no answer), ``reason``
    (metav1.Status reason such as ``NotFound``/``Expired``, or ""), ``message`` (server's text),
    ``body`` (the decoded Status dict when the server sent one, else None).
    """

    status_code: int = 0

    def __init__(self, message: str, *, status: int | None = None, reason: str = "",
                 body: dict[str, Any] | None = None) -> None:
        self.message = message
        self.status = self.status_code if status is None else status
        self.reason = reason
        self.body = body
        super().__init__(f"{self.status} {reason}: {message}".strip() if self.status else message)


class BadRequestError(ApiError):
    """400 Bad Request."""
    status_code = 400


class UnauthorizedError(ApiError):
    """401 Unauthorized."""
    status_code = 401


class ForbiddenError(ApiError):
    """403 Forbidden. ``str()`` ends with :data:`RBAC_HINT`: the server's message already
    names the user, verb, resource and namespace; ``kinrun rbac`` prints the rules that grant
    what a config sends."""
    status_code = 403

    def __str__(self) -> str:
        return f"{super().__str__()} ({RBAC_HINT})"


RBAC_HINT = "`kinrun rbac CONFIG` prints the RBAC this config needs"
"""What a 403 adds to its message."""


class NotFoundError(ApiError):
    """404 Not Found."""
    status_code = 404


class ConflictError(ApiError):
    """409 Conflict or AlreadyExists."""
    status_code = 409


class ApplyConflictError(ConflictError):
    """409 from a server-side apply: fields the apply would change are owned by other field
    managers (kube-apiserver's fieldmanager ``NewConflictError``: reason ``Conflict``, one
    ``FieldManagerConflict`` cause per field and manager).

    Attributes: ``conflicts`` (``((field, (manager, ...)), ...)``: each field path such as
    ``.spec.replicas`` with the managers that own it, in the server's order), ``kind``,
    ``namespace`` ("" when cluster-scoped or unknown) and ``name`` of the applied object ("" when
    unknown, see ``for_object``), plus ApiError's ``status``/``reason``/``message``/``body``.
    ``str()`` is one line: ``apply Deployment default/web: conflict: .spec.replicas is managed
    by "kubectl-patch" (set force: true to take it over)``.
    """

    def __init__(self, message: str, *, conflicts: tuple[tuple[str, tuple[str, ...]], ...] = (),
                 kind: str = "", namespace: str = "", name: str = "", **kw: Any) -> None:
        self.conflicts = conflicts
        self.kind, self.namespace, self.name = kind, namespace, name
        super().__init__(message, **kw)
        self.args = (str(self),)

    @classmethod
    def from_status(cls, status: dict[str, Any]) -> ApplyConflictError:
        """The error for a 409 metav1.Status carrying ``FieldManagerConflict`` causes, whose
        messages read ``conflict with "NAME"`` (an applier) or ``conflict with "NAME" using
        apps/v1`` (a create/update/patch manager)."""
        owners: dict[str, list[str]] = {}
        for cause in (status.get("details") or {}).get("causes") or []:
            if isinstance(cause, dict) and cause.get("reason") == "FieldManagerConflict":
                managers = owners.setdefault(str(cause.get("field") or "?"), [])
                who = _conflict_manager(str(cause.get("message") or ""))
                if who not in managers:
                    managers.append(who)
        return cls(str(status.get("message") or "apply conflict"), status=409,
                   reason=str(status.get("reason") or "Conflict"), body=status,
                   conflicts=tuple((f, tuple(m)) for f, m in owners.items()))

    def for_object(self, kind: str, namespace: str | None, name: str) -> ApplyConflictError:
        """A copy naming the applied object (the kube layer knows it, the HTTP layer not)."""
        error = ApplyConflictError(self.message, conflicts=self.conflicts, kind=kind,
                                   namespace=namespace or "", name=name, status=self.status,
                                   reason=self.reason, body=self.body)
        error.retry_after = getattr(self, "retry_after", None)  # type: ignore[attr-defined]
        return error

    def __str__(self) -> str:
        target = "/".join(p for p in (self.namespace, self.name) if p)
        head = f"apply {self.kind} {target}".strip() if (self.kind or target) else "apply"
        if not self.conflicts:
            return f"{head}: conflict: {self.message}"
        parts = [f"{field} is managed by {_quoted_list(managers)}"
                 for field, managers in self.conflicts]
        it = "it" if len(self.conflicts) == 1 else "them"
        return f"{head}: conflict: {', '.join(parts)} (set force: true to take {it} over)"


def _conflict_manager(message: str) -> str:
    """The manager name in a cause message ``conflict with "NAME"[ using VERSION]``."""
    match = re.match(r'conflict with ("(?:[^"\\]|\\.)*")', message)
    if not match:
        return message.removeprefix("conflict with ").strip() or "?"
    try:
        return str(json.loads(match.group(1)))
    except ValueError:
        return match.group(1).strip('"')


def _quoted_list(names: tuple[str, ...]) -> str:
    quoted = [f'"{n}"' for n in names] or ['"?"']
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


class ExpiredError(ApiError):
    """410 Gone/Expired: the resourceVersion or continue token is too old (relist)."""
    status_code = 410


class InvalidError(ApiError):
    """422 Invalid."""
    status_code = 422


class TooManyRequestsError(ApiError):
    """429 Too Many Requests; ``retry_after`` is the server's Retry-After in seconds, or None."""
    status_code = 429

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(ApiError):
    """5xx: the server failed."""
    status_code = 500


class ApiConnectionError(ApiError):
    """No HTTP answer: connection refused, reset or timed out."""
    status_code = 0


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError, 401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError,
    409: ConflictError, 410: ExpiredError, 422: InvalidError, 429: TooManyRequestsError,
}


def api_error_from_status(status: int, body: dict[str, Any] | None = None,
                          message: str = "", retry_after: float | None = None) -> ApiError:
    """Build the ApiError subclass for an HTTP status and an optional metav1.Status body.

    A Status whose ``reason`` is ``Expired`` or ``Gone`` maps to ExpiredError whatever the code
    (the watch ERROR-event form of 410 carries ``code: 410`` in the body).
    """
    body = body or {}
    code = int(body.get("code") or status or 0)
    reason = str(body.get("reason") or "")
    text = str(body.get("message") or message or reason or f"HTTP {code}")
    if reason in ("Expired", "Gone"):
        cls: type[ApiError] = ExpiredError
    elif code >= 500:
        cls = ServerError
    else:
        cls = _BY_STATUS.get(code, ApiError)
    if cls is TooManyRequestsError:
        return TooManyRequestsError(text, retry_after=retry_after, status=code, reason=reason,
                                    body=body or None)
    return cls(text, status=code, reason=reason, body=body or None)


class ReconcileError(KinrunError):
    """Raised by a reconcile (hook or action) to steer what the controller does next."""


class PermanentError(ReconcileError):
    """Do not retry: the key is forgotten and an error is logged (kopf's PermanentError)."""


class TemporaryError(ReconcileError):
    """Retry after ``delay`` seconds (kopf's TemporaryError); None means the rate limiter's delay."""

    def __init__(self, message: str = "", *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


TYPED_PATCH_FAILED = "failed to create typed patch object: "
"""How kube-apiserver's fieldmanager begins a 500 for an applied body its schema refuses."""


def never_succeeds(error: BaseException) -> bool:
    """Whether ``error`` is an API answer that no retry of the same request can change, so the
    reconcile that sent it is a permanent failure for its key (retried only when the object or
    the config changes):

    - 422 Invalid whose causes name a ``field`` (the object fails validation: the same object
      fails again). A 422 without field causes is not: a failed JSON-patch ``test`` or a path
      the live object lacks (kube-apiserver's ``NewGenericServerResponse`` form, cause
      ``UnexpectedServerResponse``) depends on the live object, so a retry with a fresh object
      can succeed;
    - 400 BadRequest (an undecodable body, a name or namespace that contradicts the URL);
    - 500 ``failed to create typed patch object: ...``: a server-side apply whose own body
      fails the kind's schema (a field it does not declare); kube-apiserver's fieldmanager
      answers it before reading the live object, so the same body fails again;
    - 415 UnsupportedMediaType: a patch type the resource does not take (a strategic merge
      patch of a custom resource), which does not depend on the object.

    403 and 404 are not: RBAC can be granted and a missing namespace or kind created while the
    object stays the same. Semantics: kube-apiserver 1.20's answers; the split as kopf's
    permanent/temporary errors."""
    status = getattr(error, "status", None)
    if status == 400 and getattr(error, "reason", "") == "BadRequest" or status == 415:
        return True
    if status == 500:
        return str(getattr(error, "message", "")).startswith(TYPED_PATCH_FAILED)
    if status != 422:
        return False
    causes = ((getattr(error, "body", None) or {}).get("details") or {}).get("causes") or []
    return any(isinstance(c, dict) and c.get("field") for c in causes)
