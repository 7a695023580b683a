"""A stop signal while ``--embedded`` is still loading its seeds stops the run there: exit 0,
no `export KUBECONFIG`, well within the drain bound (it used to go on seeding and be killed by
the exit deadline, exit 1)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.e2e.harness import WAIT, KinrunProcess

pytestmark = pytest.mark.e2e

POD = ("---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: default}}\n"
       "spec: {{containers: [{{name: a, image: b}}]}}\n")


def _embedded_server_dirs(tmp: Path) -> set[Path]:
    return set(tmp.glob("kinrun-apiserver-*"))


def test_sigterm_while_seeding_stops_before_the_run(tmp_path: Path) -> None:
    """SIGTERM once the embedded server exists and seeding is under way: exit 0 quickly."""
    seeds = tmp_path / "many.yaml"
    seeds.write_text("".join(POD.format(i=i) for i in range(20000)))
    private = tmp_path / "tmp"  # this process's own: other runs' servers do not count
    private.mkdir()
    proc = KinrunProcess(["examples/configs/pod-logger.yaml", "--embedded", "--seed", str(seeds),
                          "--drain-timeout", "2s"], env={"TMPDIR": str(private)})
    deadline = time.monotonic() + WAIT
    while not _embedded_server_dirs(private):  # the server starts after the seeds are parsed
        assert time.monotonic() < deadline and proc.proc.poll() is None, proc.log()
        time.sleep(0.05)
    started = time.monotonic()
    code = proc.stop(signal.SIGTERM)
    assert code == 0, proc.log()
    assert time.monotonic() - started < 7.0, proc.log()  # drain 2 s + the 5 s exit slack
    assert "stopping before the run started" in proc.log()
    assert "export KUBECONFIG" not in proc.log()
