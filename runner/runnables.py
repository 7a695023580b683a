"""The main job's runnables and gates, added to its Manager (``kinrun.spine.runnables``).

    MetricsEndpoint   SERVERS   ``/metrics`` (``metrics:``)
    ProbesEndpoint    SERVERS   ``/healthz`` and ``/readyz`` (``probes:``)
    LeaderGate        gate      the ``leaderElection`` Lease (standby reported to probes, metrics)
    DryRunGate        gate      a dry run with ``leaderElection``: no Lease taken, said so
    RingGate          gate      a ring's membership Lease and the sharder role (``sharding:``)
    ReloadLoop        OTHERS    hot reload: polls the files, SIGHUP (``kinrun.reload``)

Each reads the plan's effective settings (``kinrun.spine.settings.RunSettings``), never the
raw Config. Each is started and stopped by the Manager on the main thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kinrun import signals
from kinrun.threads import SupervisedThread
from kinrun.bound import Bound, Wrap
from kinrun.clock import REAL_CLOCK
from kinrun.config.model import Config, LeaderElectionSpec, MetricsSpec, ProbesSpec
from kinrun.manager import Manager
from kinrun.plan import Plan
from kinrun.spine.runnables import Group

if TYPE_CHECKING:  # imported where used: only a config that asks for them pays their import
    from kinrun.leader_election import LeaderElector
    from kinrun.metrics import Metrics
    from kinrun.probes import Probes
    from kinrun.sharding.sharder import SharderRole
    from kinrun.sharding.shard import Shard

_log = logging.getLogger("kinrun")


class MetricsEndpoint:
    """Serve ``metrics`` on ``spec``'s address and port (ConfigError: port in use); with
    ``spec.secure``, over HTTPS (``spec.cert_dir``'s pair, else a self-signed one) to clients
    whose bearer token ``client``'s API server authenticates and authorizes for ``GET
    /metrics`` (``kinrun.kube.delegated_auth``), as controller-runtime's secure metrics."""

    name, group, needs_gate = "metrics", Group.SERVERS, False

    def __init__(self, metrics: Metrics, spec: MetricsSpec, client: Any = None) -> None:
        self.metrics, self.spec, self.client = metrics, spec, client

    def start(self, stop: threading.Event) -> bool:
        tls = auth = None
        if self.spec.secure:
            tls, auth = _secure(self.spec, self.client)
        port = self.metrics.serve(self.spec.port, self.spec.address, tls=tls, auth=auth)
        url = _url(self.spec.address, port).replace("http:", "https:" if tls else "http:")
        _log.info("metrics on %s/metrics%s", url,
                  " (authenticated and authorized through the API server)" if auth else "")
        return True

    def stop(self) -> None:
        self.metrics.close()


class WebhookServer:
    """The admission webhook server (``kinrun.admission.server``) of ``admission:``, on every
    replica, standby included: its rules read the Manager's caches (following reloads) and
    its readiness is a ``/readyz`` check. With ``--embedded`` it also registers its webhook
    configurations (``clientConfig.url``) on the embedded API server, which then calls it
    for every matching write."""

    name, group, needs_gate = "webhooks", Group.SERVERS, False

    def __init__(self, compiled: Plan, manager: Manager, probes: Probes | None) -> None:
        self.compiled, self.manager, self.probes = compiled, manager, probes
        self.server: Any = None

    def start(self, stop: threading.Event) -> bool:
        from kinrun.admission.server import (LiveListers, WebhookOptions, build_webhook_server,
                                             register_locally)

        manager = self.manager
        embedded = self.compiled.settings.embedded
        informers = lambda: manager.informers  # noqa: E731 - follows reloads
        self.server = build_webhook_server(
            self.compiled, manager.client, LiveListers(informers), manager.metrics, self.probes,
            WebhookOptions(synced=lambda: all(i.has_synced() for i in informers().values()),
                           clock=manager.clock or REAL_CLOCK,
                           hosts=("127.0.0.1",) if embedded else ()))
        self._bind_shard_views()
        self.server.start()
        if embedded:  # the embedded API server calls them as a cluster would
            register_locally(self.compiled, manager.client, self.server)
        return True

    def _bind_shard_views(self) -> None:
        """With ``sharding.admission``: the shard webhook reads the ring's live members from
        their Leases (``kinrun.sharding.admission.MemberView``)."""
        sharding = self.compiled.settings.sharding
        if sharding is None or not sharding.admission:
            return
        from kinrun.sharding import election_lease, sharder_election
        from kinrun.sharding.admission import bind_views
        from kinrun.sharding.membership import MembershipSpec

        election = sharder_election(sharding, self.compiled.settings.election)
        bind_views(self.compiled.admission, self.manager.client,
                   MembershipSpec(sharding.ring, sharding.namespace, sharding.lease_duration,
                                  sharding.renew_deadline, sharding.retry_period,
                                  election_lease(sharding, election)),
                   self.manager.clock or REAL_CLOCK)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


class ProbesEndpoint:
    """Serve ``/healthz`` and ``/readyz`` for the Manager's informers, the waiting ones too
    (from the first answer: not only once hot reload runs); ProbeServeError when the port
    cannot be bound."""

    name, group, needs_gate = "probes", Group.SERVERS, False

    def __init__(self, probes: Probes, spec: ProbesSpec, manager: Manager) -> None:
        self.probes, self.spec, self.manager = probes, spec, manager

    def start(self, stop: threading.Event) -> bool:
        manager = self.manager
        self.probes.watch_informers(lambda: manager.factory.informers().values())
        self.probes.watch_waiting(manager.waiting_informers)  # follows reloads
        self.probes.add_ready_check(manager.unhandled_initial_lists, "handlers")
        port = self.probes.serve(self.spec.port, self.spec.address)
        _log.info("health probes on %s/healthz and /readyz", _url(self.spec.address, port))
        return True

    def stop(self) -> None:
        self.probes.close()


class LeaderGate:
    """The ``leaderElection`` Lease: while waiting, the probes and
    ``leader_election_master_status`` say this replica stands by."""

    name = "leader election"

    def __init__(self, elector: LeaderElector, spec: LeaderElectionSpec, *, warm: bool,
                 probes: Probes | None, metrics: Metrics | None,
                 manager: Manager | None = None) -> None:
        self.elector, self.spec, self.warm = elector, spec, warm
        self.probes, self.metrics, self.manager = probes, metrics, manager

    @property
    def lost(self) -> bool:
        """Leadership was held and lost."""
        return self.elector.lost

    def acquire(self, stop: threading.Event) -> bool:
        self._standby(True)
        if self.warm:
            _log.info("warm standby: caches synced; waiting for the Lease %s/%s",
                      self.spec.namespace, self.spec.lease_name)
        if not self.elector.acquire(stop):
            return False
        self._standby(False)
        if self.manager is not None:  # no reconcile starts past renewDeadline
            self.manager.set_fence(self.elector.is_leading_now)
        return True

    def release(self) -> None:
        self.elector.release()

    def _standby(self, waiting: bool) -> None:
        if self.probes is not None:
            self.probes.standby(f"{self.spec.namespace}/{self.spec.lease_name}"
                                if waiting else None)
        if self.metrics is not None:
            self.metrics.set_leader(self.spec.lease_name, not waiting)


class DryRunGate:
    """A dry run of a config with ``leaderElection``: the Lease writes would be real writes,
    so it must never take the Lease from the real leader (nor pretend to hold it): it runs
    unelected, writing nothing, and says so."""

    name, lost = "dry-run", False

    def __init__(self, spec: LeaderElectionSpec) -> None:
        self.spec = spec

    def acquire(self, stop: threading.Event) -> bool:
        _log.warning("dry-run: leader election skipped: this replica reconciles without "
                     "the Lease %s/%s", self.spec.namespace, self.spec.lease_name)
        return True

    def release(self) -> None:
        """Nothing was taken."""


class RingGate:
    """This replica's membership Lease of ``sharding``'s ring: every reconcile is fenced on
    it; once held, the replica campaigns for the sharder role (the config's
    ``leaderElection``, else a Lease ``<ring>-sharder``). Released after the workers stopped:
    the sharder role first, then the membership Lease."""

    name = "ring membership"

    def __init__(self, compiled: Plan, manager: Manager, shard: Shard,
                 stop: threading.Event) -> None:
        from kinrun.sharding import election_lease, sharder_election
        from kinrun.sharding.membership import MemberLease, MembershipSpec

        spec = compiled.settings.sharding
        assert spec is not None
        self.compiled, self.manager, self.shard = compiled, manager, shard
        self.election = sharder_election(spec, compiled.settings.election)
        self.membership = MembershipSpec(spec.ring, spec.namespace, spec.lease_duration,
                                         spec.renew_deadline, spec.retry_period,
                                         election_lease(spec, self.election))
        self.member = MemberLease(manager.client, self.membership, shard.identity,
                                  on_lost=stop.set)
        shard.fence = self.member.valid
        manager.set_fence(self.member.valid)  # every controller's primary is sharded: writes too
        self.role: SharderRole | None = None

    @property
    def lost(self) -> bool:
        """The membership was held and lost."""
        return self.member.lost

    def acquire(self, stop: threading.Event) -> bool:
        from kinrun.sharding.sharder import Sharder, SharderRole, sharded_resources

        if not self.member.acquire(stop):
            return False
        client, spec = self.manager.client, self.membership
        resources = sharded_resources(self.compiled, self.manager.refs)
        sync_period = self.compiled.settings.sharding.sync_period  # type: ignore[union-attr]
        self.role = SharderRole(client, self.election, lambda: Sharder(
            client, spec, resources, sync_period=sync_period), identity=self.shard.identity)
        self.role.start()
        _log.info("ring %s: member %s; %s", spec.ring, self.shard.identity,
                  "; ".join(f"{name} {role}" for name, role in self.compiled.sharded.items()))
        return True

    def release(self) -> None:
        if self.role is not None:
            self.role.stop()
        self.member.release()


class ReloadLoop:
    """Hot reload (``kinrun.reload``): a thread that polls the plan's watched files every
    ``reload.pollInterval`` (``kinrun.config_watch``), reloads on a change or SIGHUP and looks
    for kinds not served yet every so often. Started once the workers run; stopped first, so
    no reload runs while the Manager stops. ``load()``: the config file again, as the CLI
    loaded it; ``compile(config)``: its Plan; ``wrap_for(bound)``: the reconcile observer."""

    name, group, needs_gate = "reload", Group.OTHERS, True

    def __init__(self, manager: Manager, load: Callable[[], Config],
                 compile: Callable[[Config], Plan], wrap_for: Callable[[Bound], Wrap | None],
                 stop: threading.Event) -> None:
        self.manager, self.load, self.compile, self.wrap_for = manager, load, compile, wrap_for
        self.run_stop = stop
        self.ended, self.wake, self.hup = threading.Event(), threading.Event(), threading.Event()
        self.thread: threading.Thread | None = None
        self.watching: signals.StopSignals | None = None

    def files(self) -> list[str]:
        """The files of the plan in force (follows reloads)."""
        return list(self.manager.plan.settings.watched_files)

    def start(self, stop: threading.Event) -> bool:
        from kinrun.config_watch import ConfigWatcher
        from kinrun.reload import Reloader  # after the first reconcile: the workers run already

        settings = self.manager.plan.settings
        spec, watcher = settings.reload, ConfigWatcher(self.files())
        reloader = Reloader(self.manager, self.load, self.compile, wrap_for=self.wrap_for,
                            metrics=self.manager.metrics, files=self.files,
                            sync_timeout=spec.sync_timeout,
                            drain_timeout=settings.drain_timeout or 0.0,
                            discovery_interval=spec.discovery_interval, stop=self.run_stop)

        def changed() -> bool:
            watcher.set_paths(self.files())  # the plugin files of the config in force
            return watcher.changed()
        self.thread = SupervisedThread(
            target=reloader.run, name="kinrun-reload",
            args=(self.ended, self.wake, changed, spec.poll_interval, self._take_hup))
        self.thread.start()
        self.watching = signals.current()
        if self.watching is not None:
            self.watching.on_reload(self._on_hup)
        _log.info("config reload on SIGHUP%s", f"; watching {', '.join(self.files())} every "
                  f"{spec.poll_interval:g}s" if spec.poll_interval
                  else " only (reload.pollInterval 0)")
        return True

    def _on_hup(self) -> None:
        self.hup.set()
        self.wake.set()

    def _take_hup(self) -> bool:
        was = self.hup.is_set()
        self.hup.clear()
        return was

    def stop(self) -> None:
        if self.watching is not None:
            self.watching.on_reload(None)
        self.ended.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join((self.manager.plan.settings.drain_timeout or 0.0) + 1.0)


def _url(address: str, port: int) -> str:
    """``http://ADDRESS:PORT``, an IPv6 address in brackets (RFC 3986)."""
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}"


def _secure(spec: MetricsSpec, client: Any) -> tuple[Any, Any]:
    """The TLS context and the delegated authn/authz of secure metrics."""
    import socket

    from kinrun.kube.delegated_auth import DelegatedAuth
    from kinrun.tls import DirectoryCerts, SelfSignedCerts, ServerTLS

    source = (DirectoryCerts(spec.cert_dir) if spec.cert_dir else
              SelfSignedCerts(sorted({socket.gethostname(), "localhost", "127.0.0.1"})))
    return ServerTLS(source), DelegatedAuth.for_client(client)
