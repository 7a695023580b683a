"""The Manager and the GC policy's frozen garbage, against the embedded API server: cycles a
plugin's reconcile leaves behind outlive full collections until ``collect_frozen_garbage``, and
``gc.collectFrozenEvery`` runs it on a thread that ``stop`` ends."""

from __future__ import annotations

import gc
import logging
import queue
import threading
import weakref
from collections.abc import Iterator

import pytest

from kinrun.gc import policy as gc_tuning
from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.manager import Manager
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

WAIT = 30.0

CONFIG = """
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {{apiVersion: v1, kind: ConfigMap, namespaces: [default]}}
controllers:
  - {{name: c1, for: cms, reconcile: {{hooks: true}}}}
{gc}
"""


class Node:
    """A tree node linked to its parent: a node with children is in a reference cycle."""

    __slots__ = ("parent", "children", "__weakref__")

    def __init__(self, parent: Node | None) -> None:
        self.parent = parent
        self.children: list[Node] = []


class CycleBuilder:
    """A hook plugin whose reconcile builds a parent <-> children cycle that lives through a
    gen-0 collection (forced here; allocations trigger one in production), then drops it."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref[Node]] = []
        self.reconciled: queue.Queue[str] = queue.Queue()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        root = Node(None)
        root.children = [Node(root) for _ in range(10)]
        self.refs.append(weakref.ref(root))
        gc.collect(0)  # the policy freezes the survivors, this cycle among them
        del root
        self.reconciled.put(key)

    def alive(self) -> int:
        return sum(1 for ref in self.refs if ref() is not None)


@pytest.fixture
def client(embedded_server) -> Iterator[Client]:
    client = Client.from_config(kubeconfig=embedded_server.kubeconfig_path)
    yield client
    client.close()


def start_manager(client: Client, plugin: object, gc_section: str = "") -> Manager:
    pm = new_plugin_manager()
    pm.register(plugin, name="plugin")
    manager = plan(load_text(CONFIG.format(gc=gc_section)), pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT, gc_policy=True)  # the main job's choice
    return manager


def cm(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"}, "data": {}}


def test_collect_frozen_garbage_frees_the_cycles_a_reconcile_left(client: Client, caplog) -> None:
    """Cycles frozen during reconciles survive gc.collect(); collect_frozen_garbage frees them
    and logs 'gc: collected N frozen objects in X ms' at INFO."""
    plugin = CycleBuilder()
    manager = start_manager(client, plugin)
    try:
        names = ["a", "b", "c"]
        for name in names:
            client.create(cm(name))
        assert sorted(plugin.reconciled.get(timeout=WAIT) for _ in names) == \
            [f"default/{n}" for n in names]
        gc.collect()
        assert plugin.alive() == len(names)  # frozen: no collection of the policy reaches them
        with caplog.at_level(logging.INFO, logger="kinrun.manager"):
            done = manager.collect_frozen_garbage()
        assert plugin.alive() == 0
        assert done.collected >= len(names) * 22  # 11 nodes and 11 child lists per cycle
        assert f"gc: collected {done.collected} frozen objects in " in caplog.text
    finally:
        manager.stop(5)
    assert not gc_tuning.freezing_survivors()
    with pytest.raises(gc_tuning.PolicyOffError):
        manager.collect_frozen_garbage()


def test_collect_frozen_every_runs_on_a_thread_that_stop_ends(client: Client, monkeypatch,
                                                              caplog) -> None:
    """gc.collectFrozenEvery: 1ms calls gc_tuning.collect_frozen repeatedly from the Manager's
    thread, logging each run; after stop returns, the thread is gone and no call follows."""
    calls: list[str] = []
    thrice = threading.Event()

    def fake_collect_frozen() -> gc_tuning.FrozenCollection:
        calls.append(threading.current_thread().name)
        if len(calls) >= 3:
            thrice.set()
        return gc_tuning.FrozenCollection(seconds=0.0123, collected=7, frozen=1000)

    monkeypatch.setattr(gc_tuning, "collect_frozen", fake_collect_frozen)
    with caplog.at_level(logging.INFO, logger="kinrun.manager"):
        manager = start_manager(client, CycleBuilder(), "gc: {collectFrozenEvery: 1ms}")
        try:
            assert thrice.wait(WAIT)
        finally:
            manager.stop(5)
    assert set(calls) == {"kinrun-gc-collect-frozen"}
    assert not collecting_thread_alive()
    assert "gc: collected 7 frozen objects in 12 ms" in caplog.text


def collecting_thread_alive() -> bool:
    return any(t.name == "kinrun-gc-collect-frozen" for t in threading.enumerate())


def test_stop_ends_a_waiting_collect_frozen_thread_at_once(client: Client, monkeypatch) -> None:
    """With collectFrozenEvery: 1h, stop ends the waiting thread without a collection (an
    hour-long sleep would hang this test until pytest's timeout)."""
    calls: list[int] = []
    monkeypatch.setattr(gc_tuning, "collect_frozen", lambda: calls.append(1))
    manager = start_manager(client, CycleBuilder(), "gc: {collectFrozenEvery: 1h}")
    try:
        assert collecting_thread_alive()
    finally:
        manager.stop(5)
    assert not collecting_thread_alive() and calls == []


def test_no_collect_frozen_thread_without_the_key(client: Client) -> None:
    """Without gc.collectFrozenEvery the Manager starts no collecting thread."""
    manager = start_manager(client, CycleBuilder())
    try:
        assert not collecting_thread_alive()
    finally:
        manager.stop(5)


def test_library_start_leaves_the_process_gc_settings_alone(client: Client) -> None:
    """A library user's start() applies no GC policy: thresholds and the frozen count stay."""
    pm = new_plugin_manager()
    pm.register(CycleBuilder(), name="plugin")
    before = (gc.get_threshold(), gc.get_freeze_count())
    manager = plan(load_text(CONFIG.format(gc="")), pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    try:
        assert (gc.get_threshold(), gc.get_freeze_count()) == before
    finally:
        manager.stop(WAIT)
