"""kinrun.admission.certs against the embedded API server: replicas share one CA through a
Secret (create, read on 409, replace an unusable one) and keep the configurations' caBundle."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from kinrun.admission.certs import CABundleSync, shared_ca
from kinrun.admission.server import WebhookOptions, build_webhook_server
from kinrun.config import load_text
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.testing.apiserver import EmbeddedAPIServer

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap}
controllers: [{name: c, for: cms, reconcile: {actions: [{log: hi}]}}]
admission:
  serviceName: quota-webhook
  webhooks:
    - name: quota.example.com
      type: validating
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
      validate: [{deny: refused}]
    - name: team.example.com
      type: mutating
      rules: [{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}]
      mutate: [{mergePatch: "metadata: {labels: {a: b}}"}]
"""


@pytest.fixture
def client(embedded_server: EmbeddedAPIServer) -> Any:
    c = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
        c.create(webhook_configuration_crd(kind))  # the embedded server has no such kinds
    yield c
    c.close()


def webhook_configuration_crd(kind: str) -> dict[str, Any]:
    plural = kind.lower() + "s"
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.admissionregistration.k8s.io"},
            "spec": {"group": "admissionregistration.k8s.io", "scope": "Cluster",
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                               "listKind": f"{kind}List"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_replicas_share_the_ca_in_the_secret(client: Any) -> None:
    """The first replica creates the Secret; the second reads the same CA from it."""
    first = shared_ca(client, "default", "quota-webhook-certs")
    second = shared_ca(client, "default", "quota-webhook-certs")
    assert first == second
    secret = client.get("v1", "Secret", "quota-webhook-certs", "default")
    assert base64.b64decode(secret["data"]["ca.crt"]) == first[0]


def test_losing_the_create_race_reads_the_winner(client: Any) -> None:
    """A replica whose create gets 409 AlreadyExists serves the winner's CA, not its own."""
    winner = shared_ca(client, "default", "race-certs")

    class Racing:
        """Sees no Secret on its first read (the winner creates it meanwhile)."""

        def __init__(self) -> None:
            self.reads = 0

        def get(self, *args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            if self.reads == 1:
                from kinrun.errors import NotFoundError
                raise NotFoundError("not yet")
            return client.get(*args, **kwargs)

        def create(self, *args: Any, **kwargs: Any) -> Any:
            return client.create(*args, **kwargs)

    assert shared_ca(Racing(), "default", "race-certs") == winner


def test_an_unusable_secret_is_replaced(client: Any) -> None:
    """A Secret of that name without a CA (a placeholder) is replaced by one with a CA."""
    client.create({"apiVersion": "v1", "kind": "Secret",
                   "metadata": {"name": "empty-certs", "namespace": "default"},
                   "data": {"ca.crt": base64.b64encode(b"junk").decode()}},
                  namespace="default")
    cert, key = shared_ca(client, "default", "empty-certs")
    assert b"BEGIN CERTIFICATE" in cert
    assert shared_ca(client, "default", "empty-certs") == (cert, key)


def configuration(kind: str, hook: str, bundle: str | None = None) -> dict[str, Any]:
    client_config: dict[str, Any] = {"service": {"name": "quota-webhook",
                                                 "namespace": "default", "path": "/x"}}
    if bundle:
        client_config["caBundle"] = bundle
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "quota-webhook"},
            "webhooks": [
                {"name": "other.example.com", "clientConfig": dict(client_config),
                 "sideEffects": "None", "admissionReviewVersions": ["v1"]},
                {"name": hook, "clientConfig": client_config, "sideEffects": "None",
                 "admissionReviewVersions": ["v1"]}]}


def test_cabundle_is_patched_where_it_differs(client: Any) -> None:
    """Only kinrun's webhooks get the CA; a second sync changes nothing; a missing
    configuration is skipped."""
    compiled = plan(load_text(CONFIG, file="c.yaml"))
    client.create(configuration("ValidatingWebhookConfiguration", "quota.example.com"))
    sync = CABundleSync(client, "quota-webhook", compiled.admission.spec.webhooks, b"PEM-CA")
    assert sync.sync() == ["ValidatingWebhookConfiguration"]  # no Mutating one: skipped
    stored = client.get("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                        "quota-webhook")
    bundles = [(w["name"], w["clientConfig"].get("caBundle")) for w in stored["webhooks"]]
    assert bundles == [("other.example.com", None),
                       ("quota.example.com", base64.b64encode(b"PEM-CA").decode())]
    assert sync.sync() == []


def test_built_server_uses_the_shared_ca_and_syncs(client: Any) -> None:
    """The built server's certificate is issued by the Secret's CA, and starting it puts
    that CA into the configuration."""
    compiled = plan(load_text(CONFIG, file="c.yaml"))
    client.create(configuration("MutatingWebhookConfiguration", "team.example.com"))
    srv = build_webhook_server(compiled, client, {}, None, None,
                               WebhookOptions(namespace="default", hosts=("127.0.0.1",),
                                              port=0, address="127.0.0.1", workers=1))
    assert srv is not None
    ca, _key = shared_ca(client, "default", "quota-webhook-certs")
    assert srv.tls.source.ca_pem == ca  # type: ignore[attr-defined]
    srv.start()
    srv.stop()
    stored = client.get("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration",
                        "quota-webhook")
    assert stored["webhooks"][1]["clientConfig"]["caBundle"] == base64.b64encode(ca).decode()
