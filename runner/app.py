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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from kinrun import signals
from kinrun.config.model import Config
from kinrun.config.options import RunOptions
from kinrun.errors import ConfigError
from kinrun.kube import Client
from kinrun.manager import Manager
from kinrun.logging_setup import reconcile_log_fields
from kinrun.plan import Plan, plan
from kinrun.config import load
from kinrun.config.paths import is_plugin_path
from kinrun import safe_yaml, threads

if TYPE_CHECKING:  # imported where used: only a config that asks for them pays their import
    from kinrun.metrics import Metrics  # prometheus_client
    from kinrun.probes import Probes
    from kinrun.sharding.membership import MemberLease
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
    drain_timeout = options.effective_drain_timeout(config)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_signals_set(stop, drain_timeout + EXIT_SLACK))
        if stop.is_set():
            return 0
        compiled = plan(config)  # everything checkable without a cluster fails here first
        kubeconfig, context = _cluster_access(config, options, stack, stop)
        if stop.is_set():  # a signal while the embedded server was being seeded
            _log.info("stopping before the run started")
            return 0
        probes = _probes(config)
        shard = _shard(config, options)  # None: not sharded (or a dry run)
        manager = _build(compiled, kubeconfig, context, stack, dry_run=options.dry_run,
                         probes=probes, log_fields=options.log_format in ("json", "zap"), shard=shard)
        if stop.is_set():
            return 0
        if manager.metrics is not None:
            metrics_port = manager.metrics.serve(config.metrics.port, config.metrics.address)
            stack.callback(manager.metrics.close)
            _log.info("metrics on http://%s:%d/metrics", config.metrics.address, metrics_port)
        if probes is not None:
            _serve_probes(probes, config, manager, stack)
        _serve_webhooks(compiled, manager, probes, options, stack)  # every replica, standby too
        member = None
        if shard is not None:  # join the ring; leaderElection elects the sharder role only
            member = _join_ring(compiled, manager, shard, stack, stop)
            if member is None:
                return 0
        warm = (shard is None and config.leader_election is not None and not options.dry_run
                and (config.leader_election.warm_standby or compiled.admission is not None))
        if warm and not manager.start_caches(stop, gc_policy=True):  # list+watch, no worker
            manager.stop(0.0)
            return 0 if stop.is_set() else 1
        elector = None
        if config.leader_election is not None and options.dry_run:
            # The Lease writes would be real writes: a dry run must never take the Lease from
            # the real leader (nor pretend to hold it), so it runs unelected. It writes nothing.
            _log.warning("dry-run: leader election skipped: this replica reconciles without "
                         "the Lease %s/%s", config.leader_election.namespace,
                         config.leader_election.lease_name)
        elif config.leader_election is not None and shard is None:
            from kinrun.leader_election import LeaderElector

            elector = LeaderElector(manager.client, config.leader_election, on_lost=stop.set)
            _standby(probes, manager.metrics, config, True)
            if warm:
                _log.info("warm standby: caches synced; waiting for the Lease %s/%s",
                          config.leader_election.namespace, config.leader_election.lease_name)
            if not elector.acquire(stop):
                if warm:
                    manager.stop(0.0)
                return 0
            _standby(probes, manager.metrics, config, False)
            stack.callback(elector.release)
        if warm:
            manager.start_workers()
        elif not manager.start(stop, gc_policy=True):
            manager.stop(0.0)
            return 0 if stop.is_set() else 1
        _log.info("kinrun running: %d informer(s), %d controller(s); stop with Ctrl-C",
                  len(manager.informers), len(manager.controllers))
        stop_reloading = _start_reloading(manager, options, probes, stop,
                                          log_fields=options.log_format in ("json", "zap"))
        stop.wait()
        _arm_exit_deadline()
        stop_reloading()
        lost = ((elector is not None and elector.lost) or (member is not None and member.lost))
        if lost:  # another replica may reconcile these keys already: none of them runs here
            _log.info("stopping: the Lease is lost; queued keys are left to the replica that "
                      "takes over (reconciles under way finish, at most %gs)", drain_timeout)
        else:
            _log.info("stopping: draining workqueues (at most %gs)", drain_timeout)
        drained = manager.stop(drain_timeout, drain=not lost)
        _log.info("stopped%s", "" if drained else " (some reconciles did not finish)")
        if lost:
            # leadership lost: a supervisor restarts this replica as a candidate; membership
            # lost: restarted, the replica joins the ring again
            return 1
        return 0 if drained else 1


def _watched_files(options: RunOptions, config: Config) -> list[str]:
    """The config file as given, then its plugin files as given (relative to the config
    file's folder as given, not resolved: a ConfigMap volume swaps what the symlinks point to,
    ``kinrun.config_watch``)."""
    folder = Path(options.config_path).parent
    return [str(options.config_path), *(str(folder / spec) for spec in config.plugins
                                        if is_plugin_path(spec))]


def _load_again(options: RunOptions) -> Config:
    """The config file loaded again as the CLI loaded it (``--namespace`` applied)."""
    config = load(options.config_path)
    return config.with_namespace(options.namespace) if options.namespace else config


def _start_reloading(manager: Manager, options: RunOptions, probes: Probes | None,
                     stop: threading.Event, *, log_fields: bool = False) -> Any:
    """Hot reload (``kinrun.reload``): a thread that polls the config and plugin files every
    ``reload.pollInterval`` (``kinrun.config_watch``), reloads on a change or SIGHUP and looks
    for kinds not served yet every so often. Returns the function that stops it (called
    before the Manager stops, so no reload runs while it does)."""
    from kinrun.config_watch import ConfigWatcher
    from kinrun.reload import Reloader  # after the first reconcile: the workers run already

    spec = manager.config.reload
    files = lambda: _watched_files(options, manager.config)  # noqa: E731 - follows reloads
    watcher = ConfigWatcher(files())
    wrap_for = lambda bound: _observers(bound, probes, log_fields)  # noqa: E731
    reloader = Reloader(manager, lambda: _load_again(options), plan, wrap_for=wrap_for,
                        metrics=manager.metrics, files=files, sync_timeout=spec.sync_timeout,
                        drain_timeout=options.effective_drain_timeout(manager.config),
                        discovery_interval=spec.discovery_interval, stop=stop)
    ended, wake, hup = threading.Event(), threading.Event(), threading.Event()

    def on_hup() -> None:
        hup.set()
        wake.set()

    def take_hup() -> bool:
        was = hup.is_set()
        hup.clear()
        return was

    def changed() -> bool:
        watcher.set_paths(files())  # the plugin files of the config in force
        return watcher.changed()
    watching = signals.current()
    thread = threads.SupervisedThread(target=reloader.run, name="kinrun-reload", daemon=True,
                              args=(ended, wake, changed, spec.poll_interval, take_hup))
    thread.start()
    if watching is not None:
        watching.on_reload(on_hup)
    _log.info("config reload on SIGHUP%s", f"; watching {', '.join(files())} every "
              f"{spec.poll_interval:g}s" if spec.poll_interval else " only (reload.pollInterval 0)")

    def stop_reloading() -> None:
        if watching is not None:
            watching.on_reload(None)
        ended.set()
        wake.set()
        thread.join(options.effective_drain_timeout(manager.config) + 1.0)
    return stop_reloading


def _build(compiled: Plan, kubeconfig: str | None, context: str | None,
           stack: contextlib.ExitStack, *, dry_run: bool = False, probes: Probes | None = None,
           log_fields: bool = False, shard: Shard | None = None) -> Manager:
    """The client (``dry_run``: every write with ``dryRun=All``, see ``kinrun.kube.Client``),
    then the plan bound to it (discovery) and wired into a Manager; the client is closed when
    ``stack`` unwinds. With ``probes``, every reconcile is tracked for the stuck-reconcile
    check; with ``log_fields`` (JSON logs), it sets the reconcile log fields
    (``kinrun.logging_setup.reconcile_log_fields``)."""
    config, cluster = compiled.config, compiled.config.cluster
    pool = sum(c.workers for c in config.controllers) + 2 * len(config.informers) + 4
    client = Client.from_config(kubeconfig=kubeconfig, context=context, qps=cluster.qps,
                                burst=cluster.burst, pool_size=pool, dry_run=dry_run)
    stack.callback(client.close)
    _log.info("API server %s", client.host)
    if dry_run:
        _log.info("dry-run: writes are sent with dryRun=All and logged; nothing is persisted")
    metrics = None
    if config.metrics is not None:
        from kinrun.metrics import Metrics

        metrics = Metrics()
    if metrics is not None:
        metrics.instrument_client(client)
    bound = compiled.bind(client, wait_for_kinds=True)  # a CRD not installed yet: it waits
    if shard is not None:
        shard.client = client  # the drain acknowledgements
    return bound.manager(metrics=metrics, wrap=_observers(bound, probes, log_fields),
                         shard=shard)


# -- sharding (kinrun.sharding) ----------------------------------------------------------------


def _shard(config: Config, options: RunOptions) -> Shard | None:
    """This replica's Shard of ``config.sharding`` (identity: ``--shard-id``, POD_NAME, host
    name; ConfigError when unusable), or None: not sharded, or a dry run (whose Lease and label
    writes would be real: it runs unsharded, over every object, writing nothing)."""
    if config.sharding is None:
        return None
    if options.dry_run:
        _log.warning("dry-run: sharding skipped: this replica sees every object of ring %s",
                     config.sharding.ring)
        return None
    from kinrun.sharding import election_lease, replica_identity, sharder_election
    from kinrun.sharding.shard import Shard

    reserved = election_lease(config.sharding,
                              sharder_election(config.sharding, config.leader_election))
    return Shard(config.sharding.ring, replica_identity(options.shard_id, reserved=reserved))


def _join_ring(compiled: Plan, manager: Manager, shard: Shard, stack: contextlib.ExitStack,
               stop: threading.Event) -> MemberLease | None:
    """Take this replica's membership Lease (None when ``stop`` came first), fence every
    reconcile on it, and campaign for the sharder role (the config's ``leaderElection``, else
    a Lease ``<ring>-sharder``); both end when ``stack`` unwinds: the sharder first, the
    membership Lease after the workers stopped."""
    from kinrun.sharding import election_lease, sharder_election
    from kinrun.sharding.membership import MemberLease, MembershipSpec
    from kinrun.sharding.sharder import Sharder, SharderRole, sharded_resources

    spec = compiled.config.sharding
    assert spec is not None
    election = sharder_election(spec, compiled.config.leader_election)
    membership = MembershipSpec(spec.ring, spec.namespace, spec.lease_duration,
                                spec.renew_deadline, spec.retry_period,
                                election_lease(spec, election))
    member = MemberLease(manager.client, membership, shard.identity, on_lost=stop.set)
    shard.fence = member.valid
    if not member.acquire(stop):
        return None
    stack.callback(member.release)
    role = SharderRole(manager.client, election, lambda: Sharder(
        manager.client, membership, sharded_resources(compiled, manager.refs),
        sync_period=spec.sync_period), identity=shard.identity)
    role.start()
    stack.callback(role.stop)
    _log.info("ring %s: member %s; %s", spec.ring, shard.identity,
              "; ".join(f"{name} {role}" for name, role in compiled.sharded.items()))
    return member


# -- operating: probes, standby, log fields (kinrun.probes, kinrun.logging_setup) -------------


def _probes(config: Config) -> Probes | None:
    """The Probes of ``config.probes`` (None: no probe endpoint)."""
    if config.probes is None:
        return None
    from kinrun.probes import Probes

    probes = Probes(stuck_reconcile_after=config.probes.stuck_reconcile_after)
    probes.add_health_check(threads.health_check())  # a background thread that died
    return probes


def _serve_probes(probes: Probes, config: Config, manager: Manager,
                  stack: contextlib.ExitStack) -> None:
    """Serve ``/healthz`` and ``/readyz`` for ``manager``'s informers, the waiting ones too
    (from the first answer: not only once hot reload runs), ProbeServeError when the port
    cannot be bound; stopped when ``stack`` unwinds."""
    probes.watch_informers(lambda: manager.factory.informers().values())
    probes.watch_waiting(manager.waiting_informers)  # follows reloads: asks the Manager
    port = probes.serve(config.probes.port, config.probes.address)  # type: ignore[union-attr]
    stack.callback(probes.close)
    _log.info("health probes on http://%s:%d/healthz and /readyz",
              config.probes.address, port)  # type: ignore[union-attr]


def _standby(probes: Probes | None, metrics: Metrics | None, config: Config,
             waiting: bool) -> None:
    """Tell the probes and ``leader_election_master_status`` that this replica waits for the
    Lease (``waiting``) or leads."""
    spec = config.leader_election
    lease = f"{spec.namespace}/{spec.lease_name}"  # type: ignore[union-attr]
    if probes is not None:
        probes.standby(lease if waiting else None)
    if metrics is not None:
        metrics.set_leader(spec.lease_name, not waiting)  # type: ignore[union-attr]


def _observers(bound: Any, probes: Probes | None, log_fields: bool) -> Any:
    """The wrap ``(controller, reconcile) -> reconcile`` of the main job (``kinrun.bound``):
    the log fields outermost, then the stuck-reconcile tracking; None when neither is on."""
    wraps = []
    if probes is not None:
        wraps.append(probes.wrap)
    if log_fields:
        refs = {spec.name: bound.refs[spec.primary] for spec in bound.config.controllers}
        wraps.append(reconcile_log_fields(lambda c: refs[c].kind, lambda c: refs[c].group))
    if not wraps:
        return None

    def wrap(controller: str, reconcile: Any) -> Any:
        for one in wraps:
            reconcile = one(controller, reconcile)
        return reconcile
    return wrap


def _cluster_access(config: Config, options: RunOptions, stack: contextlib.ExitStack,
                    stop: threading.Event) -> tuple[str | None, str | None]:
    """The kubeconfig path and context to use; with ``--embedded``, start that server first
    and load the seeds (cut short, object by object, once ``stop`` is set)."""
    if not options.embedded:
        cluster = options.effective_cluster(config)
        return cluster.kubeconfig, cluster.context
    from kinrun.testing.apiserver import EmbeddedAPIServer

    seeds = {path: load_seed_file(path) for path in dict.fromkeys(options.seeds)}
    server = EmbeddedAPIServer()
    server.start()
    stack.callback(server.stop)
    loaded = sum(_load_seeds(server, path, objects, stop) for path, objects in seeds.items())
    if stop.is_set():
        return server.kubeconfig_path, None  # the run stops: nothing to point kubectl at
    _log.info("embedded API server at %s (%d seed object(s))", server.url, loaded)
    print(f"export KUBECONFIG={server.kubeconfig_path}", flush=True)
    return server.kubeconfig_path, None


def _load_seeds(server: Any, path: Path, objects: list[dict], stop: threading.Event) -> int:
    """Load one seed file's objects into the embedded server (none more once ``stop`` is set);
    returns how many were loaded. ConfigError naming the file and document when the server
    refuses one (unknown kind, invalid object)."""
    for index, obj in enumerate(objects):
        if stop.is_set():
            return index
        try:
            server.load([obj])
        except Exception as exc:  # noqa: BLE001 - the server's StatusError, whatever its code
            raise ConfigError(f"cannot load {obj.get('kind')} {obj['metadata'].get('name')!r}: "
                              f"{exc}", file=str(path), path=f"document[{index}]") from None
    return len(objects)


def load_seed_file(path: Path) -> list[dict]:
    """The objects of a multi-document YAML (or JSON) file; ``kind: List`` documents are
    flattened. Raises ConfigError naming the file (and line) for bad YAML or a document that
    is not an object with apiVersion, kind and metadata.name."""
    try:
        docs = safe_yaml.load_all(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read seed file: {exc.strerror}", file=str(path)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(path),
                          line=mark.line + 1 if mark else None,
                          column=mark.column + 1 if mark else None) from exc
    objects = []
    for index, doc in enumerate(d for d in docs if d is not None):
        items = doc.get("items", []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
        for obj in items:
            if not (isinstance(obj, dict) and obj.get("apiVersion") and obj.get("kind")
                    and isinstance(obj.get("metadata"), dict) and obj["metadata"].get("name")):
                raise ConfigError("each object needs apiVersion, kind and metadata.name",
                                  file=str(path), path=f"document[{index}]")
            objects.append(obj)
    return objects


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


def _serve_webhooks(compiled: Plan, manager: Manager, probes: Probes | None,
                    options: RunOptions, stack: contextlib.ExitStack) -> None:
    """Serve ``admission:``'s webhooks (``kinrun.admission.server``) until ``stack`` unwinds;
    not in a dry run (the CA Secret and caBundle would be real writes)."""
    if compiled.admission is None:
        return
    if options.dry_run:
        _log.warning("dry-run: admission webhooks are not served")
        return
    from kinrun.admission.server import LiveListers, WebhookOptions, build_webhook_server

    informers = lambda: manager.informers  # noqa: E731 - follows reloads
    server = build_webhook_server(compiled, manager.client, LiveListers(informers),
                                  manager.metrics, probes, WebhookOptions(synced=lambda: all(
                                      i.has_synced() for i in informers().values())))
    server.start()  # type: ignore[union-attr]
    stack.callback(server.stop)  # type: ignore[union-attr]
