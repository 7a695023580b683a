"""The main job's metrics against the embedded API server: after a small run every metric has
controller-runtime's (or client-go's) name and labels; a standby replica reports
``leader_election_master_status`` 0 and a ready /readyz naming the Lease; reflector relists and
watch restarts are counted."""

from __future__ import annotations

import logging
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinrun import app
from kinrun.config import RunOptions, load_text
from kinrun.config.model import LeaderElectionSpec
from kinrun.kube import Client
from kinrun.leader_election import LeaderElector
from kinrun.metrics import Metrics
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

WAIT = 20.0  # real seconds to wait for the run to get somewhere (never reached when it works)

CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default], labelSelector: parent=yes}
controllers:
  - name: children
    for: cms
    workers: 2
    reconcile:
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-child"}
leaderElection: {leaseName: LEASE, namespace: default, retryPeriod: 100ms}
metrics: {port: 0, address: 127.0.0.1}
probes: {port: 0, address: 127.0.0.1}
"""


def get(port: int, path: str) -> tuple[int, str]:
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=WAIT) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


class Ports(logging.Handler):
    """Reads the bound ports off the main job's log lines."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, int] = {}
        self.running = threading.Event()
        self.changed = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        for what, pattern in (("metrics", r":(\d+)/metrics$"), ("probes", r":(\d+)/healthz")):
            match = re.search(pattern, text)
            if match:
                with self.changed:
                    self.found[what] = int(match.group(1))
                    self.changed.notify_all()
        if text.startswith("kinrun running"):
            self.running.set()

    def port(self, what: str) -> int:
        with self.changed:
            assert self.changed.wait_for(lambda: what in self.found, WAIT), what
            return self.found[what]


class MainJob:
    """``kinrun.app.run`` on a thread against a server's kubeconfig, stopped by ``stop()``."""

    def __init__(self, config_text: str, kubeconfig: str) -> None:
        self.stop_event = threading.Event()
        self.ports = Ports()
        self.result: list[int] = []
        config = load_text(config_text)
        options = RunOptions(config_path=Path("test.yaml"), kubeconfig=kubeconfig)
        self.thread = threading.Thread(
            target=lambda: self.result.append(app.run(config, options, stop=self.stop_event)))

    def __enter__(self) -> MainJob:
        log = logging.getLogger("kinrun")
        self.level = log.level
        log.setLevel(logging.INFO)
        log.addHandler(self.ports)
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop_event.set()
        self.thread.join(WAIT)
        log = logging.getLogger("kinrun")
        log.removeHandler(self.ports)
        log.setLevel(self.level)
        assert self.result == [0]


@pytest.fixture
def client(embedded_server: Any) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    try:
        yield client
    finally:
        client.close()


def cm(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": labels}}


def scrape_until(port: int, line: str) -> str:
    """The /metrics text once it holds ``line`` (polled; at most WAIT s)."""
    done = threading.Event()
    text = ""
    for _ in range(int(WAIT / 0.05)):
        text = get(port, "/metrics")[1]
        if line in text:
            return text
        done.wait(0.05)
    raise AssertionError(f"{line!r} not in /metrics:\n{text}")


def test_main_job_exports_controller_runtime_metrics(embedded_server: Any, client: Client) -> None:
    """After one reconcile with a write: every controller-runtime, workqueue, rest_client,
    leader election, process and Python metric is there with its labels; only /metrics
    answers on the metrics port; the probes are ok."""
    client.create(cm("p", parent="yes"))
    host = embedded_server.url.split("://", 1)[1].rstrip("/")
    with MainJob(CONFIG.replace("LEASE", "kinrun-metrics"), embedded_server.kubeconfig_path) as job:
        port = job.ports.port("metrics")
        text = scrape_until(port, 'controller_runtime_reconcile_total{controller="children",'
                                  'result="success"} 1.0')
        for line in (
            'controller_runtime_reconcile_errors_total{controller="children"} 0.0',
            'controller_runtime_terminal_reconcile_errors_total{controller="children"} 0.0',
            'controller_runtime_reconcile_time_seconds_bucket{controller="children",le="0.005"}',
            'controller_runtime_reconcile_time_seconds_count{controller="children"} 1.0',
            'controller_runtime_max_concurrent_reconciles{controller="children"} 2.0',
            'controller_runtime_active_workers{controller="children"}',
            'workqueue_depth{controller="children",name="children"}',
            'workqueue_adds_total{controller="children",name="children"} 1.0',
            'workqueue_queue_duration_seconds_bucket{controller="children",le="1e-08",name="children"}',
            'workqueue_work_duration_seconds_count{controller="children",name="children"}',
            'workqueue_unfinished_work_seconds{controller="children",name="children"}',
            'workqueue_longest_running_processor_seconds{controller="children",name="children"}',
            f'rest_client_requests_total{{code="200",host="{host}",method="GET"}}',
            f'rest_client_requests_total{{code="201",host="{host}",method="PATCH"}}',
            'leader_election_master_status{name="kinrun-metrics"} 1.0',
            'kinrun_informer_objects{informer="cms"} 1.0',
            "# TYPE workqueue_retries_total counter",
            "# TYPE kinrun_informer_relists_total counter",
            "# TYPE kinrun_informer_watch_restarts_total counter",
            "process_cpu_seconds_total ",
            "python_info{",
            'python_gc_objects_collected_total{generation="0"}',
        ):
            assert line in _sorted_labels(text), line
        assert "kinrun_reconcile_total" not in text  # the old names are gone
        assert get(port, "/healthz")[0] == 404
        probes = job.ports.port("probes")
        assert job.ports.running.wait(WAIT)
        assert get(probes, "/readyz") == (200, "ok\n")
        assert get(probes, "/healthz") == (200, "ok\n")


def _sorted_labels(text: str) -> str:
    """The exposition with each sample's labels sorted by name (prometheus-client writes them
    in declaration order), so expected lines need not know that order."""
    def sort(match: re.Match[str]) -> str:
        labels = re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2))
        return match.group(1) + "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels)) + "}"
    return re.sub(r"^(\w+)\{([^}]*)\}", sort, text, flags=re.M)


def test_standby_replica_is_ready_and_not_master(embedded_server: Any, client: Client) -> None:
    """While another replica holds the Lease: /readyz 200 naming the Lease, master status 0;
    once it is released: the replica leads (1) and is ready once synced."""
    spec = LeaderElectionSpec(lease_name="kinrun-standby", namespace="default",
                              lease_duration=15, renew_deadline=10, retry_period=0.1)
    other = LeaderElector(client, spec, identity="the-other-replica")
    assert other.acquire(threading.Event())
    try:
        with MainJob(CONFIG.replace("LEASE", "kinrun-standby"),
                     embedded_server.kubeconfig_path) as job:
            probes, metrics = job.ports.port("probes"), job.ports.port("metrics")
            scrape_until(metrics, 'leader_election_master_status{name="kinrun-standby"} 0.0')
            assert get(probes, "/readyz") == (
                200, "ok (standby: waiting for the Lease default/kinrun-standby)\n")
            other.release()
            scrape_until(metrics, 'leader_election_master_status{name="kinrun-standby"} 1.0')
            assert job.ports.running.wait(WAIT)
            assert get(probes, "/readyz") == (200, "ok\n")
    finally:
        other.release()


def test_relists_and_watch_restarts_are_counted(embedded_server: Any, client: Client) -> None:
    """A watch closed by the server, then a 410 on re-opening it: one restart ``closed``, one
    ``expired`` and one relist, labelled with the informer."""
    metrics = Metrics()
    config = load_text(CONFIG.replace("LEASE", "unused"))
    manager = plan(config, new_plugin_manager()).bind(client).manager(metrics=metrics)
    assert manager.start(sync_timeout=WAIT)
    port = metrics.serve(0, "127.0.0.1")
    try:
        # Synced is not watching: the reflector opens its watch after the LIST. A close before
        # the watch is open closes nothing (then there is no "closed" restart to count).
        assert embedded_server.wait_for_watchers("v1", "ConfigMap", timeout=WAIT)
        embedded_server.faults.expire_next_watch()
        embedded_server.faults.close_watches()
        text = scrape_until(port, 'kinrun_informer_relists_total{informer="cms"} 1.0')
        assert 'kinrun_informer_watch_restarts_total{informer="cms",reason="closed"} 1.0' in text
        assert 'kinrun_informer_watch_restarts_total{informer="cms",reason="expired"} 1.0' in text
    finally:
        metrics.close()
        manager.stop(5)


def test_grafana_dashboard_queries_only_exported_metrics() -> None:
    """Every metric examples/deploy/grafana-dashboard.json queries is one kinrun exports."""
    import json

    root = Path(__file__).resolve().parents[2]
    dashboard = json.loads((root / "examples/deploy/grafana-dashboard.json").read_text())
    queried = {name for panel in dashboard["panels"] for target in panel.get("targets", [])
               for name in re.findall(r"\b([a-z_]+)\{", target["expr"])}
    exported = set()
    for family in Metrics().registry.collect():
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"]}
        exported |= {family.name + s for s in suffixes.get(family.type, [""])}
        exported |= {sample.name for sample in family.samples}
    assert queried and queried <= exported, queried - exported
