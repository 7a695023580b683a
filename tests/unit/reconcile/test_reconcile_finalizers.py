"""Finalizers (kinrun.reconcile): added before the first write, finalize while the object
terminates and still carries ours, removed only once finalize succeeded; nothing for a
terminating object without ours; the config refuses what could never work."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kinrun.actions import compile_actions
from kinrun.config import load_text
from kinrun.errors import ConfigError, ConflictError
from kinrun.actions.finalizer import finalizer_name_problem
from kinrun.plan import plan
from kinrun.reconcile import Reconciler

NAME = "example.com/cleanup"
KEY = "ns/cm"


def cm(*, finalizers: tuple[str, ...] = (), terminating: bool = False,
       **annotations: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cm", "namespace": "ns", "uid": "u1",
                            "resourceVersion": "5", "annotations": dict(annotations)}
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if terminating:
        meta["deletionTimestamp"] = "2023-11-14T22:13:20Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


class Client:
    """Answers patches with the object they make (finalizers as the JSON patch sets them);
    ``fail`` raises for requests of that verb+kind."""

    def __init__(self, fail: str | None = None) -> None:
        self.sent: list[Any] = []
        self.fail = fail

    def execute(self, req: Any) -> Any:
        self.sent.append(req)
        if self.fail == f"{req.verb} {req.kind}":
            raise ConflictError("the object has been modified", status=409)
        if req.patch_type == "json":
            obj = cm()
            obj["metadata"]["finalizers"] = req.body[-1]["value"]
            obj["metadata"]["resourceVersion"] = "6"
            return obj
        return None


def reconciler(client: Client, *, finalize: list[Any] | None = None,
               actions: list[Any] | None = None) -> Reconciler:
    def program(specs: list[Any] | None) -> Any:
        return compile_actions(specs, controller="c") if specs else None
    return Reconciler("c", actions=program(actions or [{"patch": {"patch": {"data": {"a": "b"}}}}]),
                      finalize=program(finalize or [
                          {"delete": {"target": {"apiVersion": "v1", "kind": "Secret",
                                                 "name": "ext"}}}]),
                      finalizer=NAME, client=client)


def summary(client: Client) -> list[str]:
    return [f"{r.verb} {r.kind}" + (f" {r.body[-1]['value']}" if r.patch_type == "json" else "")
            for r in client.sent]


def test_the_first_reconcile_adds_the_finalizer_before_the_actions_write():
    """add (JSON patch, resourceVersion tested), then the actions on the patched object."""
    client = Client()
    result = reconciler(client)(KEY, cm())
    assert result.outcome == "done"
    assert summary(client) == [f"patch ConfigMap {[NAME]}", "patch ConfigMap"]
    assert client.sent[0].body[0] == {"op": "test", "path": "/metadata/resourceVersion",
                                      "value": "5"}


def test_an_object_that_has_it_is_not_patched_again():
    """Ours already there (others kept): only the actions run."""
    client = Client()
    reconciler(client)(KEY, cm(finalizers=("other.io/x", NAME)))
    assert summary(client) == ["patch ConfigMap"]


def test_a_failed_add_is_retried_and_nothing_else_is_sent():
    """The add conflicts (409): retry; the actions did not run."""
    client = Client(fail="patch ConfigMap")
    result = reconciler(client)(KEY, cm())
    assert result.outcome == "retry" and "add finalizer example.com/cleanup" in str(result.error)
    assert len(client.sent) == 1


def test_a_terminating_object_runs_finalize_then_loses_the_finalizer():
    """finalize (not actions) with the live object, then remove: the list as read is tested."""
    client = Client()
    result = reconciler(client)(KEY, cm(finalizers=("other.io/x", NAME), terminating=True))
    assert result.outcome == "done"
    assert summary(client) == ["delete Secret", "patch ConfigMap ['other.io/x']"]
    assert client.sent[1].body[0] == {"op": "test", "path": "/metadata/finalizers",
                                      "value": ["other.io/x", NAME]}


def test_a_failing_finalize_keeps_the_finalizer_and_retries():
    """finalize fails: no remove; the result is a retry with backoff."""
    client = Client(fail="delete Secret")
    result = reconciler(client)(KEY, cm(finalizers=(NAME,), terminating=True))
    assert result.outcome == "retry" and result.delay is None
    assert summary(client) == ["delete Secret"]


def test_a_fail_action_in_finalize_keeps_the_finalizer():
    """fail (when held): nothing sent, retried; the object keeps ours."""
    client = Client()
    rec = reconciler(client, finalize=[
        {"fail": {"message": "held"}, "when": "obj.metadata.annotations.hold is defined"},
        {"delete": {"target": {"apiVersion": "v1", "kind": "Secret", "name": "ext"}}}])
    assert rec(KEY, cm(finalizers=(NAME,), terminating=True, hold="yes")).outcome == "retry"
    assert client.sent == []
    assert rec(KEY, cm(finalizers=(NAME,), terminating=True)).outcome == "done"
    assert summary(client) == ["delete Secret", "patch ConfigMap []"]


def test_a_requeue_in_finalize_keeps_the_finalizer_until_it_runs_again():
    """requeueAfter: not finished yet; ours stays, finalize runs again after the delay."""
    client = Client()
    rec = reconciler(client, finalize=[{"requeueAfter": "10s"}])
    result = rec(KEY, cm(finalizers=(NAME,), terminating=True))
    assert (result.outcome, result.delay) == ("requeue", 10.0)
    assert client.sent == []


def test_a_terminating_object_without_ours_runs_nothing():
    """Deleted before kinrun added ours (or another controller's object): no actions at all."""
    client = Client()
    result = reconciler(client)(KEY, cm(finalizers=("other.io/x",), terminating=True))
    assert result.outcome == "done" and client.sent == []


@pytest.mark.parametrize("name,problem", [
    ("cleanup", "no domain prefix"), ("orphan", "no domain prefix"),
    ("Example.com/x", "DNS subdomain"), ("example.com/", "after '/'"),
    ("example.com/-x", "after '/'"), ("example.com/" + "x" * 64, "after '/'"),
])
def test_finalizer_names_must_be_domain_qualified_names(name, problem):
    """IsQualifiedName with a prefix, as kube-apiserver validates metadata.finalizers."""
    assert problem in (finalizer_name_problem(name) or "")


def test_a_good_finalizer_name_passes():
    """example.com/cleanup, kinrun.dev/a.b_c-1."""
    assert finalizer_name_problem(NAME) is None
    assert finalizer_name_problem("kinrun.dev/a.b_c-1") is None


CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
%s
    reconcile:
      actions: [{log: hi}]
%s
"""


@pytest.mark.parametrize("finalizer,finalize,message", [
    pytest.param("    finalizer: cleanup", "      finalize: [{log: bye}]", "no domain prefix",
                 id="bare-name"),
    pytest.param("", "      finalize: [{log: bye}]", r"set controllers\[\]\.finalizer",
                 id="finalize-without-finalizer"),
    pytest.param("    finalizer: example.com/x", "", "nothing would run",
                 id="finalizer-without-finalize"),
])
def test_plan_refuses_finalizers_that_cannot_work(finalizer, finalize, message):
    """validate refuses these at the key, with file:line."""
    with pytest.raises(ConfigError, match=message) as err:
        plan(load_text(CONFIG % (finalizer, finalize), file="f.yaml"))
    assert str(err.value).startswith("f.yaml:")


def test_plan_compiles_finalize():
    """finalizer + finalize: a finalize program on the controller's plan."""
    compiled = plan(load_text(CONFIG % ("    finalizer: example.com/x",
                                        "      finalize: [{log: bye}]"), file="f.yaml"))
    (controller,) = compiled.controllers
    assert controller.finalizer == "example.com/x" and len(controller.finalize) == 1


class StatusClient:
    """Answers a status patch with the object it makes (resourceVersion + 1)."""

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def execute(self, req: Any) -> Any:
        self.sent.append(req)
        obj = cm()
        obj["status"] = dict(req.body["status"])
        obj["metadata"]["resourceVersion"] = str(int(req.body["metadata"]["resourceVersion"]) + 1)
        return obj


def _written_at_6() -> Reconciler:
    """A Reconciler whose status write of ``cm()`` (rv 5) was answered at rv 6."""
    rec = Reconciler("c", actions=compile_actions([{"status": {"fields": {"phase": "Ready"}}}],
                                                  controller="c"), client=StatusClient())
    assert not rec.stale(KEY, cm())
    assert rec(KEY, cm()).outcome == "done"
    return rec


def test_a_cache_older_than_our_last_write_is_stale():
    """Read-your-writes across reconciles (KEP-5647): after a write answered at rv 6, the
    cached rv 5 is stale (asked again: still stale); forget() drops the record."""
    rec = _written_at_6()
    assert rec.stale(KEY, cm()) and rec.stale(KEY, cm())
    rec.forget(KEY)
    assert not rec.stale(KEY, cm())


@pytest.mark.parametrize("rv, uid", [("6", "u1"), ("9", "u1"), ("2", "u2"), ("x", "u1")],
                         ids=["caught-up", "newer", "another-uid", "not-an-integer"])
def test_a_cache_that_caught_up_is_not_stale_and_the_record_goes(rv, uid):
    """rv 6 or later, another uid, or a version that is no integer: not stale, and the record
    is dropped (so an older version seen later is not held back either)."""
    rec = _written_at_6()
    other = cm()
    other["metadata"].update(resourceVersion=rv, uid=uid)
    assert not rec.stale(KEY, other)
    assert not rec.stale(KEY, cm())


class Server:
    """One ConfigMap with resourceVersion preconditions as kube-apiserver checks them (merge
    body ``metadata.resourceVersion``, JSON patch ``test``): 409 when they name another
    version; each write answers the object at the next version."""

    def __init__(self) -> None:
        self.obj, self.sent = cm(), []

    def execute(self, req: Any) -> Any:
        self.sent.append(req)
        rv = self.obj["metadata"]["resourceVersion"]
        wanted = [op["value"] for op in req.body if op.get("op") == "test" and
                  op["path"] == "/metadata/resourceVersion"] if isinstance(req.body, list) \
            else [((req.body or {}).get("metadata") or {}).get("resourceVersion")]
        if any(w is not None and w != rv for w in wanted):
            raise ConflictError("the object has been modified", status=409)
        self.obj = {**self.obj, "metadata": {**self.obj["metadata"],
                                             "resourceVersion": str(int(rv) + 1)}}
        if isinstance(req.body, dict) and "status" in req.body:
            self.obj["status"] = req.body["status"]
        return self.obj


@pytest.mark.parametrize("first", [True, False], ids=["status-first", "patch-first"])
def test_each_own_write_is_based_on_the_previous_answer(first):
    """Finalizer add, status and an optimistic-lock patch in one reconcile, in either order:
    each precondition names the previous answer's version: no 409."""
    status = {"status": {"fields": {"phase": "Ready"}}}
    patch = {"patch": {"patch": '{"metadata": {"resourceVersion": '
                                '"{{ obj.metadata.resourceVersion }}", "labels": {"a": "b"}}}'}}
    server = Server()
    rec = Reconciler("c", actions=compile_actions([status, patch] if first else [patch, status],
                                                  controller="c"),
                     finalizer=NAME, finalize=None, client=server)
    result = rec(KEY, server.obj)
    assert result.outcome == "done", result.error
    assert server.obj["metadata"]["resourceVersion"] == "8" and len(server.sent) == 3


def test_someone_elses_write_between_still_conflicts():
    """A precondition on a version this reconcile neither read nor wrote is sent unchanged."""
    server = Server()
    patch = {"patch": {"patch": '{"metadata": {"resourceVersion": "3"}}'}}
    rec = Reconciler("c", actions=compile_actions([{"status": {"fields": {"a": "b"}}}, patch],
                                                  controller="c"), client=server)
    assert rec(KEY, server.obj).outcome == "retry"
    assert server.sent[-1].body["metadata"]["resourceVersion"] == "3"


def test_a_status_field_the_server_prunes_is_warned_about_once(caplog):
    """The answer lacks a field the status patch set: one warning naming it, not one per write."""
    class Pruning(StatusClient):
        def execute(self, req: Any) -> Any:
            obj = super().execute(req)
            obj["status"].pop("extra", None)  # as a CRD's structural schema prunes it
            return obj

    client = Pruning()
    rec = Reconciler("c", actions=compile_actions(
        [{"status": {"fields": {"phase": "Ready", "extra": "x"}}}], controller="c"),
        client=client)
    for rv in ("5", "7", "9"):
        obj = cm()
        obj["metadata"]["resourceVersion"] = rv
        assert rec(KEY, obj).outcome == "done"
    assert len(client.sent) == 3
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "did not keep status.extra" in warnings[0]


def test_a_condition_field_the_server_prunes_is_warned_about_once(caplog):
    """A field inside a list (a condition's) that the answer lacks is named too, by the
    condition's place (``status.conditions[].extra``), once."""
    class Pruning(StatusClient):
        def execute(self, req: Any) -> Any:
            obj = super().execute(req)
            obj["status"] = json.loads(json.dumps(obj["status"]))  # the server's own copy
            for condition in obj["status"].get("conditions") or []:
                condition.pop("observedGeneration", None)   # as a built-in kind's type drops it
            return obj

    client = Pruning()
    rec = Reconciler("c", actions=compile_actions(
        [{"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "R"}]}}],
        controller="c"), client=client)
    for rv, generation in (("5", 1), ("7", 2)):
        obj = cm()
        obj["metadata"].update(resourceVersion=rv, generation=generation)
        assert rec(KEY, obj).outcome == "done"
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert "did not keep status.conditions[].observedGeneration" in warnings[0]


def test_an_action_rendered_after_a_write_sees_the_written_object(caplog):
    """An action that reads ``results`` renders after the earlier writes: its ``obj`` is the
    server's answer to the last write of the reconciled object (rv 6), not the read (rv 5)."""
    server = Server()
    rec = Reconciler("c", actions=compile_actions([
        {"name": "s", "status": {"fields": {"phase": "Ready"}}},
        {"log": "{{ results.s.metadata.resourceVersion }} {{ obj.metadata.resourceVersion }} "
                "{{ obj.status.phase }}"}], controller="c"), client=server)
    with caplog.at_level("INFO"):
        assert rec(KEY, server.obj).outcome == "done"
    assert "6 6 Ready" in [r.getMessage() for r in caplog.records]


class HookClient:
    """A client whose patch answers the ConfigMap at rv 9 (as the server would)."""

    dry_run = False

    def patch(self, api_version: str, kind: str, name: str, patch: Any, *,
              namespace: str | None = None, **_: Any) -> Any:
        return {**cm(), "metadata": {**cm()["metadata"], "resourceVersion": "9"}}


def test_a_hooks_write_of_the_reconciled_object_is_read_your_writes():
    """A kinrun_reconcile hook that patches its own object through ctx.client (issue 28): the
    next reconcile waits until the cache holds the answer (rv 9), as for the actions' writes;
    ctx.client is still a client of the client's class."""
    seen = []

    def hooks(controller: str, key: str, obj: Any, ctx: Any) -> None:
        seen.append(isinstance(ctx.client, HookClient))
        ctx.client.patch("v1", "ConfigMap", "cm", {"metadata": {"labels": {"a": "b"}}},
                         namespace="ns")

    rec = Reconciler("c", hooks=hooks, client=HookClient())
    assert rec(KEY, cm()).outcome == "done" and seen == [True]
    assert rec.stale(KEY, cm())                      # cached rv 5 < our write's rv 9
    caught_up = cm()
    caught_up["metadata"]["resourceVersion"] = "9"
    assert not rec.stale(KEY, caught_up)
