"""A kinrun_on_add hook that does not return for an object of the initial list holds every
controller (client-go's HasSynced): the Manager says what waits (informer, hook, object, for
how long), /readyz fails with it, and the wait ends when the hook returns."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.probes import Probes

WAIT = 30.0
CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - {name: c, for: cms, reconcile: {actions: [{log: "{{ key }}"}]}}
"""


class Stuck:
    """kinrun_on_add blocks on the initial list's ConfigMap until released."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    @hookimpl
    def kinrun_on_add(self, informer, obj, is_in_initial_list):
        if is_in_initial_list:
            self.entered.set()
            self.release.wait(WAIT)


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


def test_a_stuck_on_add_is_named_fails_readiness_and_holds_the_start(client: Client) -> None:
    client.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "slow", "namespace": "default"}})
    stuck = Stuck()
    pm = new_plugin_manager()
    pm.register(stuck)
    manager = plan(load_text(CONFIG), pm).bind(client).manager()
    probes = Probes(stuck_reconcile_after=60)
    probes.watch_informers(lambda: manager.factory.informers().values())
    probes.add_ready_check(manager.unhandled_initial_lists, "handlers")
    started: list[bool] = []
    thread = threading.Thread(target=lambda: started.append(manager.start(sync_timeout=WAIT)))
    thread.start()
    try:
        assert stuck.entered.wait(WAIT)
        (line,) = manager.unhandled_initial_lists()
        assert line.startswith("informer cms: handler EventHookHandler has not handled")
        assert "running kinrun_on_add of default/slow for" in line
        ready, body = probes.readyz()
        assert not ready and "kinrun_on_add of default/slow" in body
        assert not started  # no controller starts meanwhile
    finally:
        stuck.release.set()
        thread.join(WAIT)
    assert started == [True] and manager.unhandled_initial_lists() == []
    assert probes.readyz()[0]
    manager.stop(5.0)
