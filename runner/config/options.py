"""RunOptions: how ``kinrun CONFIG`` was asked to run (command-line settings, not the file).

Purely data. The CLI builds it and passes it, with the loaded Config, to
``kinrun.app.run(config, options) -> int``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kinrun.config.model import ClusterSpec, Config


@dataclass(frozen=True)
class RunOptions:
    """Command-line settings of a run.

    ``config_path``: the config file as given; ``kubeconfig``/``context``: from
    ``--kubeconfig``/``--context`` (None = not given; they override the file's ``cluster``, see
    :meth:`effective_cluster`); ``namespace``: ``--namespace`` (already applied to the Config
    with ``Config.with_namespace``; kept for logging); ``embedded``: run against the in-process
    embedded API server instead of a cluster; ``dry_run``: ``--dry-run`` (real reads; every write
    sent with ``dryRun=All``, persisting nothing, see ``kinrun.kube.Client``; no leader
    election); ``seeds``: YAML/JSON files of objects to load
    into the embedded server before start (only with ``embedded``); ``log_level``
    (debug/info/warning/error) and ``log_format`` (text/json/zap), already applied by the CLI;
    ``drain_timeout``: ``--drain-timeout`` in seconds (None = not given; it overrides the
    file's ``shutdown.drainTimeout``, see :meth:`effective_drain_timeout`).
    """

    config_path: Path
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    embedded: bool = False
    dry_run: bool = False
    seeds: tuple[Path, ...] = ()
    log_level: str = "info"
    log_format: Literal["text", "json", "zap"] = "text"
    drain_timeout: float | None = None
    shard_id: str | None = None  # --shard-id: this replica's name in a ring (kinrun.sharding)

    def effective_cluster(self, config: Config) -> ClusterSpec:
        """The config's ClusterSpec with ``--kubeconfig``/``--context`` applied on top."""
        cluster = config.cluster
        if self.kubeconfig is not None:
            cluster = dataclasses.replace(cluster, kubeconfig=str(Path(self.kubeconfig).expanduser().resolve()))
        if self.context is not None:
            cluster = dataclasses.replace(cluster, context=self.context)
        return cluster

    def effective_drain_timeout(self, config: Config) -> float:
        """Seconds the workqueues get to drain after a stop signal: ``--drain-timeout`` if
        given, else the config's ``shutdown.drainTimeout`` (its schema default when omitted).
        ValueError for a hand-made Config without ``shutdown`` and no flag."""
        if self.drain_timeout is not None:
            return self.drain_timeout
        if config.shutdown is None:
            raise ValueError("config has no shutdown spec (build it with kinrun.config.load)")
        return config.shutdown.drain_timeout
