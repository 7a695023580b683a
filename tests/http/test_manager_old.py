"""``old`` in a controller's reconcile (``ctx.old`` for hooks, ``old`` in action templates),
through a Manager against the embedded API server: a deletion brings the object's final state
(also from a tombstone) for every controller; an update brings the version reconciled before
only when the controller keeps old versions (``reconcile.keepOld``, default on with actions)."""

from __future__ import annotations

import logging
import queue
from collections.abc import Iterator
from typing import Any

import pytest
from test_manager import WAIT, client, cm  # noqa: F401 - "client" is the fixture the tests take

from kinrun.cache import DeletedFinalStateUnknown
from kinrun.config import load_text
from kinrun.hooks import hookimpl
from kinrun.kube import Client
from kinrun.manager import Manager
from kinrun.plan import plan
from kinrun.plugin_manager import new_plugin_manager
from kinrun.testing.apiserver import EmbeddedAPIServer

NAME, NS, KEY = "o", "default", "default/o"

HEADER = """\
apiVersion: kinrun.dev/v1alpha1
kind: ControllerConfig
informers:
  cms: {apiVersion: v1, kind: ConfigMap, namespaces: [default]}
controllers:
"""


class OldRecorder:
    """A plugin that puts every reconcile's ``(obj, ctx.old)`` on a queue, and every raw
    deletion its informer hands to plugins on another. ``fail_deletions``: how many deletion
    reconciles raise before one succeeds (each failure is retried by the controller)."""

    def __init__(self, fail_deletions: int = 0) -> None:
        self.calls: queue.Queue[tuple[dict | None, dict | None]] = queue.Queue()
        self.deletions: queue.Queue[Any] = queue.Queue()
        self.fail_deletions = fail_deletions

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.put((obj, ctx.old))
        if obj is None and self.fail_deletions > 0:
            self.fail_deletions -= 1
            raise RuntimeError("deletion reconcile fails once")

    @hookimpl
    def kinrun_on_delete(self, informer, obj):
        self.deletions.put(obj)

    def next(self) -> tuple[dict | None, dict | None]:
        return self.calls.get(timeout=WAIT)


class LineQueue(logging.Handler):
    """A logging handler that puts each record's message on a queue."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: queue.Queue[str] = queue.Queue()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.put(record.getMessage())

    def next(self) -> str:
        return self.lines.get(timeout=WAIT)


@pytest.fixture
def controller_log() -> Iterator[LineQueue]:
    """The messages of controller c1's logger (``kinrun.controller.c1``) at INFO and above."""
    logger = logging.getLogger("kinrun.controller.c1")
    handler, level = LineQueue(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def start(controller: str, client: Client, plugin: OldRecorder | None = None) -> Manager:
    """A started Manager for one controller (YAML list item ``controller``) on ConfigMaps of
    the default namespace, with ``plugin`` registered."""
    pm = new_plugin_manager()
    if plugin is not None:
        pm.register(plugin, name="old-recorder")
    manager = plan(load_text(HEADER + controller), pm).bind(client).manager()
    assert manager.start(sync_timeout=WAIT)
    return manager


def configmap(x: str) -> dict:
    obj = cm(NAME, NS)
    obj["data"] = {"x": x}
    return obj


def set_x(client: Client, x: str) -> dict:
    return client.patch("v1", "ConfigMap", NAME, {"data": {"x": x}}, namespace=NS)


def version(obj: dict | None) -> tuple[str, dict] | None:
    """What identifies one version of the ConfigMap: its resourceVersion and data."""
    return None if obj is None else (obj["metadata"]["resourceVersion"], obj["data"])


def final(obj: dict | None) -> tuple[str, dict] | None:
    """What a deletion's final state shares with the last version written: uid and data (the
    DELETED event carries the deletion's own resourceVersion)."""
    return None if obj is None else (obj["metadata"]["uid"], obj["data"])


def test_hook_only_controller_sees_old_only_for_a_deletion(client: Client) -> None:
    """Hook-only, no keepOld: ctx.old is None at create and update, the final state at deletion."""
    rec = OldRecorder()
    manager = start("  - {name: c1, for: cms, reconcile: {hooks: true}}\n", client, rec)
    try:
        created = client.create(configmap("1"))
        assert [version(o) for o in rec.next()] == [version(created), None]
        updated = set_x(client, "2")
        assert [version(o) for o in rec.next()] == [version(updated), None]
        client.delete("v1", "ConfigMap", NAME, NS)
        obj, old = rec.next()
        assert obj is None
        assert final(old) == final(updated) and old["data"] == {"x": "2"}
    finally:
        manager.stop(5)


def test_hook_only_controller_with_keep_old_sees_the_previous_reconcile(client: Client) -> None:
    """keepOld: true on a hook-only controller: ctx.old is the version reconciled before; at
    deletion the final state; a re-created object starts again from None."""
    rec = OldRecorder()
    manager = start("  - {name: c1, for: cms, reconcile: {hooks: true, keepOld: true}}\n",
                    client, rec)
    try:
        created = client.create(configmap("1"))
        assert [version(o) for o in rec.next()] == [version(created), None]
        updated = set_x(client, "2")
        obj, old = rec.next()
        assert version(obj) == version(updated)
        assert version(old) == version(created) and old["data"] == {"x": "1"}
        client.delete("v1", "ConfigMap", NAME, NS)
        assert [final(o) for o in rec.next()] == [None, final(updated)]
        again = client.create(configmap("3"))
        assert [version(o) for o in rec.next()] == [version(again), None]
    finally:
        manager.stop(5)


def test_hooks_with_an_action_using_old_keep_old_by_default(client: Client,
                                                           controller_log: LineQueue) -> None:
    """A controller whose action uses old, no keepOld: its hooks also see the previous version."""
    rec = OldRecorder()
    manager = start("""\
  - name: c1
    for: cms
    reconcile:
      hooks: true
      actions: [{log: "x={{ obj.data.x }}", when: "old is none or old.data.x != obj.data.x"}]
""", client, rec)
    try:
        created = client.create(configmap("1"))
        assert rec.next()[1] is None
        updated = set_x(client, "2")
        assert [version(o) for o in rec.next()] == [version(updated), version(created)]
        assert [controller_log.next(), controller_log.next()] == ["x=1", "x=2"]
    finally:
        manager.stop(5)


ACTIONS = """\
  - name: c1
    for: cms
    reconcile:
      {keep_old}
      actions:
        - log: 'x={{{{ obj.data.x }}}} old={{{{ old.data.x if old else "none" }}}}'
      onDelete:
        - log: 'deleted old={{{{ old.data.x if old else "none" }}}}'
"""


@pytest.mark.parametrize(("keep_old", "at_update"), [
    pytest.param("", "x=2 old=1", id="default-keeps"),
    pytest.param("keepOld: true", "x=2 old=1", id="keepOld-true"),
    pytest.param("keepOld: false", "x=2 old=none", id="keepOld-false"),
])
def test_action_templates_see_old(client: Client, controller_log: LineQueue, keep_old: str,
                                  at_update: str) -> None:
    """Templated log actions: old at update per keepOld (default on with actions); onDelete
    always renders the final state."""
    manager = start(ACTIONS.format(keep_old=keep_old), client)
    try:
        client.create(configmap("1"))
        assert controller_log.next() == "x=1 old=none"
        set_x(client, "2")
        assert controller_log.next() == at_update
        client.delete("v1", "ConfigMap", NAME, NS)
        assert controller_log.next() == "deleted old=2"
    finally:
        manager.stop(5)


def test_deletion_missed_by_the_watch_brings_the_tombstones_object(
        embedded_server: EmbeddedAPIServer, client: Client) -> None:
    """A deletion noticed only at a relist (DeletedFinalStateUnknown) gives ctx.old its .obj."""
    rec = OldRecorder()
    manager = start("  - {name: c1, for: cms, reconcile: {hooks: true}}\n", client, rec)
    faults = embedded_server.faults
    try:
        client.create(configmap("1"))
        rec.next()
        updated = set_x(client, "2")
        rec.next()
        faults.stall_next_watch()
        faults.close_watches()  # the reflector re-watches into the stall
        assert faults.stalled.wait(WAIT)
        client.delete("v1", "ConfigMap", NAME, NS)
        faults.expire_history()
        faults.close_watches()  # re-watch from the last resourceVersion: 410, relist
        tombstone = rec.deletions.get(timeout=WAIT)
        assert isinstance(tombstone, DeletedFinalStateUnknown) and tombstone.key == KEY
        obj, old = rec.next()
        assert obj is None and version(old) == version(updated)
    finally:
        manager.stop(5)


def test_retried_deletion_still_sees_the_final_state(client: Client) -> None:
    """A deletion reconcile that fails and is retried sees the final state as ctx.old again."""
    rec = OldRecorder(fail_deletions=1)
    manager = start("  - {name: c1, for: cms, reconcile: {hooks: true}}\n", client, rec)
    try:
        client.create(configmap("1"))
        rec.next()
        updated = set_x(client, "2")
        rec.next()
        client.delete("v1", "ConfigMap", NAME, NS)
        assert [final(o) for o in rec.next()] == [None, final(updated)]  # raises: retried
        assert [final(o) for o in rec.next()] == [None, final(updated)]
    finally:
        manager.stop(5)
