"""The effective settings of a run: the config's, with the command line's on top, once.

``kinrun.plan.plan(config, options=...)`` computes a :class:`RunSettings` and the Plan carries
it; everything below the plan (the main job's runnables, the Manager, reload) reads these and
never the raw Config or RunOptions again (controller-runtime: options live in one struct
passed once). Purely data; no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kinrun.config.model import (ClusterSpec, Config, GCSpec, LeaderElectionSpec, MetricsSpec,
                                 ProbesSpec, ReloadSpec, ShardingSpec)
from kinrun.config.options import RunOptions
from kinrun.config.paths import is_plugin_path

POOL_SPARE = 4
"""Connections of the client's pool beyond one per worker and two per informer (discovery,
Leases, Events)."""


@dataclass(frozen=True)
class RunSettings:
    """How one run goes, decided once.

    ``cluster``: the ClusterSpec with ``--kubeconfig``/``--context`` applied; ``pool_size``:
    connections of the client's pool (every worker, two per informer, ``POOL_SPARE``);
    ``embedded``/``seeds``: run on the embedded API server, loaded with those files;
    ``crds``: with ``embedded``, the config's ``crds:`` files and folders (resolved), whose
    CustomResourceDefinitions the embedded server serves before the seeds are loaded;
    ``dry_run``: every write with ``dryRun=All``, no Lease (election and sharding skipped, see
    :attr:`elects`, :attr:`shards`); ``metrics``/``probes``: the endpoints (None: not served);
    ``election``/``sharding``: as configured; ``shard_id``: ``--shard-id``; ``gc``: the GC
    policy's settings; ``reload``: hot reload's; ``drain_timeout``: seconds the workqueues get
    after a stop (None: a hand-made Config without ``shutdown`` and no flag);
    ``watched_files``: the config file as given, then its plugin files (relative to the
    config file's folder as given, not resolved: a ConfigMap volume swaps what the symlinks
    point to, ``kinrun.config_watch``); ``log_fields``: JSON and zap logs carry the reconcile fields;
    ``webhooks``: ``admission:`` is configured (its server runs on every replica, standby
    included, and is never run by a dry run: its certificate Secret writes would be real).
    """

    cluster: ClusterSpec
    pool_size: int
    metrics: MetricsSpec | None
    probes: ProbesSpec | None
    election: LeaderElectionSpec | None
    sharding: ShardingSpec | None
    gc: GCSpec
    reload: ReloadSpec
    drain_timeout: float | None
    watched_files: tuple[str, ...]
    embedded: bool = False
    seeds: tuple[Path, ...] = ()
    crds: tuple[Path, ...] = ()
    dry_run: bool = False
    shard_id: str | None = None
    log_fields: bool = False
    webhooks: bool = False

    @property
    def serves_webhooks(self) -> bool:
        """The admission webhook server runs (``admission:``, not a dry run)."""
        return self.webhooks and not self.dry_run

    @property
    def shards(self) -> bool:
        """This replica joins a ring (``sharding``, and not a dry run, whose Lease and label
        writes would be real: it runs unsharded, over every object, writing nothing)."""
        return self.sharding is not None and not self.dry_run

    @property
    def elects(self) -> bool:
        """This replica campaigns for the ``leaderElection`` Lease before its workers start
        (not in a dry run, whose Lease writes would be real; not when sharded: there the
        Lease elects the sharder role only)."""
        return self.election is not None and not self.dry_run and self.sharding is None

    @property
    def warm_standby(self) -> bool:
        """The caches sync while the replica waits for the Lease (``warmStandby``, or webhooks
        served: their rules' lookups read the caches on every replica, as controller-runtime's
        webhooks run on standby replicas too)."""
        return self.elects and bool(self.election and self.election.warm_standby
                                    or self.serves_webhooks)


def run_settings(config: Config, options: RunOptions | None = None) -> RunSettings:
    """The settings of running ``config`` as ``options`` ask (None: as the file says, the
    library's case: no dry run, not embedded)."""
    cluster = options.effective_cluster(config) if options is not None else config.cluster
    source = options.config_path if options is not None else Path(config.file)
    flag = options.drain_timeout if options is not None else None  # --drain-timeout wins
    drain = flag if flag is not None else (
        config.shutdown.drain_timeout if config.shutdown is not None else None)
    return RunSettings(
        cluster=cluster,
        pool_size=sum(c.workers for c in config.controllers) + 2 * len(config.informers)
        + POOL_SPARE,
        metrics=config.metrics, probes=config.probes, election=config.leader_election,
        sharding=config.sharding, gc=config.gc, reload=config.reload, drain_timeout=drain,
        watched_files=watched_files(source, config), webhooks=config.admission is not None
        or (config.sharding is not None and config.sharding.admission),
        **({} if options is None else dict(
            embedded=options.embedded, seeds=tuple(options.seeds), dry_run=options.dry_run,
            crds=config.crd_paths()
            if options.embedded else (),
            shard_id=options.shard_id, log_fields=options.log_format in ("json", "zap"))))


def watched_files(config_path: Path, config: Config) -> tuple[str, ...]:
    """The config file as given, then its plugin files as given (see RunSettings)."""
    folder = Path(config_path).parent
    return (str(config_path), *(str(folder / spec) for spec in config.plugins
                                if is_plugin_path(spec)))
