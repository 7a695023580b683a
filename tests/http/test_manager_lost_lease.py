"""A replica that lost its Lease stops without draining (``Manager.stop(drain=False)``): the
reconcile under way finishes, no queued key is reconciled any more (another replica may own
them already); a normal stop drains them."""

from __future__ import annotations

import threading

import pytest
from test_manager import WAIT, client, cm  # noqa: F401 - "client" is the fixture the tests take

from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

CONFIG = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [lease-lost], labelSelector: lost=yes}
controllers:
  - name: c
    for: cms
    workers: 1
    reconcile: {hooks: true}
"""


class FirstBlocks:
    """A hook plugin: the first reconcile waits for ``release``; every key is recorded."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.entered, self.release = threading.Event(), threading.Event()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.keys.append(key)
        if len(self.keys) == 1:
            self.entered.set()
            assert self.release.wait(WAIT)


@pytest.mark.parametrize("drain", [True, False])
def test_lost_lease_reconciles_no_queued_key(client: Client, drain: bool) -> None:
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lease-lost"}})
    for i in range(3):
        client.create(cm(f"x{i}", "lease-lost", lost="yes"))
    plugin = FirstBlocks()
    pm = new_plugin_manager()
    pm.register(plugin, name="first-blocks")
    manager = plan(load_text(CONFIG), pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    assert plugin.entered.wait(WAIT)  # one key running, two queued
    result: list[bool] = []
    stopping = threading.Thread(target=lambda: result.append(manager.stop(WAIT, drain=drain)))
    stopping.start()
    controller = manager.controllers["c"]
    # Release the running reconcile only once the stop has reached the controller: a drain
    # waits in the workqueue's shutdown, a lost Lease has retired the controller.
    reached = threading.Event()
    while not reached.wait(0.01):
        if controller.queue.shutting_down() or controller._retired:
            reached.set()
    plugin.release.set()
    stopping.join(WAIT)
    assert result == [True]
    if drain:
        assert sorted(plugin.keys) == ["lease-lost/x0", "lease-lost/x1", "lease-lost/x2"]
    else:
        assert len(plugin.keys) == 1, plugin.keys


class PausedThenWrites:
    """A hook plugin: the first reconcile waits for ``release`` (the process "paused" inside
    it), then patches its ConfigMap through ``ctx.client``; what the patch raised is kept."""

    def __init__(self) -> None:
        self.entered, self.release, self.tried = (threading.Event(), threading.Event(),
                                                  threading.Event())
        self.raised: BaseException | None = None

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        if self.tried.is_set():
            return
        self.entered.set()
        assert self.release.wait(WAIT)
        meta = obj["metadata"]
        try:
            ctx.client.patch("v1", "ConfigMap", meta["name"],
                             {"metadata": {"labels": {"written": "yes"}}},
                             namespace=meta["namespace"])
        except BaseException as err:  # noqa: BLE001 - kept for the test, raised on
            self.raised = err
            raise
        finally:
            self.tried.set()


def test_a_reconcile_resumed_after_the_fence_closed_sends_no_write(client: Client) -> None:
    """The Lease fence closes while a reconcile runs (a pause past renewDeadline): its write
    through the real client is not sent (FencedError) and the object stays as it was."""
    from kinrun.fencing import FencedError

    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fenced"}})
    client.create(cm("x0", "fenced", lost="yes"))
    plugin = PausedThenWrites()
    pm = new_plugin_manager()
    pm.register(plugin, name="paused-then-writes")
    manager = plan(load_text(CONFIG.replace("lease-lost", "fenced")), pm).bind(client).manager()
    leading = [True]
    manager.set_fence(lambda: leading[0])
    assert manager.start(sync_timeout=WAIT)
    try:
        assert plugin.entered.wait(WAIT)
        leading[0] = False  # renewDeadline passed while the reconcile was paused
        plugin.release.set()
        assert plugin.tried.wait(WAIT)
        assert isinstance(plugin.raised, FencedError)
        labels = client.get("v1", "ConfigMap", "x0", "fenced")["metadata"]["labels"]
        assert "written" not in labels
    finally:
        manager.stop(WAIT, drain=False)
