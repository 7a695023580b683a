"""`kinrun init NAME`: a folder that validates, whose cases pass, whose deploy base is current
and builds, and whose CI check passes; nothing overwritten; `kinrun help` and `kinrun version`
are commands, not config paths."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kinrun import __version__

BIN = Path(sys.executable).parent


def kinrun(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kinrun.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("init")
    made = kinrun("init", "demo", cwd=where)
    assert made.returncode == 0, made.stderr
    return where / "demo"


def test_init_writes_a_config_that_validates_and_cases_that_pass(project: Path) -> None:
    """validate says ok; every scaffolded case passes under `kinrun test`."""
    assert kinrun("validate", "demo.yaml", cwd=project).stdout == "demo.yaml: ok\n"
    tested = kinrun("test", "tests/demo.test.yaml", cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "3 passed" in tested.stdout


def test_the_ci_check_passes_and_catches_a_stale_base(project: Path, tmp_path: Path) -> None:
    """ci/kinrun-check.sh passes as made; after a config change without regenerating the
    base (the config is in the base's ConfigMap) it fails, naming the command that fixes it."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    check = subprocess.run(["sh", "ci/kinrun-check.sh"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    copy = tmp_path / "demo"
    shutil.copytree(project, copy)
    config = copy / "demo.yaml"
    config.write_text(config.read_text() + "# a change the ConfigMap of the base must carry\n")
    stale = subprocess.run(["sh", "ci/kinrun-check.sh"], cwd=copy, env=env,
                           capture_output=True, text=True, timeout=300)
    assert stale.returncode != 0 and "deploy/base is stale" in stale.stderr


def test_the_overlay_builds_with_kubectl(project: Path) -> None:
    """kubectl kustomize deploy/ builds the Namespace, RBAC, ConfigMap and Deployment."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("no kubectl on PATH")
    built = subprocess.run([kubectl, "kustomize", "deploy"], cwd=project, capture_output=True,
                           text=True, timeout=60)
    assert built.returncode == 0, built.stderr
    for kind in ("Namespace", "ServiceAccount", "ClusterRole", "ConfigMap", "Deployment"):
        assert f"kind: {kind}\n" in built.stdout


def test_init_never_overwrites(project: Path) -> None:
    """An existing non-empty folder: exit 2, nothing written."""
    before = sorted(p.read_bytes() for p in project.rglob("*") if p.is_file())
    again = kinrun("init", "demo", cwd=project.parent)
    assert again.returncode == 2 and "not an empty folder" in again.stderr
    assert sorted(p.read_bytes() for p in project.rglob("*") if p.is_file()) == before


def test_init_refuses_a_name_that_is_not_a_dns_label(tmp_path: Path) -> None:
    """A name with capitals or underscores cannot name a Deployment: exit 2."""
    bad = kinrun("init", "My_Controller", cwd=tmp_path)
    assert bad.returncode == 2 and "DNS-1123" in bad.stderr
    assert not any(tmp_path.iterdir())


def test_help_and_version_are_commands(tmp_path: Path) -> None:
    """`kinrun version` prints the version; `kinrun help` the run's help with the commands;
    `kinrun help rbac` that command's; neither is read as a config path."""
    assert kinrun("version", cwd=tmp_path).stdout == f"kinrun {__version__}\n"
    helped = kinrun("help", cwd=tmp_path)
    assert helped.returncode == 0 and "init NAME" in helped.stdout
    assert kinrun("help", "rbac", cwd=tmp_path).stdout.startswith("usage: kinrun rbac")
    unknown = kinrun("help", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown command 'nope'" in unknown.stderr
