"""Horizontal sharding: several kinrun replicas split a config's objects between them.

Built on what Kubernetes provides, Leases and label selectors, as
timebertt/kubernetes-controller-sharding (docs/design.md): a Lease per replica
(:mod:`~kinrun.sharding.membership`), a consistent-hash ring over the live ones
(:mod:`~kinrun.sharding.ring`), a sharder that labels every object with its replica and moves
objects with a drain handshake (:mod:`~kinrun.sharding.sharder`), and replicas that watch only
their own objects (:mod:`~kinrun.sharding.shard`); :mod:`~kinrun.sharding.scope` says which
informers are sharded and :mod:`~kinrun.sharding.keys` names the labels and hash keys.
"""

from __future__ import annotations

import os
import socket

from kinrun.config.model import LeaderElectionSpec, ShardingSpec
from kinrun.errors import ConfigError
from kinrun.selectors import DNS1123_SUBDOMAIN, label_value_error



def sharder_election(sharding: ShardingSpec,
                     leader_election: LeaderElectionSpec | None = None) -> LeaderElectionSpec:
    """The leader election that elects the ring's sharder: the config's ``leaderElection``
    when it has one, else a Lease ``<ring>-sharder`` in ``sharding.namespace`` with the ring's
    ``leaseDuration``/``renewDeadline``/``retryPeriod``."""
    if leader_election is not None:
        return leader_election
    return LeaderElectionSpec(lease_name=f"{sharding.ring}-sharder",
                              namespace=sharding.namespace,
                              lease_duration=sharding.lease_duration,
                              renew_deadline=sharding.renew_deadline,
                              retry_period=sharding.retry_period)


def election_lease(sharding: ShardingSpec, election: LeaderElectionSpec) -> str:
    """The name no member of the ring may have: the sharder's election Lease when it lives
    beside the membership Leases (``sharding.namespace``), else "" (no name is taken)."""
    return election.lease_name if election.namespace == sharding.namespace else ""


def replica_identity(flag: str | None = None, *, reserved: str = "") -> str:
    """This replica's name in the ring: ``--shard-id``, else the environment's ``POD_NAME``
    (the downward API, as ``kinrun manifests`` sets it), else the host name (a Pod's host name
    is its name). It names the replica's membership Lease and is its shard label value, so
    ConfigError when it is not a valid label value (at most 63 characters) and Lease name
    (DNS-1123 subdomain), or when it is ``reserved``: the name of the sharder's election Lease
    in the membership namespace (:func:`election_lease`), which one Lease cannot be twice."""
    identity = flag or os.environ.get("POD_NAME") or socket.gethostname()
    identity = identity.strip()
    problem = label_value_error(identity) if identity else "it is empty"
    if problem is None and not DNS1123_SUBDOMAIN.fullmatch(identity):
        problem = ("it must be lowercase letters, digits, '-' and '.', starting and ending "
                   "with a letter or digit (a Lease name)")
    if problem:
        raise ConfigError(f"shard identity {identity!r} cannot name a Lease and a label value: "
                          f"{problem} (set --shard-id or POD_NAME)")
    if reserved and identity == reserved:
        raise ConfigError(f"shard identity {identity!r} is the name of the sharder's election "
                          f"Lease (a replica's membership Lease is named after it, in the same "
                          f"namespace): set --shard-id or POD_NAME to another name, or "
                          f"leaderElection.leaseName to another Lease")
    return identity


__all__ = ["election_lease", "replica_identity", "sharder_election"]
