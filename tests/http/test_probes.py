"""Health probes over HTTP (kinrun.probes): /healthz fails for a wedged reflector or a stuck
reconcile and names the check, /readyz follows cache sync, every other path is 404 (on the
probe port and on the metrics port)."""

from __future__ import annotations

import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kinrun.cache import ObjectList, SharedIndexInformer
from kinrun.cache.reflector import DEFAULT_INACTIVITY_TIMEOUT, LIVENESS_GRACE
from kinrun.clock import FakeClock
from kinrun.config import load_text
from kinrun.kube import Client
from kinrun.metrics import Metrics
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.probes import Probes, parse_bind_address
from kinrun.testing.memory import MemoryListerWatcher

WAIT = 10.0  # real seconds to wait for a thread to get somewhere (never reached when it works)
WEDGED_AFTER = DEFAULT_INACTIVITY_TIMEOUT + LIVENESS_GRACE


def get(port: int, path: str) -> tuple[int, str]:
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=WAIT) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


class BlockingList(MemoryListerWatcher):
    """A MemoryListerWatcher whose LIST blocks until ``release`` is set: a reflector that makes
    no progress (a hung request)."""

    def __init__(self) -> None:
        super().__init__("ConfigMap")
        self.release, self.listing = threading.Event(), threading.Event()

    def list(self, *, resource_version: str = "") -> ObjectList:
        self.listing.set()
        self.release.wait(WAIT)
        return super().list(resource_version=resource_version)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def probes(clock: FakeClock) -> Iterator[tuple[Probes, int]]:
    """Probes on a free port of 127.0.0.1, with a fake clock and a 60 s reconcile bound."""
    probes = Probes(stuck_reconcile_after=60.0, clock=clock)
    port = probes.serve(0, "127.0.0.1")
    try:
        yield probes, port
    finally:
        probes.close()


def wait_until(check: Any) -> bool:
    """Poll ``check()`` (real time, at most WAIT s); returns its last value."""
    done = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if check():
            return True
        done.wait(0.01)
    return bool(check())


def test_healthz_fails_for_a_wedged_reflector_and_recovers(probes: tuple[Probes, int],
                                                           clock: FakeClock) -> None:
    """A reflector stuck in a LIST past its inactivity limit (fake clock) fails /healthz with a
    body naming it; once the LIST returns, /healthz is ok again."""
    probe, port = probes
    lw = BlockingList()
    informer = SharedIndexInformer(lw, kind="ConfigMap", name="settings", clock=clock)
    probe.watch_informers(lambda: [informer])
    informer.start()
    try:
        assert lw.listing.wait(WAIT)
        assert get(port, "/healthz") == (200, "ok\n")
        clock.step(WEDGED_AFTER - 1)
        assert get(port, "/healthz")[0] == 200  # within the limit
        clock.step(2)
        status, body = get(port, "/healthz")
        assert status == 500
        assert "[-]reflector settings: no progress for" in body
        lw.release.set()
        assert informer.wait_for_sync(WAIT)
        assert get(port, "/healthz") == (200, "ok\n")
    finally:
        lw.release.set()
        informer.stop()


def test_healthz_ignores_a_silent_watch_the_watchdog_reopens(probes: tuple[Probes, int],
                                                             clock: FakeClock) -> None:
    """An idle watch (no event, no bookmark) is re-opened at the inactivity limit: that is
    progress, so /healthz stays ok however long the resource stays idle."""
    probe, port = probes
    lw = MemoryListerWatcher("ConfigMap")
    informer = SharedIndexInformer(lw, kind="ConfigMap", name="idle", clock=clock)
    probe.watch_informers(lambda: [informer])
    informer.start()
    try:
        assert informer.wait_for_sync(WAIT)
        for opened in range(2, 5):
            assert wait_until(lambda: len(lw.watch_requests) >= opened - 1)
            assert clock.wait_for_waiters(1, timed=True)
            clock.step(DEFAULT_INACTIVITY_TIMEOUT)
            assert wait_until(lambda: len(lw.watch_requests) >= opened)
            assert get(port, "/healthz") == (200, "ok\n")
    finally:
        informer.stop()


def test_healthz_fails_for_a_reconcile_running_past_the_bound(probes: tuple[Probes, int],
                                                              clock: FakeClock) -> None:
    """A reconcile (through the wrap seam) running longer than stuck_reconcile_after fails
    /healthz naming the controller and key; when it returns, /healthz is ok."""
    probe, port = probes
    started, release = threading.Event(), threading.Event()

    def reconcile(key: str, obj: Any, cause: Any = None) -> None:
        started.set()
        release.wait(WAIT)

    tracked = probe.wrap("pod-logger", reconcile)
    worker = threading.Thread(target=tracked, args=("default/mypod", None))
    worker.start()
    try:
        assert started.wait(WAIT)
        clock.step(60)
        assert get(port, "/healthz")[0] == 200  # at the bound, not past it
        clock.step(1)
        status, body = get(port, "/healthz")
        assert status == 500
        assert "[-]reconcile pod-logger default/mypod: running for 61s (limit 60s)" in body
    finally:
        release.set()
        worker.join(WAIT)
    assert get(port, "/healthz") == (200, "ok\n")


def test_readyz_follows_cache_sync_and_standby(probes: tuple[Probes, int]) -> None:
    """/readyz: 500 before anything is watched and before sync, naming the informer; 200 after;
    a standby replica is ready and says for which Lease."""
    probe, port = probes
    assert get(port, "/readyz")[0] == 500
    lw = BlockingList()
    informer = SharedIndexInformer(lw, kind="ConfigMap", name="settings")
    probe.watch_informers(lambda: [informer])
    informer.start()
    try:
        assert get(port, "/readyz") == (500, "readyz check failed\n[-]informer settings: not synced\n")
        probe.standby("default/my-lease")
        assert get(port, "/readyz") == (200, "ok (standby: waiting for the Lease default/my-lease)\n")
        probe.standby(None)
        lw.release.set()
        assert informer.wait_for_sync(WAIT)
        assert get(port, "/readyz") == (200, "ok\n")
    finally:
        lw.release.set()
        informer.stop()


@pytest.fixture
def client(embedded_server: Any) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    try:
        yield client
    finally:
        client.close()


def test_readyz_of_a_manager_on_the_embedded_server(probes: tuple[Probes, int],
                                                    client: Client) -> None:
    """A Manager's informers (``factory.informers``): not ready before start, ready once its
    caches synced."""
    probe, port = probes
    config = load_text("""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default, kube-system]}
controllers:
  - {name: c1, for: cms, reconcile: {actions: [{log: "{{ key }}"}]}}
""")
    manager = plan(config, new_plugin_manager()).bind(client).manager()
    probe.watch_informers(lambda: manager.factory.informers().values())
    assert get(port, "/readyz") == (500, "readyz check failed\n[-]informer cms-default: not "
                                         "synced\n[-]informer cms-kube-system: not synced\n")
    assert manager.start(sync_timeout=WAIT)
    try:
        assert get(port, "/readyz") == (200, "ok\n")
        assert get(port, "/healthz") == (200, "ok\n")
    finally:
        manager.stop(5)


@pytest.mark.parametrize("path", ["/", "/metrics", "/healthz/extra", "/livez", "/favicon.ico"])
def test_unknown_paths_are_404_on_the_probe_port(probes: tuple[Probes, int], path: str) -> None:
    """Only /healthz and /readyz answer on the probe port."""
    assert get(probes[1], path)[0] == 404


@pytest.mark.parametrize("path", ["/", "/healthz", "/readyz", "/metrics/x", "/other"])
def test_unknown_paths_are_404_on_the_metrics_port(path: str) -> None:
    """Only /metrics answers 200 on the metrics port (a probe aimed at it fails)."""
    metrics = Metrics()
    port = metrics.serve(0, "127.0.0.1")
    try:
        assert get(port, path)[0] == 404
        status, body = get(port, "/metrics?name[]=x")
        assert status == 200 and "controller_runtime_reconcile_total" in body
    finally:
        metrics.close()


@pytest.mark.parametrize("text, expected", [
    pytest.param(":8081", ("0.0.0.0", 8081), id="all-addresses"),
    pytest.param("127.0.0.1:9440", ("127.0.0.1", 9440), id="host-port"),
    pytest.param("[::1]:8081", ("::1", 8081), id="ipv6"),
    pytest.param("0", None, id="disabled"),
])
def test_bind_address_is_read_as_controller_runtime_does(text: str, expected: Any) -> None:
    """--health-probe-bind-address: HOST:PORT, :PORT, [v6]:PORT, or 0 (off)."""
    assert parse_bind_address(text) == expected


@pytest.mark.parametrize("text", ["8081", "host:", "host:99999", "a:b"])
def test_bad_bind_address_is_refused(text: str) -> None:
    """Anything without a port in 0-65535 is a ValueError."""
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_bind_address(text)


@pytest.mark.parametrize("file_probes, flag, expected", [
    pytest.param("", ["--health-probe-bind-address", "127.0.0.1:9440"],
                 ("127.0.0.1", 9440, 600.0), id="flag-only"),
    pytest.param("probes: {port: 8081, stuckReconcileAfter: 2m}\n",
                 ["--health-probe-bind-address", ":9000"], ("0.0.0.0", 9000, 120.0),
                 id="flag-over-file"),
    pytest.param("probes: {port: 8081}\n", ["--health-probe-bind-address", "0"], None,
                 id="flag-disables"),
    pytest.param("probes: {port: 7000, address: 127.0.0.1}\n", [], ("127.0.0.1", 7000, 600.0),
                 id="file-only"),
    pytest.param("", [], None, id="neither"),
])
def test_health_probe_bind_address_flag_reaches_the_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Any, file_probes: str, flag: list[str],
        expected: Any) -> None:
    """`kinrun CONFIG --health-probe-bind-address ...` overrides probes.address/port (keeping
    stuckReconcileAfter), `0` turns the probes off; without it the file decides."""
    import sys
    import types
    from pathlib import Path

    from kinrun import cli

    seen: dict[str, Any] = {}
    fake = types.ModuleType("kinrun.app")

    def run(config: Any, options: Any) -> int:
        seen["config"] = config
        return 0

    fake.run = run  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kinrun.app", fake)
    monkeypatch.setattr("kinrun.logging_setup.configure_logging", lambda *a, **k: logging.NullHandler())
    pod_logger = Path(__file__).parents[2] / "examples/configs/pod-logger.yaml"
    config = tmp_path / "c.yaml"
    config.write_text(pod_logger.read_text() + file_probes)
    assert cli.main([str(config), *flag]) == 0
    probes = seen["config"].probes
    got = None if probes is None else (probes.address, probes.port, probes.stuck_reconcile_after)
    assert got == expected


def test_bad_health_probe_bind_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --health-probe-bind-address exits 2 with argparse's message."""
    from pathlib import Path

    from kinrun import cli

    pod_logger = Path(__file__).parents[2] / "examples/configs/pod-logger.yaml"
    assert cli.main([str(pod_logger), "--health-probe-bind-address", "8081"]) == 2
    assert "expected HOST:PORT, :PORT or 0" in capsys.readouterr().err
