"""Secure metrics on kube-apiserver 1.20: kinrun's /metrics answers a ServiceAccount token
only when RBAC lets that account GET the non-resource URL /metrics (TokenReview and
SubjectAccessReview sent to the real API server)."""

from __future__ import annotations

import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from envtest.rawkube import RawKube
from kinrun.kube import Client
from kinrun.kube.delegated_auth import DelegatedAuth
from kinrun.metrics import Metrics
from kinrun.testing.envtest import EnvtestServer
from kinrun.tls import SelfSignedCerts, ServerTLS


def _post(admin: RawKube, path: str, body: dict) -> dict:
    resp = admin.request("POST", path, body)
    assert resp.status in (200, 201), (path, resp)
    return resp.body


def token_for(admin: RawKube, namespace: str, name: str) -> str:
    _post(admin, f"/api/v1/namespaces/{namespace}/serviceaccounts",
          {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}})
    return _post(admin, f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
                 {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                  "spec": {"expirationSeconds": 3600}})["status"]["token"]


@pytest.fixture
def served(envtest_server: EnvtestServer, envtest_namespace: str
           ) -> Iterator[tuple[int, bytes, dict[str, str]]]:
    admin = RawKube(envtest_server.kubeconfig_path, "envtest")
    ns = envtest_namespace
    tokens = {who: token_for(admin, ns, who) for who in ("prometheus", "stranger")}
    role = f"{ns}-metrics-reader"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    _post(admin, f"{rbac}/clusterroles", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": role},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    _post(admin, f"{rbac}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": role},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": ns}]})
    client = Client.from_config(kubeconfig=envtest_server.kubeconfig_path)
    certs = SelfSignedCerts(["127.0.0.1"])
    metrics = Metrics()
    port = metrics.serve(0, "127.0.0.1", tls=ServerTLS(certs),
                         auth=DelegatedAuth.for_client(client, ttl=0.0))
    try:
        yield port, certs.ca_pem, tokens
    finally:
        metrics.close()
        client.close()
        for kind in ("clusterrolebindings", "clusterroles"):
            admin.request("DELETE", f"{rbac}/{kind}/{role}")


def scrape(port: int, ca: bytes, token: str | None) -> int:
    ctx = ssl.create_default_context(cadata=ca.decode())
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    req = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as resp:
            assert b"python_info" in resp.read()
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


def test_the_right_token_reads_metrics_and_others_are_refused(served) -> None:
    """200 for the account RBAC allows (the binding may take a moment to reach the
    authorizer's cache); 403 for an account without the right; 401 with no or a forged
    token."""
    port, ca, tokens = served
    pause = threading.Event()
    for _ in range(50):  # RBAC reaches the authorizer through its informers: milliseconds
        if scrape(port, ca, tokens["prometheus"]) == 200:
            break
        pause.wait(0.1)
    assert scrape(port, ca, tokens["prometheus"]) == 200
    assert scrape(port, ca, tokens["stranger"]) == 403
    assert scrape(port, ca, None) == 401
    assert scrape(port, ca, "not-a-token") == 401
