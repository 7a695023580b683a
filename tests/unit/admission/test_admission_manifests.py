"""`kinrun manifests` and `kinrun rbac` for admission: the webhook Service and configurations,
the Deployment's port/env/volume, the Secret and caBundle rules; the example's webhooks."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml

from kinrun.admission.manifests import INJECT_CA, webhook_objects
from kinrun.config import load, load_text
from kinrun.manifests import Names, write_base
from kinrun.plan import plan
from kinrun.rbac import Permission, rbac_needs

ROOT = Path(__file__).parents[3]
EXAMPLE = ROOT / "examples" / "configs" / "foo-admission.yaml"

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers: [{name: c, for: cms, reconcile: {actions: [{log: hi}]}}]
admission:
  port: 8443
  %s
  webhooks:
    - name: quota.example.com
      type: validating
      failurePolicy: Ignore
      timeoutSeconds: 3
      namespaceSelector: {matchLabels: {team: a}}
      objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
      validate: [{deny: refused}]
"""


def config(extra: str = "", tmp: Path | None = None) -> Any:
    return load_text(CONFIG % extra, file=str((tmp or Path(".")) / "quota.yaml"))


def test_configuration_carries_the_webhook_fields() -> None:
    """One ValidatingWebhookConfiguration (no mutating webhook: no Mutating one) with the
    rules, selectors, policy, timeout, sideEffects None, v1 reviews and the Service path."""
    service, cfg = webhook_objects(config().admission, "quota-webhook", "ops", {"a": "b"})
    assert service["spec"]["ports"] == [{"name": "webhook", "port": 443,
                                         "targetPort": "webhook", "protocol": "TCP"}]
    assert cfg["kind"] == "ValidatingWebhookConfiguration"
    assert cfg["metadata"]["name"] == "quota-webhook" and "annotations" not in cfg["metadata"]
    assert cfg["webhooks"] == [{
        "name": "quota.example.com",
        "clientConfig": {"service": {"name": "quota-webhook", "namespace": "ops",
                                     "path": "/validate/quota.example.com", "port": 443}},
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"],
                   "operations": ["CREATE"]}],
        "failurePolicy": "Ignore", "sideEffects": "None", "timeoutSeconds": 3,
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": {"matchLabels": {"team": "a"}},
        "objectSelector": {"matchExpressions": [{"key": "skip", "operator": "DoesNotExist"}]}}]


def test_mounted_certificates_ask_cert_manager_for_the_ca() -> None:
    """With certificates.directory the configuration names the Certificate to inject from."""
    spec = config("certificates: {directory: /certs}").admission
    _service, cfg = webhook_objects(spec, "quota-webhook", "ops", {})
    assert cfg["metadata"]["annotations"] == {INJECT_CA: "ops/quota-webhook"}


def write(tmp_path: Path, extra: str = "") -> dict[str, list[dict[str, Any]]]:
    cfg = config(extra, tmp_path)
    (tmp_path / "quota.yaml").write_text(CONFIG % extra)
    out = tmp_path / "base"
    write_base(cfg, out, Names.for_config(tmp_path / "quota.yaml", namespace="ops"))
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
            for p in out.glob("*.yaml")}


def test_base_has_the_webhook_file_and_the_deployment_serves_it(tmp_path: Path) -> None:
    """webhook.yaml is in the kustomization; the container has the webhook port and the
    Service's name in its environment; the Service is <name>-webhook."""
    files = write(tmp_path)
    assert "webhook.yaml" in files["kustomization.yaml"][0]["resources"]
    assert [d["metadata"]["name"] for d in files["webhook.yaml"]] == ["kinrun-quota-webhook"] * 2
    container = files["deployment.yaml"][0]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "webhook", "containerPort": 8443, "protocol": "TCP"} in container["ports"]
    assert {"name": "KINRUN_WEBHOOK_SERVICE", "value": "kinrun-quota-webhook"} in container["env"]


def test_mounted_certificates_are_a_secret_volume(tmp_path: Path) -> None:
    """With certificates.directory the pod mounts Secret <service>-tls at that folder."""
    files = write(tmp_path, "certificates: {directory: /certs}")
    pod = files["deployment.yaml"][0]["spec"]["template"]["spec"]
    assert {"name": "webhook-certs", "secret": {"secretName": "kinrun-quota-webhook-tls"}} \
        in pod["volumes"]
    assert {"name": "webhook-certs", "mountPath": "/certs", "readOnly": True} \
        in pod["containers"][0]["volumeMounts"]


def test_rbac_for_self_signed_certificates() -> None:
    """The CA Secret by name (get, update), create on secrets, get/patch on the
    configuration by name; nothing for them in a dry run or with mounted certificates."""
    needs = rbac_needs(plan(config()), webhook=("ops", "quota-webhook"))
    admission = {p for p in needs.permissions
                 if p.resource in ("secrets", "validatingwebhookconfigurations",
                                   "mutatingwebhookconfigurations")}
    assert admission == {
        Permission("ops", "", "secrets", "get", ("quota-webhook-certs",)),
        Permission("ops", "", "secrets", "update", ("quota-webhook-certs",)),
        Permission("ops", "", "secrets", "create"),
        Permission("", "admissionregistration.k8s.io", "validatingwebhookconfigurations",
                   "get", ("quota-webhook",)),
        Permission("", "admissionregistration.k8s.io", "validatingwebhookconfigurations",
                   "patch", ("quota-webhook",)),
    }
    for needs in (rbac_needs(plan(config()), dry_run=True, webhook=("ops", "q")),
                  rbac_needs(plan(config("certificates: {directory: /certs}")),
                             webhook=("ops", "q"))):
        assert not [p for p in needs.permissions if p.resource == "secrets"]


def test_rbac_names_the_configured_secret() -> None:
    """certificates.selfSigned.secretName is the Secret granted."""
    needs = rbac_needs(plan(config("certificates: {selfSigned: {secretName: my-ca}}")),
                       webhook=("ops", "quota-webhook"))
    assert Permission("ops", "", "secrets", "get", ("my-ca",)) in needs.permissions


# -- the example -----------------------------------------------------------------------------


class Lister:
    def __init__(self, objects: dict[str, Any]) -> None:
        self.objects = objects

    def get(self, key: str) -> Any:
        return self.objects.get(key)

    def list(self, namespace: Any = None) -> list[Any]:
        return [o for k, o in self.objects.items() if k.startswith(f"{namespace}/")]


def review(obj: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "CREATE", "object": obj, "namespace": "t",
                        "name": obj["metadata"]["name"],
                        "userInfo": {"username": 'system:serviceaccount:t:"x"'}}}


def foo(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": name, "namespace": "t"}, "spec": spec}


def test_example_defaults_a_foo() -> None:
    """The example's mutating webhook defaults deploymentName and replicas and records the
    creator, quotes and all."""
    program = plan(load(EXAMPLE)).admission
    hook = program.webhook("/mutate/foo-defaults.samplecontroller.example.com")
    response = hook.review(review(foo("a")), {})["response"]
    ops = json.loads(base64.b64decode(response["patch"]))
    assert {"op": "add", "path": "/spec/deploymentName", "value": "a"} in ops
    assert {"op": "add", "path": "/spec/replicas", "value": 1} in ops
    assert {"op": "add", "path": "/metadata/annotations", "value": {
        "samplecontroller.example.com/created-by": 'system:serviceaccount:t:"x"'}} in ops


def test_example_enforces_the_quota_and_warns_on_shared_deployments() -> None:
    """Over the namespace's quota: denied at spec.replicas; no quota ConfigMap: allowed;
    a Deployment another Foo names: a warning."""
    program = plan(load(EXAMPLE)).admission
    hook = program.webhook("/validate/foo-quota.samplecontroller.example.com")
    quotas = Lister({"t/foo-quota": {"data": {"maxReplicas": "3"}}})
    foos = Lister({"t/b": foo("b", deploymentName="web")})
    denied = hook.review(review(foo("a", replicas=5, deploymentName="x")),
                         {"quotas": quotas, "foos": foos})["response"]
    assert denied["allowed"] is False
    assert denied["status"]["details"]["causes"][0]["field"] == "spec.replicas"
    assert "the quota of t is 3" in denied["status"]["message"]
    free = hook.review(review(foo("a", replicas=5, deploymentName="web")),
                       {"quotas": Lister({}), "foos": foos})["response"]
    assert free["allowed"] is True
    assert free["warnings"] == ["Deployment web is named by another Foo too"]


def test_reload_reports_an_admission_change_as_needing_a_restart() -> None:
    """A reload whose only change is a rule swaps no controller and says admission needs a
    restart (the webhook server serves the rules it started with)."""
    from kinrun.reload import diff

    old = plan(config())
    new = plan(load_text((CONFIG % "").replace("deny: refused", "deny: nope"), file="quota.yaml"))
    changes = diff(old, new)
    assert changes.restart_only == ("admission",)
    assert changes.controllers_swapped == () and changes.controllers_unchanged == ("c",)


def test_webhooks_exclude_kinrun_own_objects(tmp_path: Path) -> None:
    """Each generated webhook skips the objects carrying kinrun's instance label (its own
    Deployment, pods, ConfigMap, Service...: a webhook down with failurePolicy Fail must not
    block fixing kinrun), ANDed with the webhook's own objectSelector."""
    files = write(tmp_path)
    own = {"key": "app.kubernetes.io/instance", "operator": "NotIn", "values": ["kinrun-quota"]}
    [hook] = files["webhook.yaml"][1]["webhooks"]
    assert hook["objectSelector"] == {"matchExpressions": [
        {"key": "skip", "operator": "DoesNotExist"}, own]}
    for name in ("deployment.yaml", "configmap.yaml", "serviceaccount.yaml"):
        assert files[name][0]["metadata"]["labels"]["app.kubernetes.io/instance"] == "kinrun-quota"
    pod = files["deployment.yaml"][0]["spec"]["template"]["metadata"]
    assert pod["labels"]["app.kubernetes.io/instance"] == "kinrun-quota"
    spec = load_text((CONFIG % "").replace(
        "      objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}\n",
        "      objectSelector: {matchLabels: {team: a}}\n"), file="q.yaml").admission
    _service, cfg = webhook_objects(spec, "q-webhook", "ops",
                                    {"app.kubernetes.io/instance": "kinrun-q"})
    assert cfg["webhooks"][0]["objectSelector"] == {"matchLabels": {"team": "a"}, "matchExpressions": [
        {"key": "app.kubernetes.io/instance", "operator": "NotIn", "values": ["kinrun-q"]}]}
    spec = load_text((CONFIG % "").replace(
        "      objectSelector: {matchExpressions: [{key: skip, operator: DoesNotExist}]}\n", ""),
        file="q.yaml").admission
    _service, cfg = webhook_objects(spec, "q-webhook", "ops",
                                    {"app.kubernetes.io/instance": "kinrun-q"})
    assert cfg["webhooks"][0]["objectSelector"] == {"matchExpressions": [
        {"key": "app.kubernetes.io/instance", "operator": "NotIn", "values": ["kinrun-q"]}]}
