"""Every hookspec called with keyword arguments, and the callers the runtime uses."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kinrun.actions import LogLine, compile_actions
from kinrun.errors import ConfigError, PermanentError, TemporaryError
from kinrun.hooks import HOOK_NAMES, ReconcileContext, hookimpl
from kinrun.plugin_manager import (
    call_shutdown, call_startup, collect_index_funcs, combine_delays, describe_plugins, event_handler,
    new_plugin_manager, reconcile_caller,
)


class AllHooks:
    """Implements every hook and records each call's keyword arguments."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def kinrun_reconcile(self, controller, key, obj, ctx):
        self.calls.append(("kinrun_reconcile", dict(controller=controller, key=key, obj=obj,
                                                    ctx=ctx)))
        return 2.5

    @hookimpl
    def kinrun_on_add(self, informer, obj, is_in_initial_list):
        self.calls.append(("kinrun_on_add", dict(informer=informer, obj=obj,
                                                 is_in_initial_list=is_in_initial_list)))

    @hookimpl
    def kinrun_on_update(self, informer, old, new):
        self.calls.append(("kinrun_on_update", dict(informer=informer, old=old, new=new)))

    @hookimpl
    def kinrun_on_delete(self, informer, obj):
        self.calls.append(("kinrun_on_delete", dict(informer=informer, obj=obj)))

    @hookimpl
    def kinrun_index_funcs(self, informer):
        self.calls.append(("kinrun_index_funcs", dict(informer=informer)))
        return {"byApp": lambda o: [o["metadata"]["labels"]["app"]]}

    @hookimpl
    def kinrun_startup(self, config, client):
        self.calls.append(("kinrun_startup", dict(config=config, client=client)))

    @hookimpl
    def kinrun_shutdown(self):
        self.calls.append(("kinrun_shutdown", {}))

    @hookimpl
    def kinrun_template_filters(self):
        self.calls.append(("kinrun_template_filters", {}))
        return {"shout": lambda s: str(s).upper() + "!"}

    @hookimpl
    def kinrun_action_kinds(self):
        self.calls.append(("kinrun_action_kinds", {}))

        def greet(args, *, obj, ctx):
            return [LogLine("info", f"{args['greeting']} {obj['metadata']['name']} "
                                    f"from {ctx.controller}")]
        return {"greet": greet}


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-1", "namespace": "shop", "labels": {"app": "web"}}}


@pytest.fixture
def plugin() -> AllHooks:
    return AllHooks()


@pytest.fixture
def pm(plugin):
    manager = new_plugin_manager()
    manager.register(plugin, name="all")
    return manager


def test_every_hookspec_is_called_with_keyword_arguments(pm, plugin):
    """Each hook reaches the plugin with exactly the documented keyword arguments."""
    ctx = ReconcileContext(controller="web", key="shop/web-1")
    assert pm.hook.kinrun_reconcile(controller="web", key="shop/web-1", obj=POD, ctx=ctx) == [2.5]
    pm.hook.kinrun_on_add(informer="pods", obj=POD, is_in_initial_list=True)
    pm.hook.kinrun_on_update(informer="pods", old=POD, new=POD)
    pm.hook.kinrun_on_delete(informer="pods", obj=POD)
    (funcs,) = pm.hook.kinrun_index_funcs(informer="pods")
    pm.hook.kinrun_startup(config="cfg", client=None)
    pm.hook.kinrun_shutdown()
    (filters,) = pm.hook.kinrun_template_filters()
    (kinds,) = pm.hook.kinrun_action_kinds()
    assert [name for name, _ in plugin.calls] == list(HOOK_NAMES)
    assert plugin.calls[0][1] == {"controller": "web", "key": "shop/web-1", "obj": POD, "ctx": ctx}
    assert plugin.calls[1][1] == {"informer": "pods", "obj": POD, "is_in_initial_list": True}
    assert plugin.calls[4][1] == {"informer": "pods"}
    assert plugin.calls[5][1] == {"config": "cfg", "client": None}
    assert funcs["byApp"](POD) == ["web"]
    assert filters["shout"]("hi") == "HI!"
    assert set(kinds) == {"greet"}


def test_hooks_refuse_positional_arguments(pm):
    """pluggy hook callers only take keyword arguments."""
    with pytest.raises(TypeError):
        pm.hook.kinrun_on_delete("pods", POD)


def test_plugin_filters_and_action_kinds_are_used_by_actions(pm):
    """Filters and action kinds from plugins are available to compiled actions."""
    prog = compile_actions([{"log": "{{ obj.metadata.name | shout }}"},
                            {"plugin": "greet",
                             "with": {"greeting": "hello {{ obj.metadata.namespace }}"}}],
                           controller="web", plugin_manager=pm)
    result = prog.render(key="shop/web-1", obj=POD)
    assert result.steps == (LogLine("info", "WEB-1!"), LogLine("info", "hello shop web-1 from web"))


def test_reconcile_caller_combines_delays_and_selects_plugins(pm):
    """reconcile_caller calls all or only the named plugins and returns the smallest delay."""
    class Faster:
        @hookimpl
        def kinrun_reconcile(self, key):
            return 1.0
    pm.register(Faster(), name="faster")
    ctx = ReconcileContext(controller="web", key="k")
    assert reconcile_caller(pm, True)("web", "k", None, ctx) == 1.0
    assert reconcile_caller(pm, ["all"])("web", "k", None, ctx) == 2.5
    assert reconcile_caller(pm, False) is None
    with pytest.raises(ConfigError, match="unknown plugin"):
        reconcile_caller(pm, ["nope"])


@pytest.mark.parametrize("error", [PermanentError("stop"), TemporaryError("later", delay=3.0),
                                   RuntimeError("retry me")], ids=lambda e: type(e).__name__)
def test_reconcile_errors_propagate_unchanged(error):
    """Errors raised by a plugin's reconcile reach the controller as they were raised."""
    class Failing:
        @hookimpl
        def kinrun_reconcile(self):
            raise error
    pm = new_plugin_manager()
    pm.register(Failing())
    with pytest.raises(type(error)) as info:
        reconcile_caller(pm, True)("web", "k", None, ReconcileContext("web", "k"))
    assert info.value is error


@pytest.mark.parametrize("results, expected", [
    ([None, None], None), ([None, 3, 1.5], 1.5), ([0], 0.0), ([], None),
])
def test_combine_delays(results, expected):
    """The smallest non-None delay wins."""
    assert combine_delays(results) == expected


@pytest.mark.parametrize("bad", [-1, "5s", True])
def test_combine_delays_rejects_non_seconds(bad):
    """A reconcile returning something other than None or seconds >= 0 is an error."""
    with pytest.raises(ValueError):
        combine_delays([bad])


def test_collect_index_funcs_refuses_duplicate_names(pm):
    """Two plugins supplying the same index name for an informer is a ConfigError."""
    assert set(collect_index_funcs(pm, "pods")) == {"byApp"}
    pm.register(AllHooks(), name="again")
    with pytest.raises(ConfigError, match="two plugins supply index 'byApp'"):
        collect_index_funcs(pm, "pods")


def test_event_handler_forwards_events_and_swallows_errors(pm, plugin, caplog):
    """The informer adapter forwards notifications; a failing plugin is logged, not raised."""
    class Broken:
        @hookimpl
        def kinrun_on_update(self, informer):
            raise RuntimeError("plugin bug")
    pm.register(Broken())
    handler = event_handler(pm, "pods", logging.getLogger("kinrun.test.events"))
    handler.on_add(POD, True)
    handler.on_update(POD, POD)
    handler.on_delete(POD)
    assert [n for n, _ in plugin.calls] == ["kinrun_on_add", "kinrun_on_delete"]
    assert "plugin hook kinrun_on_update failed for informer 'pods'" in caplog.text


def test_event_handler_is_none_without_event_hooks():
    """No listener is needed when no plugin implements a raw event hook."""
    assert event_handler(new_plugin_manager(), "pods") is None


def test_call_shutdown_runs_every_plugin_despite_failures(pm, plugin, caplog):
    """A failing shutdown hook is logged and the others still run."""
    class Broken:
        @hookimpl
        def kinrun_shutdown(self):
            raise RuntimeError("cannot close")
    pm.register(Broken(), name="broken")
    call_shutdown(pm)
    assert ("kinrun_shutdown", {}) in plugin.calls
    assert "plugin 'broken': kinrun_shutdown failed" in caplog.text


def test_call_startup_passes_arguments_and_names_a_failing_plugin(pm, plugin):
    """Startup hooks get their arguments; a failure is a KinrunError naming the plugin."""
    from kinrun.errors import KinrunError

    call_startup(pm, config="cfg", client=None)
    assert ("kinrun_startup", {"config": "cfg", "client": None}) in plugin.calls

    class Broken:
        @hookimpl
        def kinrun_startup(self, config):
            raise RuntimeError("no database")
    pm.register(Broken(), name="broken")
    with pytest.raises(KinrunError, match="plugin 'broken': kinrun_startup failed: "
                                          "RuntimeError: no database"):
        call_startup(pm, config="cfg", client=None)


def test_a_failed_startup_names_the_plugins_not_started_and_shutdown_skips_them(caplog):
    """StartupError.not_started: the failed plugin and those whose kinrun_startup was not
    called yet; ``call_shutdown(skip=...)`` calls the others (a plugin with no
    kinrun_startup counts as started)."""
    from kinrun.plugin_manager import StartupError

    calls: list[str] = []

    def plugin(name: str, fails: bool = False, startup: bool = True):
        class One:
            @hookimpl
            def kinrun_shutdown(self):
                calls.append(f"{name} shutdown")
        if startup:
            def kinrun_startup(self, config):
                calls.append(f"{name} startup")
                if fails:
                    raise RuntimeError("license server unreachable")
            One.kinrun_startup = hookimpl(kinrun_startup)
        return One()
    pm = new_plugin_manager()
    for name, kw in (("late", {}), ("s", {"fails": True}), ("plain", {"startup": False}),
                     ("ok", {})):
        pm.register(plugin(name, **kw), name=name)
    with pytest.raises(StartupError) as failed:
        call_startup(pm, config="cfg", client=None)
    assert calls == ["ok startup", "s startup"]  # last registered first
    assert failed.value.not_started == frozenset({"s", "late"})
    call_shutdown(pm, skip=failed.value.not_started)
    assert calls[2:] == ["ok shutdown", "plain shutdown"]


def test_describe_plugins_lists_hooks(pm):
    """describe_plugins names each plugin with its implemented hooks."""
    ((name, source, hooks),) = describe_plugins(pm)
    assert name == "all" and hooks == sorted(HOOK_NAMES)
    assert "AllHooks" in source


def test_hookimpl_is_importable_from_public_face():
    """`from kinrun.hooks import hookimpl` gives pluggy's marker for project kinrun."""
    import pluggy

    import kinrun.hooks
    assert isinstance(kinrun.hooks.hookimpl, pluggy.HookimplMarker)
    assert kinrun.hooks.hookimpl.project_name == "kinrun"


def test_plugin_index_funcs_never_raise_into_the_store(caplog):
    """A failing plugin index function files the object nowhere and logs a warning."""
    class Buggy:
        @hookimpl
        def kinrun_index_funcs(self, informer):
            return {"byOwner": lambda o: o["metadata"]["ownerReferences"][0]["name"],
                    "byName": lambda o: o["metadata"]["name"]}
    pm = new_plugin_manager()
    pm.register(Buggy())
    funcs = collect_index_funcs(pm, "pods")
    assert funcs["byOwner"](POD) == []
    assert funcs["byName"](POD) == ["web-1"]
    assert "informer 'pods' index 'byOwner': index function failed: KeyError" in caplog.text
