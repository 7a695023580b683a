"""Dry-run: the change summary (``kinrun.kube.dry_run``) and the Client's dry-run mode (every
write with ``dryRun=All``, one ``dry-run: ...`` line each, reads untouched)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
import urllib3

from kinrun.errors import NotFoundError
from kinrun.kube import ApiRequest, Client
from kinrun.kube.dry_run import (ABSENT, MAX_CHANGES, FieldChange, Target, change_summary,
                                 delete_summary, field_changes, format_path, show_value,
                                 with_dry_run)
from kube_fakes import DISCOVERY, Call, FakePool, make_client, response, status_body

CM_T = Target("ConfigMap", "ns", "x")

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment",
          "metadata": {"name": "web", "namespace": "ns", "resourceVersion": "10", "uid": "u1",
                       "generation": 1, "creationTimestamp": "2026-01-01T00:00:00Z",
                       "managedFields": [{"manager": "kubectl"}]},
          "spec": {"replicas": 1, "template": {"spec": {"containers": [
              {"name": "web", "image": "nginx:1"}]}}}}


def changed(old: Any, new: Any) -> list[str]:
    return [c.describe() for c in field_changes(old, new)]


# --- field_changes / describe ------------------------------------------------------------------


@pytest.mark.parametrize(("old", "new", "expected"), [
    pytest.param({"spec": {"replicas": 1}}, {"spec": {"replicas": 3}},
                 ["spec.replicas 1 -> 3"], id="scalar-changed"),
    pytest.param({"metadata": {}}, {"metadata": {"annotations": {"foo": "bar"}}},
                 ["metadata.annotations (added)"], id="mapping-added-whole"),
    pytest.param({"metadata": {"annotations": {}}}, {"metadata": {"annotations": {"foo": "b"}}},
                 ["metadata.annotations.foo (added)"], id="key-added"),
    pytest.param({"data": {"a": "1", "b": "2"}}, {"data": {"a": "1"}},
                 ["data.b (removed)"], id="key-removed"),
    pytest.param({"data": {"a": "x"}}, {"data": {"a": "y"}}, ['data.a "x" -> "y"'],
                 id="strings-quoted"),
    pytest.param({"a": None}, {}, ["a (removed)"], id="null-is-a-value"),
    pytest.param({"l": [1, 2]}, {"l": [1, 5, 6]}, ["l[1] 2 -> 5", "l[2] (added)"], id="list-index"),
    pytest.param({"l": [1, 2]}, {"l": {"a": 1}}, ['l [1,2] -> {"a":1}'], id="type-changed"),
    pytest.param({"a": {"b": 1}}, {"a": {"b": 1}}, [], id="equal"),
])
def test_field_changes_name_each_changed_leaf(old: Any, new: Any, expected: list[str]) -> None:
    """field_changes names each differing leaf by its path, with old -> new, added, removed."""
    assert changed(old, new) == expected


def test_server_managed_fields_are_not_changes() -> None:
    """resourceVersion, managedFields, generation, uid, creationTimestamp never count."""
    answer = {**DEPLOY, "metadata": {**DEPLOY["metadata"], "resourceVersion": "11",
                                     "generation": 2, "managedFields": [], "uid": "u2",
                                     "creationTimestamp": "2026-02-02T00:00:00Z"}}
    assert field_changes(DEPLOY, answer) == []


def test_changes_follow_document_order_then_removed_keys() -> None:
    """Paths come in the answer's key order; keys only the current object has come last."""
    old = {"z": 1, "a": 1, "gone": 1}
    new = {"z": 2, "a": 2, "new": 1}
    assert [c.path for c in field_changes(old, new)] == [("z",), ("a",), ("new",), ("gone",)]


def test_field_change_keeps_values() -> None:
    """A FieldChange carries the old and new values, ABSENT for a missing side."""
    assert field_changes({"a": 1}, {"a": 2, "b": [3]}) == [FieldChange(("a",), 1, 2),
                                                          FieldChange(("b",), ABSENT, [3])]


@pytest.mark.parametrize(("path", "text"), [
    pytest.param(("spec", "template", "spec", "containers", 0, "image"),
                 "spec.template.spec.containers[0].image", id="dots-and-index"),
    pytest.param(("metadata", "labels", "app.kubernetes.io/name"),
                 'metadata.labels["app.kubernetes.io/name"]', id="dotted-key-quoted"),
    pytest.param((), ".", id="root"),
])
def test_format_path(path: tuple[Any, ...], text: str) -> None:
    """Plain keys joined by dots, list indexes in brackets, other keys quoted in brackets."""
    assert format_path(path) == text


def test_long_values_are_cut() -> None:
    """A value longer than MAX_VALUE characters is cut and ends in '...'."""
    text = show_value("x" * 200)
    assert len(text) == 40 and text.endswith("...")


# --- one line per write ------------------------------------------------------------------------


def test_summary_patch_lists_changed_paths() -> None:
    """A changed object: 'would patch T: path old -> new, path (added)'."""
    answer = {**DEPLOY, "metadata": {**DEPLOY["metadata"], "annotations": {"foo": "1"}},
              "spec": {**DEPLOY["spec"], "replicas": 3}}
    assert change_summary("patch", Target("Deployment", "ns", "web"), DEPLOY, answer) == (
        "would patch Deployment ns/web: metadata.annotations (added), spec.replicas 1 -> 3")


def test_summary_no_change() -> None:
    """An answer equal to the current object (server-managed fields aside): 'no change to T'."""
    answer = {**DEPLOY, "metadata": {**DEPLOY["metadata"], "resourceVersion": "11"}}
    assert change_summary("apply", Target("Deployment", "ns", "web"), DEPLOY, answer) == (
        "no change to Deployment ns/web")


def test_summary_create_when_nothing_is_there() -> None:
    """An apply of an absent object and every create: 'would create T'."""
    assert change_summary("apply", CM_T, None, {"kind": "ConfigMap"}) == (
        "would create ConfigMap ns/x")
    assert change_summary("create", CM_T, {"kind": "ConfigMap"}, {}) == (
        "would create ConfigMap ns/x")


def test_summary_create_names_generated_name_and_event_reason() -> None:
    """A create with generateName is named from the answer; an Event shows type and reason."""
    answer = {"kind": "Event", "metadata": {"name": "pod.17"}, "type": "Warning",
              "reason": "Failed"}
    assert change_summary("create", Target("Event", "ns", ""), None, answer) == (
        "would create Event ns/pod.17 (Warning Failed)")


def test_summary_update_says_update_and_counts_the_rest() -> None:
    """PUT says 'would update'; beyond MAX_CHANGES fields the rest are counted."""
    old = {"data": {f"k{i:02}": "a" for i in range(MAX_CHANGES + 3)}}
    new = {"data": {k: "b" for k in old["data"]}}
    line = change_summary("update", CM_T, old, new)
    assert line.startswith("would update ConfigMap ns/x: data.k00 ")
    assert line.count(" -> ") == MAX_CHANGES and line.endswith(" ... and 3 more")


def test_summary_delete() -> None:
    """DELETE: 'would delete T', naming pending finalizers when the server would only mark it."""
    assert delete_summary(CM_T, {"kind": "Status", "status": "Success"}) == (
        "would delete ConfigMap ns/x")
    marked = {"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z", "finalizers": ["a/b"]}}
    assert delete_summary(CM_T, marked) == "would delete ConfigMap ns/x (after finalizers a/b)"


def test_target_text() -> None:
    """Targets read 'Kind ns/name', 'Kind name' (cluster-scoped), '/status' appended."""
    assert str(Target("Namespace", None, "x")) == "Namespace x"
    assert str(Target("Deployment", "ns", "web", "status")) == "Deployment ns/web/status"


def test_with_dry_run_overrides_and_copies() -> None:
    """with_dry_run adds dryRun=All over any caller value and leaves the caller's dict alone."""
    params = {"dryRun": "", "fieldValidation": "Strict"}
    assert with_dry_run(params) == {"dryRun": "All", "fieldValidation": "Strict"}
    assert params["dryRun"] == "" and with_dry_run(None) == {"dryRun": "All"}


# --- Client(dry_run=True) ----------------------------------------------------------------------


CURRENT_CM = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "x", "namespace": "ns", "resourceVersion": "5"},
              "data": {"a": "1"}}


class Server:
    """Discovery from DISCOVERY; GET of configmap x gives CURRENT_CM; names starting with 'gone'
    are 404; a write answers with its body merged over CURRENT_CM's metadata (as a dry run
    answers the would-be object)."""

    def __call__(self, call: Call) -> urllib3.HTTPResponse:
        if call.path in DISCOVERY:
            return response(200, DISCOVERY[call.path])
        name = call.path.rsplit("/", 1)[-1]
        if name.startswith("gone"):
            return response(404, status_body(404, "NotFound"))
        if call.method == "GET":
            return response(200, CURRENT_CM)
        if call.method == "DELETE":
            return response(200, {"kind": "Status", "status": "Success"})
        body = call.body if isinstance(call.body, dict) else {}
        return response(200, {**CURRENT_CM, **body,
                              "metadata": {**CURRENT_CM["metadata"], **body.get("metadata", {})}})


@pytest.fixture
def pool() -> FakePool:
    return FakePool(Server())


@pytest.fixture
def dry(pool: FakePool) -> Client:
    return make_client(pool, dry_run=True)


def sent(pool: FakePool) -> list[Call]:
    """The non-discovery calls, in order."""
    return [c for c in pool.calls if c.path not in DISCOVERY]


def dry_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "kinrun.kube.dry_run"]


@pytest.fixture(autouse=True)
def _capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kinrun.kube.dry_run")


def test_apply_gets_current_then_sends_dry_run(dry: Client, pool: FakePool,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """An apply in dry-run mode: GET the object, PATCH with dryRun=All, log the changed fields."""
    dry.execute(ApiRequest("apply", "v1", "ConfigMap", "x", "ns",
                           body={"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "2"}}))
    get, write = sent(pool)
    assert (get.method, get.query) == ("GET", {})
    assert write.method == "PATCH"
    assert write.query == {"fieldManager": "kinrun", "dryRun": "All"}
    assert dry_lines(caplog) == ['dry-run: would patch ConfigMap ns/x: data.a "1" -> "2"']


def test_known_current_object_spares_the_get(dry: Client, pool: FakePool,
                                             caplog: pytest.LogCaptureFixture) -> None:
    """execute(current=obj) compares with obj and sends no GET; current=None: 'would create'."""
    req = ApiRequest("patch", "v1", "ConfigMap", "x", "ns", body={"data": {"a": "1"}})
    dry.execute(req, current={**CURRENT_CM, "data": {"a": "0"}})
    dry.execute(ApiRequest("apply", "v1", "ConfigMap", "x", "ns", body=CURRENT_CM), current=None)
    assert [c.method for c in sent(pool)] == ["PATCH", "PATCH"]
    assert dry_lines(caplog) == ['dry-run: would patch ConfigMap ns/x: data.a "0" -> "1"',
                                 "dry-run: would create ConfigMap ns/x"]


def test_unchanged_object_logs_no_change(dry: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A patch the server answers with the current object: 'no change to'."""
    dry.patch("v1", "ConfigMap", "x", {"data": {"a": "1"}}, namespace="ns")
    assert dry_lines(caplog) == ["dry-run: no change to ConfigMap ns/x"]


@pytest.mark.parametrize("write", [
    pytest.param(lambda c: c.create({**CURRENT_CM, "metadata": {"name": "y", "namespace": "ns"}}),
                 id="create"),
    pytest.param(lambda c: c.update(CURRENT_CM), id="update"),
    pytest.param(lambda c: c.apply(CURRENT_CM, force=True), id="apply"),
    pytest.param(lambda c: c.patch("v1", "ConfigMap", "x", {"data": {}}, namespace="ns"),
                 id="patch"),
    pytest.param(lambda c: c.patch_status("apps/v1", "Deployment", "x", {}, namespace="ns"),
                 id="patch-status"),
    pytest.param(lambda c: c.delete("v1", "ConfigMap", "x", "ns"), id="delete"),
    pytest.param(lambda c: c.create_event(CURRENT_CM, type="Normal", reason="R", message="m"),
                 id="event"),
    pytest.param(lambda c: c.create_lease({"metadata": {"name": "l", "namespace": "ns"}}),
                 id="create-lease"),
    pytest.param(lambda c: c.update_lease({"metadata": {"name": "l", "namespace": "ns"}}),
                 id="update-lease"),
])
def test_every_write_is_a_dry_run(dry: Client, pool: FakePool, write: Any,
                                  caplog: pytest.LogCaptureFixture) -> None:
    """Every write helper sends dryRun=All (reads go without it) and logs one dry-run line."""
    write(dry)
    calls = sent(pool)
    assert calls and all((c.query.get("dryRun") == "All") == (c.method != "GET") for c in calls)
    assert len(dry_lines(caplog)) == 1


def test_event_action_request_is_a_dry_run(dry: Client, pool: FakePool,
                                           caplog: pytest.LogCaptureFixture) -> None:
    """An event action's create of a core/v1 Event is sent as a dry run and named in the log."""
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x.17"},
             "type": "Normal", "reason": "Synced", "involvedObject": {"name": "x"}}
    dry.execute(ApiRequest("create", "v1", "Event", "x.17", "ns", body=event))
    (call,) = sent(pool)
    assert (call.method, call.path, call.query) == ("POST", "/api/v1/namespaces/ns/events",
                                                    {"dryRun": "All"})
    assert dry_lines(caplog) == ["dry-run: would create Event ns/x.17 (Normal Synced)"]


def test_delete_of_absent_object(dry: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A dry-run delete answered 404: execute returns None, delete raises, both log 'no change'."""
    req = ApiRequest("delete", "v1", "ConfigMap", "gone", "ns")
    assert dry.execute(req) is None
    with pytest.raises(NotFoundError):
        dry.delete("v1", "ConfigMap", "gone", "ns")
    assert dry_lines(caplog) == ["dry-run: no change to ConfigMap ns/gone (not found)"] * 2


def test_delete_logs_would_delete(dry: Client, pool: FakePool,
                                  caplog: pytest.LogCaptureFixture) -> None:
    """A dry-run delete sends no GET and logs 'would delete'."""
    dry.execute(ApiRequest("delete", "v1", "ConfigMap", "x", "ns",
                           params={"propagationPolicy": "Foreground"}))
    (call,) = sent(pool)
    assert call.method == "DELETE" and call.query == {"dryRun": "All"}
    assert call.body["propagationPolicy"] == "Foreground"
    assert dry_lines(caplog) == ["dry-run: would delete ConfigMap ns/x"]


def test_reads_are_not_dry_runs(dry: Client, pool: FakePool,
                                caplog: pytest.LogCaptureFixture) -> None:
    """get and execute(get) send no dryRun and log nothing."""
    dry.get("v1", "ConfigMap", "x", "ns")
    dry.execute(ApiRequest("get", "v1", "ConfigMap", "x", "ns"))
    assert [c.query for c in sent(pool)] == [{}, {}]
    assert dry_lines(caplog) == []


def test_default_client_sends_real_writes(pool: FakePool,
                                          caplog: pytest.LogCaptureFixture) -> None:
    """Without dry_run: no dryRun parameter, no GET before a write, no dry-run line."""
    client = make_client(pool)
    client.apply(CURRENT_CM)
    (call,) = sent(pool)
    assert "dryRun" not in call.query and dry_lines(caplog) == []


def test_from_config_passes_dry_run(tmp_path: Any) -> None:
    """Client.from_config(dry_run=True) gives a dry-run Client."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n")
    with Client.from_config(kubeconfig=str(kubeconfig), dry_run=True) as client:
        assert client.dry_run is True
    with Client.from_config(kubeconfig=str(kubeconfig)) as client:
        assert client.dry_run is False
