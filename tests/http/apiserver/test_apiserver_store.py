"""The store and helpers used in-process (no HTTP): load, direct writes, history, dry runs."""

from __future__ import annotations

import pytest
from apiserver_http import call, configmap, pod

from kinrun.testing.apiserver import EmbeddedAPIServer, StatusError, Store
from kinrun.testing.apiserver.history import EventLog

CM = "/api/v1/namespaces/default/configmaps"


def test_load_creates_or_replaces_and_creates_namespaces():
    """load() creates objects, replaces existing ones, and creates missing namespaces."""
    with EmbeddedAPIServer() as srv:
        srv.load([configmap("a", namespace="team", data={"v": "1"})])
        srv.load([configmap("a", namespace="team", data={"v": "2"})])
        assert srv.store.get("v1", "Namespace", "team") is not None
        assert srv.store.get("v1", "ConfigMap", "a", "team")["data"] == {"v": "2"}


def test_load_of_a_pod_without_status_starts_it_pending():
    """A seeded Pod without status gets what a create through the API gives it (phase
    Pending, its QoS class; requests defaulted from limits), so a controller reading
    status.phase sees what it would on a cluster."""
    with EmbeddedAPIServer() as srv:
        seeded = pod("p")
        seeded["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
        loaded = srv.load([seeded])[0]
        assert loaded["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
        assert loaded["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1",
                                                                            "memory": "1Gi"}


def test_load_keeps_status_as_given():
    """Seeded objects keep their status (unlike a create through the API)."""
    with EmbeddedAPIServer() as srv:
        running = pod("p")
        running["status"] = {"phase": "Running"}
        assert srv.load([running])[0]["status"] == {"phase": "Running"}


def test_direct_writes_emit_events_with_increasing_resource_versions():
    """store.create/update/delete each take the next resourceVersion."""
    store = Store()
    start = store.resource_version
    a = store.create(configmap("a"))
    b = store.update(configmap("a", data={"k": "v"}))
    gone = store.delete("v1", "ConfigMap", "a", "default")
    rvs = [int(o["metadata"]["resourceVersion"]) for o in (a, b, gone)]
    assert rvs == [start + 1, start + 2, start + 3]
    assert store.delete("v1", "ConfigMap", "a", "default") is None


def test_update_checks_resource_version_when_asked():
    """store.update(check_resource_version=True) raises Conflict on a stale object."""
    store = Store()
    a = store.create(configmap("a"))
    store.update(configmap("a", data={"x": "1"}))
    with pytest.raises(StatusError) as info:
        store.update(a, check_resource_version=True)
    assert info.value.code == 409 and info.value.reason == "Conflict"


def test_unknown_kind_is_not_found():
    """Direct writes of an unserved kind raise 404."""
    with pytest.raises(StatusError) as info:
        Store().create({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}})
    assert info.value.code == 404


def test_list_helper_in_key_order():
    """store.list returns a kind's objects in namespace/name order."""
    store = Store()
    for name in ("b", "a"):
        store.create(configmap(name))
    assert [o["metadata"]["name"] for o in store.list("v1", "ConfigMap")] == ["a", "b"]


def test_event_log_keeps_at_least_capacity_and_raises_floor():
    """The history trims in batches, never below capacity, and floor_rv marks what is lost."""
    store = Store(history_size=8)
    for i in range(30):
        store.create(configmap(f"c{i}"))
    rtype = store.resolve("v1", "ConfigMap")
    with store.lock:
        log: EventLog = store.log_locked(rtype)
        assert 8 <= len(log.events) <= 10
        assert log.floor_rv == log.events[0].rv - 1
        assert log.next_seq == 30


def test_history_is_per_resource():
    """Churn on pods does not expire a configmap watch position."""
    with EmbeddedAPIServer(history_size=4) as srv:
        srv.load([configmap("a")])
        rv = srv.store.resource_version
        srv.store.create_many(pod(f"p{i}") for i in range(20))
        rtype = srv.store.resolve("v1", "ConfigMap")
        with srv.store.lock:
            assert srv.store.log_locked(rtype).floor_rv <= rv


def test_dry_run_stores_nothing(embedded_server, embedded_api_client):
    """dryRun=All validates and answers but changes nothing; other values answer 400."""
    created = call(embedded_api_client, "POST", CM, body=configmap("a"), query={"dryRun": "All"})
    assert created.status == 201 and created.body["metadata"]["uid"]
    assert call(embedded_api_client, "GET", f"{CM}/a").status == 404
    embedded_server.load([configmap("a")])
    rv = embedded_server.store.resource_version
    patched = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"k": "v"}},
                   content_type="application/merge-patch+json", query={"dryRun": "All"})
    assert patched.body["data"] == {"k": "v"} and embedded_server.store.resource_version == rv
    assert call(embedded_api_client, "DELETE", f"{CM}/a", query={"dryRun": "All"}).status == 200
    assert embedded_server.store.get("v1", "ConfigMap", "a") is not None
    assert call(embedded_api_client, "POST", CM, body=configmap("b"), query={"dryRun": "yes"}).status == 400


def test_kubeconfig_points_at_server(tmp_path):
    """The kubeconfig names the server URL; write_kubeconfig writes another copy."""
    import yaml
    with EmbeddedAPIServer() as srv:
        cfg = yaml.safe_load(open(srv.kubeconfig_path))
        assert cfg["clusters"][0]["cluster"]["server"] == srv.url == f"http://127.0.0.1:{srv.port}"
        assert cfg["current-context"] == "embedded"
        other = srv.write_kubeconfig(tmp_path / "kc")
        assert yaml.safe_load(other.read_text())["clusters"] == cfg["clusters"]


def test_stop_is_idempotent_and_removes_temp_kubeconfig():
    """stop() twice is fine and removes the temporary kubeconfig."""
    import os
    srv = EmbeddedAPIServer().start()
    path = srv.kubeconfig_path
    assert os.path.exists(path)
    srv.stop()
    srv.stop()
    assert not os.path.exists(path)


def test_module_main_serves_until_terminated(tmp_path):
    """``python -m kinrun.testing.apiserver`` prints its URL, serves, and exits on SIGTERM."""
    import subprocess
    import sys
    import urllib.request
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seeded, namespace: default}\n")
    proc = subprocess.Popen([sys.executable, "-m", "kinrun.testing.apiserver", "--load", str(manifest),
                             "--kubeconfig", str(tmp_path / "kc")], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().split()[-1]
        with urllib.request.urlopen(f"{url}/api/v1/namespaces/default/configmaps/seeded", timeout=10) as resp:
            assert resp.status == 200
        assert (tmp_path / "kc").exists()
    finally:
        proc.terminate()
        assert proc.wait(10) == 0
