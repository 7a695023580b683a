"""Fixtures for kube-layer http tests: a kinrun Client on the embedded API server.

- ``kube_client``: ``Client.from_config`` on ``embedded_server``'s kubeconfig, unlimited rate,
  retry waits recorded in ``kube_client.sleeps`` (seconds) instead of slept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.clock import RecordingClock
from kinrun.kube import Client, RetryPolicy
from kinrun.testing.apiserver import EmbeddedAPIServer


class RecordingClient(Client):
    """A Client whose waits are recorded, not slept (``sleeps``: seconds asked for)."""

    sleeps: list[float]


@pytest.fixture
def kube_client(embedded_server: EmbeddedAPIServer) -> Iterator[RecordingClient]:
    """A kinrun Client for ``embedded_server`` that never really sleeps between retries."""
    clock = RecordingClock()
    client: Any = RecordingClient.from_config(
        kubeconfig=str(embedded_server.kubeconfig_path), qps=0, burst=0, pool_size=8,
        retry=RetryPolicy(attempts=4, base_delay=0.01), clock=clock)
    client.sleeps = clock.slept
    try:
        yield client
    finally:
        client.close()
