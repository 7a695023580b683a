"""Contender: the loop most Python users write by hand with the official client.

``CoreV1Api.list_namespaced_pod`` (model objects), then ``watch.Watch().stream(...)`` from the
list's resourceVersion (model objects, the client's default), a dict of the objects by key as
the "cache", and a no-op handler per event. See ``_common`` for the workloads.
"""

from __future__ import annotations

import _common

ARGS = _common.parse_args()
REC, GCMON, RSS0 = _common.start(ARGS)

import threading  # noqa: E402

from kubernetes import client, config, watch  # noqa: E402


def handle(cache: dict, etype: str, pod) -> None:
    """The user's handler: keep the cache current, then do nothing with the object."""
    md = pod.metadata
    key = f"{md.namespace}/{md.name}"
    if etype == "DELETED":
        cache.pop(key, None)
    else:
        cache[key] = pod
    REC.handled(md.name, md.namespace, md.annotations)


CACHE: dict = {}  # key -> model object; module-level so it outlives run() (memory probes)


def run() -> None:
    api = client.CoreV1Api(config.new_client_from_config(config_file=ARGS.kubeconfig))
    cache = CACHE
    REC.opened()
    since = ARGS.since
    if ARGS.workload != "events":
        pods = api.list_namespaced_pod(ARGS.namespace)
        for pod in pods.items:
            handle(cache, "ADDED", pod)
        since = pods.metadata.resource_version
        if ARGS.workload == "sync":
            return
    w = watch.Watch()
    for ev in w.stream(api.list_namespaced_pod, ARGS.namespace, resource_version=since,
                       allow_watch_bookmarks=True):
        if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
            handle(cache, ev["type"], ev["object"])
        if REC.done.is_set():
            break


threading.Thread(target=run, daemon=True, name="watch-loop").start()
_common.wait_and_emit("client-watch", ARGS, REC, GCMON, RSS0)
