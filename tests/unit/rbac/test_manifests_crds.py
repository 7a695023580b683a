"""kinrun manifests ships the config's ``crds:`` files in the ConfigMap, named as the shipped
config names them, so the pod reads the same CRDs as ``kinrun rbac``/``validate`` offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kinrun.config import load
from kinrun.errors import ConfigError
from kinrun.manifests import Names, write_base
from kinrun.rbac import config_crds

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
crds: [{crds}]
informers:
  foos: {{apiVersion: example.com/v1, kind: Foo}}
controllers: [{{name: c, for: foos, reconcile: {{actions: [{{log: hi}}]}}}}]
"""
CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: foos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Foo, plural: foos, singular: foo}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema: {openAPIV3Schema: {type: object}}
"""


def config_map(tmp_path: Path, crds: str) -> dict[str, str]:
    """The ConfigMap data ``kinrun manifests`` writes for CONFIG with ``crds: [crds]``."""
    path = tmp_path / "repo" / "c.yaml"
    path.write_text(CONFIG.format(crds=crds))
    out = tmp_path / "out"
    write_base(load(path), out, Names.for_config(path, namespace="ops"))
    (cm,) = [d for d in yaml.safe_load_all((out / "configmap.yaml").read_text()) if d]
    return cm["data"]


def mounted(tmp_path: Path, data: dict[str, str]) -> Path:
    """``data`` as the pod sees it: one file per key in /config (a fresh folder)."""
    folder = tmp_path / "config"
    folder.mkdir()
    for key, text in data.items():
        (folder / key).write_text(text)
    return folder / "c.yaml"


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    (tmp_path / "repo" / "deploy" / "crds").mkdir(parents=True)
    (tmp_path / "repo" / "deploy" / "crds" / "foo.yaml").write_text(CRD)
    return tmp_path / "repo"


@pytest.mark.parametrize("crds", ["deploy/crds/foo.yaml", "deploy/crds", "./deploy/crds/"],
                         ids=["file", "folder", "folder-slash"])
def test_the_pod_reads_the_crds_the_config_names(tmp_path: Path, repo: Path,
                                                 crds: str) -> None:
    """In the mounted ConfigMap the shipped config's crds: name files that are there, and
    they give the Foo CRD (its plural, scope and status subresource) as offline."""
    data = config_map(tmp_path, crds)
    assert data["foo.yaml"] == CRD
    found = config_crds(load(mounted(tmp_path, data))).lookup("example.com/v1", "Foo")
    assert found is not None
    assert (found.plural, found.namespaced, found.status_subresource) == ("foos", True, True)


def test_a_crd_file_named_as_the_config_is_refused(tmp_path: Path, repo: Path) -> None:
    """Two shipped files with one name cannot share the flat ConfigMap."""
    (repo / "deploy" / "c.yaml").write_text(CRD)
    with pytest.raises(ConfigError, match="two files named c.yaml"):
        config_map(tmp_path, "deploy/c.yaml")
