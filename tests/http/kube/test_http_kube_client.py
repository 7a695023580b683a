"""Discovery, writes, Events, Leases, retries and error mapping against the embedded server."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from kubernetes import client as k8s_client

from kinrun.clock import RecordingClock
from kinrun.errors import (ApiConnectionError, ConflictError, InvalidError, NotFoundError,
                           ServerError, TooManyRequestsError)
from kinrun.kube import ApiRequest, Client, RetryPolicy, UnknownKindError
from kinrun.testing.apiserver import EmbeddedAPIServer
from kinrun.testing.apiserver import store as store_module

NS = "default"
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": NS},
      "data": {"a": "1"}}

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "shortNames": ["wd"], "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


# -- discovery ---------------------------------------------------------------------------------

def test_resolves_builtin_kinds_and_short_names(kube_client: Client) -> None:
    """Kinds, plurals and short names resolve to GVR and scope from the server's discovery."""
    deploy = kube_client.resolve("apps/v1", "deploy")
    assert (deploy.resource, deploy.kind, deploy.namespaced) == ("deployments", "Deployment", True)
    assert kube_client.resolve("v1", "Namespace").namespaced is False
    assert kube_client.resolve("coordination.k8s.io/v1", "Lease").resource == "leases"


def test_crd_installed_after_start_is_found(kube_client: Client) -> None:
    """A CRD created after the group version was cached resolves through one refetch."""
    with pytest.raises(UnknownKindError):
        kube_client.resolve("example.com/v1", "Widget")
    kube_client.create(WIDGET_CRD)
    ref = kube_client.resolve("example.com/v1", "wd")
    assert (ref.group, ref.resource, ref.kind) == ("example.com", "widgets", "Widget")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget",
              "metadata": {"name": "w1", "namespace": NS}, "spec": {"size": 3}}
    kube_client.create(widget)
    items = kube_client.lister_watcher(ref, namespace=NS).list().items
    assert [(o["kind"], o["spec"]) for o in items] == [("Widget", {"size": 3})]


def test_unknown_kind_suggests_the_closest(kube_client: Client) -> None:
    """A misspelt kind names the real one."""
    with pytest.raises(UnknownKindError) as info:
        kube_client.resolve("apps/v1", "Deploymnet")
    assert "Deployment" in info.value.suggestions


def test_unknown_group_version_suggests_served_ones(kube_client: Client) -> None:
    """An apiVersion the server does not serve names close served ones."""
    with pytest.raises(UnknownKindError) as info:
        kube_client.resolve("apps/v2", "Deployment")
    assert "apps/v1" in info.value.suggestions


# -- writes --------------------------------------------------------------------------------------

def test_create_get_and_conflict_on_existing(kube_client: Client) -> None:
    """create then get returns the object; creating it again is ConflictError."""
    kube_client.create(CM)
    assert kube_client.get("v1", "ConfigMap", "c1", NS)["data"] == {"a": "1"}
    with pytest.raises(ConflictError):
        kube_client.create(CM)


def test_get_missing_is_not_found(kube_client: Client) -> None:
    """GET of an absent object raises NotFoundError."""
    with pytest.raises(NotFoundError):
        kube_client.get("v1", "ConfigMap", "nope", NS)


def test_invalid_name_is_invalid_error(kube_client: Client) -> None:
    """The server's 422 for a bad name maps to InvalidError."""
    with pytest.raises(InvalidError):
        kube_client.create({**CM, "metadata": {"name": "Bad_Name", "namespace": NS}})


def test_server_side_apply_creates_then_updates(kube_client: Client) -> None:
    """apply creates a missing object and merges later applies, managed by kinrun."""
    created = kube_client.apply(CM)
    updated = kube_client.apply({**CM, "data": {"a": "2"}}, force=True)
    assert created["data"] == {"a": "1"} and updated["data"] == {"a": "2"}
    managers = {m["manager"] for m in updated["metadata"].get("managedFields", [])}
    assert "kinrun" in managers


@pytest.mark.parametrize(("patch_type", "patch"), [
    pytest.param("merge", {"data": {"b": "2"}}, id="merge"),
    pytest.param("strategic", {"data": {"b": "2"}}, id="strategic"),
    pytest.param("json", [{"op": "add", "path": "/data/b", "value": "2"}], id="json"),
])
def test_patch_types(kube_client: Client, patch_type: str, patch: Any) -> None:
    """merge, strategic and JSON patches all add the key."""
    kube_client.create(CM)
    out = kube_client.patch("v1", "ConfigMap", "c1", patch, namespace=NS, patch_type=patch_type)
    assert out["data"] == {"a": "1", "b": "2"}


def test_patch_status_changes_only_status(kube_client: Client) -> None:
    """patch_status writes the status subresource of a custom resource."""
    kube_client.create(WIDGET_CRD)
    kube_client.create({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w", "namespace": NS}, "spec": {"size": 1}})
    out = kube_client.patch_status("example.com/v1", "Widget", "w", {"status": {"ok": True}},
                                   namespace=NS)
    assert out["status"] == {"ok": True} and out["spec"] == {"size": 1}


def test_update_with_stale_resource_version_conflicts(kube_client: Client) -> None:
    """PUT with an old resourceVersion is ConflictError (optimistic concurrency)."""
    first = kube_client.create(CM)
    kube_client.patch("v1", "ConfigMap", "c1", {"data": {"a": "9"}}, namespace=NS)
    with pytest.raises(ConflictError):
        kube_client.update({**first, "data": {"a": "stale"}})


def test_delete_with_preconditions(kube_client: Client) -> None:
    """A wrong uid precondition refuses the delete; the right one deletes."""
    obj = kube_client.create(CM)
    with pytest.raises(ConflictError):
        kube_client.delete("v1", "ConfigMap", "c1", NS, preconditions={"uid": "wrong"})
    kube_client.delete("v1", "ConfigMap", "c1", NS, propagation_policy="Background",
                       preconditions={"uid": obj["metadata"]["uid"]})
    with pytest.raises(NotFoundError):
        kube_client.get("v1", "ConfigMap", "c1", NS)
    assert kube_client.delete("v1", "ConfigMap", "c1", NS, missing_ok=True) is None


def test_execute_runs_each_verb(kube_client: Client) -> None:
    """ApiRequests for create, get, apply, patch, update and delete reach the server."""
    ex = kube_client.execute
    ex(ApiRequest("create", "v1", "ConfigMap", "c1", NS, body=CM))
    got = ex(ApiRequest("get", "v1", "ConfigMap", "c1", NS))
    assert got is not None and got["data"] == {"a": "1"}
    ex(ApiRequest("apply", "v1", "ConfigMap", "c1", NS,
                  body={"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "2"}},
                  params={"force": True}))
    ex(ApiRequest("patch", "v1", "ConfigMap", "c1", NS, body={"data": {"b": "3"}},
                  patch_type="merge"))
    current = ex(ApiRequest("get", "v1", "ConfigMap", "c1", NS))
    assert current is not None and current["data"] == {"a": "2", "b": "3"}
    ex(ApiRequest("update", "v1", "ConfigMap", "c1", NS, body={**current, "data": {}}))
    assert ex(ApiRequest("delete", "v1", "ConfigMap", "c1", NS,
                         params={"propagationPolicy": "Background"})) is not None
    assert ex(ApiRequest("delete", "v1", "ConfigMap", "c1", NS)) is None


def test_create_event_about_an_object(kube_client: Client) -> None:
    """create_event records a v1 Event referencing the object."""
    obj = kube_client.create(CM)
    ev = kube_client.create_event(obj, type="Warning", reason="Failed", message="boom")
    stored = kube_client.get("v1", "Event", ev["metadata"]["name"], NS)
    assert stored["involvedObject"]["uid"] == obj["metadata"]["uid"]
    assert (stored["type"], stored["reason"], stored["message"]) == ("Warning", "Failed", "boom")


def test_lease_create_get_update_and_conflict(kube_client: Client) -> None:
    """Leases: create, get, update; an update from a stale copy conflicts."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "leader", "namespace": NS},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    created = kube_client.create_lease(lease)
    with pytest.raises(ConflictError):
        kube_client.create_lease(lease)
    got = kube_client.get_lease("leader", NS)
    assert got["spec"]["holderIdentity"] == "a"
    renewed = kube_client.update_lease({**got, "spec": {**got["spec"], "holderIdentity": "b"}})
    assert renewed["spec"]["holderIdentity"] == "b"
    with pytest.raises(ConflictError):
        kube_client.update_lease(created)


# -- retries and failures -------------------------------------------------------------------------

def test_429_with_retry_after_is_retried(embedded_server: EmbeddedAPIServer,
                                         kube_client: Any) -> None:
    """A 429 with Retry-After is retried after that many seconds, then succeeds."""
    kube_client.create(CM)
    embedded_server.faults.fail_next(1, status=429, retry_after=2)
    assert kube_client.get("v1", "ConfigMap", "c1", NS)["metadata"]["name"] == "c1"
    assert kube_client.sleeps == [2.0]


def test_429_on_a_write_is_retried(embedded_server: EmbeddedAPIServer, kube_client: Any) -> None:
    """A 429 answering a create was not processed: the create is sent again and succeeds."""
    kube_client.resolve("v1", "ConfigMap")
    embedded_server.faults.fail_next(1, status=429, retry_after=1)
    kube_client.create(CM)
    assert kube_client.get("v1", "ConfigMap", "c1", NS)["data"] == {"a": "1"}


def test_500_on_list_is_retried(embedded_server: EmbeddedAPIServer, kube_client: Any) -> None:
    """Two 500s on a LIST are retried with backoff; the third try succeeds."""
    lw = kube_client.lister_watcher(kube_client.resolve("v1", "ConfigMap"), namespace=NS)
    embedded_server.faults.fail_next(2, status=500)
    assert lw.list().items == []
    assert kube_client.sleeps == pytest.approx([0.01, 0.02])


def test_500_on_a_write_is_not_retried(embedded_server: EmbeddedAPIServer,
                                       kube_client: Any) -> None:
    """A 5xx answering a create is raised at once (it may have been applied)."""
    kube_client.resolve("v1", "ConfigMap")
    embedded_server.faults.fail_next(1, status=503)
    with pytest.raises(ServerError):
        kube_client.create(CM)
    assert kube_client.sleeps == []


def _suffixes(monkeypatch: pytest.MonkeyPatch, *suffixes: str) -> None:
    """The embedded server's generated names take ``suffixes`` in turn."""
    it = iter(suffixes)
    monkeypatch.setattr(store_module, "generate_name", lambda prefix, rng=None: prefix + next(it))


def test_taken_generated_name_is_server_timeout(embedded_server: EmbeddedAPIServer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A create whose generated name is taken answers 500 ServerTimeout naming the POST (as
    kube-apiserver 1.20 rest.CheckGeneratedNameError), and stores nothing."""
    _suffixes(monkeypatch, "aaaaa", "aaaaa")
    client = Client.from_config(kubeconfig=str(embedded_server.kubeconfig_path), qps=0,
                                retry=RetryPolicy(attempts=1))
    gen = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    try:
        assert client.create(gen, namespace=NS)["metadata"]["name"] == "gen-aaaaa"
        with pytest.raises(ServerError) as info:
            client.create(gen, namespace=NS)
    finally:
        client.close()
    assert info.value.status == 500 and info.value.body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "The POST operation against ConfigMap could not be completed at this time, "
                   "please try again.",
        "reason": "ServerTimeout", "details": {"name": "POST", "kind": "ConfigMap"},
        "code": 500}
    assert len(embedded_server.store.list("v1", "ConfigMap", NS)) == 1


def test_taken_generated_name_is_created_again_at_once(embedded_server: EmbeddedAPIServer,
                                                       kube_client: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """kinrun sends that create again at once (a new suffix is drawn): the collision never
    reaches a reconcile; a ServerTimeout to any other write is not retried."""
    _suffixes(monkeypatch, "aaaaa", "aaaaa", "bbbbb")
    gen = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "gen-"}}
    kube_client.create(gen, namespace=NS)
    assert kube_client.create(gen, namespace=NS)["metadata"]["name"] == "gen-bbbbb"
    assert kube_client.sleeps == [0.0]


def test_persistent_429_gives_up_with_retry_after(embedded_server: EmbeddedAPIServer,
                                                  kube_client: Any) -> None:
    """After the attempt budget the 429 is raised, carrying Retry-After."""
    kube_client.resolve("v1", "ConfigMap")
    embedded_server.faults.fail_next(4, status=429, retry_after=1)
    with pytest.raises(TooManyRequestsError) as info:
        kube_client.get("v1", "ConfigMap", "c1", NS)
    assert info.value.retry_after == 1.0 and len(kube_client.sleeps) == 3


def test_unreachable_server_is_connection_error() -> None:
    """Nothing listening: ApiConnectionError, no hang."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api = k8s_client.ApiClient(k8s_client.Configuration(host=f"http://127.0.0.1:{port}"))
    client = Client.from_api_client(api, retry=RetryPolicy(attempts=1), connect_timeout=2.0)
    with pytest.raises(ApiConnectionError):
        client.resolve("v1", "Pod")


def test_rate_limit_is_shared_by_every_request(embedded_server: EmbeddedAPIServer) -> None:
    """One token bucket throttles discovery, LIST, WATCH and writes alike (waits recorded)."""
    clock = RecordingClock()
    sleeps = clock.slept
    # The bucket's clock stands still (the sleeps are recorded, not slept), so no token is
    # refilled between requests however slow the machine is: each waits 0.2 s more.
    client = Client.from_config(kubeconfig=str(embedded_server.kubeconfig_path), qps=5,
                                burst=1, clock=clock)
    ref = client.resolve("v1", "ConfigMap")                          # token 1 (burst)
    lw = client.lister_watcher(ref, namespace=NS)
    rv = lw.list().resource_version                                  # waits 0.2 s
    lw.watch(resource_version=rv, timeout_seconds=1).close()         # waits 0.4 s
    client.create(CM)                                                # waits 0.6 s
    client.close()
    assert sleeps == pytest.approx([0.2, 0.4, 0.6])
