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
    (debug/info/warning/error) and ``log_format`` (text/json), already applied by the CLI.
    """

    config_path: Path
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    embedded: bool = False
    dry_run: bool = False
    seeds: tuple[Path, ...] = ()
    log_level: str = "info"
    log_format: Literal["text", "json"] = "text"

    def effective_cluster(self, config: Config) -> ClusterSpec:
        """The config's ClusterSpec with ``--kubeconfig``/``--context`` applied on top."""
        cluster = config.cluster
        if self.kubeconfig is not None:
            cluster = dataclasses.replace(cluster, kubeconfig=str(Path(self.kubeconfig).expanduser().resolve()))
        if self.context is not None:
            cluster = dataclasses.replace(cluster, context=self.context)
        return cluster
