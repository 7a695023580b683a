"""Issue 33, proved on kube-apiserver 1.20: the API server calls kinrun's webhooks at
https://127.0.0.1:PORT with the caBundle; kinrun runs as a process (``kinrun CONFIG``).

Each test registers webhook configurations (``clientConfig.url``) limited by a
namespaceSelector to its own namespace (labelled by the test: 1.20 has no
``kubernetes.io/metadata.name`` label), and deletes them afterwards.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinrun.testing.envtest import EnvtestServer, free_port
from kinrun.tls import SelfSignedCerts

from .rawkube import RawKube

ADMISSION = "/apis/admissionregistration.k8s.io/v1"
DENY = "deny.kinrun.example.com"
MUTATE = "label.kinrun.example.com"
WAIT = 60.0  # seconds: start-up, and the API server noticing a new configuration

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {{apiVersion: v1, kind: ConfigMap, namespaces: [{ns}]}}
controllers: [{{name: c, for: cms, reconcile: {{actions: [{{log: "{{{{ key }}}}"}}]}}}}]
probes: {{port: {probes}, address: 127.0.0.1}}
admission:
  port: {port}
  address: 127.0.0.1
  serviceName: {service}
  {certificates}
  webhooks:
    - name: {deny}
      type: validating
      rules: [{{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}}]
      validate:
        - when: "'forbidden' in (object.data | default({{}}))"
          deny: "kinrun says no to {{{{ name }}}}"
        - when: dryRun
          warn: "kinrun saw a dry run"
    - name: {mutate}
      type: mutating
      rules: [{{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}}]
      mutate:
        - mergePatch: |
            metadata: {{labels: {{kinrun-mutated: "yes"}}}}
"""


@pytest.fixture
def raw(envtest_server: EnvtestServer) -> RawKube:
    return RawKube(envtest_server.kubeconfig_path, "envtest")


@pytest.fixture
def ns(raw: RawKube, envtest_namespace: str) -> str:
    """The test's namespace, labelled so that only its objects go to the webhooks."""
    patched = raw.request("PATCH", f"/api/v1/namespaces/{envtest_namespace}",
                          {"metadata": {"labels": {"kinrun-e2e": envtest_namespace}}},
                          content_type="application/merge-patch+json")
    assert patched.status == 200, patched.body
    return envtest_namespace


def configurations(ns: str, service: str, port: int, ca: bytes | None,
                   policy: str = "Fail") -> list[tuple[str, dict[str, Any]]]:
    def hook(name: str, path: str) -> dict[str, Any]:
        client: dict[str, Any] = {"url": f"https://127.0.0.1:{port}{path}"}
        if ca is not None:
            client["caBundle"] = base64.b64encode(ca).decode()
        return {"name": name, "clientConfig": client, "failurePolicy": policy,
                "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 5,
                "namespaceSelector": {"matchLabels": {"kinrun-e2e": ns}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"], "operations": ["CREATE"]}]}
    return [("validatingwebhookconfigurations",
             {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "ValidatingWebhookConfiguration", "metadata": {"name": service},
              "webhooks": [hook(DENY, f"/validate/{DENY}")]}),
            ("mutatingwebhookconfigurations",
             {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "MutatingWebhookConfiguration", "metadata": {"name": service},
              "webhooks": [hook(MUTATE, f"/mutate/{MUTATE}")]})]


@contextlib.contextmanager
def registered(raw: RawKube, objects: list[tuple[str, dict[str, Any]]]) -> Iterator[None]:
    for plural, body in objects:
        made = raw.request("POST", f"{ADMISSION}/{plural}", body)
        assert made.status == 201, made.body
    try:
        yield
    finally:
        for plural, body in objects:
            raw.request("DELETE", f"{ADMISSION}/{plural}/{body['metadata']['name']}")


@contextlib.contextmanager
def kinrun(server: EnvtestServer, tmp: Path, ns: str, port: int, service: str,
           certificates: str = "", kubeconfig: str | None = None
           ) -> Iterator[subprocess.Popen[bytes]]:
    """``kinrun CONFIG`` against the server (as the admin, or ``kubeconfig``'s user), ready
    (``/readyz`` 200) on entry, stopped after."""
    probes = free_port()
    config = write_config(tmp, ns, port, service, certificates, probes)
    log = (tmp / "kinrun.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "kinrun.cli", str(config), "--kubeconfig",
                             kubeconfig or server.kubeconfig_path],
                            stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "POD_NAMESPACE": ns})
    try:
        until(lambda: _ready(probes), f"kinrun ready (log: {tmp / 'kinrun.log'})")
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def write_config(tmp: Path, ns: str, port: int, service: str, certificates: str = "",
                 probes: int = 0) -> Path:
    config = tmp / "admission.yaml"
    config.write_text(CONFIG.format(ns=ns, probes=probes, port=port, service=service,
                                    certificates=certificates, deny=DENY, mutate=MUTATE))
    return config


def _ready(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def until(check: Any, what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def create(raw: RawKube, ns: str, name: str, data: dict[str, str] | None = None,
           **query: Any) -> Any:
    return raw.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                       {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name}, "data": data or {}}, query=query or None)


def served_certificate(port: int) -> bytes:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        with ctx.wrap_socket(sock) as tls:
            return tls.getpeercert(binary_form=True) or b""


# -- self-signed: the CA in a Secret, the caBundle kept by kinrun -----------------------------


def test_self_signed_webhooks_deny_mutate_and_see_dry_runs(
        envtest_server: EnvtestServer, raw: RawKube, ns: str, tmp_path: Path) -> None:
    """kinrun makes the CA (Secret <service>-certs), writes it into the configurations'
    caBundle itself; then a denied create is refused with kinrun's message, an allowed one is
    stored mutated, and a dryRun create is answered (mutated, warned) but stores nothing."""
    port, service = free_port(), f"{ns}-webhook"
    with registered(raw, configurations(ns, service, port, None)), \
            kinrun(envtest_server, tmp_path, ns, port, service):
        secret = raw.get(f"/api/v1/namespaces/{ns}/secrets/{service}-certs")
        assert secret.status == 200, secret.body
        bundle = secret.body["data"]["ca.crt"]
        for plural, _ in configurations(ns, service, port, None):
            until(lambda p=plural: raw.get(f"{ADMISSION}/{p}/{service}").body["webhooks"][0]
                  ["clientConfig"].get("caBundle") == bundle, f"caBundle of {plural}")
        denied = until(lambda: (lambda r: r if r.status == 403 else None)(
            create(raw, ns, "nope", {"forbidden": "1"})), "the webhook to deny")
        assert denied.body["message"] == (
            f'admission webhook "{DENY}" denied the request: kinrun says no to nope')
        assert create(raw, ns, "fine").status == 201
        stored = raw.get(f"/api/v1/namespaces/{ns}/configmaps/fine").body
        assert stored["metadata"]["labels"] == {"kinrun-mutated": "yes"}
        dry = create(raw, ns, "dry", dryRun="All")
        assert dry.status == 201 and dry.body["metadata"]["labels"] == {"kinrun-mutated": "yes"}
        assert "kinrun saw a dry run" in dry.headers.get("Warning", "")
        assert raw.get(f"/api/v1/namespaces/{ns}/configmaps/dry").status == 404


# -- mounted certificates: rotation under load; kinrun stopped --------------------------------


def write_pair(folder: Path, certs: SelfSignedCerts) -> None:
    """Swap in a new pair as a Secret volume does: new files, then renames."""
    pair = certs.current()
    for name, data in (("tls.key", pair.key), ("tls.crt", pair.cert)):
        tmp = folder / f".{name}.new"
        tmp.write_bytes(data)
        os.replace(tmp, folder / name)


def test_rotation_under_load_loses_no_request_and_failure_policy_holds_when_stopped(
        envtest_server: EnvtestServer, raw: RawKube, ns: str, tmp_path: Path) -> None:
    """With the pair mounted from a folder, two swaps of the pair while a client creates
    objects: every create succeeds and is mutated, and kinrun serves the new certificate.
    Then, kinrun stopped: failurePolicy Fail refuses a create, Ignore lets it through."""
    ca = SelfSignedCerts(["ca-holder"])
    issue = lambda: SelfSignedCerts(["127.0.0.1"], ca=(ca.ca_pem, ca.ca_key_pem))  # noqa: E731
    certs_dir = tmp_path / "certs"
    certs_dir.mkdir()
    write_pair(certs_dir, issue())
    port, service = free_port(), f"{ns}-webhook"
    objects = configurations(ns, service, port, ca.ca_pem)
    with registered(raw, objects):
        with kinrun(envtest_server, tmp_path, ns, port, service,
                    f"certificates: {{directory: {certs_dir}}}"):
            until(lambda: create(raw, ns, "warm-up").status == 201, "the webhooks in force")
            first = served_certificate(port)
            results: list[int] = []
            stop = threading.Event()

            def load() -> None:
                i = 0
                while not stop.is_set():
                    results.append(create(raw, ns, f"load-{i}").status)
                    i += 1
            client = threading.Thread(target=load)
            client.start()
            try:
                for _ in range(2):
                    until(lambda n=len(results): len(results) >= n + 10, "creates under load")
                    write_pair(certs_dir, issue())
                    time.sleep(1.5)  # kinrun checks the folder at most once a second
                until(lambda n=len(results): len(results) >= n + 10, "creates after the swap")
            finally:
                stop.set()
                client.join(60)
            assert served_certificate(port) != first
            assert results and set(results) == {201}, f"{len(results)} creates: {results}"
            labels = [o["metadata"].get("labels") for o in raw.get(
                f"/api/v1/namespaces/{ns}/configmaps").body["items"]
                if o["metadata"]["name"].startswith("load-")]
            assert len(labels) == len(results) and all(
                lab == {"kinrun-mutated": "yes"} for lab in labels)
        refused = create(raw, ns, "while-stopped")
        assert refused.status == 500 and "failed calling webhook" in refused.body["message"]
        for plural, body in objects:
            patch = [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]
            done = raw.request("PATCH", f"{ADMISSION}/{plural}/{body['metadata']['name']}",
                               patch, content_type="application/json-patch+json")
            assert done.status == 200, done.body
        until(lambda: create(raw, ns, "ignored").status == 201, "failurePolicy Ignore")


# -- the RBAC of `kinrun rbac` is enough --------------------------------------------------------


def test_generated_rbac_is_enough_for_self_signed_certificates(
        envtest_server: EnvtestServer, raw: RawKube, tmp_path: Path) -> None:
    """kinrun as a ServiceAccount granted only what ``kinrun rbac`` computes creates the CA
    Secret, writes the caBundle and serves; its log has no 403."""
    from envtest.test_rbac_examples import FORBIDDEN, Identity
    from kinrun.config import load
    from kinrun.plan import plan
    from kinrun.rbac import rbac_needs, rbac_objects

    ident = Identity(envtest_server, raw, tmp_path, "admission")
    ns, port = ident.namespace, free_port()
    service = f"{ns}-webhook"
    raw.request("PATCH", f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {"kinrun-e2e": ns}}},
                content_type="application/merge-patch+json")
    needs = rbac_needs(plan(load(write_config(tmp_path, ns, port, service))),
                       webhook=(ns, service))
    ident.grant(rbac_objects(needs, name=ident.name, service_account=ident.name,
                             service_account_namespace=ns))
    try:
        with registered(raw, configurations(ns, service, port, None)), \
                kinrun(envtest_server, tmp_path, ns, port, service,
                       kubeconfig=str(ident.kubeconfig)):
            until(lambda: create(raw, ns, "nope", {"forbidden": "1"}).status == 403,
                  "the webhook to deny")
        log = (tmp_path / "kinrun.log").read_text()
        assert not re.search(FORBIDDEN, log), log
    finally:
        ident.close()
