"""``mapTo: {template}`` mappers through the whole pipeline on the embedded API server: a
mapper fans one object out to every Namespace with ``list``, sees ``initial_list``, and a slow
mapper (blocked in a plugin filter) stalls neither its informer nor the controller whose
primary that informer is (kinrun.bound wires template mappers on listener threads)."""

from __future__ import annotations

import queue
import threading

from test_manager import WAIT, client, cm  # noqa: F401 - "client" is the fixture the tests take

from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


class Calls:
    """A hook plugin putting (controller, key, reason) on a queue; its ``block`` filter waits
    for ``release`` when it maps an object named ``slow``."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[str, str, str]] = queue.Queue()
        self.release, self.entered = threading.Event(), threading.Event()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.put((controller, key, ctx.reason))

    @hookimpl
    def kinrun_template_filters(self):
        def block(obj):
            if obj["metadata"]["name"] == "slow":
                self.entered.set()
                assert self.release.wait(WAIT)
            return obj["metadata"]["name"]
        return {"block": block}

    def until(self, wanted: set[tuple[str, str, str]]) -> None:
        """Take calls until every one of ``wanted`` was seen."""
        left = set(wanted)
        while left:
            left.discard(self.calls.get(timeout=WAIT))


def start(text: str, client: Client, plugin: Calls):
    pm = new_plugin_manager()
    pm.register(plugin, name="calls")
    manager = plan(load_text(HEAD + text), pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    return manager


def test_one_object_fans_out_to_every_namespace(client: Client) -> None:
    """A ConfigMap change maps, through ``list('namespaces')``, to the key of every Namespace,
    a Namespace created later included."""
    client.create(cm("source", "default"))
    calls = Calls()
    manager = start("""\
informers:
  namespaces: {apiVersion: v1, kind: Namespace}
  source: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - name: fan
    for: namespaces
    watches:
      - informer: source
        mapTo: {template: "{{ list('namespaces') | map(attribute='metadata.name') | list
                              if obj.metadata.name == 'source' and not initial_list else '' }}"}
    reconcile: {hooks: true}
""", client, calls)
    try:
        names = {o["metadata"]["name"] for o in manager.informers["namespaces"].lister.list()}
        calls.until({("fan", n, "added") for n in names})
        client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "late"}})
        calls.until({("fan", "late", "added")})
        client.patch("v1", "ConfigMap", "source", {"data": {"k": "v"}}, namespace="default")
        calls.until({("fan", n, "mapped from source") for n in names | {"late"}})
    finally:
        manager.stop(5.0)


def test_blocked_mapper_stalls_neither_its_informer_nor_the_primary_controller(
        client: Client) -> None:
    """While a mapper of informer ``cms`` is blocked, controller ``own`` (primary ``cms``)
    still reconciles a new ConfigMap, and the cache holds it; released, the mapper's key
    follows."""
    client.create(cm("target", "default"))
    calls = Calls()
    manager = start("""\
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
  - {name: own, for: cms, reconcile: {hooks: true}}
  - name: mapped
    for: cms
    watches:
      - {informer: cms, mapTo: {template: "default/{{ 'target' if (obj | block) else '' }}"}}
    reconcile: {hooks: true}
""", client, calls)
    try:
        calls.until({("own", "default/target", "added"), ("mapped", "default/target", "added")})
        client.create(cm("slow", "default"))
        assert calls.entered.wait(WAIT)
        client.create(cm("next", "default"))
        calls.until({("own", "default/next", "added")})
        assert manager.informers["cms"].lister.get("default/next") is not None
        calls.release.set()
        calls.until({("mapped", "default/target", "mapped from cms")})
    finally:
        calls.release.set()
        manager.stop(5.0)
