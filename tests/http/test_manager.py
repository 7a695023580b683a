"""The Manager (a config's informers and controllers) against the embedded API server, through
the real client: namespaces lists, update predicates, hooks and actions together, metrics and
leader election."""

from __future__ import annotations

import queue
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from kinrun.config import load_text
from kinrun.config.model import LeaderElectionSpec
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.leader_election import LeaderElector
from kinrun.manager import Manager
from kinrun.plan import plan
from kinrun.metrics import Metrics
from kinrun.plugin_manager import new_plugin_manager
from kinrun.predicates import PREDICATES, filter_updates
from kinrun.spine.runnables import Group

WAIT = 30.0


class Recorder:
    """A hook plugin that puts every reconcile's (controller, key, exists) on a queue."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[str, str, bool]] = queue.Queue()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.put((controller, key, obj is not None))

    def next(self) -> tuple[str, str, bool]:
        return self.calls.get(timeout=WAIT)

    def drain_until(self, wanted: tuple[str, str, bool]) -> None:
        while self.next() != wanted:
            pass


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


def start_manager(text: str, client: Client, metrics: Metrics | None = None
                  ) -> tuple[Manager, Recorder]:
    recorder = Recorder()
    pm = new_plugin_manager()
    pm.register(recorder, name="recorder")
    manager = plan(load_text(text), pm).bind(client).manager(metrics=metrics)
    assert manager.start(sync_timeout=WAIT)
    return manager, recorder


def cm(name: str, namespace: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": labels}, "data": {}}


def test_namespaces_list_watches_only_those_namespaces(client: Client) -> None:
    """An informer with namespaces [a, b] reconciles objects of a and b, never of c."""
    for ns in ("a", "b", "c"):
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    manager, rec = start_manager("""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [a, b]}
controllers:
  - {name: c1, for: cms, reconcile: {hooks: true}}
""", client)
    try:
        for ns in ("c", "a", "b"):
            client.create(cm("x", ns))
        client.create(cm("last", "b"))
        seen = set()
        while not {"a/x", "b/last"} <= seen:  # a and b are two informers: no order between
            seen.add(rec.next()[1])
        assert seen == {"a/x", "b/x", "b/last"}
        assert manager.informers["cms"].lister.get("a/x") is not None
        assert manager.informers["cms"].lister.get("c/x") is None
    finally:
        manager.stop(5)


def test_label_predicate_skips_updates_that_change_no_label(client: Client) -> None:
    """predicates: [labelsChanged] reconciles a label change, not a data change."""
    manager, rec = start_manager("""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - {name: c1, for: cms, predicates: [labelsChanged], reconcile: {hooks: true}}
""", client)
    try:
        client.create(cm("p", "default"))
        assert rec.next() == ("c1", "default/p", True)
        client.patch("v1", "ConfigMap", "p", {"data": {"k": "1"}}, namespace="default")
        client.patch("v1", "ConfigMap", "p", {"metadata": {"labels": {"l": "1"}}},
                     namespace="default")
        assert rec.next() == ("c1", "default/p", True)
        client.delete("v1", "ConfigMap", "p", "default")
        assert rec.next() == ("c1", "default/p", False)
        assert rec.calls.empty()
    finally:
        manager.stop(5)


def test_filter_updates_passes_adds_and_deletes_and_matching_updates() -> None:
    """UpdateFilteringHandler: adds/deletes always pass; updates only when a predicate holds."""
    got = []

    class Inner:
        def on_add(self, obj, initial): got.append("add")
        def on_update(self, old, new): got.append("update")
        def on_delete(self, obj): got.append("delete")

    handler = filter_updates(Inner(), ["generationChanged"])
    old = {"metadata": {"generation": 1, "labels": {}}}
    handler.on_add(old, False)
    handler.on_update(old, {"metadata": {"generation": 1, "labels": {"x": "y"}}})
    handler.on_update(old, {"metadata": {"generation": 2}})
    handler.on_delete(old)
    assert got == ["add", "update", "delete"]
    assert set(PREDICATES) == {"generationChanged", "labelsChanged", "annotationsChanged",
                               "resourceVersionChanged"}


def test_actions_then_hooks_run_and_metrics_count_reconciles(client: Client) -> None:
    """A controller with actions and hooks applies its child, calls the hook, and counts both in /metrics."""
    metrics = Metrics()
    manager, rec = start_manager("""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default], labelSelector: parent=yes}
controllers:
  - name: c1
    for: cms
    reconcile:
      hooks: true
      actions:
        - apply:
            manifest: |
              apiVersion: v1
              kind: ConfigMap
              metadata: {name: "{{ obj.metadata.name }}-child"}
""", client, metrics)
    port = metrics.serve(0, "127.0.0.1")
    try:
        client.create(cm("p", "default", parent="yes"))
        assert rec.next() == ("c1", "default/p", True)
        child = client.get("v1", "ConfigMap", "p-child", "default")
        assert child["metadata"]["ownerReferences"][0]["name"] == "p"
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=WAIT).read()
        text = body.decode()
        assert 'controller_runtime_reconcile_total{controller="c1",result="success"} 1.0' in text
        assert 'kinrun_informer_objects{informer="cms"} 1.0' in text
    finally:
        metrics.close()
        manager.stop(5)


def test_leader_election_admits_one_leader_until_it_releases(client: Client) -> None:
    """Two candidates on one Lease: the second leads only after the first releases."""
    spec = LeaderElectionSpec(lease_name="kinrun-test", namespace="default", lease_duration=15,
                              renew_deadline=10, retry_period=0.05)
    first = LeaderElector(client, spec, identity="one")
    second = LeaderElector(client, spec, identity="two")
    assert first.acquire(threading.Event())
    stop_second = threading.Event()
    won = threading.Event()
    thread = threading.Thread(target=lambda: second.acquire(stop_second) and won.set())
    thread.start()
    try:
        assert not won.wait(0.5)
        assert client.get_lease("kinrun-test", "default")["spec"]["holderIdentity"] == "one"
        first.release()
        assert won.wait(WAIT)
        assert client.get_lease("kinrun-test", "default")["spec"]["holderIdentity"] == "two"
    finally:
        stop_second.set()
        thread.join(WAIT)
        second.release()


def test_workers_start_after_every_handler_handled_its_initial_list(
        client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """A template mapper runs on a listener thread of its own: the Manager starts no worker
    until that listener has handled its informer's initial-list adds (client-go's
    ResourceEventHandlerRegistration.HasSynced), so the key it maps is queued before the first
    reconcile, not during it (which made one reconcile more, at random)."""
    ns = "initial-handled"
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    client.create(cm("web", ns, app="p"))
    client.create(cm("web-settings", ns, owner="web"))
    text = f"""
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  primaries: {{apiVersion: v1, kind: ConfigMap, namespaces: [{ns}], labelSelector: app=p}}
  settings: {{apiVersion: v1, kind: ConfigMap, namespaces: [{ns}], labelSelector: owner}}
controllers:
  - name: c
    for: primaries
    watches:
      - informer: settings
        mapTo: {{template: "{{{{ obj.metadata.namespace }}}}/{{{{ obj.metadata.labels.owner }}}}"}}
    reconcile: {{hooks: true}}
"""
    recorder = Recorder()
    pm = new_plugin_manager()
    pm.register(recorder, name="recorder")
    manager = plan(load_text(text), pm).bind(client).manager()
    mapper = [r for entry in manager.wired.handlers["c"] if not entry.synchronous  # buffered:
              for r in entry.registrations()]                          # the template mapper's
    assert mapper
    handled = threading.Event()
    for registration in mapper:  # the listener "has not caught up" until the test says so
        real = registration.listener.initial_list_handled
        monkeypatch.setattr(registration.listener, "initial_list_handled",
                            lambda real=real: handled.is_set() and real())
    started = threading.Event()
    thread = threading.Thread(target=lambda: (manager.start(sync_timeout=WAIT), started.set()))
    thread.start()
    try:
        assert all(inf.wait_for_sync(WAIT) for inf in manager.informers.values())
        assert not started.wait(0.3)  # caches synced, the mapper's initial list not handled
        assert not manager.workers_started and recorder.calls.empty()
        handled.set()
        assert started.wait(WAIT) and manager.workers_started
        assert recorder.next() == ("c", f"{ns}/web", True)
    finally:
        thread.join(WAIT)
        manager.stop(1.0)


class _Runnable:
    """A runnable of ``group``; ``fails``: its start raises (as a port in use), and it needs
    the gate, as hot reload does (it starts after the pipeline)."""

    def __init__(self, name: str, group: Group, fails: bool = False) -> None:
        self.name, self.group, self.needs_gate, self.fails = name, group, fails, fails
        self.stopped = False

    def start(self, stop: threading.Event) -> bool:
        if self.fails:
            raise OSError(98, "Address already in use")
        return True

    def stop(self) -> None:
        self.stopped = True


def test_a_start_that_raises_stops_what_started_before_it(client: Client) -> None:
    """A runnable whose start raises (after the endpoints and the pipeline started): the
    error reaches the caller and everything started before it is stopped, so a process that
    uses kinrun as a library keeps no informer or endpoint running."""
    text = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - {name: c, for: cms, reconcile: {hooks: true}}
"""
    pm = new_plugin_manager()
    pm.register(Recorder(), name="recorder")
    manager = plan(load_text(text), pm).bind(client).manager()
    endpoint = _Runnable("endpoint", Group.SERVERS)
    manager.add(endpoint)
    manager.add(_Runnable("reload", Group.OTHERS, fails=True))
    with pytest.raises(OSError, match="Address already in use"):
        manager.start(sync_timeout=WAIT)
    assert endpoint.stopped
    assert manager.workers_started  # the pipeline ran, and was stopped again:
    assert all(inf._stopped for inf in manager.informers.values())
