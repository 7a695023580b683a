"""kinrun.kube against a real kube-apiserver: discovery, paging, watch, 410, bookmarks, writes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.errors import ConflictError, ExpiredError, NotFoundError
from kinrun.testing.envtest import EnvtestServer

kube = pytest.importorskip("kinrun.kube", reason="kinrun.kube (helper B2) not in the tree yet")


@pytest.fixture(scope="module")
def client(envtest_server: EnvtestServer) -> Iterator[Any]:
    """A kinrun.kube.Client built from the envtest kubeconfig."""
    with kube.Client.from_config(kubeconfig=envtest_server.kubeconfig_path) as c:
        yield c


def _cm(name: str, ns: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data}


def _events_until(watch: Any, n: int) -> list[Any]:
    """The first ``n`` non-BOOKMARK events of ``watch``; closes it."""
    got = []
    try:
        for event in watch:
            if event.type != "BOOKMARK":
                got.append(event)
            if len(got) == n:
                break
    finally:
        watch.close()
    return got


# -- discovery -------------------------------------------------------------------------------


@pytest.mark.parametrize(("api_version", "name", "expected"), [
    pytest.param("v1", "ConfigMap", ("", "v1", "configmaps", "ConfigMap", True), id="kind"),
    pytest.param("v1", "cm", ("", "v1", "configmaps", "ConfigMap", True), id="short-name"),
    pytest.param("v1", "Namespace", ("", "v1", "namespaces", "Namespace", False), id="cluster"),
    pytest.param("apps/v1", "deployments", ("apps", "v1", "deployments", "Deployment", True),
                 id="plural"),
    pytest.param("coordination.k8s.io/v1", "Lease",
                 ("coordination.k8s.io", "v1", "leases", "Lease", True), id="group"),
])
def test_resolve_maps_kinds_to_resources(client: Any, api_version: str, name: str,
                                         expected: tuple[Any, ...]) -> None:
    """resolve() turns a kind, plural or short name into the real server's GVR and scope."""
    ref = client.resolve(api_version, name)
    assert (ref.group, ref.version, ref.resource, ref.kind, ref.namespaced) == expected


def test_resolve_unknown_kind_names_closest_match(client: Any) -> None:
    """An unknown kind raises UnknownKindError that suggests the near miss."""
    with pytest.raises(kube.UnknownKindError) as err:
        client.resolve("v1", "ConfigMapp")
    assert "ConfigMap" in str(err.value)
    with pytest.raises(kube.UnknownKindError):
        client.resolve("nope.example.com/v1", "Thing")


def test_resolve_finds_crd_created_after_first_lookup(client: Any, envtest_server: EnvtestServer,
                                                      request: pytest.FixtureRequest) -> None:
    """A CRD created later is found (discovery refetched on a miss) once the server serves it."""
    group = f"g{abs(hash(request.node.name)) % 10**6}.kinrun.dev"
    with pytest.raises(kube.UnknownKindError):
        client.resolve(f"{group}/v1", "Widget")
    client.create({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {
                                   "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    })
    deadline = time.monotonic() + 30
    while True:  # the CRD is served asynchronously (Established condition), a bounded wait
        try:
            ref = client.resolve(f"{group}/v1", "Widget")
            break
        except kube.UnknownKindError:
            assert time.monotonic() < deadline, "CRD never appeared in discovery"
            time.sleep(0.5)
    assert (ref.resource, ref.namespaced) == ("widgets", True)


# -- list and watch --------------------------------------------------------------------------


def test_paged_list_returns_every_item_with_kind(client: Any, envtest_namespace: str) -> None:
    """A LIST with page_size 3 over 7 objects returns all 7, each with apiVersion and kind."""
    for i in range(7):
        client.create(_cm(f"p{i}", envtest_namespace))
    ref = client.resolve("v1", "ConfigMap")
    result = client.lister_watcher(ref, namespace=envtest_namespace, page_size=3).list()
    assert sorted(o["metadata"]["name"] for o in result.items) == [f"p{i}" for i in range(7)]
    assert {(o["apiVersion"], o["kind"]) for o in result.items} == {("v1", "ConfigMap")}
    assert result.resource_version


def test_list_falls_back_to_unpaged_when_continue_token_expires(
        client: Any, envtest_server: EnvtestServer, envtest_namespace: str) -> None:
    """etcd compacted between pages: the continue token answers 410 and the list is redone
    in one unpaged request, still returning every object (as client-go's pager)."""
    for i in range(3):
        client.create(_cm(f"c{i}", envtest_namespace))
    lw = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=envtest_namespace,
                               page_size=1)
    real_request_pieces = lw.transport.request_pieces
    calls = []

    def compact_after_first_page(*args: Any, **kwargs: Any) -> Any:
        yield from real_request_pieces(*args, **kwargs)
        calls.append(kwargs.get("query"))
        if len(calls) == 1:
            envtest_server.compact_etcd()

    lw.transport = _Wrapped(lw.transport, compact_after_first_page)
    result = lw.list()
    assert sorted(o["metadata"]["name"] for o in result.items) == ["c0", "c1", "c2"]
    assert result.extra.get("unpaged_after_expired") is True


class _Wrapped:
    """A transport whose ``request_pieces`` (what a LIST reads through) is replaced; everything
    else is the real one."""

    def __init__(self, inner: Any, request_pieces: Any) -> None:
        self._inner = inner
        self.request_pieces = request_pieces

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_watch_from_list_rv_streams_changes_as_dicts(client: Any, envtest_namespace: str) -> None:
    """WATCH from the list's resourceVersion yields ADDED, MODIFIED, DELETED as plain dicts."""
    ns = envtest_namespace
    lw = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns)
    listed = lw.list()
    client.create(_cm("w", ns, k="1"))
    client.patch("v1", "ConfigMap", "w", {"data": {"k": "2"}}, namespace=ns)
    client.delete("v1", "ConfigMap", "w", ns)
    events = _events_until(lw.watch(resource_version=listed.resource_version,
                                    timeout_seconds=10), 3)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]
    assert type(events[1].object) is dict and events[1].object["data"] == {"k": "2"}
    assert events[0].object["kind"] == "ConfigMap"


def test_watch_with_selector_sees_only_matching_objects(client: Any,
                                                        envtest_namespace: str) -> None:
    """A lister_watcher's label selector is applied by the server to the watch."""
    ns = envtest_namespace
    lw = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns,
                               label_selector="app=web")
    rv = lw.list().resource_version
    other = _cm("other", ns)
    other["metadata"]["labels"] = {"app": "db"}
    web = _cm("web", ns)
    web["metadata"]["labels"] = {"app": "web"}
    client.create(other)
    client.create(web)
    events = _events_until(lw.watch(resource_version=rv, timeout_seconds=10), 1)
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [("ADDED", "web")]


def test_watch_from_compacted_resource_version_raises_expired(
        client: Any, envtest_server: EnvtestServer, envtest_namespace: str) -> None:
    """WATCH from a resourceVersion etcd has compacted away raises ExpiredError (410). Events
    have no watch cache in kube-apiserver, so their watch reads etcd history."""
    ns = envtest_namespace
    lw = client.lister_watcher(client.resolve("v1", "Event"), namespace=ns)
    client.create_event(client.create(_cm("x", ns)), type="Normal", reason="One", message="m")
    rv = lw.list().resource_version
    client.create_event(client.get("v1", "ConfigMap", "x", ns), type="Normal", reason="Two",
                        message="m")
    envtest_server.compact_etcd()
    with pytest.raises(ExpiredError):
        _events_until(lw.watch(resource_version=rv, timeout_seconds=10), 1)


def test_watch_delivers_bookmark_with_resource_version(client: Any,
                                                       envtest_namespace: str) -> None:
    """With bookmarks allowed, kube-apiserver 1.20 sends a BOOKMARK 2 s before timeoutSeconds
    once the resource type saw a write after the watch began (here: in another namespace);
    it carries a resourceVersion, and the stream then ends cleanly."""
    ns = envtest_namespace
    ref = client.resolve("v1", "ConfigMap")
    lw = client.lister_watcher(ref, namespace=ns)
    watch = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=4,
                     allow_bookmarks=True)
    client.create(_cm("elsewhere", "default" if ns != "default" else "kube-public"))
    try:
        events = list(watch)  # ends when the server closes the stream after 4 s
    finally:
        client.delete("v1", "ConfigMap", "elsewhere", "default", missing_ok=True)
    assert events and {e.type for e in events} == {"BOOKMARK"}
    assert events[0].object["metadata"]["resourceVersion"]


def test_watch_close_from_another_thread_ends_iteration(client: Any,
                                                        envtest_namespace: str) -> None:
    """close() from another thread ends a watch blocked waiting for events."""
    lw = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=envtest_namespace)
    watch = lw.watch(resource_version=lw.list().resource_version, timeout_seconds=60,
                     allow_bookmarks=False)
    started, done = threading.Event(), threading.Event()

    def consume() -> None:
        started.set()
        list(watch)
        done.set()

    threading.Thread(target=consume, daemon=True).start()
    assert started.wait(5)
    watch.close()
    assert done.wait(10), "iteration did not end after close()"


# -- writes ----------------------------------------------------------------------------------


def test_crud_errors_are_typed(client: Any, envtest_namespace: str) -> None:
    """404 -> NotFoundError, existing -> ConflictError, stale update -> ConflictError,
    delete(missing_ok) of an absent object -> None."""
    ns = envtest_namespace
    with pytest.raises(NotFoundError):
        client.get("v1", "ConfigMap", "absent", ns)
    made = client.create(_cm("x", ns, k="1"))
    with pytest.raises(ConflictError):
        client.create(_cm("x", ns))
    client.update({**made, "data": {"k": "2"}})
    with pytest.raises(ConflictError):
        client.update({**made, "data": {"k": "3"}})
    assert client.get("v1", "ConfigMap", "x", ns)["data"] == {"k": "2"}
    client.delete("v1", "ConfigMap", "x", ns)
    assert client.delete("v1", "ConfigMap", "x", ns, missing_ok=True) is None


def test_server_side_apply_owns_fields_and_conflicts(client: Any, envtest_namespace: str) -> None:
    """apply() creates with manager kinrun; another manager's conflicting apply raises
    ConflictError unless forced."""
    ns = envtest_namespace
    applied = client.apply(_cm("ssa", ns, k="1"))
    assert [(m["manager"], m["operation"]) for m in applied["metadata"]["managedFields"]] == [
        ("kinrun", "Apply")]
    with pytest.raises(ConflictError):
        client.apply(_cm("ssa", ns, k="2"), field_manager="other")
    forced = client.apply(_cm("ssa", ns, k="2"), field_manager="other", force=True)
    assert forced["data"] == {"k": "2"}


def test_patch_status_changes_only_status(client: Any, envtest_namespace: str) -> None:
    """patch_status writes a Deployment's status without bumping generation."""
    ns = envtest_namespace
    labels = {"app": "d"}
    client.create({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "d", "namespace": ns},
                   "spec": {"selector": {"matchLabels": labels},
                            "template": {"metadata": {"labels": labels},
                                         "spec": {"containers": [{"name": "c",
                                                                  "image": "busybox"}]}}}})
    out = client.patch_status("apps/v1", "Deployment", "d", {"status": {"replicas": 5}},
                              namespace=ns)
    assert out["status"]["replicas"] == 5 and out["metadata"]["generation"] == 1


def test_create_event_records_core_event(client: Any, envtest_namespace: str) -> None:
    """create_event() writes a v1 Event whose involvedObject is the given object."""
    cm = client.create(_cm("ev", envtest_namespace))
    event = client.create_event(cm, type="Normal", reason="Synced", message="hello")
    assert (event["reason"], event["involvedObject"]["name"]) == ("Synced", "ev")
    assert event["involvedObject"]["uid"] == cm["metadata"]["uid"]


def test_lease_update_is_compare_and_swap(client: Any, envtest_namespace: str) -> None:
    """A Lease update with a stale resourceVersion raises ConflictError."""
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "leader", "namespace": envtest_namespace},
             "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}}
    made = client.create_lease(lease)
    client.update_lease({**made, "spec": {**made["spec"], "holderIdentity": "b"}})
    with pytest.raises(ConflictError):
        client.update_lease({**made, "spec": {**made["spec"], "holderIdentity": "c"}})
    assert client.get_lease("leader", envtest_namespace)["spec"]["holderIdentity"] == "b"
