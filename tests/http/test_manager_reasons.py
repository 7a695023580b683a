"""Deletion reasons and causes through the whole pipeline on the embedded API server: a
template sees ``reason`` (deleted, left) and hooks ``ctx.reason`` (added, updated, resync,
mapped from INFORMER); resync is per handler, never leaked between informer names."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator

import pytest
from test_manager import WAIT, client, cm  # noqa: F401 - "client" is the fixture the tests take

from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager

HEAD = "apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\n"


class Reasons:
    """A hook plugin putting (controller, key, exists, ctx.reason) on a queue."""

    def __init__(self) -> None:
        self.calls: queue.Queue[tuple[str, str, bool, str]] = queue.Queue()

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.put((controller, key, obj is not None, ctx.reason))

    def next_for(self, controller: str) -> tuple[str, bool, str]:
        while True:
            name, key, exists, reason = self.calls.get(timeout=WAIT)
            if name == controller:
                return key, exists, reason


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: queue.Queue[str] = queue.Queue()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.put(record.getMessage())

    def wait_for(self, prefix: str) -> str:
        while True:
            line = self.lines.get(timeout=WAIT)
            if line.startswith(prefix):
                return line


@pytest.fixture
def lines() -> Iterator[Lines]:
    logger, handler = logging.getLogger("kinrun.controller"), Lines()
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old)


def start(text: str, client: Client, plugin: object = None):
    pm = new_plugin_manager()
    if plugin is not None:
        pm.register(plugin, name="reasons")
    manager = plan(load_text(HEAD + text), pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    return manager


def test_on_delete_template_tells_deleted_from_left(client: Client, lines: Lines) -> None:
    """With a label selector: relabelled out is `left` (the object still exists), deleted is
    `deleted`; each departure's onDelete runs once, with its final state as old."""
    manager = start("""\
informers:
  web: {apiVersion: v1, kind: ConfigMap, namespaces: [default], labelSelector: app=web}
controllers:
  - name: c
    for: web
    reconcile:
      actions: [{log: "live {{ key }} {{ reason }}"}]
      onDelete: [{log: "gone {{ key }} {{ reason }} {{ old.metadata.labels.app }}"}]
""", client)
    try:
        client.create(cm("a", "default", app="web"))
        assert lines.wait_for("live default/a") == "live default/a added"
        client.patch("v1", "ConfigMap", "a", {"metadata": {"labels": {"app": "other"}}},
                     namespace="default")
        assert lines.wait_for("gone default/a") == "gone default/a left web"
        client.create(cm("b", "default", app="web"))
        lines.wait_for("live default/b")
        client.delete("v1", "ConfigMap", "b", "default")
        assert lines.wait_for("gone default/b") == "gone default/b deleted web"
    finally:
        manager.stop(5)


def test_hooks_see_why_a_key_was_queued(client: Client) -> None:
    """ctx.reason: added, then updated, then mapped from the watched secondary informer."""
    rec = Reasons()
    manager = start("""\
informers:
  owners: {apiVersion: v1, kind: ConfigMap, namespaces: [default], labelSelector: role=owner}
  deps: {apiVersion: v1, kind: Secret, namespaces: [default]}
controllers:
  - name: c
    for: owners
    watches: [{informer: deps, mapTo: owner}]
    reconcile: {hooks: true}
""", client, rec)
    try:
        owner = client.create(cm("o", "default", role="owner"))
        assert rec.next_for("c") == ("default/o", True, "added")
        client.patch("v1", "ConfigMap", "o", {"data": {"x": "1"}}, namespace="default")
        assert rec.next_for("c") == ("default/o", True, "updated")
        client.create({"apiVersion": "v1", "kind": "Secret", "metadata": {
            "name": "s", "namespace": "default", "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "o",
                "uid": owner["metadata"]["uid"]}]}})
        assert rec.next_for("c") == ("default/o", True, "mapped from deps")
    finally:
        manager.stop(5)


QUIET = "  quiet: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}\n"
BUSY = "  busy: {apiVersion: v1, kind: ConfigMap, namespaces: [default], resyncPeriod: 1s}\n"


@pytest.mark.parametrize("informers", [QUIET + BUSY, BUSY + QUIET], ids=["quiet-first",
                                                                         "busy-first"])
def test_resync_is_per_handler_not_leaked_between_informer_names(client: Client,
                                                                  informers: str) -> None:
    """Two informer names on one watch, one with resyncPeriod 1s: only the controller on that
    one resyncs, whatever the declaration order."""
    rec = Reasons()
    manager = start("informers:\n" + informers + """\
controllers:
  - {name: on-quiet, for: quiet, reconcile: {hooks: true}}
  - {name: on-busy, for: busy, reconcile: {hooks: true}}
""", client, rec)
    try:
        client.create(cm("x", "default"))
        seen: dict[str, list[str]] = {"on-quiet": [], "on-busy": []}
        while seen["on-busy"].count("resync") < 2:
            name, _key, _exists, reason = rec.calls.get(timeout=WAIT)
            seen[name].append(reason)
        assert "resync" not in seen["on-quiet"]
    finally:
        manager.stop(5)
