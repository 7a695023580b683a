"""A request no retry can change (400, 422 naming a field, an applied body its schema refuses)
ends the reconcile permanently."""

from __future__ import annotations

import pytest

from kinrun.errors import (BadRequestError, ForbiddenError, InvalidError, NotFoundError,
                           api_error_from_status)
from kinrun.kube.http_errors import error_from_response, never_succeeds
from kinrun.reconcile import Result

INVALID_PORT = {"kind": "Status", "code": 422, "reason": "Invalid",
                "message": 'Service "s" is invalid: spec.ports[0].protocol: Required value',
                "details": {"name": "s", "kind": "Service", "causes": [
                    {"reason": "FieldValueRequired", "message": "Required value",
                     "field": "spec.ports[0].protocol"}]}}
UNDECLARED = "failed to create typed patch object: .dat: field not declared in schema"
FAILED_TEST_OP = {"kind": "Status", "code": 422, "reason": "Invalid",
                  "message": "the server rejected our request due to an error in our request",
                  "details": {"causes": [{"reason": "UnexpectedServerResponse",
                                          "message": "testing value /metadata/finalizers failed"}]}}


@pytest.mark.parametrize(("status", "body", "expected"), [
    pytest.param(422, INVALID_PORT, True, id="invalid-field"),
    pytest.param(422, FAILED_TEST_OP, False, id="json-patch-test-failed"),
    pytest.param(400, {"kind": "Status", "code": 400, "reason": "BadRequest", "message": "x"},
                 True, id="bad-request"),
    pytest.param(415, {"kind": "Status", "code": 415, "reason": "UnsupportedMediaType",
                       "message": "the body of the request was in an unknown format"},
                 True, id="unsupported-patch-type"),
    pytest.param(403, {"kind": "Status", "code": 403, "reason": "Forbidden"}, False, id="forbidden"),
    pytest.param(404, {"kind": "Status", "code": 404, "reason": "NotFound"}, False, id="not-found"),
    pytest.param(500, {"kind": "Status", "code": 500, "reason": "InternalError"}, False, id="5xx"),
    pytest.param(500, {"kind": "Status", "code": 500, "message": UNDECLARED}, True,
                 id="typed-patch-refused"),
    pytest.param(500, {"kind": "Status", "code": 500,
                       "message": "failed to create typed live object: .x: field not declared"},
                 False, id="typed-live-object"),
])
def test_never_succeeds_by_status_and_causes(status, body, expected):
    """Only 400, a 422 whose causes name a field, a 500 refusing the applied body itself and a
    415 (a patch type the resource does not take) are answers no retry can change (the live
    object's typed form failing is not)."""
    import orjson
    assert never_succeeds(error_from_response(status, orjson.dumps(body))) is expected


def test_invalid_answer_is_a_permanent_result():
    """A 422 naming a field makes the reconcile permanent (forget, logged once, counted)."""
    error = api_error_from_status(422, INVALID_PORT)
    assert isinstance(error, InvalidError)
    result = Result.failed(error)
    assert result.outcome == "permanent" and result.error is error
    assert "spec.ports[0].protocol" in str(result.error)


@pytest.mark.parametrize("error", [
    pytest.param(api_error_from_status(422, FAILED_TEST_OP), id="json-patch-test-failed"),
    pytest.param(ForbiddenError("no"), id="forbidden"),
    pytest.param(NotFoundError("namespaces \"x\" not found"), id="not-found"),
])
def test_answers_a_retry_can_change_are_retried(error):
    """A failed JSON-patch test, 403 and 404 stay retried with backoff."""
    assert Result.failed(error).outcome == "retry"


def test_bad_request_is_permanent():
    """A 400 BadRequest (an undecodable body) is permanent."""
    assert Result.failed(BadRequestError("x", reason="BadRequest")).outcome == "permanent"

