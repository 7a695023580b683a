"""The main job behind ``kinrun CONFIG``: compile, connect, bind, run until a signal, drain.

    run(config, options) -> exit code
      1. compile the plan (``kinrun.plan``: plugins, templates, actions, indexes; a bad config
         fails here, before any connection, exactly as ``kinrun validate`` does);
      2. with ``--embedded``: start the embedded API server, load the seed objects, print
         ``export KUBECONFIG=<path>`` (stdout) so kubectl can be pointed at it;
      3. build the client (kubeconfig / in-cluster; ClusterConfigError when there is none),
         bind the plan (discovery; a kind outside the built-in groups that is not served yet
         waits, with its controllers) and wire the Manager;
      4. optionally serve metrics and health probes (``probes:`` or
         ``--health-probe-bind-address``: ``kinrun.probes``; a standby replica is ready) and
         wait to be the leader (Lease; not with ``--dry-run``, which sends every write with
         ``dryRun=All`` and must never take the Lease);
      5. start informers, wait for their caches, start the workers (progress in the log);
      6. hot reload (``kinrun.reload``): a thread polls the config and plugin files
         (``kinrun.config_watch``) and reloads on a change or SIGHUP, and looks for kinds
         not served yet; it is stopped before anything else;
      7. on SIGINT/SIGTERM: stop the informers, drain the workqueues (bounded), exit 0.

Stopping is bounded: the drain gets ``shutdown.drainTimeout`` seconds (``--drain-timeout``
wins; default in ``ShutdownSpec``), and the whole stop (informers, drain, shutdown hooks,
lease release, closing) at most that plus EXIT_SLACK seconds from the stop request; past that
the process logs the main thread's stack and exits 1 at once. A second SIGINT/SIGTERM (more
than ``kinrun.signals.SECOND_SIGNAL_GRACE`` seconds after the first) exits at once (130).
Signals go through :mod:`kinrun.signals` (a handler that takes no lock); a signal received
before the run started (CLI start-up) stops it before anything starts, exit 0. Logging is
configured by the CLI.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kinrun import signals, threads
from kinrun.bound import Bound, Wrap
from kinrun.config import load
from kinrun.config.model import Config
from kinrun.config.options import RunOptions
from kinrun.controller import Reconcile
from kinrun.errors import ConfigError
from kinrun.kube import Client
from kinrun.log_batching import flush_logs
from kinrun.logging_setup import reconcile_log_fields
from kinrun.manager import Manager
from kinrun.plan import Plan, plan
from kinrun.runnables import (DryRunGate, LeaderGate, MetricsEndpoint, ProbesEndpoint,
                              WebhookServer,
                              ReloadLoop, RingGate)
from kinrun.spine.runnables import Gate
from kinrun.spine.settings import RunSettings

if TYPE_CHECKING:  # imported where used: only a config that asks for them pays their import
    from kinrun.probes import Probes
    from kinrun.sharding.shard import Shard

_log = logging.getLogger("kinrun")

EXIT_SLACK = 5.0
"""Seconds past the drain timeout that the rest of stopping may take (stopping the informers,
shutdown hooks, releasing the Lease, closing the client and the embedded server). From the
stop request, kinrun exits within ``drain timeout + EXIT_SLACK`` seconds, or exits 1."""


def run(config: Config, options: RunOptions, *, stop: threading.Event | None = None) -> int:
    """Run ``config``'s controllers until ``stop`` is set or SIGINT/SIGTERM arrives.

    Returns the exit code: 0 after a clean stop (also when ``stop`` was set, or a signal came,
    before anything started), 1 when the caches never synced, the drain timed out or
    leadership was lost, 130 on a second signal (the process exits at once, from the signal
    thread; also 1 from there when stopping overran ``drain timeout + EXIT_SLACK`` seconds).
    Raises ConfigError (bad seed file, bad template, unknown plugin, metrics port in use),
    ClusterConfigError (no cluster and no ``--embedded``), UnknownKindError (a kind of a
    built-in API group the server does not serve: a typo) and ApiError (discovery failed): the
    CLI maps them to exit codes.
    """
    stop = stop or threading.Event()
    with contextlib.ExitStack() as stack:
        stack.enter_context(_signals_set(stop, options.effective_drain_timeout(config)
                                         + EXIT_SLACK))
        if stop.is_set():
            return 0
        compiled = plan(config, options=options)  # all checkable without a cluster fails here
        kubeconfig, context = _cluster_access(compiled.settings, stack, stop)
        if stop.is_set():  # a signal while the embedded server was being seeded
            _log.info("stopping before the run started")
            return 0
        probes, shard = _probes(compiled.settings), _shard(compiled.settings)
        manager = _build(compiled, kubeconfig, context, stack, probes=probes, shard=shard)
        if stop.is_set():
            return 0
        _add_runnables(manager, compiled, options, probes, shard, stop)
        if not manager.start(stop, gc_policy=True):
            return 0 if stop.is_set() else 1
        stop.wait()
        _arm_exit_deadline()
        drained = manager.stop(compiled.settings.drain_timeout or 0.0)
        # lost: a supervisor restarts this replica as a candidate (or it joins the ring again)
        return 0 if drained and not manager.lost else 1


def _add_runnables(manager: Manager, compiled: Plan, options: RunOptions, probes: Probes | None,
                   shard: Shard | None, stop: threading.Event) -> None:
    """Everything the main job runs besides the pipeline, in the Manager (``kinrun.runnables``):
    the endpoints, the gate (Lease, ring, or a dry run's none), hot reload."""
    settings = compiled.settings
    if manager.metrics is not None and settings.metrics is not None:
        manager.add(MetricsEndpoint(manager.metrics, settings.metrics, manager.client))
    if probes is not None and settings.probes is not None:
        manager.add(ProbesEndpoint(probes, settings.probes, manager))
    if settings.serves_webhooks:
        manager.add(WebhookServer(compiled, manager, probes))
    elif settings.webhooks:
        _log.warning("dry-run: admission webhooks are not served")
    gate = _gate(manager, compiled, probes, shard, stop)
    if gate is not None:
        manager.set_gate(gate)
    manager.add(ReloadLoop(manager, lambda: _load_again(options),
                           lambda config: plan(config, options=options),
                           lambda bound: _observers(bound, probes, settings.log_fields), stop))


def _gate(manager: Manager, compiled: Plan, probes: Probes | None, shard: Shard | None,
          stop: threading.Event) -> Gate | None:
    """The Lease the workers wait for: the ring's membership (sharded), none said so (a dry
    run with ``leaderElection``), the ``leaderElection`` Lease, or None."""
    settings = compiled.settings
    if shard is not None:  # leaderElection elects the sharder role only
        return RingGate(compiled, manager, shard, stop)
    if settings.election is not None and settings.dry_run:
        return DryRunGate(settings.election)
    if not settings.elects or settings.election is None:
        return None
    from kinrun.leader_election import LeaderElector

    elector = LeaderElector(manager.client, settings.election, on_lost=stop.set)
    return LeaderGate(elector, settings.election, warm=settings.warm_standby, probes=probes,
                      metrics=manager.metrics, manager=manager)


def _load_again(options: RunOptions) -> Config:
    """The config file loaded again as the CLI loaded it (``--namespace`` applied)."""
    config = load(options.config_path)
    return config.with_namespace(options.namespace) if options.namespace else config


def _build(compiled: Plan, kubeconfig: str | None, context: str | None,
           stack: contextlib.ExitStack, *, probes: Probes | None = None,
           shard: Shard | None = None) -> Manager:
    """The client (a dry run: every write with ``dryRun=All``, see ``kinrun.kube.Client``),
    then the plan bound to it (discovery) and wired into a Manager; the client is closed when
    ``stack`` unwinds. With ``probes``, every reconcile is tracked for the stuck-reconcile
    check; with JSON logs, it sets the reconcile log fields
    (``kinrun.logging_setup.reconcile_log_fields``)."""
    settings = compiled.settings
    cluster = settings.cluster
    client = Client.from_config(kubeconfig=kubeconfig, context=context, qps=cluster.qps,
                                burst=cluster.burst, pool_size=settings.pool_size,
                                dry_run=settings.dry_run)
    stack.callback(client.close)
    _log.info("API server %s", client.host)
    if settings.dry_run:
        _log.info("dry-run: writes are sent with dryRun=All and logged; nothing is persisted")
    metrics = None
    if settings.metrics is not None:
        from kinrun.metrics import Metrics

        metrics = Metrics()
        metrics.instrument_client(client)
    bound = compiled.bind(client, wait_for_kinds=True)  # a CRD not installed yet: it waits
    if shard is not None:
        shard.client = client  # the drain acknowledgements
    return bound.manager(metrics=metrics, wrap=_observers(bound, probes, settings.log_fields),
                         shard=shard)


# -- sharding (kinrun.sharding) ----------------------------------------------------------------


def _shard(settings: RunSettings) -> Shard | None:
    """This replica's Shard of ``sharding`` (identity: ``--shard-id``, POD_NAME, host name;
    ConfigError when unusable), or None: not sharded, or a dry run (whose Lease and label
    writes would be real: it runs unsharded, over every object, writing nothing)."""
    spec = settings.sharding
    if spec is None:
        return None
    if not settings.shards:
        _log.warning("dry-run: sharding skipped: this replica sees every object of ring %s",
                     spec.ring)
        return None
    from kinrun.sharding import election_lease, replica_identity, sharder_election
    from kinrun.sharding.shard import Shard

    reserved = election_lease(spec, sharder_election(spec, settings.election))
    return Shard(spec.ring, replica_identity(settings.shard_id, reserved=reserved))


# -- operating: probes, standby, log fields (kinrun.probes, kinrun.logging_setup) -------------


def _probes(settings: RunSettings) -> Probes | None:
    """The Probes of ``probes:`` (None: no probe endpoint)."""
    if settings.probes is None:
        return None
    from kinrun.probes import Probes

    probes = Probes(stuck_reconcile_after=settings.probes.stuck_reconcile_after)
    probes.add_health_check(threads.health_check(), "threads")  # a background thread died
    return probes


def _observers(bound: Bound, probes: Probes | None, log_fields: bool) -> Wrap | None:
    """The wrap ``(controller, reconcile) -> reconcile`` of the main job (``kinrun.bound``):
    the log fields outermost, then the stuck-reconcile tracking; None when neither is on."""
    wraps = []
    if probes is not None:
        wraps.append(probes.wrap)
    if log_fields:
        refs = {c.name: bound.refs[c.spec.primary] for c in bound.plan.controllers}
        wraps.append(reconcile_log_fields(lambda c: refs[c].kind, lambda c: refs[c].group))
    if not wraps:
        return None

    def wrap(controller: str, reconcile: Reconcile) -> Reconcile:
        for one in wraps:
            reconcile = one(controller, reconcile)
        return reconcile
    return wrap


def _cluster_access(settings: RunSettings, stack: contextlib.ExitStack,
                    stop: threading.Event) -> tuple[str | None, str | None]:
    """The kubeconfig path and context to use; with ``--embedded``, start that server first
    and load the config's ``crds:`` (their CRDs only) and then the seeds (cut short, object
    by object, once ``stop`` is set)."""
    if not settings.embedded:
        return settings.cluster.kubeconfig, settings.cluster.context
    from kinrun.testing.apiserver import EmbeddedAPIServer, controllers_default
    from kinrun.testing.seeds import (crd_seeds, load_objects, load_seed_file, served_crds,
                                      without_served)

    seeds = crd_seeds(settings.crds)
    served = served_crds(seeds)
    for path in dict.fromkeys(settings.seeds):  # a CRD also under crds: is loaded once
        seeds.append((path, without_served(load_seed_file(path), served)))
    server = EmbeddedAPIServer(controllers=controllers_default())
    server.start()
    stack.callback(server.stop)
    loaded = sum(load_objects(server, path, objects, stop) for path, objects in seeds)
    if stop.is_set():
        return server.kubeconfig_path, None  # the run stops: nothing to point kubectl at
    _log.info("embedded API server at %s (%d seed object(s))", server.url, loaded)
    flush_logs()  # the line above first, then stdout's
    print(f"export KUBECONFIG={server.kubeconfig_path}", flush=True)
    return server.kubeconfig_path, None


@contextlib.contextmanager
def _signals_set(stop: threading.Event, exit_bound: float) -> Iterator[None]:
    """While active, SIGINT/SIGTERM reach ``stop`` through :mod:`kinrun.signals` (installed
    here unless the CLI already did; then uninstalled on exit). ``exit_bound``: seconds from
    the first signal to a forced exit 1. Does nothing outside the main thread (signals can only
    be handled there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    watcher = signals.current()
    owned = watcher is None
    watcher = watcher or signals.install()
    watcher.attach(stop, exit_bound)
    try:
        yield
    finally:
        watcher.detach()
        if owned:
            watcher.uninstall()


def _arm_exit_deadline() -> None:
    """Start the exit deadline for a stop that no signal requested (lost leadership)."""
    watcher = signals.current()
    if watcher is not None:
        watcher.arm_deadline()
