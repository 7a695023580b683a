"""EnvtestServer.restart_apiserver: the outage a running controller must survive.

(This module sorts last in tests/envtest/, so the restart does not interrupt other tests.)
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kinrun.errors import ApiError
from kinrun.testing.envtest import EnvtestServer

from .normalize import cm_path, configmap, create
from .rawkube import RawKube


def _open_kinrun_watch(server: EnvtestServer, ns: str, rv: str) -> Any:
    """A kinrun.kube watch on ConfigMaps in ``ns`` from ``rv`` (skips if kinrun.kube is absent)."""
    kube = pytest.importorskip("kinrun.kube")
    client = kube.Client.from_config(kubeconfig=server.kubeconfig_path)
    lw = client.lister_watcher(client.resolve("v1", "ConfigMap"), namespace=ns)
    return lw.watch(resource_version=rv, timeout_seconds=120, allow_bookmarks=False)


def test_restart_apiserver_keeps_url_and_data_and_ends_open_watches(
        envtest_server: EnvtestServer, envtest_raw: RawKube, envtest_namespace: str) -> None:
    """After restart_apiserver(): same URL, etcd data intact, open watches were ended, and a
    watch from a resourceVersion older than the restart gets 410 as an ERROR event (the new
    watch cache starts at the restart)."""
    ns = envtest_namespace
    url = envtest_server.url
    create(envtest_raw, cm_path(ns), configmap("before"))
    list_rv = envtest_raw.get(cm_path(ns)).body["metadata"]["resourceVersion"]
    create(envtest_raw, cm_path(ns), configmap("bump"))  # etcd moves past list_rv
    outcome: dict[str, Any] = {}
    stream = envtest_raw.open_watch(cm_path(ns), {"resourceVersion": list_rv,
                                                  "timeoutSeconds": 120}, read_timeout=120)

    def read_across_restart() -> None:
        outcome["result"] = stream.read()

    kube_watch = _open_kinrun_watch(envtest_server, ns, list_rv)

    def kinrun_watch_across_restart() -> None:
        try:
            outcome["kinrun"] = [e.type for e in kube_watch]
        except ApiError as err:  # a reset connection is an acceptable way to end
            outcome["kinrun"] = type(err).__name__

    threads = [threading.Thread(target=f, daemon=True)
               for f in (read_across_restart, kinrun_watch_across_restart)]
    for thread in threads:
        thread.start()
    envtest_server.restart_apiserver()
    for thread in threads:
        thread.join(30)
        assert not thread.is_alive(), "a watch open during the restart never ended"
    assert outcome["kinrun"] in (["ADDED"], "ApiConnectionError"), outcome["kinrun"]
    assert envtest_server.url == url
    assert [i["metadata"]["name"] for i in envtest_raw.get(cm_path(ns)).body["items"]] == [
        "before", "bump"]
    create(envtest_raw, cm_path(ns), configmap("after"))
    got = envtest_raw.watch(cm_path(ns), {"resourceVersion": list_rv, "timeoutSeconds": 10},
                            max_events=1)
    assert got.status == 200
    assert [(e["type"], e["object"].get("code"), e["object"].get("reason")) for e in got.events] \
        == [("ERROR", 410, "Expired")]
    assert got.events[0]["object"]["message"].startswith("too old resource version: ")
