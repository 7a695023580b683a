"""metav1.Status errors raised inside the embedded API server and rendered as HTTP answers.

Every failure the server answers is a ``StatusError`` carrying the HTTP code, the metav1.Status
``reason`` and ``details``; the handlers render it with ``status_body``. The constructors below
reproduce the messages of apimachinery's ``pkg/api/errors`` (NewNotFound, NewAlreadyExists,
NewConflict, NewResourceExpired, NewInvalid, NewBadRequest, NewMethodNotSupported,
NewTooManyRequests, NewInternalError, NewTimeoutError) so clients that match on reason/code see
what a real kube-apiserver sends.
"""

from __future__ import annotations

from typing import Any

import orjson


class StatusError(Exception):
    """A request failure: ``code`` (HTTP status), ``reason`` (metav1.StatusReason, e.g.
    ``NotFound``), ``message``, ``details`` (metav1.StatusDetails dict or None) and ``headers``
    (extra HTTP headers such as Retry-After)."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None, metadata: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}
        self.metadata = metadata or {}

    def to_status(self) -> dict[str, Any]:
        """The metav1.Status dict for this error (``status: Failure``)."""
        status: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": self.metadata,
                                  "status": "Failure", "message": self.message,
                                  "reason": self.reason, "code": self.code}
        if not self.reason:  # omitempty, as metav1.Status (a webhook's denial may have none)
            del status["reason"]
        if self.details:
            status["details"] = self.details
        return status

    def to_json(self) -> bytes:
        """``to_status()`` encoded as JSON bytes."""
        return orjson.dumps(self.to_status())


def _details(group: str, resource: str, name: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name, "kind": resource}
    if group:
        details["group"] = group
    details.update(extra)
    return details


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> StatusError:
    """404 NotFound: ``pods "x" not found`` (as apierrors.NewNotFound)."""
    return StatusError(404, "NotFound", f'{_qualified(group, resource)} "{name}" not found',
                       _details(group, resource, name))


def already_exists(group: str, resource: str, name: str) -> StatusError:
    """409 AlreadyExists (as apierrors.NewAlreadyExists)."""
    return StatusError(409, "AlreadyExists", f'{_qualified(group, resource)} "{name}" already exists',
                       _details(group, resource, name))


def generated_name_taken(group: str, kind: str) -> StatusError:
    """500 ServerTimeout for a create whose ``generateName`` suffix hit an existing name: as
    kube-apiserver 1.20 ``rest.CheckGeneratedNameError`` (``apierrors.NewServerTimeoutForKind``
    with the kind in ``details.kind``, the operation ``POST`` in ``details.name``, no
    Retry-After). Nothing was stored, and metav1.StatusReasonServerTimeout asks the client to
    try again (a new suffix is drawn)."""
    details: dict[str, Any] = {"name": "POST", "kind": kind}
    if group:
        details["group"] = group
    return StatusError(500, "ServerTimeout",
                       f"The POST operation against {_qualified(group, kind)} could not be "
                       "completed at this time, please try again.", details)


def conflict(group: str, resource: str, name: str, why: str) -> StatusError:
    """409 Conflict: ``Operation cannot be fulfilled on pods "x": why`` (as apierrors.NewConflict)."""
    return StatusError(409, "Conflict",
                       f'Operation cannot be fulfilled on {_qualified(group, resource)} "{name}": {why}',
                       _details(group, resource, name))


MODIFIED_CONFLICT = ("the object has been modified; please apply your changes to the latest "
                     "version and try again")


def expired(message: str, continue_token: str = "") -> StatusError:
    """410 Expired (as apierrors.NewResourceExpired); ``continue_token`` goes to metadata.continue."""
    metadata = {"continue": continue_token} if continue_token else None
    return StatusError(410, "Expired", message, metadata=metadata)


def too_old(requested: int, oldest: int) -> StatusError:
    """410 Expired for a watch/list from a resourceVersion older than the retained history, with
    the cacher's message ``too old resource version: R (OLDEST)``."""
    return expired(f"too old resource version: {requested} ({oldest})")


def invalid(kind: str, group: str, name: str, causes: list[tuple[str, str, str]]) -> StatusError:
    """422 Invalid; ``causes`` are (field, cause reason, message) as field.ErrorList entries."""
    text = ", ".join(f"{field}: {msg}" for field, _, msg in causes)
    if len(causes) > 1:                 # as field.ErrorList.ToAggregate
        text = f"[{text}]"
    qualified = f"{kind}.{group}" if group else kind
    details = {"name": name, "kind": kind,
               "causes": [{"reason": r, "message": m, "field": f}
                          for f, r, m in causes]}
    if group:
        details["group"] = group
    return StatusError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> StatusError:
    """400 BadRequest (as apierrors.NewBadRequest)."""
    return StatusError(400, "BadRequest", message)


def method_not_supported(group: str, resource: str, action: str) -> StatusError:
    """405 MethodNotAllowed (as apierrors.NewMethodNotSupported)."""
    return StatusError(405, "MethodNotAllowed",
                       f'{action} is not supported on resources of kind "{_qualified(group, resource)}"',
                       {"kind": resource, **({"group": group} if group else {})})


def unsupported_media_type(content_type: str, accepted: list[str]) -> StatusError:
    """415 UnsupportedMediaType for a PATCH body type the resource does not accept."""
    return StatusError(415, "UnsupportedMediaType",
                       f"the body of the request was in an unknown format - accepted media types "
                       f"include: {', '.join(accepted)}")


def too_many_requests(retry_after: float | None) -> StatusError:
    """429 TooManyRequests with a Retry-After header (seconds, rounded up) when given."""
    headers: dict[str, str] = {}
    details = None
    if retry_after is not None:
        seconds = max(0, int(-(-retry_after // 1)))
        headers["Retry-After"] = str(seconds)
        details = {"retryAfterSeconds": seconds}
    return StatusError(429, "TooManyRequests", "Too many requests, please try again later.",
                       details, headers)


def internal_error(message: str, code: int = 500) -> StatusError:
    """500 InternalError (or another 5xx code) with ``message``."""
    reason = {503: "ServiceUnavailable", 504: "Timeout"}.get(code, "InternalError")
    return StatusError(code, reason, message)


def new_internal_error(message: str) -> StatusError:
    """500 InternalError as 1.20's ``apierrors.NewInternalError(err)``: the message
    ``Internal error occurred: ERR`` and ``ERR`` again as the one cause."""
    error = internal_error(f"Internal error occurred: {message}")
    error.details = {"causes": [{"message": message}]}
    return error


def forbidden(group: str, resource: str, name: str, why: str) -> StatusError:
    """403 Forbidden (as apierrors.NewForbidden)."""
    return StatusError(403, "Forbidden", f'{_qualified(group, resource)} "{name}" is forbidden: {why}',
                       _details(group, resource, name))


def success(group: str, resource: str, name: str, uid: str) -> dict[str, Any]:
    """The metav1.Status ``Success`` body a DELETE answers when the object is gone."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": _details(group, resource, name, uid=uid)}
