"""Fixtures for the http tier: the embedded API server and a ``kubernetes`` client for it.

- ``embedded_server`` (function): a fresh ``EmbeddedAPIServer`` (own port, own kubeconfig,
  namespaces default/kube-system/kube-public/kube-node-lease); start-up takes milliseconds.
- ``shared_embedded_server`` (session): one server for tests that only read or use their own
  namespaces; never inject faults on it.
- ``embedded_api_client`` (function): a ``kubernetes.client.ApiClient`` built from
  ``embedded_server``'s kubeconfig, closed afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator

import kubernetes
import pytest

from kinrun.testing.apiserver import EmbeddedAPIServer


@pytest.fixture
def embedded_server() -> Iterator[EmbeddedAPIServer]:
    """A started embedded API server for one test (bookmarks every 60 s unless changed)."""
    with EmbeddedAPIServer() as server:
        yield server


@pytest.fixture(scope="session")
def shared_embedded_server() -> Iterator[EmbeddedAPIServer]:
    """One embedded API server for the whole session (do not inject faults on it)."""
    with EmbeddedAPIServer() as server:
        yield server


@pytest.fixture
def embedded_api_client(embedded_server: EmbeddedAPIServer) -> Iterator[kubernetes.client.ApiClient]:
    """A ``kubernetes`` ApiClient for ``embedded_server``, from the kubeconfig it wrote."""
    client = kubernetes.config.new_client_from_config(config_file=embedded_server.kubeconfig_path)
    try:
        yield client
    finally:
        client.close()
