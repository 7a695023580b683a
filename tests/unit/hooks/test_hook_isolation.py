"""Hooks never see mutable cache objects (issue 26): what a plugin does to the objects it
is given (obj, ctx.old, lister and indexer answers, event hooks' objects, an index function's
argument) never reaches the cache; SystemExit and KeyboardInterrupt from a hook are errors of
that key, never the end of a worker; a plugin that exits at import is a config error."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from kinrun.cache.thread_safe_store import KeyedIndexer
from kinrun.cache.lister import Lister
from kinrun.clock import FakeClock
from kinrun.controller import Controller
from kinrun.errors import ConfigError
from kinrun.hooks import ReconcileContext, hookimpl
from kinrun.plugin_manager import (EventHookHandler, HookExited, collect_index_funcs,
                                   load_plugins, new_plugin_manager, reconcile_caller)
from kinrun.reconcile import Result
from kinrun.workqueue import RateLimitingQueue


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}


class Vandal:
    """Mutates everything it is given, through every route a hook has."""

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        obj["metadata"]["labels"]["hacked"] = "yes"
        obj["spec"]["containers"].clear()
        ctx.old["metadata"].clear()
        ctx.listers["pods"].get("default/other")["spec"]["nodeName"] = "elsewhere"
        for item in ctx.listers["pods"].list():
            item["metadata"]["labels"].clear()
        for item in ctx.indexers["pods"].by_index("byNode", "n1"):
            item["status"] = {"phase": "Hacked"}

    @hookimpl
    def kinrun_on_update(self, informer, old, new):
        old["metadata"]["labels"]["hacked"] = "old"
        new["metadata"]["labels"]["hacked"] = "new"

    @hookimpl
    def kinrun_index_funcs(self, informer):
        def by_node(obj):
            obj["metadata"]["labels"]["indexed"] = "yes"
            return [obj["spec"]["nodeName"]]
        return {"byNode": by_node}


def test_a_hook_mutating_everything_leaves_the_cache_byte_identical() -> None:
    """obj, old, lister get/list and indexer by_index answers are private copies."""
    pm = new_plugin_manager()
    pm.register(Vandal())
    indexer = KeyedIndexer(indexers={"byNode": lambda o: [o["spec"]["nodeName"]]})
    for name in ("web", "other"):
        indexer.add(pod(name))
    before = orjson.dumps([indexer.get_by_key("default/web"), indexer.get_by_key("default/other")])
    cached = indexer.get_by_key("default/web")
    ctx = ReconcileContext(controller="c", key="default/web", old=cached,
                           listers={"pods": Lister(indexer)}, indexers={"pods": indexer})
    reconcile_caller(pm, True)("c", "default/web", cached, ctx)
    after = orjson.dumps([indexer.get_by_key("default/web"), indexer.get_by_key("default/other")])
    assert after == before


def test_event_hooks_and_index_functions_get_copies() -> None:
    """kinrun_on_update's old/new and a plugin index function's argument are copies: a later
    real label change is still a change (a labelsChanged predicate would see it)."""
    pm = new_plugin_manager()
    pm.register(Vandal())
    old, new = pod("web"), pod("web")
    new["metadata"]["labels"]["tier"] = "front"
    snapshot = orjson.dumps([old, new])
    EventHookHandler(pm, "pods").on_update(old, new)
    (index,) = collect_index_funcs(pm, "pods").values()
    assert index(new) == ["n1"]
    assert orjson.dumps([old, new]) == snapshot
    assert old["metadata"]["labels"] != new["metadata"]["labels"]


class Exiter:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        raise self.exc


@pytest.mark.parametrize("exc", [SystemExit(7), KeyboardInterrupt()], ids=["exit", "interrupt"])
def test_a_hook_that_exits_fails_its_key_and_the_worker_goes_on(exc: BaseException) -> None:
    """The reconcile fails with HookExited (retried with backoff); the next key runs."""
    pm = new_plugin_manager()
    pm.register(Exiter(exc))
    call = reconcile_caller(pm, True)
    with pytest.raises(HookExited, match=type(exc).__name__):
        call("c", "k", None, ReconcileContext(controller="c", key="k"))
    seen: list[str] = []

    def reconcile(key: str, obj: Any, *args: Any) -> Result:
        seen.append(key)
        try:
            call("c", key, None, ReconcileContext(controller="c", key=key))
        except HookExited as err:
            return Result.failed(err)
        return Result("done")
    queue = RateLimitingQueue(clock=FakeClock(), name="c")
    controller = Controller("c", queue, lambda key: None, reconcile)
    for key in ("a", "b"):
        controller.enqueue(key)
    assert controller.process_next_item() and controller.process_next_item()
    queue.shut_down()
    assert seen == ["a", "b"] and queue.num_requeues("a") == 1


def test_a_plugin_exiting_at_import_is_a_config_error(tmp_path: Path) -> None:
    """sys.exit(7) at import: ConfigError naming the plugin; the CLI exits 2 with that line."""
    (tmp_path / "bye.py").write_text("import sys\nsys.exit(7)\n")
    with pytest.raises(ConfigError, match=r"plugin './bye.py' failed to import: SystemExit"):
        load_plugins(["./bye.py"], tmp_path, entry_points=False)
    config = tmp_path / "c.yaml"
    config.write_text(textwrap.dedent("""\
        apiVersion: kinrun.dev/v1alpha1
        kind: ControllerConfig
        plugins: [./bye.py]
        informers: {pods: {apiVersion: v1, kind: Pod}}
        controllers: [{name: c, for: pods, reconcile: {hooks: true}}]
        """))
    run = subprocess.run([sys.executable, "-m", "kinrun.cli", "validate", str(config)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "SystemExit" in run.stderr and "bye.py" in run.stderr


def test_a_busy_event_hook_says_what_it_runs() -> None:
    """While kinrun_on_add runs, busy() names the hook, the object and for how long."""
    seen: list[str] = []

    class Slow:
        handler: EventHookHandler | None = None

        @hookimpl
        def kinrun_on_add(self, informer, obj, is_in_initial_list):
            seen.append(self.handler.busy() or "")

    pm = new_plugin_manager()
    slow = Slow()
    pm.register(slow)
    slow.handler = EventHookHandler(pm, "pods", clock=FakeClock())
    slow.handler.on_add(pod("web"), True)
    assert seen == ["kinrun_on_add of default/web for 0s"] and slow.handler.busy() is None


def test_a_hook_exception_quoting_a_secret_value_is_scrubbed() -> None:
    """kinrun repeats a hook's exception in its retry line: the reconciled Secret's values
    (stored and decoded) are replaced by <redacted> in it; the error's type stays."""
    import base64

    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "db", "namespace": "default"},
              "data": {"password": base64.b64encode(b"hunter2-s3cret").decode()}}

    class Leaky:
        @hookimpl
        def kinrun_reconcile(self, controller, key, obj, ctx):
            raise ValueError(f"cannot use password hunter2-s3cret for {key}")

    pm = new_plugin_manager()
    pm.register(Leaky())
    with pytest.raises(ValueError) as err:
        reconcile_caller(pm, True)("c", "default/db", secret,
                                   ReconcileContext(controller="c", key="default/db"))
    assert "hunter2-s3cret" not in str(err.value)
    assert str(err.value) == "cannot use password <redacted> for default/db"


def test_a_chained_hook_exception_is_scrubbed_through_its_chain() -> None:
    """The drop line's traceback prints the whole chain (``__cause__``, ``__context__``): a
    Secret value in an inner exception is scrubbed too."""
    import base64
    import traceback

    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "db", "namespace": "default"},
              "data": {"password": base64.b64encode(b"hunter2-s3cret").decode()}}

    class Chained:
        @hookimpl
        def kinrun_reconcile(self, controller, key, obj, ctx):
            try:
                raise KeyError(base64.b64decode(obj["data"]["password"]).decode())
            except KeyError as inner:
                raise RuntimeError("lookup failed") from inner

    pm = new_plugin_manager()
    pm.register(Chained())
    with pytest.raises(RuntimeError) as err:
        reconcile_caller(pm, True)("c", "default/db", secret,
                                   ReconcileContext(controller="c", key="default/db"))
    assert "hunter2-s3cret" not in "".join(traceback.format_exception(err.value))


def test_an_event_hook_exception_quoting_a_secret_value_is_scrubbed_in_the_log(
        caplog: pytest.LogCaptureFixture) -> None:
    """An event hook's failure is logged with its traceback: the Secret's values it was given
    (old and new) are scrubbed from the exception before kinrun logs it."""
    import base64
    import logging

    secret = {"apiVersion": "v1", "kind": "Secret",
              "metadata": {"name": "db", "namespace": "default"},
              "data": {"password": base64.b64encode(b"hunter2-s3cret").decode()}}

    class Leaky:
        @hookimpl
        def kinrun_on_update(self, informer, old, new):
            raise ValueError(base64.b64decode(new["data"]["password"]).decode())

    pm = new_plugin_manager()
    pm.register(Leaky())
    with caplog.at_level(logging.ERROR):
        EventHookHandler(pm, "secrets").on_update(secret, secret)
    assert "ValueError" in caplog.text and "hunter2-s3cret" not in caplog.text
