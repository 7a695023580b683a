"""Errors, Events and flow (issue 28): an Event recorded before ``fail`` is sent; ``onError``
runs with the error in scope, before the retry, and its own failure never hides the
reconcile's; ``stop`` logs at its level; a ``create`` by generateName logs the server's name."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from kinrun.actions import compile_actions
from kinrun.config import load_text
from kinrun.errors import ConfigError, ConflictError
from kinrun.plan import plan
from kinrun.reconcile import Reconciler

KEY = "ns/cm"


def cm() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "namespace": "ns", "uid": "u1", "resourceVersion": "5"}}


class Server:
    """Answers each request; ``refuse``: a request kind it answers with 409 AlreadyExists."""

    def __init__(self, refuse: str | None = None) -> None:
        self.sent: list[Any] = []
        self.refuse = refuse

    def execute(self, req: Any) -> Any:
        self.sent.append(req)
        if req.verb == "create" and req.kind == self.refuse:
            raise ConflictError(f'{req.kind.lower()}s "x" already exists', status=409,
                                reason="AlreadyExists")
        if req.verb == "create" and not req.name:
            return {**req.body, "metadata": {**req.body["metadata"], "name": "run-x7k2p"}}
        return req.body


def sent(server: Server) -> list[str]:
    return [f"{r.verb} {r.kind}" + (f" {r.body.get('reason')}" if r.kind == "Event" else "")
            for r in server.sent]


def reconciler(server: Server, actions: list[Any], on_error: list[Any] | None = None
               ) -> Reconciler:
    return Reconciler("c", actions=compile_actions(actions, controller="c"), client=server,
                      on_error=compile_actions(on_error, controller="c") if on_error else None)


EVENT = {"event": {"type": "Warning", "reason": "ErrResourceExists", "message": "exists"}}


def test_an_event_before_fail_is_sent_and_nothing_else():
    """Record, then return an error: the Warning Event (and the log line) before ``fail`` are
    carried out; the patch before it is not; the reconcile is retried."""
    server = Server()
    result = reconciler(server, [{"patch": {"patch": '{"data": {"a": "b"}}'}}, EVENT,
                                 {"fail": {"message": "not ours"}}])(KEY, cm())
    assert result.outcome == "retry" and "not ours" in str(result.error)
    assert sent(server) == ["create Event ErrResourceExists"]


def test_on_error_sees_the_api_error_and_runs_before_the_retry(caplog):
    """A create refused with 409 AlreadyExists: onError records a Warning Event and a status
    condition from ``error``; the result is still the original error (retried)."""
    server = Server(refuse="Job")
    on_error = [{"event": {"type": "Warning", "reason": "JobCreationFailed",
                           "message": "{{ error.action }}: {{ error.code }} {{ error.reason }}"}},
                {"log": {"message": "failed: {{ error.message }}", "level": "warning"}}]
    rec = reconciler(server, [{"name": "make-job", "create": {
        "manifest": "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n"}}], on_error)
    result = rec(KEY, cm())
    assert result.outcome == "retry" and isinstance(result.error, ConflictError)
    assert sent(server) == ["create Job", "create Event JobCreationFailed"]
    assert server.sent[1].body["message"] == "make-job: 409 AlreadyExists"
    assert any(r.levelname == "WARNING" and r.getMessage().startswith("failed: ")
               and "already exists" in r.getMessage() for r in caplog.records)


def test_on_error_sees_a_fail_and_its_own_failure_is_logged(caplog):
    """``fail`` -> error.reason ActionFailed, error.action its name; an onError whose template
    fails is logged at error and the reconcile's own error stays the result."""
    server = Server()
    rec = reconciler(server, [{"name": "check", "fail": {"message": "bad spec"}}],
                     [{"log": "{{ error.reason }} {{ error.action }}"},
                      {"log": "{{ error.nothing.here }}"}])
    with caplog.at_level(logging.INFO):
        result = rec(KEY, cm())
    assert result.outcome == "retry" and "bad spec" in str(result.error)
    messages = [r.getMessage() for r in caplog.records]
    assert "ActionFailed check" not in messages  # the render failed: nothing of it ran
    assert any("onError of ns/cm failed" in m and "bad spec" in m for m in messages)


def test_on_error_does_not_run_on_success():
    server = Server()
    rec = reconciler(server, [{"log": "fine"}], [{"event": {"reason": "Oops", "message": "x"}}])
    assert rec(KEY, cm()).outcome == "done" and server.sent == []


CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers:
  - name: c
    for: cms
    reconcile:
      actions: [{log: hi}]
      onError:
        - %s
"""


@pytest.mark.parametrize("kind", ["apply: {manifest: 'x'}", "requeueAfter: 5s", "fail: {message: x}",
                                  "delete: {target: {apiVersion: v1, kind: Secret, name: x}}"])
def test_on_error_refuses_what_is_not_a_report(kind):
    with pytest.raises(ConfigError, match="onError may use log, event, status, patch"):
        plan(load_text(CONFIG % kind, file="f.yaml"))


def test_on_error_compiles_into_the_plan():
    pods = CONFIG.replace("cms: {apiVersion: v1, kind: ConfigMap}", "cms: {apiVersion: v1, kind: Pod}")
    compiled = plan(load_text(pods % "status: {fields: {phase: Failed}}", file="f.yaml"))
    assert len(compiled.controllers[0].on_error) == 1


def test_a_status_action_on_a_kind_without_status_is_refused():
    """A ConfigMap has no status subresource: every status write would answer 404."""
    with pytest.raises(ConfigError, match="status: ConfigMap has no status"):
        plan(load_text(CONFIG % "status: {fields: {phase: Failed}}", file="f.yaml"))


def test_stop_logs_at_its_level(caplog):
    """``stop: {message, level: debug}``: the routine stop is a debug line, not info."""
    rec = reconciler(Server(), [{"stop": {"message": "not mine", "level": "debug"}}])
    with caplog.at_level(logging.DEBUG):
        assert rec(KEY, cm()).outcome == "done"
    assert [(r.levelname, r.getMessage()) for r in caplog.records
            if r.getMessage() == "not mine"] == [("DEBUG", "not mine")]


def test_stop_refuses_an_unknown_level():
    with pytest.raises(ConfigError, match="stop.level"):
        compile_actions([{"stop": {"message": "x", "level": "loud"}}], controller="c")


def test_a_create_by_generate_name_logs_the_name_the_server_gave(caplog):
    rec = reconciler(Server(), [{"create": {
        "manifest": "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: run-}\n"}}])
    with caplog.at_level(logging.INFO):
        assert rec(KEY, cm()).outcome == "done"
    lines = [r.getMessage() for r in caplog.records]
    assert "create Job ns/run-x7k2p" in lines and not any("<generated>" in m for m in lines)


def test_on_error_names_a_fail_and_a_finalizer_patch(caplog):
    """``fail`` -> reason ActionFailed, action its name, message its rendered message; a
    refused finalizer add -> action ``finalizer``, code 409."""
    rec = reconciler(Server(), [{"name": "check", "fail": {"message": "bad {{ key }}"}}],
                     [{"log": "{{ error.reason }} {{ error.action }} {{ error.code }}: "
                              "{{ error.message }}"}])
    with caplog.at_level(logging.INFO):
        rec(KEY, cm())

    class Refusing(Server):
        def execute(self, req: Any) -> Any:
            if req.patch_type == "json":
                raise ConflictError("the object has been modified", status=409,
                                    reason="Conflict")
            return super().execute(req)
    fin = Reconciler("c", actions=compile_actions([{"log": "x"}], controller="c"),
                     client=Refusing(), finalizer="example.com/f",
                     on_error=compile_actions([{"log": "{{ error.action }} {{ error.code }}"}],
                                              controller="c"))
    with caplog.at_level(logging.INFO):
        assert fin(KEY, cm()).outcome == "retry"
    messages = [r.getMessage() for r in caplog.records]
    assert "ActionFailed check None: bad ns/cm" in messages and "finalizer 409" in messages


def widget_config(tmp_path, actions: str, subresources: str = "") -> Any:
    """CONFIG for a custom kind Widget that a ``crds:`` file defines (``subresources`` of its
    version as YAML flow), with ``actions`` (a YAML flow list item)."""
    (tmp_path / "crd.yaml").write_text(f"""
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: widgets.example.com}}
spec:
  group: example.com
  scope: Namespaced
  names: {{plural: widgets, singular: widget, kind: Widget}}
  versions:
    - {{name: v1, served: true, storage: true, {subresources}
       schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}}}
""")
    text = CONFIG.replace("cms: {apiVersion: v1, kind: ConfigMap}",
                          "cms: {apiVersion: example.com/v1, kind: Widget}")
    text = text.replace("informers:", "crds: [crd.yaml]\ninformers:").replace(
        "actions: [{log: hi}]", f"actions: [{{{actions}}}]") % "log: failed"
    return load_text(text, file=str(tmp_path / "c.yaml"), base_dir=tmp_path)


@pytest.mark.parametrize("subresources,refused", [("", True), ("subresources: {status: {}},", False)])
def test_a_status_action_needs_the_crd_status_subresource(tmp_path, subresources, refused):
    """A ``crds:`` CRD version without ``subresources.status`` has no /status to write."""
    config = widget_config(tmp_path, "status: {fields: {a: b}}", subresources)
    if not refused:
        plan(config)
        return
    with pytest.raises(ConfigError, match="has no status subresource for v1"):
        plan(config)


@pytest.mark.parametrize("patch,refused", [
    ("patch: {type: strategic, patch: 'metadata: {labels: {a: b}}'}", True),
    ("patch: {type: merge, patch: 'metadata: {labels: {a: b}}'}", False),
    ("patch: {type: strategic, patch: 'metadata: {labels: {a: b}}', "
     "target: {apiVersion: v1, kind: ConfigMap, name: x}}", False),
])
def test_a_strategic_patch_of_a_custom_resource_is_refused(tmp_path, patch, refused):
    """A CRD's objects take merge and JSON patches only (415 for strategic, every time)."""
    config = widget_config(tmp_path, patch)
    if not refused:
        plan(config)
        return
    with pytest.raises(ConfigError, match="takes no strategic merge patch"):
        plan(config)


@pytest.mark.parametrize("action,said", [
    ('apply: {manifest: "apiVersion: apps/v1\\nkind: Deploymnet\\nmetadata: {name: x}\\n"}',
     "kind 'Deploymnet' is not served in API group apps; did you mean 'Deployment'?"),
    ("delete: {target: {apiVersion: v1, kind: Secrett, name: x}}",
     "kind 'Secrett' is not served in API group core (v1); did you mean 'Secret'?"),
    ("applySet: {manifests: '[{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}, "
     "{apiVersion: apps/v1, kind: Pod, metadata: {name: b}}]'}",
     "kind 'Pod' is not served in API group apps; it is served as apiVersion v1"),
    ('apply: {manifest: "apiVersion: example.com/v1\\nkind: Widgit\\nmetadata: {name: x}\\n"}',
     None),
    ('apply: {manifest: "apiVersion: apps/v1\\nkind: \'{{ obj.data.kind }}\'\\nmetadata: {name: x}\\n"}',
     None),
    ('apply: {manifest: "apiVersion: admissionregistration.k8s.io/v1\\nkind: '
     'ValidatingAdmissionPolicy\\nmetadata: {name: x}\\n"}', None),
], ids=["apply", "delete-target", "applySet-item", "crd-group-left-to-discovery", "templated",
        "a-kind-newer-than-1.20"])
def test_a_written_kind_its_builtin_group_does_not_serve_is_refused(action, said):
    """A literal kind an action writes that its built-in API group does not serve fails every
    reconcile: validate refuses it at the manifest, as it does an informer's kind."""
    text = CONFIG.replace("actions: [{log: hi}]", f"actions: [{{{action}}}]") % "log: failed"
    if said is None:
        plan(load_text(text, file="f.yaml"))
        return
    with pytest.raises(ConfigError, match=re.escape(said)):
        plan(load_text(text, file="f.yaml"))


def test_a_kind_the_server_does_not_serve_is_located_at_its_action():
    """The client's UnknownKindError (a kind discovery does not find, such as a CRD not yet
    installed) is retried, and its line names the action and the request, as an API error's."""
    from kinrun.kube.discovery import UnknownKindError

    class NoWidgets(Server):
        def execute(self, req: Any) -> Any:
            raise UnknownKindError("unknown kind 'Widget' in example.com/v1",
                                   api_version="example.com/v1", name="Widget", suggestions=[])

    rec = reconciler(NoWidgets(), [{"apply": {"manifest": (
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")}}])
    result = rec(KEY, cm())
    assert result.outcome == "retry"
    assert "apply Widget ns/w: unknown kind 'Widget' in example.com/v1" in str(result.error)


def test_a_var_error_names_its_line_and_column():
    """Every validate error is ``file:line:column: path: message``: a var's too."""
    text = CONFIG.replace("      actions: [{log: hi}]\n",
                          "      vars:\n        key: obj.metadata.uid\n      actions: [{log: hi}]\n")
    with pytest.raises(ConfigError, match=re.escape("f.yaml:11:14: controllers[0].reconcile."
                                                    "vars.key: vars: 'key' would shadow")):
        plan(load_text(text % "log: failed", file="f.yaml"))
