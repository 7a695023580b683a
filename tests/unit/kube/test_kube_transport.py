"""Transport: headers, encoding, and the 429/5xx retry policy with Retry-After (no real sleep)."""

from __future__ import annotations

import io

import pytest
import urllib3

from kinrun.errors import (ApiConnectionError, ConflictError, ServerError, TooManyRequestsError)
from kinrun.kube.retry import RetryPolicy
from kube_fakes import FakePool, make_client, queue_handler, response, status_body

OK = {"kind": "Pod", "metadata": {"name": "a"}}


def test_request_sends_kinrun_user_agent_and_json_accept() -> None:
    """Every request carries the kinrun/<version> User-Agent and asks for JSON."""
    pool = FakePool(queue_handler(response(200, OK)))
    make_client(pool).transport.request("GET", "/api/v1/pods")
    headers = pool.calls[0].headers
    assert headers["User-Agent"].startswith("kinrun/")
    assert headers["Accept"] == "application/json"


def test_request_sends_bearer_token_from_configuration() -> None:
    """A token in the kubernetes Configuration becomes the Authorization header."""
    pool = FakePool(queue_handler(response(200, OK)))
    client = make_client(pool)
    client.api_client.configuration.api_key["BearerToken"] = "s3cret"
    client.api_client.configuration.api_key_prefix["BearerToken"] = "Bearer"
    client.transport.request("GET", "/api/v1/pods")
    assert pool.calls[0].headers["authorization"] == "Bearer s3cret"


def test_query_drops_none_and_spells_bools() -> None:
    """Query values: None is left out, booleans are true/false."""
    pool = FakePool(queue_handler(response(200, OK)))
    make_client(pool).transport.request("GET", "/x", query={"a": None, "watch": True, "n": 5})
    assert pool.calls[0].query == {"watch": "true", "n": "5"}


def test_body_is_json_with_given_content_type() -> None:
    """A dict body is sent as JSON with the content type asked for."""
    pool = FakePool(queue_handler(response(201, OK)))
    make_client(pool).transport.request("POST", "/x", body={"k": [1, 2]},
                                        content_type="application/merge-patch+json")
    assert pool.calls[0].body == {"k": [1, 2]}
    assert pool.calls[0].headers["Content-Type"] == "application/merge-patch+json"


def test_empty_answer_decodes_to_none() -> None:
    """A 2xx with no body returns None."""
    pool = FakePool(queue_handler(response(200)))
    assert make_client(pool).transport.request("DELETE", "/x") is None


def test_429_with_retry_after_is_retried_after_that_long() -> None:
    """A 429 answer is retried after the server's Retry-After, then succeeds."""
    sleeps: list[float] = []
    pool = FakePool(queue_handler(
        response(429, status_body(429, "TooManyRequests"), {"Retry-After": "3"}),
        response(200, OK)))
    assert make_client(pool, sleeps=sleeps).transport.request("GET", "/x") == OK
    assert sleeps == [3.0]
    assert len(pool.calls) == 2


def test_429_on_a_write_is_retried() -> None:
    """429 means not processed, so even a POST is retried."""
    sleeps: list[float] = []
    pool = FakePool(queue_handler(response(429, None, {"Retry-After": "1"}), response(201, OK)))
    assert make_client(pool, sleeps=sleeps).transport.request("POST", "/x", body={}) == OK
    assert sleeps == [1.0]


def test_500_on_get_is_retried_with_exponential_backoff() -> None:
    """5xx on a GET is retried, waiting base_delay doubled each time."""
    sleeps: list[float] = []
    pool = FakePool(queue_handler(response(500, status_body(500, "InternalError")),
                                  response(503, None), response(200, OK)))
    client = make_client(pool, sleeps=sleeps, retry=RetryPolicy(base_delay=0.1))
    assert client.transport.request("GET", "/x") == OK
    assert sleeps == pytest.approx([0.1, 0.2])


def test_500_on_a_write_is_not_retried() -> None:
    """A write that met a 5xx may have been applied: it is not sent again."""
    sleeps: list[float] = []
    pool = FakePool(queue_handler(response(500, status_body(500, "InternalError"))))
    with pytest.raises(ServerError):
        make_client(pool, sleeps=sleeps).transport.request("PATCH", "/x", body={})
    assert len(pool.calls) == 1 and sleeps == []


def test_too_large_resource_version_is_not_retried() -> None:
    """A LIST answered "Too large resource version" (504, cause ResourceVersionTooLarge) is
    raised after one try, with no wait: the reflector relists from the latest at once."""
    sleeps: list[float] = []
    too_large = {**status_body(504, "Timeout", "Timeout: Too large resource version: 99, "
                               "current: 7"),
                 "details": {"causes": [{"reason": "ResourceVersionTooLarge",
                                         "message": "Too large resource version"}],
                             "retryAfterSeconds": 1}}
    pool = FakePool(queue_handler(*[response(504, too_large) for _ in range(4)]))
    with pytest.raises(ServerError) as info:
        make_client(pool, sleeps=sleeps).transport.request("GET", "/x",
                                                           query={"resourceVersion": "99"})
    assert info.value.status == 504
    assert len(pool.calls) == 1 and sleeps == []


def test_retries_stop_after_the_attempt_budget() -> None:
    """After `attempts` tries the last 429 is raised with its retry_after."""
    sleeps: list[float] = []
    answers = [response(429, None, {"Retry-After": "2"}) for _ in range(3)]
    pool = FakePool(queue_handler(*answers))
    client = make_client(pool, sleeps=sleeps, retry=RetryPolicy(attempts=3))
    with pytest.raises(TooManyRequestsError) as info:
        client.transport.request("GET", "/x")
    assert info.value.retry_after == 2.0
    assert len(pool.calls) == 3 and sleeps == [2.0, 2.0]


def test_huge_retry_after_is_capped() -> None:
    """A Retry-After beyond max_retry_after waits only the cap."""
    sleeps: list[float] = []
    pool = FakePool(queue_handler(response(429, None, {"Retry-After": "86400"}), response(200, OK)))
    make_client(pool, sleeps=sleeps, retry=RetryPolicy(max_retry_after=5.0)).transport.request(
        "GET", "/x")
    assert sleeps == [5.0]


def test_conflict_is_raised_at_once() -> None:
    """Client errors other than 429 are never retried."""
    pool = FakePool(queue_handler(response(409, status_body(409, "Conflict"))))
    with pytest.raises(ConflictError):
        make_client(pool).transport.request("GET", "/x")
    assert len(pool.calls) == 1


def test_no_answer_is_connection_error() -> None:
    """A urllib3 failure (no HTTP answer) is ApiConnectionError."""
    refused = urllib3.exceptions.MaxRetryError(
        None, "/x", urllib3.exceptions.NewConnectionError(None, "refused"))  # type: ignore[arg-type]
    pool = FakePool(queue_handler(refused))
    with pytest.raises(ApiConnectionError):
        make_client(pool).transport.request("GET", "/x")


def test_every_try_takes_a_rate_limit_token() -> None:
    """Retries go through the shared token bucket like first tries."""
    pool = FakePool(queue_handler(response(429, None, {"Retry-After": "0"}), response(200, OK)))
    client = make_client(pool)
    taken: list[int] = []

    class Counting:
        def accept(self) -> float:
            taken.append(1)
            return 0.0

    client.transport.rate_limiter = Counting()  # type: ignore[assignment]
    client.transport.request("GET", "/x")
    assert len(taken) == 2


@pytest.mark.parametrize(("method", "status", "retried"), [
    pytest.param("GET", 429, True, id="get-429"),
    pytest.param("POST", 429, True, id="post-429"),
    pytest.param("GET", 502, True, id="get-502"),
    pytest.param("DELETE", 500, False, id="delete-500"),
    pytest.param("PUT", 503, False, id="put-503"),
    pytest.param("GET", 404, False, id="get-404"),
])
def test_policy_decides_by_method_and_status(method: str, status: int, retried: bool) -> None:
    """RetryPolicy: 429 always, 5xx only on safe methods, nothing else."""
    from kinrun.errors import api_error_from_status
    error = api_error_from_status(status)
    assert RetryPolicy().should_retry(error, method=method, attempt=1) is retried


class BreakingBody(io.BytesIO):
    """A body that answers ``reads`` reads, then breaks as a reset connection does."""

    def __init__(self, data: bytes, reads: int) -> None:
        super().__init__(data)
        self.reads = reads

    def read(self, size: int | None = -1) -> bytes:
        if self.reads == 0:
            raise ConnectionResetError("connection reset by peer")
        self.reads -= 1
        return super().read(size)


def test_request_pieces_yields_the_body_as_read_and_maps_a_broken_read() -> None:
    """The body comes in pieces of at most piece_bytes; a read that breaks part-way is an
    ApiConnectionError naming the request, and the connection is not given back open."""
    body = BreakingBody(b"0123456789", reads=2)
    resp = urllib3.HTTPResponse(body=body, status=200, preload_content=False)
    pool = FakePool(lambda call: resp)
    pieces = make_client(pool).transport.request_pieces("/api/v1/pods", piece_bytes=4)
    assert [next(pieces), next(pieces)] == [b"0123", b"4567"]
    with pytest.raises(ApiConnectionError, match="/api/v1/pods"):
        next(pieces)
    assert pool.calls[0].preload_content is False and body.closed


def test_request_pieces_ends_after_the_last_piece() -> None:
    pool = FakePool(lambda call: response(200, raw=b"abcdefghij"))
    pieces = make_client(pool).transport.request_pieces("/x", piece_bytes=4)
    assert list(pieces) == [b"abcd", b"efgh", b"ij"]


@pytest.mark.parametrize(("method", "operation", "retried"), [
    pytest.param("POST", "POST", True, id="generated-name-taken"),
    pytest.param("PUT", "POST", False, id="not-a-create"),
    pytest.param("POST", "create", False, id="storage-unreachable"),
])
def test_server_timeout_is_retried_only_for_a_taken_generated_name(
        method: str, operation: str, retried: bool) -> None:
    """500 ServerTimeout naming the POST (rest.CheckGeneratedNameError) is retried at once for
    a create; a ServerTimeout from unreachable storage ("create") may have been applied."""
    from kinrun.errors import api_error_from_status
    error = api_error_from_status(500, {"code": 500, "reason": "ServerTimeout",
                                        "details": {"name": operation, "kind": "ConfigMap"}})
    assert RetryPolicy().should_retry(error, method=method, attempt=1) is retried
    if retried:
        assert RetryPolicy().delay(error, attempt=1) == 0.0
