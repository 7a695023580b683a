"""EnvtestServer.restart_apiserver: the outage a running controller must survive.

(This module sorts last in tests/envtest/, so the restart does not interrupt other tests.)
"""

from __future__ import annotations

import threading
from typing import Any

from kinrun.testing.envtest import EnvtestServer

from .normalize import cm_path, configmap, create
from .rawkube import RawKube


def test_restart_apiserver_keeps_url_and_data_and_ends_open_watches(
        envtest_server: EnvtestServer, envtest_raw: RawKube, envtest_namespace: str) -> None:
    """After restart_apiserver(): same URL, etcd data intact, open watches were ended, and a
    watch from the pre-restart resourceVersion works or answers 410 (never hangs)."""
    ns = envtest_namespace
    url = envtest_server.url
    create(envtest_raw, cm_path(ns), configmap("before"))
    list_rv = envtest_raw.get(cm_path(ns)).body["metadata"]["resourceVersion"]
    outcome: dict[str, Any] = {}
    stream = envtest_raw.open_watch(cm_path(ns), {"resourceVersion": list_rv,
                                                  "timeoutSeconds": 120}, read_timeout=120)

    def read_across_restart() -> None:
        outcome["result"] = stream.read()

    thread = threading.Thread(target=read_across_restart, daemon=True)
    thread.start()
    envtest_server.restart_apiserver()
    thread.join(30)
    assert not thread.is_alive(), "a watch open during the restart never ended"
    assert envtest_server.url == url
    assert [i["metadata"]["name"] for i in envtest_raw.get(cm_path(ns)).body["items"]] == ["before"]
    create(envtest_raw, cm_path(ns), configmap("after"))
    got = envtest_raw.watch(cm_path(ns), {"resourceVersion": list_rv, "timeoutSeconds": 10},
                            max_events=1)
    kinds = [(e["type"], e["object"].get("metadata", {}).get("name") or e["object"].get("code"))
             for e in got.events]
    assert kinds in ([("ADDED", "after")], [("ERROR", 410)]), kinds
