"""Writes through Client and Client.execute(ApiRequest): verbs, paths, content types, bodies."""

from __future__ import annotations

from typing import Any

import pytest
import urllib3

from kinrun.errors import NotFoundError
from kinrun.kube import ApiRequest, Client, UnknownKindError
from kinrun.kube.events import event_for
from kube_fakes import DISCOVERY, Call, FakePool, make_client, response, status_body

CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "c1", "namespace": "ns"}, "data": {"a": "1"}}


class Server:
    """Answers discovery from DISCOVERY; echoes writes; 404 for names starting with `gone`."""

    def __call__(self, call: Call) -> urllib3.HTTPResponse:
        if call.path in DISCOVERY:
            return response(200, DISCOVERY[call.path])
        if call.path.rsplit("/", 1)[-1].startswith("gone"):
            return response(404, status_body(404, "NotFound"))
        return response(200, call.body if isinstance(call.body, dict) else {"ok": True})


@pytest.fixture
def pool() -> FakePool:
    return FakePool(Server())


@pytest.fixture
def client(pool: FakePool) -> Client:
    return make_client(pool)


def writes(pool: FakePool) -> list[Call]:
    """The non-discovery calls."""
    return [c for c in pool.calls if c.path not in DISCOVERY]


def test_apply_is_a_server_side_apply_patch(client: Client, pool: FakePool) -> None:
    """apply: PATCH apply-patch+yaml on the object with fieldManager=kinrun."""
    client.apply(CM)
    call = writes(pool)[0]
    assert (call.method, call.path) == ("PATCH", "/api/v1/namespaces/ns/configmaps/c1")
    assert call.headers["Content-Type"] == "application/apply-patch+yaml"
    assert call.query == {"fieldManager": "kinrun"}
    assert call.body == CM


def test_apply_force(client: Client, pool: FakePool) -> None:
    """apply(force=True) adds force=true."""
    client.apply(CM, force=True)
    assert writes(pool)[0].query == {"fieldManager": "kinrun", "force": "true"}


@pytest.mark.parametrize(("patch_type", "patch", "content_type"), [
    pytest.param("merge", {"data": {"b": "2"}}, "application/merge-patch+json", id="merge"),
    pytest.param("strategic", {"data": {"b": "2"}}, "application/strategic-merge-patch+json",
                 id="strategic"),
    pytest.param("json", [{"op": "add", "path": "/data/b", "value": "2"}],
                 "application/json-patch+json", id="json"),
])
def test_patch_types_use_their_content_type(client: Client, pool: FakePool, patch_type: str,
                                            patch: Any, content_type: str) -> None:
    """Each patch type is sent with its media type and the patch as body."""
    client.patch("v1", "ConfigMap", "c1", patch, namespace="ns", patch_type=patch_type)
    call = writes(pool)[0]
    assert call.method == "PATCH" and call.headers["Content-Type"] == content_type
    assert call.body == patch


def test_patch_of_wrong_shape_is_refused(client: Client) -> None:
    """A json patch must be a list; a merge patch a dict."""
    with pytest.raises(ValueError):
        client.patch("v1", "ConfigMap", "c1", {"a": 1}, namespace="ns", patch_type="json")
    with pytest.raises(ValueError):
        client.patch("v1", "ConfigMap", "c1", [], namespace="ns", patch_type="merge")
    with pytest.raises(ValueError):
        client.patch("v1", "ConfigMap", "c1", {}, namespace="ns", patch_type="bogus")


def test_patch_status_targets_the_subresource(client: Client, pool: FakePool) -> None:
    """patch_status goes to .../status."""
    client.patch_status("apps/v1", "Deployment", "d", {"status": {"x": 1}}, namespace="ns")
    assert writes(pool)[0].path == "/apis/apps/v1/namespaces/ns/deployments/d/status"


def test_delete_sends_delete_options(client: Client, pool: FakePool) -> None:
    """delete: propagation policy and preconditions travel as DeleteOptions."""
    client.delete("v1", "ConfigMap", "c1", "ns", propagation_policy="Foreground",
                  preconditions={"uid": "u1", "resourceVersion": "5"})
    call = writes(pool)[0]
    assert call.method == "DELETE"
    assert call.body == {"apiVersion": "v1", "kind": "DeleteOptions",
                         "propagationPolicy": "Foreground",
                         "preconditions": {"uid": "u1", "resourceVersion": "5"}}


def test_delete_missing_raises_unless_missing_ok(client: Client) -> None:
    """404 on delete is NotFoundError, or None with missing_ok."""
    with pytest.raises(NotFoundError):
        client.delete("v1", "ConfigMap", "gone", "ns")
    assert client.delete("v1", "ConfigMap", "gone", "ns", missing_ok=True) is None


def test_create_posts_to_the_collection(client: Client, pool: FakePool) -> None:
    """create POSTs to the namespace's collection."""
    client.create(CM)
    call = writes(pool)[0]
    assert (call.method, call.path) == ("POST", "/api/v1/namespaces/ns/configmaps")


def test_create_without_namespace_for_namespaced_kind_is_refused(client: Client) -> None:
    """A namespaced object with no namespace anywhere is a clear ValueError."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with pytest.raises(ValueError, match="namespaced"):
        client.create(body)


def test_update_puts_the_object(client: Client, pool: FakePool) -> None:
    """update PUTs the whole object at its path."""
    client.update(CM)
    assert (writes(pool)[0].method, writes(pool)[0].path) == (
        "PUT", "/api/v1/namespaces/ns/configmaps/c1")


def test_unknown_kind_fails_before_sending(client: Client, pool: FakePool) -> None:
    """A write for an unknown kind raises UnknownKindError and sends no write."""
    with pytest.raises(UnknownKindError):
        client.apply({"apiVersion": "v1", "kind": "ConfigMapp", "metadata": {"name": "x"}})
    assert writes(pool) == []


# -- execute(ApiRequest) -------------------------------------------------------------------

def test_execute_apply_honours_field_manager_and_force(client: Client, pool: FakePool) -> None:
    """ApiRequest apply: params fieldManager/force steer the apply."""
    req = ApiRequest("apply", "v1", "ConfigMap", "c1", "ns", body=CM,
                     params={"fieldManager": "mine", "force": True, "dryRun": "All"})
    assert client.execute(req) == CM
    assert writes(pool)[0].query == {"fieldManager": "mine", "force": "true", "dryRun": "All"}


def test_execute_apply_fills_name_and_namespace(client: Client, pool: FakePool) -> None:
    """A body without metadata name/namespace takes the request's."""
    body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {}}
    client.execute(ApiRequest("apply", "v1", "ConfigMap", "c9", "ns2", body=body))
    call = writes(pool)[0]
    assert call.path == "/api/v1/namespaces/ns2/configmaps/c9"
    assert call.body["metadata"] == {"name": "c9", "namespace": "ns2"}
    assert "metadata" not in body  # the caller's body is not modified


def test_execute_patch_status(client: Client, pool: FakePool) -> None:
    """ApiRequest patch with subresource status and a json patch."""
    ops = [{"op": "replace", "path": "/status/x", "value": 1}]
    client.execute(ApiRequest("patch", "apps/v1", "Deployment", "d", "ns", body=ops,
                              patch_type="json", subresource="status"))
    call = writes(pool)[0]
    assert call.path.endswith("/deployments/d/status")
    assert call.headers["Content-Type"] == "application/json-patch+json"


def test_execute_delete_is_idempotent(client: Client) -> None:
    """Deleting an object that is already gone returns None."""
    assert client.execute(ApiRequest("delete", "v1", "ConfigMap", "gone", "ns")) is None


def test_execute_delete_moves_options_from_params(client: Client, pool: FakePool) -> None:
    """propagationPolicy in params becomes DeleteOptions; other params stay query params."""
    client.execute(ApiRequest("delete", "v1", "ConfigMap", "c1", "ns",
                              params={"propagationPolicy": "Background", "dryRun": "All"}))
    call = writes(pool)[0]
    assert call.body["propagationPolicy"] == "Background"
    assert call.query == {"dryRun": "All"}


def test_execute_get_and_create(client: Client, pool: FakePool) -> None:
    """get and create dispatch to GET and POST."""
    client.execute(ApiRequest("get", "v1", "ConfigMap", "c1", "ns"))
    client.execute(ApiRequest("create", "v1", "ConfigMap", "c1", "ns", body=CM))
    assert [c.method for c in writes(pool)] == ["GET", "POST"]


def test_execute_unknown_verb_is_refused(client: Client) -> None:
    """An unknown verb is a ValueError naming the request."""
    with pytest.raises(ValueError, match="unknown verb"):
        client.execute(ApiRequest("frobnicate", "v1", "ConfigMap", "c1", "ns"))  # type: ignore[arg-type]


# -- events and leases ---------------------------------------------------------------------

def test_event_for_describes_the_involved_object() -> None:
    """The Event lives in the object's namespace, references it, and counts one."""
    obj = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "prod", "uid": "u-1",
                        "resourceVersion": "42"}}
    ev = event_for(obj, type="Normal", reason="Synced", message="m" * 2000, host="h",
                   now_ns=1_700_000_000_000_000_000)
    assert ev["metadata"] == {"name": f"web.{1_700_000_000_000_000_000:x}",
                              "namespace": "prod"}
    assert ev["involvedObject"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web", "namespace": "prod", "uid": "u-1",
                                    "resourceVersion": "42"}
    assert ev["source"] == {"component": "kinrun", "host": "h"}
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2023-11-14T22:13:20Z"
    assert len(ev["message"]) == 1024 and ev["count"] == 1


def test_event_for_cluster_scoped_object_goes_to_default() -> None:
    """Cluster-scoped objects' Events are recorded in `default`."""
    ev = event_for({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}},
                   type="Warning", reason="R", message="x")
    assert ev["metadata"]["namespace"] == "default"


def test_create_event_posts_to_events(client: Client, pool: FakePool) -> None:
    """create_event POSTs a v1 Event in the object's namespace."""
    client.create_event(CM, type="Normal", reason="Synced", message="ok")
    call = writes(pool)[0]
    assert (call.method, call.path) == ("POST", "/api/v1/namespaces/ns/events")
    assert call.body["involvedObject"]["name"] == "c1" and call.body["reason"] == "Synced"


def test_lease_calls(client: Client, pool: FakePool) -> None:
    """Leases: GET, POST and PUT under coordination.k8s.io/v1."""
    lease = {"metadata": {"name": "l", "namespace": "ns", "resourceVersion": "3"},
             "spec": {"holderIdentity": "me"}}
    client.get_lease("l", "ns")
    client.create_lease(lease)
    client.update_lease(lease)
    base = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"
    assert [(c.method, c.path) for c in writes(pool)] == [
        ("GET", f"{base}/l"), ("POST", base), ("PUT", f"{base}/l")]
    assert writes(pool)[1].body["kind"] == "Lease"
