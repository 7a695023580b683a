"""Map HTTP failures to the kinrun error tree (``kinrun.errors``).

Three shapes of failure reach the kube layer:

- a non-2xx answer, usually with a metav1.Status body: ``error_from_response``;
- a watch ERROR event carrying a metav1.Status in its object: ``error_from_status``;
- no answer at all (refused, reset, timed out, TLS failure): ``error_from_exception``.

``Retry-After`` (seconds or an HTTP date, RFC 9110 section 10.2.3) is parsed by
``parse_retry_after`` and travels on ``TooManyRequestsError.retry_after``, and on any other
ApiError as the ``retry_after`` attribute (5xx answers may carry it too, as client-go's
``rest.Request`` honours it on 5xx).

A 409 whose Status carries ``FieldManagerConflict`` causes (a server-side apply conflict,
kube-apiserver's fieldmanager ``NewConflictError``) becomes ``ApplyConflictError``, which names
the fields and their managers in one line.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import urllib3.exceptions

from kinrun.errors import (ApiConnectionError, ApiError, ApplyConflictError,
                           api_error_from_status)

_TEXT_LIMIT = 300  # characters of a non-Status body kept in the message


def parse_retry_after(value: str | None, *, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value, or None when absent or unreadable.

    Accepts delta-seconds (``"3"``, also ``"1.5"``) or an HTTP date (then the seconds from
    ``now()``, wall-clock epoch seconds, floored at 0). Negative numbers count as 0.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now())


def decode_status(data: bytes) -> dict[str, Any] | None:
    """The metav1.Status dict in a response body, or None when the body is not one."""
    if not data:
        return None
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if isinstance(body, dict) and body.get("kind") == "Status":
        return body
    return None


def error_from_response(status: int, data: bytes, headers: Mapping[str, str] | None = None,
                        *, method: str = "", path: str = "") -> ApiError:
    """The ApiError for a non-2xx answer: ``status`` (HTTP code), ``data`` (raw body bytes),
    ``headers`` (for Retry-After). ``method``/``path`` are named in the message when the body
    carries no Status message of its own."""
    retry_after = parse_retry_after((headers or {}).get("Retry-After"))
    body = decode_status(data)
    message = ""
    if body is None:
        text = data[:_TEXT_LIMIT].decode("utf-8", errors="replace").strip()
        message = f"{method} {path}: {text}".strip() if text else f"{method} {path}".strip()
    # The HTTP code is the truth for the class: a Status body's code may be missing or stale.
    if body is not None:
        body = {**body, "code": status}
    if body is not None and is_apply_conflict(body):
        error: ApiError = ApplyConflictError.from_status(body)
    else:
        error = api_error_from_status(status, body, message=message, retry_after=retry_after)
    error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


def is_apply_conflict(status_obj: Mapping[str, Any]) -> bool:
    """Whether a metav1.Status is a server-side apply conflict: code 409 with at least one
    ``FieldManagerConflict`` cause (metav1.CauseTypeFieldManagerConflict)."""
    causes = (status_obj.get("details") or {}).get("causes") or []
    return status_obj.get("code") == 409 and any(
        isinstance(c, Mapping) and c.get("reason") == "FieldManagerConflict" for c in causes)


def error_from_status(status_obj: Mapping[str, Any]) -> ApiError:
    """The ApiError for a metav1.Status dict (a watch ERROR event's object).

    ``code: 410`` or reason ``Expired``/``Gone`` gives ExpiredError carrying the message.
    """
    body = dict(status_obj) if isinstance(status_obj, Mapping) else {"message": str(status_obj)}
    code = body.get("code")
    try:
        status = int(code) if code is not None else 500
    except (TypeError, ValueError):
        status = 500
    return api_error_from_status(status, body)


def error_from_exception(exc: BaseException, *, method: str, url: str,
                         read_timeout: float | None = None) -> ApiConnectionError:
    """The ApiConnectionError for a request that got no HTTP answer (urllib3 or socket error).

    A read timeout says how long it waited (``read_timeout`` seconds) so a stalled watch is
    recognisable in logs.
    """
    reason: BaseException = exc
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        reason = exc.reason
    if isinstance(reason, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
        waited = f" after {read_timeout:g}s" if read_timeout else ""
        text = f"{method} {url}: read timed out{waited} (no bytes from the server)"
    else:
        text = f"{method} {url}: {type(reason).__name__}: {reason}"
    return ApiConnectionError(" ".join(text.split()))


def never_succeeds(error: BaseException) -> bool:
    """Whether ``error`` is an API answer that no retry of the same request can change, so the
    reconcile that sent it is a permanent failure for its key (retried only when the object or
    the config changes):

    - 422 Invalid whose causes name a ``field`` (the object fails validation: the same object
      fails again). A 422 without field causes is not: a failed JSON-patch ``test`` or a path
      the live object lacks (kube-apiserver's ``NewGenericServerResponse`` form, cause
      ``UnexpectedServerResponse``) depends on the live object, so a retry with a fresh object
      can succeed;
    - 400 BadRequest (an undecodable body, a name or namespace that contradicts the URL).

    403 and 404 are not: RBAC can be granted and a missing namespace or kind created while the
    object stays the same. Semantics: kube-apiserver 1.20's answers; the split as kopf's
    permanent/temporary errors."""
    status = getattr(error, "status", None)
    if status == 400 and getattr(error, "reason", "") == "BadRequest":
        return True
    if status != 422:
        return False
    causes = ((getattr(error, "body", None) or {}).get("details") or {}).get("causes") or []
    return any(isinstance(c, Mapping) and c.get("field") for c in causes)
