"""Field ownership of create/update/patch managers and server-side apply over them, as
kube-apiserver 1.20's fieldmanager (the cases the differential tests do not replay)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import kubernetes
import pytest

from kinrun.config import load_text
from kinrun.errors import ApplyConflictError
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.testing.apiserver import EmbeddedAPIServer
from kinrun.testing.apiserver.managed_fields import manager_from_user_agent

from apiserver_http import call, configmap

CM = "/api/v1/namespaces/default/configmaps"
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def apply_doc(name: str, **data: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                       "data": data})


def entries(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """(manager, operation) -> fieldsV1 of every managedFields entry."""
    return {(m["manager"], m["operation"]): m["fieldsV1"]
            for m in obj["metadata"].get("managedFields") or []}


class Clock:
    """Wall-clock seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clocked() -> Any:
    clock = Clock()
    with EmbeddedAPIServer(clock=clock, seed=1) as server:
        client = kubernetes.config.new_client_from_config(config_file=server.kubeconfig_path)
        try:
            yield server, client, clock
        finally:
            client.close()


def test_update_manager_owns_only_what_it_changed(embedded_api_client: Any) -> None:
    """A patch takes the fields it changes from the creator, who keeps the rest."""
    call(embedded_api_client, "POST", CM, body=configmap("a", data={"x": "1", "y": "1"}),
         query={"fieldManager": "creator"})
    patched = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"x": "2"}},
                   query={"fieldManager": "patcher"}, content_type=MERGE).body
    owned = entries(patched)
    assert owned[("patcher", "Update")] == {"f:data": {"f:x": {}}}
    assert owned[("creator", "Update")]["f:data"] == {".": {}, "f:y": {}}  # the map it added


def test_noop_write_by_a_new_manager_adds_no_entry(embedded_api_client: Any) -> None:
    """A patch that changes nothing gives its manager no entry and no new resourceVersion."""
    made = call(embedded_api_client, "POST", CM, body=configmap("a", data={"x": "1"}),
                query={"fieldManager": "creator"}).body
    same = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"x": "1"}},
                query={"fieldManager": "idle"}, content_type=MERGE).body
    assert list(entries(same)) == [("creator", "Update")]
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("agent", "manager"), [
    pytest.param("kubectl/v1.20.2 (linux/amd64) kubernetes/faecb19", "kubectl", id="kubectl"),
    pytest.param("my tool\x07/2", "my tool", id="non-printable-dropped"),
    pytest.param("", "unknown", id="empty"),
    pytest.param("x" * 200, "x" * 128, id="cut-at-128-bytes"),
])
def test_manager_from_user_agent(agent: str, manager: str) -> None:
    """The User-Agent before its first '/', printable characters only, at most 128 bytes."""
    assert manager_from_user_agent(agent) == manager


def test_create_without_field_manager_is_owned_by_the_user_agent(embedded_api_client: Any) -> None:
    """POST without fieldManager: the entry is named after the client's User-Agent."""
    embedded_api_client.user_agent = "seeder/3.1 (test)"
    made = call(embedded_api_client, "POST", CM, body=configmap("a", data={"x": "1"})).body
    assert [(m["manager"], m["operation"], m["apiVersion"])
            for m in made["metadata"]["managedFields"]] == [("seeder", "Update", "v1")]


def test_apply_onto_an_untracked_object_conflicts_with_before_first_apply(
        embedded_server: EmbeddedAPIServer, embedded_api_client: Any) -> None:
    """An object stored without managedFields (seeded directly) is owned by
    "before-first-apply" at the first apply: changing a field conflicts, the same value not."""
    embedded_server.load([configmap("seeded", data={"k": "1"})])
    clash = call(embedded_api_client, "PATCH", f"{CM}/seeded", body=apply_doc("seeded", k="2"),
                 query={"fieldManager": "ctrl"}, content_type=APPLY)
    assert clash.status == 409
    assert clash.body["message"] == ('Apply failed with 1 conflict: conflict with '
                                     '"before-first-apply" using v1: .data.k')
    same = call(embedded_api_client, "PATCH", f"{CM}/seeded", body=apply_doc("seeded", k="1"),
                query={"fieldManager": "ctrl"}, content_type=APPLY)
    assert same.status == 200
    assert set(entries(same.body)) == {("before-first-apply", "Update"), ("ctrl", "Apply")}


def test_an_applier_does_not_own_the_defaults_of_its_object(embedded_api_client: Any) -> None:
    """A Deployment applied without ``replicas`` is defaulted to 1, but its applier does not
    own that default: another manager applies ``replicas: 3`` (an autoscaler) without a
    conflict, and the first applier's re-apply leaves it at 3 (as kube-apiserver 1.20)."""
    deploy = "/apis/apps/v1/namespaces/default/deployments/web"
    labels = {"app": "web"}
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    scale = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
             "spec": {"replicas": 3}}

    def apply(doc: dict[str, Any], manager: str) -> Any:
        return call(embedded_api_client, "PATCH", deploy, body=json.dumps(doc),
                    query={"fieldManager": manager}, content_type=APPLY)

    first = apply(body, "ctrl")
    assert (first.status, first.body["spec"]["replicas"]) == (201, 1)
    assert "f:replicas" not in entries(first.body)[("ctrl", "Apply")]["f:spec"]
    scaled = apply(scale, "autoscaler")
    assert (scaled.status, scaled.body["spec"]["replicas"]) == (200, 3)
    again = apply(body, "ctrl")
    assert (again.status, again.body["spec"]["replicas"]) == (200, 3)
    assert again.body["metadata"]["resourceVersion"] == scaled.body["metadata"]["resourceVersion"]


def test_load_with_a_field_manager_seeds_ownership(embedded_server: EmbeddedAPIServer,
                                                   embedded_api_client: Any) -> None:
    """load(field_manager=...) records the seeded fields as that manager's: an apply changing
    one conflicts with it (not with before-first-apply)."""
    embedded_server.load([configmap("seeded", data={"k": "1"})], field_manager="kubectl-create")
    clash = call(embedded_api_client, "PATCH", f"{CM}/seeded", body=apply_doc("seeded", k="2"),
                 query={"fieldManager": "ctrl"}, content_type=APPLY)
    assert clash.status == 409
    assert clash.body["details"]["causes"] == [{"reason": "FieldManagerConflict", "field": ".data.k",
                                                "message": 'conflict with "kubectl-create" using v1'}]


def test_empty_managed_fields_resets_and_untracked_updates_stay_untracked(
        embedded_api_client: Any) -> None:
    """A PUT carrying managedFields: [] clears them; later updates of the object are not
    tracked (skipNonApplied)."""
    made = call(embedded_api_client, "POST", CM, body=configmap("a", data={"x": "1"}),
                query={"fieldManager": "creator"}).body
    made["metadata"]["managedFields"] = []
    reset = call(embedded_api_client, "PUT", f"{CM}/a", body=made).body
    assert "managedFields" not in reset["metadata"]
    later = call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"x": "2"}},
                 query={"fieldManager": "patcher"}, content_type=MERGE).body
    assert later["data"] == {"x": "2"} and "managedFields" not in later["metadata"]


def test_update_entry_time_moves_only_when_its_fields_change(clocked: Any) -> None:
    """Rewriting an owned field keeps the entry's time; owning a new field moves it."""
    _server, client, clock = clocked
    call(client, "POST", CM, body=configmap("a", data={"x": "1"}), query={"fieldManager": "w"})

    def patch(data: dict[str, str]) -> str:
        clock.now += 60
        body = call(client, "PATCH", f"{CM}/a", body={"data": data},
                    query={"fieldManager": "w"}, content_type=MERGE).body
        return body["metadata"]["managedFields"][0]["time"]

    assert patch({"x": "2"}) == "2023-11-14T22:13:20Z"       # same set: time kept
    assert patch({"y": "1"}) == "2023-11-14T22:15:20Z"       # new field: now


def test_kubectl_server_side_apply_takes_fields_matching_last_applied(
        embedded_api_client: Any) -> None:
    """Manager "kubectl" may take fields whose live value equals the client-side
    last-applied annotation (and refreshes it); a field changed since then still conflicts."""
    last = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
            "data": {"k": "1", "j": "1"}}
    body = configmap("a", data={"k": "1", "j": "1"})
    body["metadata"]["annotations"] = {LAST_APPLIED: json.dumps(last)}
    call(embedded_api_client, "POST", CM, body=body,
         query={"fieldManager": "kubectl-client-side-apply"})
    call(embedded_api_client, "PATCH", f"{CM}/a", body={"data": {"j": "2"}},
         query={"fieldManager": "kubectl-patch"}, content_type=MERGE)
    clash = call(embedded_api_client, "PATCH", f"{CM}/a", body=apply_doc("a", k="5", j="5"),
                 query={"fieldManager": "kubectl"}, content_type=APPLY)
    assert clash.status == 409
    assert [c["field"] for c in clash.body["details"]["causes"]] == [".data.j"]
    taken = call(embedded_api_client, "PATCH", f"{CM}/a", body=apply_doc("a", k="5"),
                 query={"fieldManager": "kubectl"}, content_type=APPLY)
    assert taken.status == 200 and taken.body["data"] == {"k": "5", "j": "2"}
    assert json.loads(taken.body["metadata"]["annotations"][LAST_APPLIED])["data"] == {"k": "5"}


def test_kinrun_client_apply_after_patch_raises_one_line_conflict(
        embedded_server: EmbeddedAPIServer, embedded_api_client: Any) -> None:
    """kinrun's Client.apply of a field another manager patched raises ApplyConflictError
    whose str() names the object, the field and the manager in one line."""
    call(embedded_api_client, "POST", CM, body=configmap("web", data={"replicas": "1"}),
         query={"fieldManager": "creator"})
    call(embedded_api_client, "PATCH", f"{CM}/web", body={"data": {"replicas": "3"}},
         query={"fieldManager": "kubectl-patch"}, content_type=MERGE)
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    manifest = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "web", "namespace": "default"}, "data": {"replicas": "5"}}
    with pytest.raises(ApplyConflictError) as info:
        client.apply(manifest)
    assert str(info.value) == ('apply ConfigMap default/web: conflict: .data.replicas is managed '
                               'by "kubectl-patch" (set force: true to take it over)')
    assert client.apply(manifest, force=True)["data"] == {"replicas": "5"}


CHILD_CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  parents:
    apiVersion: v1
    kind: ConfigMap
    labelSelector: role=parent
controllers:
  - name: children
    for: parents
    reconcile:
      actions:
        - name: apply-child
          apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata:
                name: "{{ obj.metadata.name }}-child"
                namespace: "{{ obj.metadata.namespace }}"
              data:
                replicas: "5"
"""


class Lines(logging.Handler):
    """Collects log records; ``wait_for(text)`` blocks until one contains ``text``."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self.changed:
            self.records.append(record)
            self.changed.notify_all()

    def wait_for(self, text: str, timeout: float = 20.0) -> logging.LogRecord:
        with self.changed:
            found = self.changed.wait_for(lambda: next(
                (r for r in self.records if text in r.getMessage()), None), timeout)
        assert found, f"no log line with {text!r} in {[r.getMessage() for r in self.records]}"
        return found


def test_controller_retry_line_shows_the_conflict_without_traceback(
        embedded_server: EmbeddedAPIServer, embedded_api_client: Any) -> None:
    """A reconcile whose apply hits a field kubectl-patch set logs one retry line naming the
    object, field and manager, with no traceback."""
    call(embedded_api_client, "POST", CM, body=configmap("web-child", data={"replicas": "1"}),
         query={"fieldManager": "creator"})
    call(embedded_api_client, "PATCH", f"{CM}/web-child", body={"data": {"replicas": "3"}},
         query={"fieldManager": "kubectl-patch"}, content_type=MERGE)
    lines = Lines()
    logging.getLogger("kinrun").addHandler(lines)
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    manager = plan(load_text(CHILD_CONFIG)).bind(client).manager()
    try:
        manager.start(sync_timeout=20)
        call(embedded_api_client, "POST", CM, body=configmap("web", labels={"role": "parent"}))
        record = lines.wait_for("conflict")
    finally:
        manager.stop()
        logging.getLogger("kinrun").removeHandler(lines)
    text = record.getMessage()
    assert text.endswith('apply ConfigMap default/web-child: conflict: .data.replicas is managed '
                         'by "kubectl-patch" (set force: true to take it over)'), text
    assert "default/web" in text and "\n" not in text
    assert record.exc_info is None and record.levelno == logging.WARNING
