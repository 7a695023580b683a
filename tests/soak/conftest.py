"""Fixtures of the soak tier: one short fault soak per session, its result shared by the checks.

Every test under ``tests/soak/`` gets the ``soak`` marker (``-m "not soak"`` deselects the
tier). The soak restarts kube-apiserver and wipes etcd, so it runs on an EnvtestServer of its
own, never the session's shared ``envtest_server``. Skips with a visible reason when
``KUBEBUILDER_ASSETS`` is unset. ``scripts/soak`` runs the long one.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinrun.testing.envtest import ASSETS_ENV, EnvtestError, EnvtestServer, find_assets

from .driver import SoakParams, SoakResult, run_soak

SOAK_DIR = Path(__file__).parent

SHORT = SoakParams(steps=90, budget=75.0, restarts=1, wipes=1, settle_timeout=60.0,
                   backoff_gap=25.0)
"""CI's short soak: about 2-3 minutes on two cores, restart and wipe included."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test collected under tests/soak/ with ``soak``."""
    for item in items:
        if SOAK_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.soak)


@pytest.fixture(scope="session")
def soak_result() -> Iterator[SoakResult]:
    """The short soak's result (run once); skips when the envtest assets are absent."""
    if not os.environ.get(ASSETS_ENV):
        pytest.skip("soak: KUBEBUILDER_ASSETS not set; run scripts/envtest-assets.sh")
    try:
        find_assets()
    except EnvtestError as err:
        pytest.skip(f"soak: {err}")
    with EnvtestServer() as server:
        result = run_soak(server, SHORT)
    print(result.summary())
    yield result
