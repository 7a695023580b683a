"""The objects that deploy kinrun's webhooks (``kinrun manifests``), and their names.

* the Service ``<serviceName>`` (default ``<manifests name>-webhook``): port 443 to the pods'
  ``webhook`` port (``admission.port``), as the API server calls a webhook Service on 443
  unless told otherwise;
* a ValidatingWebhookConfiguration and a MutatingWebhookConfiguration named like the
  Service (each only when the config has webhooks of its type; both cluster-scoped), one
  webhook per config entry with its rules, selectors, ``failurePolicy``, ``timeoutSeconds``,
  ``sideEffects: None`` (kinrun's rules have none), ``admissionReviewVersions: [v1]`` and
  ``clientConfig.service`` with the webhook's path (``/validate/NAME``, ``/mutate/NAME``).
  No ``caBundle``: kinrun writes it at start (self-signed, ``kinrun.admission.certs``), or
  cert-manager's CA injector does, from the Certificate the annotation
  ``cert-manager.io/inject-ca-from: NAMESPACE/<serviceName>`` names (``certificates.directory``).
  Each webhook's ``objectSelector`` (the config's, if any) gets a ``matchExpressions`` item
  ``app.kubernetes.io/instance NotIn [<manifests name>]``: kinrun's own objects (Deployment,
  pods, ConfigMap, Service..., which ``kinrun manifests`` labels so) are never sent to its
  webhooks, so a kinrun that is down (``failurePolicy: Fail``) can still be fixed or rolled.

Field semantics: admissionregistration.k8s.io/v1 (Kubernetes 1.16+). Pure: plain dicts.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from kinrun.admission.certs import (ADMISSION_API, CONFIGURATION_KINDS, SERVICE_ENV,
                                    webhook_service_name)
from kinrun.config.model import AdmissionSpec, Config, WebhookSpec, thaw

SERVICE_PORT = 443
"""The Service's port: the API server's default for a webhook ``clientConfig.service``."""
PORT_NAME = "webhook"
"""The container port's name the Service targets."""
CERTIFICATES_VOLUME = "webhook-certs"
OWN_LABEL = "app.kubernetes.io/instance"
"""The label (``kinrun manifests``' instance label) whose value marks kinrun's own objects,
which its webhooks exclude."""
INJECT_CA = "cert-manager.io/inject-ca-from"
"""cert-manager's cainjector annotation: NAMESPACE/CERTIFICATE whose CA goes in caBundle."""


def webhook_objects(spec: AdmissionSpec, service: str, namespace: str,
                    labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """The Service and the webhook configurations (see the module docstring); the webhooks
    exclude the objects labelled ``labels[OWN_LABEL]`` (no exclusion without that label)."""
    meta = {"name": service, "namespace": namespace, "labels": dict(labels)}
    objects: list[dict[str, Any]] = [{
        "apiVersion": "v1", "kind": "Service", "metadata": meta,
        "spec": {"selector": dict(labels), "ports": [
            {"name": PORT_NAME, "port": SERVICE_PORT, "targetPort": PORT_NAME,
             "protocol": "TCP"}]}}]
    for type_, kind in CONFIGURATION_KINDS.items():
        hooks = [w for w in spec.webhooks if w.type == type_]
        if hooks:
            objects.append(_configuration(kind, hooks, service, namespace, labels,
                                          spec.cert_dir is not None))
    return objects


def local_configurations(spec: AdmissionSpec, name: str, base_url: str,
                         ca_pem: bytes) -> list[dict[str, Any]]:
    """The webhook configurations (named ``name``) of a kinrun that serves at ``base_url``
    (``https://127.0.0.1:PORT``, no cluster network in between: ``kinrun --embedded``):
    as :func:`webhook_objects`' but each webhook's ``clientConfig`` is ``url`` (its path
    under ``base_url``) with ``caBundle`` (base64 of ``ca_pem``)."""
    bundle = base64.b64encode(ca_pem).decode()
    out = []
    for obj in webhook_objects(spec, name, "default", {})[1:]:
        obj["metadata"] = {"name": name}
        for hook in obj["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": base_url + path, "caBundle": bundle}
        out.append(obj)
    return out


def _configuration(kind: str, hooks: list[WebhookSpec], service: str, namespace: str,
                   labels: Mapping[str, str], cert_manager: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": service, "labels": dict(labels)}
    if cert_manager:
        meta["annotations"] = {INJECT_CA: f"{namespace}/{service}"}
    return {"apiVersion": ADMISSION_API, "kind": kind, "metadata": meta,
            "webhooks": [_webhook(w, service, namespace, labels.get(OWN_LABEL))
                         for w in hooks]}


def _webhook(spec: WebhookSpec, service: str, namespace: str, own: str | None
             ) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": spec.name,
        "clientConfig": {"service": {"name": service, "namespace": namespace,
                                     "path": spec.path, "port": SERVICE_PORT}},
        "rules": thaw(spec.rules), "failurePolicy": spec.failure_policy,
        "sideEffects": "None", "timeoutSeconds": spec.timeout_seconds,
        "admissionReviewVersions": ["v1"]}
    if spec.namespace_selector is not None:
        hook["namespaceSelector"] = thaw(spec.namespace_selector)
    selector = thaw(spec.object_selector) if spec.object_selector is not None else None
    if own is not None:  # ANDed with the config's: never kinrun's own objects
        selector = selector or {}
        selector["matchExpressions"] = [*(selector.get("matchExpressions") or []),
                                        {"key": OWN_LABEL, "operator": "NotIn", "values": [own]}]
    if selector is not None:
        hook["objectSelector"] = selector
    return hook


def container_additions(config: Config, service: str) -> dict[str, list[dict[str, Any]]]:
    """What the kinrun container and pod get for ``admission:`` (empty lists without it):
    ``ports`` (the webhook port), ``env`` (the Service's name, ``kinrun.admission.certs
    .SERVICE_ENV``), and with ``certificates.directory`` the ``volumes``/``volumeMounts`` of
    the Secret ``<service>-tls`` (cert-manager's Certificate writes it) at that folder."""

    from kinrun.sharding.admission import effective_admission

    out: dict[str, list[dict[str, Any]]] = {"ports": [], "env": [], "volumes": [],
                                            "volumeMounts": []}
    spec = effective_admission(config)
    if spec is None:
        return out
    out["ports"].append({"name": PORT_NAME, "containerPort": spec.port, "protocol": "TCP"})
    out["env"].append({"name": SERVICE_ENV, "value": service})
    if spec.cert_dir is not None:
        out["volumes"].append({"name": CERTIFICATES_VOLUME,
                               "secret": {"secretName": f"{service}-tls"}})
        out["volumeMounts"].append({"name": CERTIFICATES_VOLUME, "mountPath": spec.cert_dir,
                                    "readOnly": True})
    return out
