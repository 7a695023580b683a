"""Fixtures shared by every test tier: the envtest control plane (real kube-apiserver + etcd).

- ``envtest_server`` (session): a started ``kinrun.testing.envtest.EnvtestServer``, shared by
  the whole run; skips with a visible reason when ``KUBEBUILDER_ASSETS`` is unset or lacks
  a binary (``scripts/envtest-assets.sh`` makes them).
- ``envtest_namespace`` (function): a fresh namespace on that server, named after the test.
  No controller-manager runs, so namespaces never finish deleting: each test gets its own and
  cleans up the objects it made, not the namespace.
- ``kinrun.testing.envtest.unique_namespace_name(test_name)``: the naming rule, for tests
  that create namespaces themselves (for instance on two servers at once).

Tests under ``tests/envtest/`` get the ``envtest`` marker automatically (``-m "not envtest"``
deselects the tier). Fixtures for the embedded API server live in ``tests/http/conftest.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinrun.testing.envtest import (ASSETS_ENV, EnvtestError, EnvtestServer, find_assets,
                                    unique_namespace_name)

ENVTEST_DIR = Path(__file__).parent / "envtest"
ENVTEST_SKIP = "envtest: KUBEBUILDER_ASSETS not set; run scripts/envtest-assets.sh"


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``envtest`` marker (also in pyproject) and silence the expected TLS warning."""
    config.addinivalue_line("markers", "envtest: needs a real kube-apiserver + etcd "
                                       "(KUBEBUILDER_ASSETS)")
    # envtest's kube-apiserver serves a self-signed certificate on loopback, by design.
    config.addinivalue_line("filterwarnings",
                            "ignore::urllib3.exceptions.InsecureRequestWarning")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test collected under tests/envtest/ with ``envtest``."""
    for item in items:
        if ENVTEST_DIR in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.envtest)


@pytest.fixture(scope="session")
def envtest_server() -> Iterator[EnvtestServer]:
    """A running kube-apiserver + etcd for the whole session; skips when the assets are absent."""
    if not os.environ.get(ASSETS_ENV):
        pytest.skip(ENVTEST_SKIP)
    try:
        find_assets()
    except EnvtestError as err:
        pytest.skip(f"envtest: {err}")
    with EnvtestServer() as server:
        yield server


@pytest.fixture
def envtest_namespace(envtest_server: EnvtestServer, request: pytest.FixtureRequest) -> str:
    """A namespace created for this test on the envtest server (never deleted; see module doc)."""
    name = unique_namespace_name(request.node.name)
    envtest_server.create_namespace(name)
    return name


@pytest.fixture(autouse=True)
def _restore_root_logging() -> Iterator[None]:
    """Undo what a test's in-process ``kinrun.cli.main`` did to the root logger: its handler
    writes to the test's captured stderr, which pytest closes after the test, so a later
    thread's log line would fail ("--- Logging error --- I/O operation on closed file")."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)
