"""The webhook server's certificates: self-managed with a CA the replicas share, or mounted.

Self-managed (``admission.certificates`` omitted or ``selfSigned``), as kopf's self-signed
webhook server and OPA's cert-controller (``rotator``) do it, with the CA in a Secret:

1. :func:`shared_ca` reads the CA from Secret ``<serviceName>-certs`` (or ``secretName``) in
   kinrun's namespace (keys :data:`CA_CERT_KEY`, :data:`CA_KEY_KEY`), or makes one and
   creates the Secret; a replica that loses the race to create (409 AlreadyExists) reads the
   winner's. So every replica serves a certificate of the same CA.
2. Each replica issues its own serving certificate from that CA (``kinrun.tls
   .SelfSignedCerts``) for SERVICE.NAMESPACE.svc and SERVICE.NAMESPACE.svc.cluster.local (and
   any host a test adds), renewed at two thirds of its lifetime without a restart.
3. :class:`CABundleSync` writes the CA into ``clientConfig.caBundle`` of kinrun's webhooks in
   the ValidatingWebhookConfiguration and MutatingWebhookConfiguration named after the
   Service (``kinrun manifests`` names them so), where it differs: at start and every
   :data:`SYNC_INTERVAL` seconds (a re-applied manifest that dropped it is repaired).

The CA itself lives ``kinrun.tls.CA_VALIDITY`` (10 years) and is not rotated by kinrun: delete
the Secret and restart the replicas to replace it. Mounted (``directory``): cert-manager
writes the pair and injects the caBundle (``cert-manager.io/inject-ca-from`` on the
configurations); kinrun only reloads the files (``kinrun.tls.DirectoryCerts``).

Errors: ApiError from the API server (a Secret kinrun may not read: RBAC, see ``kinrun
rbac``). Thread-safety: :class:`CABundleSync` is called from one thread at a time.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any

from kinrun.clock import REAL_CLOCK, Clock
from kinrun.config.model import WebhookSpec
from kinrun.errors import ApiError, ConflictError, KinrunError, NotFoundError
from kinrun.kube.discovery import UnknownKindError

_log = logging.getLogger("kinrun.admission")

CA_CERT_KEY, CA_KEY_KEY = "ca.crt", "ca.key"
"""The Secret's keys: the CA certificate and its private key (PEM)."""
SYNC_INTERVAL = 60.0
"""Seconds between two checks of the configurations' caBundle."""
ADMISSION_API = "admissionregistration.k8s.io/v1"
CONFIGURATION_KINDS = {"validating": "ValidatingWebhookConfiguration",
                       "mutating": "MutatingWebhookConfiguration"}


def service_hosts(service: str, namespace: str) -> list[str]:
    """The DNS names the API server uses to call ``service`` in ``namespace`` (the serving
    certificate's SANs): ``SERVICE.NAMESPACE.svc`` and its ``.cluster.local`` form."""
    return [f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local"]


def shared_ca(client: Any, namespace: str, secret: str,
              new_ca: Any = None, clock: Clock = REAL_CLOCK) -> tuple[bytes, bytes]:
    """The CA (certificate PEM, key PEM) kept in Secret ``namespace/secret``: read, or made
    (``new_ca()``, default ``kinrun.tls``'s, valid from ``clock.wall()``) and created; on 409 the winner's is read. A
    Secret without a usable CA is replaced (update; on 409 read again). Raises ApiError."""
    from kinrun.tls import _new_ca  # the CA half of SelfSignedCerts

    make = new_ca or (lambda: _new_ca(clock.wall()))
    for _attempt in range(3):
        try:
            found = client.get("v1", "Secret", secret, namespace)
        except NotFoundError:
            found = None
        ca = _ca_of(found)
        if ca is not None:
            return ca
        ca = make()
        try:
            _write(client, namespace, secret, ca, found)
            _log.info("admission: new CA stored in Secret %s/%s", namespace, secret)
            return ca
        except ConflictError:  # another replica created or replaced it first: read theirs
            continue
    raise ApiError(f"Secret {namespace}/{secret}: changed by others three times in a row")


def _ca_of(secret: Any) -> tuple[bytes, bytes] | None:
    data = (secret or {}).get("data") or {}
    try:
        cert, key = (base64.b64decode(data[k]) for k in (CA_CERT_KEY, CA_KEY_KEY))
    except (KeyError, ValueError, TypeError):
        return None
    return (cert, key) if b"BEGIN CERTIFICATE" in cert and b"PRIVATE KEY" in key else None


def _write(client: Any, namespace: str, name: str, ca: tuple[bytes, bytes],
           found: Any) -> None:
    body = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "kinrun"}},
            "data": {CA_CERT_KEY: base64.b64encode(ca[0]).decode(),
                     CA_KEY_KEY: base64.b64encode(ca[1]).decode()}}
    if found is None:
        client.create(body, namespace=namespace)
    else:
        body["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
        client.update(body, namespace=namespace)


class CABundleSync:
    """Keeps ``clientConfig.caBundle`` of ``webhooks`` (WebhookSpecs) in the configurations
    named ``name`` equal to ``ca`` (PEM); see the module docstring."""

    def __init__(self, client: Any, name: str, webhooks: Sequence[WebhookSpec],
                 ca: bytes) -> None:
        self.client, self.name, self.ca = client, name, ca
        self._bundle = base64.b64encode(ca).decode()
        self._names = {kind: {w.name for w in webhooks if w.type == t}
                       for t, kind in CONFIGURATION_KINDS.items()}

    def sync(self) -> list[str]:
        """Patch each configuration whose webhooks' caBundle differs; returns the kinds
        patched. A configuration that does not exist is skipped (kinrun creates none); an
        API error is logged and tried again at the next sync."""
        patched = []
        for kind, names in self._names.items():
            if names and self._sync_one(kind, names):
                patched.append(kind)
        return patched

    def _sync_one(self, kind: str, names: set[str]) -> bool:
        try:
            current = self.client.get(ADMISSION_API, kind, self.name)
        except (NotFoundError, UnknownKindError):  # none made (yet), or a server without them
            _log.debug("admission: no %s %s to put the caBundle in", kind, self.name)
            return False
        except KinrunError as exc:
            _log.warning("admission: cannot read %s %s: %s", kind, self.name, exc)
            return False
        ops = self.patch_ops(current, names)
        if not ops:
            return False
        try:
            self.client.patch(ADMISSION_API, kind, self.name, ops, patch_type="json")
        except ApiError as exc:  # the list changed under us (the test op), RBAC, ...
            _log.warning("admission: cannot patch the caBundle of %s %s: %s", kind, self.name,
                         exc)
            return False
        _log.info("admission: caBundle of %s %s updated", kind, self.name)
        return True

    def patch_ops(self, configuration: Any, names: set[str]) -> list[dict[str, Any]]:
        """The JSON patch (RFC 6902) setting the caBundle of the webhooks in ``names`` where
        it differs; each ``add`` guarded by a ``test`` of the webhook's name at its index."""
        ops: list[dict[str, Any]] = []
        for i, hook in enumerate(configuration.get("webhooks") or ()):
            if hook.get("name") in names and \
                    (hook.get("clientConfig") or {}).get("caBundle") != self._bundle:
                ops += [{"op": "test", "path": f"/webhooks/{i}/name", "value": hook["name"]},
                        {"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle",
                         "value": self._bundle}]
        return ops


SERVICE_ENV = "KINRUN_WEBHOOK_SERVICE"
"""The environment variable naming the webhook Service in a pod (``kinrun manifests`` sets it)."""


def webhook_service_name(config: Any, manifests_name: str) -> str:
    """``admission.serviceName``, else ``<manifests_name>-webhook`` (the default, written
    once: the run and ``kinrun rbac`` call this too)."""
    spec = config.admission
    return spec.service_name if spec is not None and spec.service_name else \
        f"{manifests_name}-webhook"
