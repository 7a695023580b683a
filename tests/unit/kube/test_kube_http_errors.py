"""HTTP failures map to the kinrun error tree; Retry-After is parsed."""

from __future__ import annotations

import email.utils

import orjson
import pytest
import urllib3

from kinrun.clock import FakeClock
from kinrun.errors import (ApiConnectionError, ApiError, BadRequestError, ConflictError,
                           ExpiredError, ForbiddenError, InvalidError, NotFoundError, ServerError,
                           TooManyRequestsError, UnauthorizedError)
from kinrun.kube.http_errors import (error_from_exception, error_from_response,
                                     error_from_status, parse_retry_after)

from kube_fakes import status_body


@pytest.mark.parametrize(("status", "reason", "cls"), [
    pytest.param(400, "BadRequest", BadRequestError, id="400"),
    pytest.param(401, "Unauthorized", UnauthorizedError, id="401"),
    pytest.param(403, "Forbidden", ForbiddenError, id="403"),
    pytest.param(404, "NotFound", NotFoundError, id="404"),
    pytest.param(409, "AlreadyExists", ConflictError, id="409-already-exists"),
    pytest.param(409, "Conflict", ConflictError, id="409-conflict"),
    pytest.param(410, "Expired", ExpiredError, id="410"),
    pytest.param(422, "Invalid", InvalidError, id="422"),
    pytest.param(429, "TooManyRequests", TooManyRequestsError, id="429"),
    pytest.param(500, "InternalError", ServerError, id="500"),
    pytest.param(503, "ServiceUnavailable", ServerError, id="503"),
])
def test_status_answer_maps_to_its_error_class(status: int, reason: str, cls: type) -> None:
    """Each HTTP failure code with a Status body becomes its ApiError subclass with the data."""
    body = status_body(status, reason, f"the {reason} message")
    error = error_from_response(status, orjson.dumps(body))
    assert type(error) is cls
    assert error.status == status
    assert error.reason == reason
    assert error.message == f"the {reason} message"
    assert error.body is not None and error.body["kind"] == "Status"


def test_non_status_body_keeps_text_and_request_in_message() -> None:
    """A failure whose body is not a Status names the request and quotes the body."""
    error = error_from_response(502, b"<html>bad gateway</html>", method="GET",
                                path="/api/v1/pods")
    assert isinstance(error, ServerError)
    assert "GET /api/v1/pods" in error.message and "bad gateway" in error.message
    assert error.body is None


def test_unknown_4xx_is_plain_api_error() -> None:
    """A 4xx without its own class (415) is an ApiError carrying the status."""
    error = error_from_response(415, orjson.dumps(status_body(415, "UnsupportedMediaType")))
    assert type(error) is ApiError and error.status == 415


def test_429_carries_retry_after_seconds() -> None:
    """A 429's Retry-After header lands on TooManyRequestsError.retry_after."""
    error = error_from_response(429, b"", {"Retry-After": "7"})
    assert isinstance(error, TooManyRequestsError) and error.retry_after == 7.0


def test_5xx_carries_retry_after_too() -> None:
    """A 503 with Retry-After keeps the value (the retry policy honours it)."""
    error = error_from_response(503, b"", {"Retry-After": "2"})
    assert isinstance(error, ServerError) and error.retry_after == 2.0  # type: ignore[attr-defined]


@pytest.mark.parametrize(("value", "expected"), [
    pytest.param("3", 3.0, id="seconds"),
    pytest.param(" 1.5 ", 1.5, id="fraction"),
    pytest.param("-4", 0.0, id="negative"),
    pytest.param("", None, id="empty"),
    pytest.param(None, None, id="absent"),
    pytest.param("soon", None, id="garbage"),
])
def test_parse_retry_after_seconds_forms(value: str | None, expected: float | None) -> None:
    """Retry-After as delta-seconds parses; junk and absence give None."""
    assert parse_retry_after(value) == expected


def test_parse_retry_after_http_date() -> None:
    """Retry-After as an HTTP date gives the seconds from now."""
    now = 1_800_000_000.0
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(header, clock=FakeClock(wall=now)) == pytest.approx(30.0)


def test_watch_error_event_410_is_expired_with_message() -> None:
    """A watch ERROR event's 410 Status becomes ExpiredError carrying the server's message."""
    error = error_from_status(status_body(410, "Expired", "too old resource version: 1 (5)"))
    assert isinstance(error, ExpiredError)
    assert error.message == "too old resource version: 1 (5)"


def test_watch_error_event_gone_without_code_is_expired() -> None:
    """A Status with reason Gone but no code still means expired."""
    assert isinstance(error_from_status({"kind": "Status", "reason": "Gone"}), ExpiredError)


def test_watch_error_event_500_is_server_error() -> None:
    """Other ERROR events map by their code."""
    assert isinstance(error_from_status(status_body(500, "InternalError")), ServerError)


def test_read_timeout_becomes_connection_error_naming_the_wait() -> None:
    """A read timeout is ApiConnectionError saying how long it waited."""
    exc = urllib3.exceptions.ReadTimeoutError(None, "/x", "Read timed out.")
    error = error_from_exception(exc, method="GET", url="WATCH /api/v1/pods", read_timeout=2.5)
    assert isinstance(error, ApiConnectionError) and error.status == 0
    assert "read timed out after 2.5s" in str(error)


def test_refused_connection_becomes_connection_error() -> None:
    """A refused connect (wrapped in MaxRetryError) is ApiConnectionError naming the cause."""
    reason = urllib3.exceptions.NewConnectionError(None, "Connection refused")  # type: ignore[arg-type]
    exc = urllib3.exceptions.MaxRetryError(None, "/api", reason)  # type: ignore[arg-type]
    error = error_from_exception(exc, method="GET", url="http://h/api")
    assert isinstance(error, ApiConnectionError)
    assert "Connection refused" in str(error) and "\n" not in str(error)
