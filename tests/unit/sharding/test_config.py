"""``sharding:`` in the config: defaults from the schema, duration order, which informers are
sharded (and the refusal of one informer in both roles), ``validate``'s lines, identities."""

from __future__ import annotations

import logging

import pytest

from kinrun.config import load_text
from kinrun.errors import ConfigError
from kinrun.plan import plan
from kinrun.sharding import replica_identity
from kinrun.sharding.scope import describe, sharded_informers

BASE = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  deploys: {apiVersion: apps/v1, kind: Deployment}
  rs: {apiVersion: apps/v1, kind: ReplicaSet}
  cms: {apiVersion: v1, kind: ConfigMap}
  nodes: {apiVersion: v1, kind: Node}
controllers:
  - name: d
    for: deploys
    watches:
      - {informer: rs, mapTo: owner}
      - {informer: cms, mapTo: {template: "{{ obj.metadata.namespace }}/x"}}
    reconcile: {actions: [{log: "{{ obj.metadata.name }}"}]}
"""


def test_defaults_come_from_the_schema():
    config = load_text(BASE + "sharding: {ring: web}\n")
    s = config.sharding
    assert (s.ring, s.namespace, s.lease_duration, s.renew_deadline, s.retry_period,
            s.sync_period) == ("web", "default", 15.0, 10.0, 2.0, 60.0)


def test_without_sharding_nothing_is_sharded():
    assert load_text(BASE).sharding is None
    assert plan(load_text(BASE)).sharded == {}


def test_renew_deadline_must_be_below_lease_duration():
    with pytest.raises(ConfigError, match="renewDeadline .* less than leaseDuration") as err:
        load_text(BASE + "sharding: {ring: web, leaseDuration: 5s, renewDeadline: 5s}\n")
    assert err.value.line == BASE.count("\n") + 1


def test_primaries_and_owned_children_are_sharded_the_rest_cached_whole():
    compiled = plan(load_text(BASE + "sharding: {ring: web}\n"))
    assert compiled.sharded == {"deploys": "primary", "rs": "owned"}
    assert describe(compiled.config) == [
        "sharding web: informer deploys: sharded (primary: by its own namespace/name)",
        "sharding web: informer rs: sharded (owned children: with their controller, deploys)",
        "sharding web: informer cms: not sharded: cached whole on every replica",
        "sharding web: informer nodes: not sharded: cached whole on every replica"]


def test_an_informer_both_primary_and_owned_is_refused_at_its_watch():
    text = BASE + """\
  - name: r
    for: rs
    reconcile: {actions: [{log: x}]}
sharding: {ring: web}
"""
    with pytest.raises(ConfigError, match="primary informer and watched with mapTo: owner"):
        sharded_informers(load_text(text))
    with pytest.raises(ConfigError) as err:
        plan(load_text(text))
    assert err.value.line == 12  # the watch of rs


def test_an_unusable_identity_is_refused(monkeypatch):
    assert replica_identity("kinrun-7d9f-abcde") == "kinrun-7d9f-abcde"
    monkeypatch.setenv("POD_NAME", "from-the-downward-api")
    assert replica_identity(None) == "from-the-downward-api"
    for bad in ("Upper", "a_b", "x" * 64, "-dash"):
        with pytest.raises(ConfigError, match="shard identity"):
            replica_identity(bad)


def test_shard_id_flag_reaches_the_run_options_and_validate_lists_informers(
        monkeypatch, tmp_path, capsys):
    import sys
    import types

    from kinrun import cli

    seen = {}
    module = types.ModuleType("kinrun.app")
    module.run = lambda config, options: seen.setdefault("options", options) and 0
    monkeypatch.setitem(sys.modules, "kinrun.app", module)
    monkeypatch.setattr("kinrun.logging_setup.configure_logging", lambda *a, **k: logging.NullHandler())
    path = tmp_path / "c.yaml"
    path.write_text(BASE + "sharding: {ring: web}\n")
    assert cli.main([str(path), "--shard-id", "r7"]) == 0
    assert seen["options"].shard_id == "r7"
    assert cli.main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{path}: ok"
    assert f"{path}: sharding web: informer cms: not sharded: cached whole on every replica" in out


def test_an_identity_that_is_not_a_lease_name_is_refused():
    """A valid label value that is no DNS-1123 subdomain (the Lease create would be refused
    with 422 at every retry) is refused at start."""
    for bad in ("a..b", "a.-b", "a-.b"):
        with pytest.raises(ConfigError, match="a Lease name"):
            replica_identity(bad)
    assert replica_identity("pod-1.zone-a") == "pod-1.zone-a"


def test_the_sharder_election_lease_name_is_refused_as_an_identity():
    """A replica named <ring>-sharder would hold the sharder's election Lease as its
    membership Lease (one Lease, two meanings): refused at start, naming the flag."""
    from kinrun.config.model import LeaderElectionSpec
    from kinrun.sharding import election_lease, sharder_election

    sharding = load_text(BASE + "sharding: {ring: web, namespace: ops}\n").sharding
    election = sharder_election(sharding)
    assert (election.lease_name, election.namespace, election.lease_duration) == (
        "web-sharder", "ops", 15.0)
    assert election_lease(sharding, election) == "web-sharder"
    with pytest.raises(ConfigError, match=r"'web-sharder' is the name of the sharder's "
                                          r"election Lease.*--shard-id or POD_NAME"):
        replica_identity("web-sharder", reserved=election_lease(sharding, election))
    assert replica_identity("web-sharder-0", reserved="web-sharder") == "web-sharder-0"
    own = LeaderElectionSpec(lease_name="r1", namespace="ops")  # the config's leaderElection
    assert sharder_election(sharding, own) is own
    with pytest.raises(ConfigError, match="leaderElection.leaseName"):
        replica_identity("r1", reserved=election_lease(sharding, own))
    elsewhere = LeaderElectionSpec(lease_name="r1", namespace="other")
    assert election_lease(sharding, elsewhere) == ""  # another namespace: no name is taken
    assert replica_identity("r1", reserved=election_lease(sharding, elsewhere)) == "r1"


def test_kinrun_refuses_to_start_as_the_sharder_election_lease(monkeypatch, tmp_path, capsys):
    """kinrun CONFIG --shard-id web-sharder exits 2 with the error before connecting."""
    from kinrun import cli

    monkeypatch.setattr("kinrun.logging_setup.configure_logging", lambda *a, **k: logging.NullHandler())
    path = tmp_path / "c.yaml"
    path.write_text(BASE + "sharding: {ring: web}\n")
    code = cli.main([str(path), "--shard-id", "web-sharder", "--kubeconfig",
                     str(tmp_path / "missing")])
    assert code == 2
    assert "is the name of the sharder's election Lease" in capsys.readouterr().err
