"""LeaderElector against the embedded API server: ``spec.leaseTransitions`` counts changes of
holder, as client-go's ``LeaderTransitions``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from kinrun.clock import FakeClock
from kinrun.config.model import LeaderElectionSpec
from kinrun.kube import Client
from kinrun.leader_election import LeaderElector

LEASE = "kinrun-transitions"
SPEC = LeaderElectionSpec(lease_name=LEASE, namespace="default", lease_duration=15,
                          renew_deadline=10, retry_period=0.05)


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


def lease_spec(client: Client) -> dict:
    return client.get_lease(LEASE, "default")["spec"]


def lead(client: Client, identity: str) -> LeaderElector:
    elector = LeaderElector(client, SPEC, identity=identity)
    assert elector.acquire(threading.Event())
    return elector


def test_each_new_holder_after_a_release_counts_one_transition(client: Client) -> None:
    """Created: 0; another candidate after a release: 1; the first one back: 2."""
    first = lead(client, "one")
    assert lease_spec(client)["leaseTransitions"] == 0
    first.release()
    released = lease_spec(client)
    assert released["holderIdentity"] == "" and released["leaseTransitions"] == 0
    second = lead(client, "two")
    assert lease_spec(client)["holderIdentity"] == "two"
    assert lease_spec(client)["leaseTransitions"] == 1
    second.release()
    again = lead(client, "one")
    assert lease_spec(client)["leaseTransitions"] == 2
    again.release()


def test_taking_over_an_expired_lease_counts_one_transition(client: Client) -> None:
    """A holder that stopped renewing: the candidate that takes over (a lease duration after
    it first saw the record, on its own clock: renewTime is never compared) adds one."""
    stale = (datetime.now(timezone.utc) - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    client.create_lease({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                         "metadata": {"name": LEASE, "namespace": "default"},
                         "spec": {"holderIdentity": "gone", "leaseDurationSeconds": 15,
                                  "acquireTime": stale, "renewTime": stale,
                                  "leaseTransitions": 4}})
    clock = FakeClock()
    elector = LeaderElector(client, SPEC, identity="new", clock=clock)
    assert not elector.try_acquire_or_renew()  # first seen now: valid for 15 s from here
    clock.step(15)
    assert elector.try_acquire_or_renew()
    assert lease_spec(client)["holderIdentity"] == "new"
    assert lease_spec(client)["leaseTransitions"] == 5
    elector.release()


def test_the_same_holder_acquiring_again_keeps_the_count(client: Client) -> None:
    """A replica restarted with the holder's identity renews: no transition."""
    first = lead(client, "one")
    acquired = lease_spec(client)["acquireTime"]
    first._stop.set()  # stop renewing without releasing, as a killed replica
    assert first._thread is not None
    first._thread.join(10)
    restarted = lead(client, "one")
    spec = lease_spec(client)
    assert spec["holderIdentity"] == "one" and spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == acquired
    restarted.release()
