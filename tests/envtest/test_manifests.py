"""``kinrun manifests`` bases build with kustomize v2.0.3 (Debian's kubectl 1.20) and with the
current kustomize (no deprecation warning), and every object passes ``kubectl apply
--dry-run=server`` on the real kube-apiserver (admission and validation, nothing stored).

kubectl 1.20 is looked up in ``KINRUN_KUBECTL_120``, else ``/var/cache/kinrun/kubectl-1.20``
(``apt-get download kubernetes-client`` and ``dpkg-deb -x``: it conflicts with other kubectl
packages), else skipped with the reason; the current one is ``kubectl`` on PATH.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kinrun.testing.configmap_volume import write_configmap_volume
from kinrun.testing.envtest import EnvtestError, EnvtestServer

ROOT = Path(__file__).resolve().parents[2]
KUBECTL_120 = os.environ.get("KINRUN_KUBECTL_120", "/var/cache/kinrun/kubectl-1.20/kubectl")
LEADER_METRICS = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
plugins: [./../../examples/plugins/pods_by_node.py]
informers:
  pods: {apiVersion: v1, kind: Pod, indexers: {byNode: {plugin: true}}}
controllers: [{name: c, for: pods, reconcile: {hooks: true}}]
leaderElection: {leaseName: c, namespace: NS}
metrics: {port: 9090}
shutdown: {drainTimeout: 20s}
"""


def kubectls() -> list[pytest.param]:
    found = []
    for label, path in (("kubectl-1.20", KUBECTL_120), ("kubectl", shutil.which("kubectl"))):
        marks = () if path and os.access(path, os.X_OK) else pytest.mark.skip(
            reason=f"{label} not found ({path})")
        found.append(pytest.param(path or "", id=label, marks=marks))
    return found


def bases(tmp_path: Path, namespace: str) -> dict[str, Path]:
    """The committed example overlay, and a fresh base of a config with leader election,
    metrics and a plugin file."""
    config_dir = tmp_path / "cfg" / "x"
    config_dir.mkdir(parents=True)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    config = config_dir / "leader.yaml"
    config.write_text(LEADER_METRICS.replace("NS", namespace))
    out = tmp_path / "base"
    subprocess.run([sys.executable, "-m", "kinrun.cli", "manifests", str(config), "-o", str(out),
                    "--namespace", namespace, "--kubernetes-version", "1.20"],  # the test server's
                   check=True, capture_output=True, cwd=ROOT)
    return {"overlay": ROOT / "examples" / "deploy", "leader": out}


@pytest.mark.parametrize("kubectl", kubectls())
def test_bases_build_and_pass_server_dry_run(kubectl: str, envtest_server: EnvtestServer,
                                             envtest_namespace: str, tmp_path: Path) -> None:
    """kubectl kustomize DIR succeeds without warnings; apply --dry-run=server accepts all."""
    for label, folder in bases(tmp_path, envtest_namespace).items():
        built = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True,
                               text=True, timeout=60)
        assert built.returncode == 0, (label, built.stderr)
        assert "warning" not in built.stderr.lower(), (label, built.stderr)
        docs = [d for d in yaml.safe_load_all(built.stdout) if d]
        kinds = sorted(d["kind"] for d in docs)
        if label == "leader":
            deployment = next(d for d in docs if d["kind"] == "Deployment")
            pod = deployment["spec"]["template"]["spec"]
            assert deployment["spec"]["replicas"] == 2
            assert pod["terminationGracePeriodSeconds"] > 20 + 5
            assert pod["securityContext"]["runAsNonRoot"] is True
            assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
            assert "Service" in kinds
            cm = next(d for d in docs if d["kind"] == "ConfigMap")
            assert set(cm["data"]) == {"leader.yaml", "pods_by_node.py"}
            assert "./pods_by_node.py" in cm["data"]["leader.yaml"]
        # the example's base targets namespace kinrun-demo: dry-run it in the test's own
        text = built.stdout.replace("kinrun-demo", envtest_namespace)
        applied = subprocess.run([kubectl, "--kubeconfig", envtest_server.kubeconfig_path,
                                  "apply", "--dry-run=server", "-f", "-"], input=text,
                                 capture_output=True, text=True, timeout=120)
        assert applied.returncode == 0, (label, applied.stderr)
        assert applied.stdout.count("(server dry run)") == len(docs), applied.stdout


EXAMPLE_CONFIGS = sorted(p.name for p in (ROOT / "examples" / "configs").glob("*.yaml"))


@pytest.mark.parametrize("example", EXAMPLE_CONFIGS)
def test_every_example_base_is_made_offline_and_passes_server_dry_run(
        example: str, envtest_server: EnvtestServer, envtest_namespace: str,
        tmp_path: Path) -> None:
    """`kinrun manifests` of each example needs no cluster (CRD kinds through crds:), and the
    base it writes passes kubectl apply --dry-run=server."""
    kubectl = shutil.which("kubectl") or KUBECTL_120
    if not os.access(kubectl, os.X_OK):
        pytest.skip("no kubectl")
    out = tmp_path / "base"
    made = subprocess.run([sys.executable, "-m", "kinrun.cli", "manifests",
                           f"examples/configs/{example}", "-o", str(out), "--namespace",
                           envtest_namespace, "--kubernetes-version", "1.20"],
                          capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={**os.environ, "KUBECONFIG": "/nonexistent"})
    assert made.returncode == 0, made.stderr
    built = subprocess.run([kubectl, "kustomize", str(out)], capture_output=True, text=True,
                           timeout=60)
    assert built.returncode == 0, built.stderr
    docs = [d for d in yaml.safe_load_all(built.stdout) if d]
    for ns in {d["metadata"].get("namespace") for d in docs} - {None, envtest_namespace}:
        try:  # a namespace the config names; made once per server
            envtest_server.create_namespace(ns)
        except EnvtestError as exc:
            assert "409" in str(exc) or "AlreadyExists" in str(exc), exc
    applied = subprocess.run([kubectl, "--kubeconfig", envtest_server.kubeconfig_path, "apply",
                              "--dry-run=server", "-f", "-"], input=built.stdout,
                             capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("(server dry run)") == len(docs), applied.stdout


def _monitoring_crd(kind: str, plural: str) -> dict:
    """A stand-in for the Prometheus Operator's CRD (not on the test server): its group,
    names and scope, any content (the operator's own schema is not ours to copy)."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.monitoring.coreos.com"},
            "spec": {"group": "monitoring.coreos.com", "scope": "Namespaced",
                     "names": {"kind": kind, "plural": plural, "listKind": f"{kind}List",
                               "singular": kind.lower()},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_extras_pass_server_dry_run_on_1_20(envtest_server: EnvtestServer,
                                            envtest_namespace: str, tmp_path: Path) -> None:
    """--with namespace,monitoring,network-policy and a PDB (policy/v1beta1 for 1.20): every
    object passes kubectl apply --dry-run=server."""
    kubectl = shutil.which("kubectl") or KUBECTL_120
    crds = "---\n".join(yaml.safe_dump(_monitoring_crd(k, p)) for k, p in (
        ("ServiceMonitor", "servicemonitors"), ("PrometheusRule", "prometheusrules")))
    subprocess.run([kubectl, "--kubeconfig", envtest_server.kubeconfig_path, "apply", "-f", "-"],
                   input=crds, check=True, capture_output=True, text=True, timeout=60)
    subprocess.run([kubectl, "--kubeconfig", envtest_server.kubeconfig_path, "wait",
                    "--for=condition=Established", "--timeout=60s",
                    "crd/servicemonitors.monitoring.coreos.com",
                    "crd/prometheusrules.monitoring.coreos.com"], check=True, capture_output=True)
    config = tmp_path / "leader.yaml"
    config.write_text(LEADER_METRICS.replace("NS", envtest_namespace)
                      .replace("./../../examples", str(ROOT / "examples")))
    out = tmp_path / "base"
    subprocess.run([sys.executable, "-m", "kinrun.cli", "manifests", str(config), "-o", str(out),
                    "--namespace", envtest_namespace, "--with", "namespace,monitoring",
                    "--with", "network-policy", "--kubernetes-version", "1.20"],
                   check=True, capture_output=True, cwd=ROOT)
    built = subprocess.run([kubectl, "kustomize", str(out)], capture_output=True, text=True,
                           timeout=60, check=True)
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(built.stdout) if d)
    assert {"Namespace", "PodDisruptionBudget", "ServiceMonitor", "PrometheusRule",
            "NetworkPolicy"} <= set(kinds)
    applied = subprocess.run([kubectl, "--kubeconfig", envtest_server.kubeconfig_path, "apply",
                              "--dry-run=server", "-f", "-"], input=built.stdout,
                             capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.count("(server dry run)") == len(kinds), applied.stdout


def test_the_configmap_the_server_stores_has_the_crds_the_config_names(
        envtest_server: EnvtestServer, envtest_namespace: str, tmp_path: Path) -> None:
    """sample-controller's base (``crds: [../crds/foo.yaml]``): the ConfigMap as kube-apiserver
    answers its apply, laid out as kubelet mounts it, is a config that validates (its crds:
    files are there), where the pod used to exit 2 (no such CRD file)."""
    kubectl = shutil.which("kubectl") or KUBECTL_120
    if not os.access(kubectl, os.X_OK):
        pytest.skip("no kubectl")
    out = tmp_path / "base"
    subprocess.run([sys.executable, "-m", "kinrun.cli", "manifests",
                    "examples/configs/sample-controller.yaml", "-o", str(out), "--namespace",
                    envtest_namespace, "--kubernetes-version", "1.20"],
                   check=True, capture_output=True, cwd=ROOT, timeout=120)
    applied = subprocess.run([kubectl, "--kubeconfig", envtest_server.kubeconfig_path, "apply",
                              "--dry-run=server", "-o", "yaml", "-f", str(out / "configmap.yaml")],
                             capture_output=True, text=True, timeout=120)
    assert applied.returncode == 0, applied.stderr
    data = yaml.safe_load(applied.stdout)["data"]
    assert set(data) == {"sample-controller.yaml", "foo.yaml"}
    volume = tmp_path / "config"
    write_configmap_volume(volume, data)
    valid = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate",
                            str(volume / "sample-controller.yaml")],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert valid.returncode == 0, valid.stderr
