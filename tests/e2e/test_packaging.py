"""The built wheel carries what a user installs: the licence, the schemas, the console script."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "--disable-pip-version-check", "-w", str(out), str(ROOT)],
                   check=True, timeout=600)
    (path,) = out.glob("kinrun-*.whl")
    return zipfile.ZipFile(path)


def _metadata(wheel: zipfile.ZipFile) -> dict:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    return Parser().parsestr(wheel.read(name).decode())


def test_wheel_ships_the_apache_licence(wheel: zipfile.ZipFile) -> None:
    """The LICENSE file is in the wheel, and the metadata names Apache-2.0 and the file."""
    licences = [n for n in wheel.namelist() if n.endswith("licenses/LICENSE")]
    assert licences, wheel.namelist()
    assert b"Apache License" in wheel.read(licences[0])
    meta = _metadata(wheel)
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["License-File"] == "LICENSE"


def test_wheel_metadata_is_complete(wheel: zipfile.ZipFile) -> None:
    """Classifiers and keywords are set; the schemas ship as package data."""
    meta = _metadata(wheel)
    assert any(c.startswith("Development Status") for c in meta.get_all("Classifier"))
    assert "kubernetes" in meta["Keywords"]
    assert any(n.startswith("kinrun/schemas/") and n.endswith(".json") for n in wheel.namelist())
