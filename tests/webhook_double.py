"""A test double of an admission webhook: an HTTPS server on 127.0.0.1 (a fresh self-signed
CA) that answers every AdmissionReview with ``answer(request) -> response fields`` and keeps
the requests it got. Used where an API server (the embedded one, or kube-apiserver in the
differential tests) must call a webhook that is not kinrun's."""

from __future__ import annotations

import base64
import http.server
import json
import ssl
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kinrun.tls import SelfSignedCerts

Answer = Callable[[dict[str, Any]], dict[str, Any]]


class WebhookDouble:
    """``url(path)``: where it answers; ``ca_bundle``: base64 of its CA (a ``caBundle``);
    ``requests``: the AdmissionReview requests received, in order."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        certs = SelfSignedCerts(["127.0.0.1"])
        pair = certs.current()
        self.ca_bundle = base64.b64encode(certs.ca_pem).decode()
        self._dir = tempfile.TemporaryDirectory()
        cert, key = Path(self._dir.name, "tls.crt"), Path(self._dir.name, "tls.key")
        cert.write_bytes(pair.cert)
        key.write_bytes(pair.key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        double = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                request = review["request"]
                double.requests.append(request)
                body = json.dumps({"apiVersion": "admission.k8s.io/v1",
                                   "kind": "AdmissionReview",
                                   "response": {"uid": request["uid"],
                                                **double.answer(request)}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._dir.cleanup()


@contextmanager
def webhook_double(answer: Answer) -> Iterator[WebhookDouble]:
    double = WebhookDouble(answer)
    try:
        yield double
    finally:
        double.close()


def json_patch(ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Response fields of an allowed answer that patches with ``ops``."""
    return {"allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(ops).encode()).decode()}


def configuration(kind: str, name: str, hooks: list[dict[str, Any]]) -> dict[str, Any]:
    """A Mutating/ValidatingWebhookConfiguration named ``name`` holding ``hooks``."""
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": hooks}


def hook(name: str, url: str, ca_bundle: str | None, *, resources: list[str],
         operations: list[str], namespace: str | None = None, policy: str = "Fail",
         timeout: int = 5, **extra: Any) -> dict[str, Any]:
    """One webhook entry (v1): rules on core/v1 ``resources``; limited to ``namespace`` by a
    namespaceSelector on the label ``webhook-test: NAMESPACE`` when given."""
    client: dict[str, Any] = {"url": url}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    out: dict[str, Any] = {
        "name": name, "clientConfig": client, "failurePolicy": policy, "sideEffects": "None",
        "admissionReviewVersions": ["v1"], "timeoutSeconds": timeout,
        "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": resources,
                   "operations": operations}], **extra}
    if namespace is not None:
        out["namespaceSelector"] = {"matchLabels": {"webhook-test": namespace}}
    return out
