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

from kinrun.errors import ConfigError
from kinrun.selectors import label_value_error

_DNS1123_SUBDOMAIN_MAX = 253


def replica_identity(flag: str | None = None) -> str:
    """This replica's name in the ring: ``--shard-id``, else the environment's ``POD_NAME``
    (the downward API, as ``kinrun manifests`` sets it), else the host name (a Pod's host name
    is its name). Raises ConfigError when it is not a valid label value (at most 63
    characters) and Lease name."""
    identity = flag or os.environ.get("POD_NAME") or socket.gethostname()
    identity = identity.strip()
    problem = label_value_error(identity) if identity else "it is empty"
    if problem is None and (identity.lower() != identity or "_" in identity
                            or len(identity) > _DNS1123_SUBDOMAIN_MAX):
        problem = "it must be lowercase letters, digits, '-' and '.'"
    if problem:
        raise ConfigError(f"shard identity {identity!r} cannot name a Lease and a label value: "
                          f"{problem} (set --shard-id or POD_NAME)")
    return identity


__all__ = ["replica_identity"]
