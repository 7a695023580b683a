"""Every command of the README and of the docs pages (docs/*.md) runs as written (from the repo
root, through bash), and the README's example config and the hook plugin of docs/plugins.md
work."""

from __future__ import annotations

import glob
import re
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from .harness import ROOT, WAIT, KinrunProcess

pytestmark = pytest.mark.e2e

README = ROOT / "README.md"
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))  # the README first


def blocks(lang: str, pages: tuple[Path, ...] = PAGES) -> list[str]:
    """The fenced code blocks of language ``lang`` of ``pages``, in order."""
    return [block for page in pages for block in
            re.findall(rf"^```{lang}\n(.*?)^```", page.read_text(), flags=re.S | re.M)]


def commands(pages: tuple[Path, ...] = PAGES) -> list[str]:
    return [ln.strip() for block in blocks("sh", pages) for ln in block.splitlines()
            if ln.strip() and not ln.lstrip().startswith("#")]


def shell(command: str, env: dict[str, str] | None = None) -> KinrunProcess:
    """A docs command run through bash, its output collected like kinrun's."""
    return KinrunProcess(argv=["bash", "-c", f"exec {command}"], env=env)


def run_to_end(command: str) -> str:
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True,
                          timeout=WAIT)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return done.stdout


def test_readme_lists_the_two_setup_commands_first() -> None:
    """The README's first two commands are the main job on the embedded server, then the tests."""
    first, second = commands((README,))[:2]
    assert first.startswith("scripts/kinrun ") and "--embedded" in first
    assert second == "scripts/test"
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_readme_main_job_command_runs_the_pod_logger_on_the_embedded_server() -> None:
    """The first README command logs the seeded pod, prints the kubeconfig export, exits 0 on Ctrl-C."""
    proc = shell(commands((README,))[0])
    try:
        proc.wait_for(r"^export KUBECONFIG=/")
        proc.wait_for(r"Sync/Add/Update for Pod mypod$")
        assert proc.stop(signal.SIGINT) == 0
    finally:
        proc.kill()


@pytest.mark.parametrize("command", [c for c in commands()
                                     if re.match(r"scripts/kinrun (validate|render|plugins) ", c)])
def test_readme_one_shot_command_succeeds(command: str) -> None:
    """A docs command that runs to the end (validate, render, plugins) exits 0 with output."""
    out = run_to_end(command)
    assert out.strip()
    if " validate " in command:
        # one "FILE: ok" per file; a sharded config adds a line per informer it shards
        lines = out.strip().splitlines()
        assert all(line.endswith(": ok") or ": sharding " in line for line in lines), out
        files = {arg for pattern in command.split()[2:] for arg in glob.glob(pattern, root_dir=ROOT)}
        assert {line[:-len(": ok")] for line in lines if line.endswith(": ok")} == files


def test_readme_real_cluster_command_runs_against_a_real_apiserver(envtest_server) -> None:
    """The real-cluster command (docs/deploying.md), with KUBECONFIG pointing at envtest, starts
    the controller."""
    command = next(c for c in commands() if "--namespace default" in c)
    proc = shell(command, env={"KUBECONFIG": envtest_server.kubeconfig_path})
    try:
        proc.wait_for(r"controller pod-logger started with 1 worker")
        assert proc.stop() == 0
    finally:
        proc.kill()


def test_readme_config_example_validates_and_renders(tmp_path: Path) -> None:
    """The README's example config is valid and renders an owned child for a labelled ConfigMap."""
    (tmp_path / "config.yaml").write_text(blocks("yaml", (README,))[0])
    run_to_end(f"scripts/kinrun validate {tmp_path}/config.yaml")
    out = run_to_end(f"scripts/kinrun render {tmp_path}/config.yaml "
                     f"--object examples/objects/settings-configmap.yaml -o yaml")
    (request,) = yaml.safe_load(out)
    assert request["verb"] == "apply" and request["name"] == "settings-child"
    assert request["body"]["metadata"]["ownerReferences"][0]["name"] == "settings"


def test_readme_hook_plugin_loads_and_implements_reconcile(tmp_path: Path) -> None:
    """The hook plugin of docs/plugins.md loads from a file path and implements kinrun_reconcile."""
    (tmp_path / "hooks.py").write_text(blocks("python", (ROOT / "docs" / "plugins.md",))[0])
    (tmp_path / "config.yaml").write_text(
        "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\nplugins: [./hooks.py]\n"
        "informers:\n  pods: {apiVersion: v1, kind: Pod}\n"
        "controllers:\n  - {name: c, for: pods, reconcile: {hooks: true}}\n")
    out = run_to_end(f"scripts/kinrun plugins {tmp_path}/config.yaml")
    assert "kinrun_reconcile" in out
