"""A server-side apply conflict (409 with FieldManagerConflict causes) becomes one clear line."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import urllib3

from kinrun.errors import ApplyConflictError, ConflictError
from kinrun.kube.http_errors import error_from_response, is_apply_conflict
from kube_fakes import DISCOVERY, Call, FakePool, make_client, response, status_body


def apply_conflict(*causes: tuple[str, str]) -> dict[str, Any]:
    """A 409 Status as kube-apiserver 1.20 writes it for apply conflicts: ``causes`` are
    (field, cause message) pairs; the top-level message is not parsed by kinrun."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"Apply failed with {len(causes)} conflict(s)", "reason": "Conflict",
            "details": {"causes": [{"reason": "FieldManagerConflict", "message": message,
                                    "field": field} for field, message in causes]},
            "code": 409}


PATCH_CONFLICT = apply_conflict((".spec.replicas", 'conflict with "kubectl-patch" using apps/v1'))


def test_apply_conflict_status_becomes_apply_conflict_error() -> None:
    """A 409 with a FieldManagerConflict cause is an ApplyConflictError (a ConflictError)
    carrying each field with its manager; an Update manager's "using apps/v1" is cut."""
    error = error_from_response(409, orjson.dumps(PATCH_CONFLICT))
    assert isinstance(error, ApplyConflictError) and isinstance(error, ConflictError)
    assert error.status == 409 and error.reason == "Conflict"
    assert error.conflicts == ((".spec.replicas", ("kubectl-patch",)),)
    assert str(error) == ('apply: conflict: .spec.replicas is managed by "kubectl-patch" '
                          "(set force: true to take it over)")


def test_optimistic_lock_conflict_stays_a_plain_conflict_error() -> None:
    """A 409 Conflict without FieldManagerConflict causes (a stale resourceVersion) is not an
    apply conflict."""
    body = status_body(409, "Conflict", 'Operation cannot be fulfilled on configmaps "c"')
    error = error_from_response(409, orjson.dumps(body))
    assert type(error) is ConflictError
    assert not is_apply_conflict({**body, "code": 409})


def test_several_fields_and_managers_are_grouped_by_field() -> None:
    """Causes are grouped by field, managers in the server's order, each named once; the
    sentence ends with "take them over"."""
    body = apply_conflict((".data.k", 'conflict with "ctrl"'),
                          (".data.k", 'conflict with "difftest-agent" using v1'),
                          (".data.y", 'conflict with "a \\"quoted\\" name"'))
    error = error_from_response(409, orjson.dumps(body))
    assert isinstance(error, ApplyConflictError)
    assert error.conflicts == ((".data.k", ("ctrl", "difftest-agent")),
                               (".data.y", ('a "quoted" name',)))
    assert str(error) == ('apply: conflict: .data.k is managed by "ctrl" and "difftest-agent", '
                          '.data.y is managed by "a "quoted" name" (set force: true to take them '
                          "over)")


class ConflictingServer:
    """Answers discovery; every apply PATCH gets the kubectl-patch conflict."""

    def __call__(self, call: Call) -> urllib3.HTTPResponse:
        if call.path in DISCOVERY:
            return response(200, DISCOVERY[call.path])
        return response(409, PATCH_CONFLICT)


@pytest.mark.parametrize(("body", "namespace", "expected"), [
    pytest.param({"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 5}},
                 None, "apply Deployment default/web", id="namespaced"),
    pytest.param({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}},
                 None, "apply Namespace team", id="cluster-scoped"),
])
def test_client_apply_conflict_names_the_object_in_one_line(body: dict[str, Any],
                                                            namespace: str | None,
                                                            expected: str) -> None:
    """Client.apply raises ApplyConflictError whose str() is one line naming the verb, kind,
    namespace/name, the field and its manager, with no traceback or Status dump."""
    client = make_client(FakePool(ConflictingServer()))
    with pytest.raises(ApplyConflictError) as info:
        client.apply(body, namespace=namespace)
    text = str(info.value)
    assert text == (f'{expected}: conflict: .spec.replicas is managed by "kubectl-patch" '
                    "(set force: true to take it over)")
    assert "\n" not in text and "Traceback" not in text
    assert info.value.kind == body["kind"] and info.value.name == body["metadata"]["name"]
    assert info.value.body is not None and info.value.body["reason"] == "Conflict"
