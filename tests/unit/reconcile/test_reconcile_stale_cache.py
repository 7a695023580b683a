"""Read-your-writes across reconciles, step by step (issue 28, KEP-5647): the finalizer +
"handled once" pattern with a cache that lags behind the controller's own writes. The cache
here is a dict the test advances by hand, as a watch would deliver the writes' events."""

from __future__ import annotations

import copy
from typing import Any

from kinrun.actions import compile_actions
from kinrun.clock import FakeClock
from kinrun.controller import STALE_RETRY, Controller
from kinrun.reconcile import Reconciler
from kinrun.workqueue import DelayingQueue, ItemExponentialFailureRateLimiter, RateLimitingQueue

KEY = "ns/cm"
ONCE = "'example.com/handled' not in (obj.metadata.annotations | default({}))"


class Server:
    """One ConfigMap; a JSON/merge patch of it is applied (finalizers, annotations) and answered
    at the next resourceVersion; every answer is kept in ``versions`` (what a watch would
    deliver, in order); creates of other objects are counted."""

    def __init__(self) -> None:
        self.obj = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "cm", "namespace": "ns", "uid": "u1",
                                 "resourceVersion": "5"}}
        self.versions = [copy.deepcopy(self.obj)]
        self.creates = 0

    def execute(self, req: Any) -> Any:
        if req.verb == "create":
            self.creates += 1
            return {**req.body, "metadata": {**req.body["metadata"], "uid": "c"}}
        meta = self.obj["metadata"]
        if req.patch_type == "json":
            meta["finalizers"] = req.body[-1]["value"]
        else:
            meta.setdefault("annotations", {}).update(req.body["metadata"]["annotations"])
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        self.versions.append(copy.deepcopy(self.obj))
        return copy.deepcopy(self.obj)


def test_the_once_branch_runs_once_though_the_cache_lags():
    """R1 adds the finalizer (rv 6) and runs the once branch (create + annotation, rv 7). The
    watch has delivered rv 6 only and queued the key: that reconcile is put off (stale, no
    write); once rv 7 is cached the branch is not taken again: one create in all."""
    server, clock, skips = Server(), FakeClock(), []
    rec = Reconciler("c", client=server, finalizer="example.com/f", actions=compile_actions([
        {"create": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n"},
         "when": ONCE},
        {"patch": {"patch": '{"metadata": {"annotations": {"example.com/handled": "yes"}}}'},
         "when": ONCE}], controller="c"))
    cache = {KEY: server.versions[0]}
    queue = RateLimitingQueue(ItemExponentialFailureRateLimiter(1.0, 100.0),
                              DelayingQueue(clock=clock))
    controller = Controller("c", queue, cache.get, rec, causes=True, stale=rec.stale,
                            on_stale=lambda: skips.append(KEY))
    controller.enqueue(KEY)
    controller.process_next_item()                  # R1: rv 5 -> finalizer (6) -> once (7)
    assert (server.creates, len(server.versions)) == (1, 3)
    cache[KEY] = server.versions[1]                 # the watch delivered the finalizer add
    controller.enqueue(KEY)
    controller.process_next_item()                  # on rv 6: put off, nothing sent
    assert (server.creates, skips) == (1, [KEY])
    cache[KEY] = server.versions[2]                 # then the annotation patch
    clock.step(STALE_RETRY)
    controller.process_next_item()                  # on rv 7: the once branch is not taken
    assert (server.creates, len(server.versions), skips) == (1, 3, [KEY])
    queue.shut_down()
