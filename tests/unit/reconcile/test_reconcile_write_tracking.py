"""Which reconciles keep the read-your-writes bookkeeping (``kinrun.reconcile``, module
docstring): a controller that cannot write skips it; any way of writing the reconciled object
(an action, ``onError``, a finalizer, a hook through ``ctx.client``) keeps it, so a cache older
than the answer to that write is still seen as stale."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kinrun.actions import compile_actions
from kinrun.kube.request import ApiRequest
from kinrun.reconcile import Reconciler

KEY = "ns/cm"
LOG = {"log": "saw {{ obj.metadata.name }}"}


def configmap(version: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns", "uid": "u1",
                         "resourceVersion": version, "finalizers": ["example.com/f"]}}


class Server:
    """Answers every write of the ConfigMap with it at the next resourceVersion."""

    def __init__(self) -> None:
        self.obj = configmap("5")
        self.writes = 0

    def execute(self, req: Any, **_kwargs: Any) -> Any:
        self.writes += 1
        meta = self.obj["metadata"]
        meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
        return copy.deepcopy(self.obj)


@pytest.mark.parametrize("actions, writes", [
    ([LOG], False),
    ([LOG, {"requeueAfter": "30s"}, {"stop": "done", "when": "false"},
      {"fail": {"message": "no"}, "when": "false"}], False),
    ([LOG, {"patch": {"patch": '{"metadata": {"labels": {"a": "b"}}}'}}], True),
    ([{"apply": {"manifest": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"}}], True),
    ([{"delete": {}}], True),
    ([{"event": {"reason": "Seen", "message": "m"}}], True),
])
def test_a_program_says_whether_it_may_send_a_request(actions, writes):
    assert compile_actions(actions, controller="c").writes is writes


def patch_of_the_object(ctx: Any) -> Any:
    return ctx.client.execute(ApiRequest("patch", "v1", "ConfigMap", "cm", "ns",
                                         body={"metadata": {"labels": {"a": "b"}}},
                                         patch_type="merge"))


def test_a_log_only_controller_notes_nothing_and_sees_no_stale_cache():
    server = Server()
    rec = Reconciler("c", client=server, actions=compile_actions([LOG], controller="c"))
    assert rec(KEY, configmap("5")).outcome == "done"
    assert server.writes == 0 and not rec.stale(KEY, configmap("4"))


def test_a_hook_write_is_noted_though_the_actions_only_log():
    server = Server()

    def hook(controller: str, key: str, obj: Any, ctx: Any) -> None:
        patch_of_the_object(ctx)
    rec = Reconciler("c", client=server, actions=compile_actions([LOG], controller="c"),
                     hooks=hook)
    assert rec(KEY, configmap("5")).outcome == "done"
    assert server.writes == 1
    assert rec.stale(KEY, configmap("5"))       # the answer was rv 6
    assert not rec.stale(KEY, configmap("6"))


def test_an_on_error_write_is_noted_though_the_actions_only_fail():
    server = Server()
    rec = Reconciler("c", client=server,
                     actions=compile_actions([{"fail": {"message": "broken"}}], controller="c"),
                     on_error=compile_actions(
                         [{"patch": {"patch": '{"metadata": {"labels": {"failed": "yes"}}}'}}],
                         controller="c"))
    assert rec(KEY, configmap("5")).outcome == "retry"
    assert server.writes == 1 and rec.stale(KEY, configmap("5"))


def test_a_finalizer_write_is_noted_though_the_actions_only_log():
    server = Server()
    server.obj["metadata"]["finalizers"] = []
    unfinalized = configmap("5")
    unfinalized["metadata"]["finalizers"] = []
    rec = Reconciler("c", client=server, actions=compile_actions([LOG], controller="c"),
                     finalizer="example.com/f")
    assert rec(KEY, unfinalized).outcome == "done"
    assert server.writes == 1 and rec.stale(KEY, unfinalized)
