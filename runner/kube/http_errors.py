"""Map HTTP failures to the kinrun error tree (``kinrun.errors``).

Three shapes of failure reach the kube layer:

- a non-2xx answer, usually with a metav1.Status body: ``error_from_response``;
- a watch ERROR event carrying a metav1.Status in its object: ``error_from_status``;
- no answer at all (refused, reset, timed out, TLS failure): ``error_from_exception``.

``Retry-After`` (seconds or an HTTP date, RFC 9110 section 10.2.3) is parsed by
``parse_retry_after`` and travels on ``TooManyRequestsError.retry_after``, and on any other
ApiError as the ``retry_after`` attribute (5xx answers may carry it too, as client-go's
``rest.Request`` honours it on 5xx).

The answer to a request with a body is redacted here, where the error is built, before any
log line or caller sees it (``kinrun.redact.redact_echoes``): every value of the body that the
server quotes back in its message or causes (kube-apiserver's ``Invalid value: "..."``) is
replaced by ``<redacted>``, field path, reason and code kept. The rule needs no knowledge of
where the values came from, so a value built from a Secret, whole or transformed (a prefix, a
piece, upper-cased), never reaches a log through a server answer.

A 409 whose Status carries ``FieldManagerConflict`` causes (a server-side apply conflict,
kube-apiserver's fieldmanager ``NewConflictError``) becomes ``ApplyConflictError``, which names
the fields and their managers in one line.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from typing import Any

import orjson
import urllib3.exceptions

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.errors import (ApiConnectionError, ApiError, ApplyConflictError,
                           api_error_from_status, never_succeeds)
from kinrun.redact import redact_echoed_text, redact_echoes

# never_succeeds is re-exported: it lives in kinrun.errors, where kinrun.result can use it
_REEXPORTED = (never_succeeds,)

_TEXT_LIMIT = 300  # characters of a non-Status body kept in the message


def parse_retry_after(value: str | None, *, clock: Clock = REAL_CLOCK) -> float | None:
    """Seconds to wait from a ``Retry-After`` header value, or None when absent or unreadable.

    Accepts delta-seconds (``"3"``, also ``"1.5"``) or an HTTP date (then the seconds from
    ``clock.wall()``, floored at 0). Negative numbers count as 0.
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
    return max(0.0, when.timestamp() - clock.wall())


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
                        *, method: str = "", path: str = "", sent: bytes | None = None,
                        clock: Clock = REAL_CLOCK) -> ApiError:
    """The ApiError for a non-2xx answer: ``status`` (HTTP code), ``data`` (raw body bytes),
    ``headers`` (for Retry-After; a date in it counts from ``clock.wall()``). ``method``/``path``
    are named in the message when the body carries no Status message of its own. ``sent``: the
    request's body bytes; the values it carries are redacted from the answer (module
    docstring)."""
    retry_after = parse_retry_after((headers or {}).get("Retry-After"), clock=clock)
    body = decode_status(data)
    document, shown = _sent_document(sent), path.split("/")
    message = ""
    if body is None:
        text = data[:_TEXT_LIMIT].decode("utf-8", errors="replace").strip()
        if document is not None:
            text = redact_echoed_text(text, document, shown=shown)
        message = f"{method} {path}: {text}".strip() if text else f"{method} {path}".strip()
    elif document is not None:
        body = dict(redact_echoes(body, document, shown=shown))
    # The HTTP code is the truth for the class: a Status body's code may be missing or stale.
    if body is not None:
        body = {**body, "code": status}
    if body is not None and is_apply_conflict(body):
        error: ApiError = ApplyConflictError.from_status(body)
    else:
        error = api_error_from_status(status, body, message=message, retry_after=retry_after)
    error.retry_after = retry_after  # type: ignore[attr-defined]
    return error


def _sent_document(sent: bytes | None) -> Any:
    """A request body as the values it carries: its JSON, else its text; None without one."""
    if not sent:
        return None
    try:
        return orjson.loads(sent)
    except orjson.JSONDecodeError:
        return sent.decode("utf-8", errors="replace")


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
                         read_timeout: float | None = None,
                         connect_timeout: float | None = None) -> ApiConnectionError:
    """The ApiConnectionError for a request that got no HTTP answer (urllib3 or socket error).

    A timeout says which one and how long it was (``connect_timeout``, ``read_timeout``:
    seconds, the values the request was sent with), so a stalled watch or an unreachable
    server is recognisable in logs; a refused connection says so plainly.
    """
    reason: BaseException = exc
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        reason = exc.reason
    if _refused(reason):
        text = f"{method} {url}: Connection refused (nothing listens there)"
    elif _connect_timeout(reason):
        waited = f" after {connect_timeout:g}s" if connect_timeout else ""
        text = f"{method} {url}: connect timed out{waited} (the server did not answer)"
    elif isinstance(reason, (urllib3.exceptions.ReadTimeoutError, TimeoutError)):
        waited = f" after {read_timeout:g}s" if read_timeout else ""
        text = f"{method} {url}: read timed out{waited} (no bytes from the server)"
    else:
        text = f"{method} {url}: {type(reason).__name__}: {reason}"
    return ApiConnectionError(" ".join(text.split()))


def _refused(reason: BaseException) -> bool:
    return isinstance(reason, ConnectionRefusedError) or (
        isinstance(reason, urllib3.exceptions.NewConnectionError)
        and (isinstance(reason.__context__, ConnectionRefusedError)
             or "refused" in str(reason).lower()))


def _connect_timeout(reason: BaseException) -> bool:
    """urllib3 2 raises NewConnectionError (a ConnectTimeoutError subclass) for every failed
    connect: only a real timeout counts (its own class, or a socket timeout behind it)."""
    if isinstance(reason, urllib3.exceptions.NewConnectionError):
        return isinstance(reason.__context__, TimeoutError) or "timed out" in str(reason)
    return isinstance(reason, urllib3.exceptions.ConnectTimeoutError)
