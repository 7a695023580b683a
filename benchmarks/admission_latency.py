"""The latency kinrun's admission webhooks add to a create, on a real kube-apiserver (envtest).

One kube-apiserver + etcd, one ``kinrun CONFIG`` process serving a validating and a mutating
webhook (self-signed: kinrun makes the CA and writes the configurations' caBundle), both
limited by a namespaceSelector to namespace ``hooked``. The harness creates ConfigMaps one
after the other over one keep-alive connection, alternating ``plain`` (no webhook called) and
``hooked`` (both called: mutating, then validating), so both series see the same server
state and machine load; it prints p50/p99 of each, and their ratio.

    KUBEBUILDER_ASSETS=/var/cache/kinrun/envtest .venv/bin/python benchmarks/admission_latency.py [N]

N: creates per series (default 400), after 20 of warm-up each.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from kinrun.testing.envtest import EnvtestServer, free_port

SERVICE = "bench-webhook"
CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {{apiVersion: v1, kind: ConfigMap, namespaces: [hooked]}}
controllers: [{{name: c, for: cms, reconcile: {{actions: [{{log: "{{{{ key }}}}"}}]}}}}]
probes: {{port: {probes}, address: 127.0.0.1}}
admission:
  port: {port}
  address: 127.0.0.1
  serviceName: {service}
  webhooks:
    - name: deny.bench.example.com
      type: validating
      rules: [{{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}}]
      validate:
        - when: "'forbidden' in (object.data | default({{}}))"
          deny: "no"
    - name: label.bench.example.com
      type: mutating
      rules: [{{apiGroups: [""], apiVersions: [v1], resources: [configmaps], operations: [CREATE]}}]
      mutate:
        - mergePatch: |
            metadata: {{labels: {{kinrun-mutated: "yes"}}}}
"""


class Api:
    """One keep-alive HTTPS connection to the API server as the admin."""

    def __init__(self, server: EnvtestServer) -> None:
        host, port = server.url.removeprefix("https://").split(":")
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        self.conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
        self.headers = {"Authorization": f"Bearer {server.token}",
                        "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None,
             ctype: str = "application/json") -> tuple[int, Any]:
        self.conn.request(method, path, json.dumps(body) if body is not None else None,
                          {**self.headers, "Content-Type": ctype})
        resp = self.conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data else None


def configurations(port: int) -> list[tuple[str, dict[str, Any]]]:
    def hook(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "clientConfig": {"url": f"https://127.0.0.1:{port}{path}"},
                "failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": 10,
                "admissionReviewVersions": ["v1"],
                "namespaceSelector": {"matchLabels": {"bench": "hooked"}},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["configmaps"], "operations": ["CREATE"]}]}
    api = "admissionregistration.k8s.io/v1"
    return [("validatingwebhookconfigurations",
             {"apiVersion": api, "kind": "ValidatingWebhookConfiguration",
              "metadata": {"name": SERVICE},
              "webhooks": [hook("deny.bench.example.com", "/validate/deny.bench.example.com")]}),
            ("mutatingwebhookconfigurations",
             {"apiVersion": api, "kind": "MutatingWebhookConfiguration",
              "metadata": {"name": SERVICE},
              "webhooks": [hook("label.bench.example.com", "/mutate/label.bench.example.com")]})]


def wait(check: Any, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def create(api: Api, ns: str, name: str) -> float:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"k": "v"}}
    start = time.perf_counter()
    status, answer = api.call("POST", f"/api/v1/namespaces/{ns}/configmaps", body)
    took = time.perf_counter() - start
    if status != 201:
        raise SystemExit(f"create {ns}/{name}: {status} {answer}")
    return took


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(api: Api, n: int) -> dict[str, list[float]]:
    series: dict[str, list[float]] = {"plain": [], "hooked": []}
    for i in range(n + 20):
        for ns in ("plain", "hooked"):
            took = create(api, ns, f"cm-{i}")
            if i >= 20:
                series[ns].append(took)
    return series


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    with EnvtestServer() as server, tempfile.TemporaryDirectory() as tmp:
        api = Api(server)
        for ns in ("plain", "hooked"):
            server.create_namespace(ns)
            api.call("PATCH", f"/api/v1/namespaces/{ns}", {"metadata": {"labels": {"bench": ns}}},
                     "application/merge-patch+json")
        port, probes = free_port(), free_port()
        for plural, body in configurations(port):
            api.call("POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", body)
        config = Path(tmp, "bench.yaml")
        config.write_text(CONFIG.format(port=port, probes=probes, service=SERVICE))
        log = Path(tmp, "kinrun.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "kinrun.cli", str(config),
                                 "--kubeconfig", server.kubeconfig_path],
                                stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "POD_NAMESPACE": "hooked"})
        try:
            wait(lambda: ready(probes) or proc.poll() is not None, "kinrun ready")
            if proc.poll() is not None:
                raise SystemExit("kinrun exited:\n" + Path(tmp, "kinrun.log").read_text())
            wait(lambda: api.call("GET", "/apis/admissionregistration.k8s.io/v1/"
                                         f"mutatingwebhookconfigurations/{SERVICE}")[1]
                 ["webhooks"][0]["clientConfig"].get("caBundle"), "the caBundle")
            wait(lambda: _mutated(api), "the webhooks in force")
            series = measure(api, n)
        finally:
            proc.terminate()
            proc.wait(30)
            log.close()
    report(series, n)


def _mutated(api: Api) -> bool:
    name = f"probe-{time.monotonic_ns()}"
    status, body = api.call("POST", "/api/v1/namespaces/hooked/configmaps",
                            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    return status == 201 and (body["metadata"].get("labels") or {}).get("kinrun-mutated") == "yes"


def report(series: dict[str, list[float]], n: int) -> None:
    plain, hooked = series["plain"], series["hooked"]
    rows = [("no webhook", plain), ("mutating + validating", hooked)]
    print(f"creates per series: {n} (sequential, one keep-alive connection; {os.cpu_count()} "
          "CPUs)")
    print(f"{'series':24} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
    for label, values in rows:
        print(f"{label:24} {percentile(values, .5) * 1e3:8.2f} {percentile(values, .99) * 1e3:8.2f} "
              f"{statistics.mean(values) * 1e3:8.2f}")
    print(f"added by the webhooks: p50 +{(percentile(hooked, .5) - percentile(plain, .5)) * 1e3:.2f} ms "
          f"(x{percentile(hooked, .5) / percentile(plain, .5):.2f}), p99 "
          f"+{(percentile(hooked, .99) - percentile(plain, .99)) * 1e3:.2f} ms "
          f"(x{percentile(hooked, .99) / percentile(plain, .99):.2f})")


if __name__ == "__main__":
    main()
