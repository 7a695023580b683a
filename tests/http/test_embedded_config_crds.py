"""``kinrun CONFIG --embedded`` serves the config's ``crds:`` at once (their CRDs only, before
the seeds; a CRD seeded too is loaded once), so an example with its own kind runs with no
kubectl step."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from kinrun.app import _cluster_access
from kinrun.config import load_text
from kinrun.config.options import RunOptions
from kinrun.kube import Client
from kinrun.spine.settings import run_settings

ROOT = Path(__file__).resolve().parents[2]


def test_embedded_serves_the_configs_crds(tmp_path: Path) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    (crds / "app.yaml").write_text((ROOT / "examples" / "crds" / "webapplication.yaml").read_text()
                                   + "---\napiVersion: v1\nkind: ConfigMap\n"
                                     "metadata: {name: not-a-crd, namespace: default}\n")
    config = load_text("""\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
crds: [crds]
informers: {apps: {apiVersion: example.com/v1alpha1, kind: WebApplication}}
controllers: [{name: c, for: apps, reconcile: {actions: [{log: x}]}}]
""", file=str(tmp_path / "c.yaml"), base_dir=tmp_path)
    settings = run_settings(config, RunOptions(config_path=tmp_path / "c.yaml", embedded=True,
                                               seeds=(crds / "app.yaml",)))
    assert settings.crds == (crds,)
    with contextlib.ExitStack() as stack:
        kubeconfig, _ = _cluster_access(settings, stack, threading.Event())
        with Client.from_config(kubeconfig=kubeconfig) as client:
            assert client.resolve("example.com/v1alpha1", "WebApplication").resource == \
                "webapplications"
            names = [cm["metadata"]["name"] for cm in client.lister_watcher(
                client.resolve("v1", "ConfigMap"), namespace="default").list().items]
    assert names.count("not-a-crd") == 1  # from the seed; the crds: entry gave its CRD only
