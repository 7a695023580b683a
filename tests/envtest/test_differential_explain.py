"""Differential test of ``/openapi/v2``'s protobuf form (kinrun.testing.apiserver.openapi_proto):
kubectl 1.20, which reads only that form, explains built-in kinds and validates a manifest
client-side against the embedded server as against kube-apiserver 1.20."""

from __future__ import annotations

import os
import subprocess
from typing import Any

import pytest

from kinrun.testing.envtest import EnvtestServer

KUBECTL_120 = os.environ.get("KINRUN_KUBECTL_120", "/var/cache/kinrun/kubectl-1.20/kubectl")
pytestmark = pytest.mark.skipif(not os.access(KUBECTL_120, os.X_OK),
                                reason=f"kubectl 1.20 not found ({KUBECTL_120})")
BAD_CONFIGMAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\nbogus: 1\n"


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    done = subprocess.run([KUBECTL_120, "--kubeconfig", kubeconfig, *args], input=stdin,
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("args", [
    pytest.param(("explain", "deployment.spec"), id="explain-deployment-spec"),
    pytest.param(("explain", "pods.spec.containers.resources"), id="explain-nested"),
    pytest.param(("explain", "service", "--recursive"), id="explain-recursive"),
    pytest.param(("explain", "configmap.nothing"), id="explain-missing-field"),
    pytest.param(("create", "--dry-run=client", "-o", "name", "-f", "-"),
                 id="client-side-validation"),
])
def test_kubectl_120_reads_the_protobuf_openapi(envtest_server: EnvtestServer,
                                                embedded_for_diff: Any, args: tuple[str, ...]
                                                ) -> None:
    """kubectl 1.20's explain and client-side validation answer the same from both."""
    stdin = BAD_CONFIGMAP if "-f" in args else None
    real = kubectl(envtest_server.kubeconfig_path, *args, stdin=stdin)
    embedded = kubectl(embedded_for_diff.kubeconfig_path, *args, stdin=stdin)
    assert embedded == real
    assert (real[0] == 0) is args[1].startswith(("deployment", "pods", "service"))
