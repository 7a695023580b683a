"""kinrun manifests: the image in kustomization's images:, a PodDisruptionBudget with more
than one replica, and the opt-in Namespace, ServiceMonitor, PrometheusRule, NetworkPolicy."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kinrun.config import load
from kinrun.errors import ConfigError
from kinrun.manifests import Names, image_entry, write_base

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  pods: {apiVersion: v1, kind: Pod}
controllers: [{name: c, for: pods, reconcile: {actions: [{log: hi}]}}]
"""
LEADER = "leaderElection: {leaseName: c, namespace: ops}\n"
METRICS = "metrics: {port: 9090}\n"


def base(tmp_path: Path, extra: str = "", **kwargs) -> dict[str, list[dict]]:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG + extra)
    config = load(path)
    out = tmp_path / "out"
    write_base(config, out, Names.for_config(path, namespace="ops"), **kwargs)
    return {p.name: [d for d in yaml.safe_load_all(p.read_text()) if d]
            for p in out.iterdir()}


def test_the_image_is_one_images_entry_of_the_kustomization(tmp_path: Path) -> None:
    """The Deployment names the image; kustomization.yaml's images: entry names the same
    repository, so an overlay changes it in one place."""
    files = base(tmp_path, image="registry.example.com:5000/team/kinrun:1.2.3")
    (kust,) = files["kustomization.yaml"]
    (dep,) = files["deployment.yaml"]
    image = dep["spec"]["template"]["spec"]["containers"][0]["image"]
    assert kust["images"] == [{"name": "registry.example.com:5000/team/kinrun",
                               "newName": "registry.example.com:5000/team/kinrun",
                               "newTag": "1.2.3"}]
    assert image.startswith(kust["images"][0]["name"] + ":")


@pytest.mark.parametrize("image,entry", [
    ("localhost/kinrun", {"name": "localhost/kinrun", "newName": "localhost/kinrun"}),
    ("r:5000/k@sha256:ab", {"name": "r:5000/k", "newName": "r:5000/k", "digest": "sha256:ab"}),
])
def test_image_entry_reads_ports_and_digests(image: str, entry: dict) -> None:
    """A registry port is not a tag; a digest is kept as digest."""
    assert image_entry(image) == entry


@pytest.mark.parametrize("version,api", [((1, 25), "policy/v1"), ((1, 20), "policy/v1beta1")])
def test_more_than_one_replica_gets_a_disruption_budget(tmp_path: Path, version, api) -> None:
    """Two replicas (leader election): a PDB with maxUnavailable 1 selecting the pods."""
    files = base(tmp_path, LEADER, kubernetes_version=version)
    (pdb,) = files["pdb.yaml"]
    (dep,) = files["deployment.yaml"]
    assert pdb["apiVersion"] == api and pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"] == dep["spec"]["selector"]
    assert "pdb.yaml" in files["kustomization.yaml"][0]["resources"]


def test_one_replica_gets_no_disruption_budget(tmp_path: Path) -> None:
    """A single replica: a PDB would block every drain."""
    assert "pdb.yaml" not in base(tmp_path)


def test_extras_are_written_and_listed(tmp_path: Path) -> None:
    """--with namespace,monitoring,network-policy: the Namespace, a ServiceMonitor on the
    metrics Service, alerts including KinrunNoLeader with leader election, and a
    NetworkPolicy for the metrics port."""
    files = base(tmp_path, LEADER + METRICS,
                 extras=["namespace", "monitoring", "network-policy"])
    assert files["namespace.yaml"][0]["metadata"]["name"] == "ops"
    (sm,) = files["servicemonitor.yaml"]
    (svc,) = files["service.yaml"]
    assert sm["spec"]["selector"]["matchLabels"] == svc["metadata"]["labels"]
    assert sm["spec"]["endpoints"][0]["port"] == svc["spec"]["ports"][0]["name"]
    alerts = {r["alert"] for r in files["prometheusrule.yaml"][0]["spec"]["groups"][0]["rules"]}
    assert {"KinrunReconcileErrors", "KinrunWorkqueueGrowing", "KinrunWorkerStuck",
            "KinrunNoLeader", "KinrunConfigReloadFailed", "KinrunDown"} == alerts
    (np,) = files["networkpolicy.yaml"]
    assert np["spec"]["ingress"][0]["ports"] == [{"port": 9090, "protocol": "TCP"}]
    listed = files["kustomization.yaml"][0]["resources"]
    assert listed[0] == "namespace.yaml" and {"servicemonitor.yaml", "prometheusrule.yaml",
                                              "networkpolicy.yaml"} <= set(listed)


def test_monitoring_needs_a_metrics_port(tmp_path: Path) -> None:
    """Without metrics: there is nothing to scrape: refused, naming metrics."""
    with pytest.raises(ConfigError, match="needs metrics:"):
        base(tmp_path, extras=["monitoring"])


def test_an_unknown_extra_is_refused(tmp_path: Path) -> None:
    """A typo in --with is an error listing the choices."""
    with pytest.raises(ConfigError, match="not one of namespace, monitoring, network-policy"):
        base(tmp_path, extras=["monitorin"])


def test_the_config_hash_never_reads_as_a_number_unquoted() -> None:
    """kustomize v2 (kubectl 1.20) writes an annotation back unquoted: a hash of digits and
    one ``e`` (``8445305134492e96``, about one in 800) became a number the API server
    refused. Over files whose hashes are such, the value stays a string when unquoted."""
    from kinrun.config import load_text
    from kinrun.manifests import deployment

    config = load_text(CONFIG, file="c.yaml")
    names = Names.for_config(Path("c.yaml"), namespace="ops")
    numeric = 0
    for i in range(4000):
        digest = deployment(config, names, {"c.yaml": f"# {i}\n"}, "kinrun:dev", 1)[
            "spec"]["template"]["metadata"]["annotations"]["kinrun.dev/config-hash"]
        assert isinstance(yaml.safe_load(digest), str), digest
        numeric += not isinstance(yaml.safe_load(digest.rpartition(":")[2]), str)
    assert numeric     # the hex part alone does read as a number for some of these files
