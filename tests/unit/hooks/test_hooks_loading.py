"""Loading plugins: module names, file paths, entry points; errors as ConfigError."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hooks_fakes import make_distribution, write_plugin

from kinrun.errors import ConfigError
from kinrun.plugin_manager import describe_plugins, file_module_name, load_plugins

RECONCILE_PLUGIN = """
    from kinrun.hooks import hookimpl

    @hookimpl
    def kinrun_reconcile(key):
        return 5.0
"""


@pytest.fixture(autouse=True)
def restore_modules() -> Iterator[None]:
    """Forget modules the test imported, so names can be reused across tests."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_file_plugin_is_loaded_relative_to_base_dir(tmp_path):
    """A file path is resolved against base_dir and registered under the spec as written."""
    path = write_plugin(tmp_path, "hooks/reconcile.py", RECONCILE_PLUGIN)
    pm = load_plugins(["./hooks/reconcile.py"], tmp_path, entry_points=False)
    assert describe_plugins(pm) == [("./hooks/reconcile.py", f"file {path.resolve()}",
                                     ["kinrun_reconcile"])]
    assert pm.hook.kinrun_reconcile(controller="c", key="k", obj=None, ctx=None) == [5.0]


def test_file_plugins_get_stable_unique_module_names(tmp_path):
    """Two files with the same stem load side by side; the same file keeps its module name."""
    write_plugin(tmp_path, "a/hooks.py", RECONCILE_PLUGIN)
    write_plugin(tmp_path, "b/hooks.py", RECONCILE_PLUGIN.replace("5.0", "7.0"))
    pm = load_plugins(["a/hooks.py", "b/hooks.py"], tmp_path, entry_points=False)
    assert sorted(pm.hook.kinrun_reconcile(controller="c", key="k", obj=None, ctx=None)) == [5.0, 7.0]
    name_a = file_module_name((tmp_path / "a/hooks.py").resolve())
    assert name_a == file_module_name((tmp_path / "a/hooks.py").resolve())
    assert name_a != file_module_name((tmp_path / "b/hooks.py").resolve())
    assert name_a in sys.modules and name_a.startswith("kinrun_plugin_hooks_")


def test_module_plugin_is_imported_by_name(tmp_path, monkeypatch):
    """A dotted module name is imported from sys.path."""
    write_plugin(tmp_path, "kinrun_test_pkg/__init__.py", "")
    write_plugin(tmp_path, "kinrun_test_pkg/reconciler.py", RECONCILE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    pm = load_plugins(["kinrun_test_pkg.reconciler"], tmp_path, entry_points=False)
    assert [(n, s) for n, s, _ in describe_plugins(pm)] == [
        ("kinrun_test_pkg.reconciler", "module kinrun_test_pkg.reconciler")]


def test_builtin_plugins_load_by_module_name(tmp_path):
    """The built-ins are importable as kinrun.plugins.<name>."""
    pm = load_plugins(["kinrun.plugins.pod_logger", "kinrun.plugins.log"], tmp_path,
                      entry_points=False)
    assert [(n, hooks) for n, _, hooks in describe_plugins(pm)] == [
        ("kinrun.plugins.pod_logger", ["kinrun_reconcile"]),
        ("kinrun.plugins.log", ["kinrun_on_add", "kinrun_on_delete", "kinrun_on_update"])]


def test_entry_point_plugins_are_loaded_from_installed_distributions(tmp_path, monkeypatch):
    """Plugins declared in the `kinrun` entry-point group of an installed dist are registered."""
    site = tmp_path / "site"
    make_distribution(site, "kinrun_fake_dist", {"fake": "kinrun_fake_ep_plugin"},
                      {"kinrun_fake_ep_plugin": RECONCILE_PLUGIN})
    monkeypatch.syspath_prepend(str(site))
    pm = load_plugins([], tmp_path)
    assert ("fake", "entry point kinrun_fake_ep_plugin from kinrun_fake_dist 1.0",
            ["kinrun_reconcile"]) in describe_plugins(pm)
    assert load_plugins([], tmp_path, entry_points=False).list_name_plugin() == []


def test_builtins_are_never_activated_through_entry_points(tmp_path, monkeypatch):
    """Entry points naming kinrun.plugins.* (as pyproject declares) do not activate built-ins."""
    site = tmp_path / "site"
    make_distribution(site, "kinrun_fake_builtin", {"pods": "kinrun.plugins.pod_logger"}, {})
    monkeypatch.syspath_prepend(str(site))
    names = [name for name, _, _ in describe_plugins(load_plugins([], tmp_path))]
    assert not [n for n in names if n in ("pods", "log", "pod_logger")]


def test_entry_point_already_listed_in_config_is_registered_once(tmp_path, monkeypatch):
    """A module both listed and installed as an entry point is registered once (the config's)."""
    site = tmp_path / "site"
    make_distribution(site, "kinrun_fake_twice", {"twice": "kinrun_fake_twice_plugin"},
                      {"kinrun_fake_twice_plugin": RECONCILE_PLUGIN})
    monkeypatch.syspath_prepend(str(site))
    pm = load_plugins(["kinrun_fake_twice_plugin"], tmp_path)
    assert pm.hook.kinrun_reconcile(controller="c", key="k", obj=None, ctx=None) == [5.0]


def test_broken_entry_point_is_config_error(tmp_path, monkeypatch):
    """An entry point whose module fails to import is a ConfigError naming the entry point."""
    site = tmp_path / "site"
    make_distribution(site, "kinrun_fake_broken", {"broken": "kinrun_fake_broken_plugin"},
                      {"kinrun_fake_broken_plugin": "raise RuntimeError('no config')\n"})
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(ConfigError, match=r"entry point 'broken' .*RuntimeError: no config"):
        load_plugins([], tmp_path)


@pytest.mark.parametrize("spec, files, message", [
    pytest.param("kinrun_no_such_module", {}, "plugin module 'kinrun_no_such_module' not found",
                 id="missing-module"),
    pytest.param("./missing.py", {}, "plugin file './missing.py' not found", id="missing-file"),
    pytest.param("./boom.py", {"boom.py": "x = 1\nraise ValueError('bad setting')\n"},
                 r"plugin './boom.py' failed to import: ValueError: bad setting \(.*boom.py:2\)",
                 id="import-raises"),
    pytest.param("./syntax.py", {"syntax.py": "def f(:\n    pass\n"},
                 r"failed to import: SyntaxError: .*syntax.py:1\)", id="syntax-error"),
    pytest.param("./deps.py", {"deps.py": "import kinrun_no_such_dependency\n"},
                 r"failed to import: ModuleNotFoundError: No module named "
                 r"'kinrun_no_such_dependency' \(.*deps.py:1\)", id="missing-dependency"),
    pytest.param("./badargs.py", {"badargs.py": """
        from kinrun.hooks import hookimpl

        @hookimpl
        def kinrun_reconcile(controller, key, object):
            pass
        """}, r"plugin './badargs.py' has an invalid hook implementation: .*object",
        id="unknown-parameter"),
    pytest.param("./unknown.py", {"unknown.py": """
        from kinrun.hooks import hookimpl

        @hookimpl
        def kinrun_reconcil(key):
            pass
        """}, r"plugin './unknown.py': unknown hook 'kinrun_reconcil'", id="unknown-hook"),
])
def test_bad_plugins_are_config_errors_naming_the_spec(tmp_path, spec, files, message):
    """Missing, broken or invalid plugins fail loading with a ConfigError at plugins[i]."""
    for name, source in files.items():
        write_plugin(tmp_path, name, source)
    with pytest.raises(ConfigError, match=message) as info:
        load_plugins(["kinrun.plugins.log", spec], tmp_path, entry_points=False,
                     config_file="cfg.yaml")
    assert info.value.file == "cfg.yaml"
    assert info.value.path == "plugins[1]"


@pytest.mark.parametrize("source", [
    pytest.param("def f(:\n", id="import"),
    pytest.param("from kinrun.hooks import hookimpl\n\n@hookimpl\ndef kinrun_reconcil(key):\n"
                 "    pass\n", id="register"),
])
def test_a_bad_plugin_is_refused_at_its_entry_line(tmp_path, source):
    """With the config's plugin_locations, a plugin failing to import or to register is a
    ConfigError at its plugins[i] entry's file:line:column, as validate shows other keys."""
    from kinrun.config import load

    write_plugin(tmp_path, "bad.py", source)
    path = tmp_path / "cfg.yaml"
    path.write_text("apiVersion: kinrun.dev/v1alpha1\nkind: ControllerConfig\nplugins:\n"
                    "  - kinrun.plugins.log\n  - ./bad.py\ninformers:\n  cms: {apiVersion: v1, "
                    "kind: ConfigMap}\ncontrollers:\n  - {name: c, for: cms, reconcile: "
                    "{hooks: true}}\n")
    config = load(path)
    with pytest.raises(ConfigError) as info:
        load_plugins(list(config.plugins), tmp_path, entry_points=False, config_file=config.file,
                     locations=config.plugin_locations)
    assert str(info.value).startswith(f"{path}:5:5: plugins[1]: plugin './bad.py'"), \
        str(info.value)


def test_plugin_listed_twice_is_config_error(tmp_path):
    """The same module listed twice is refused."""
    with pytest.raises(ConfigError, match="listed twice"):
        load_plugins(["kinrun.plugins.log", "kinrun.plugins.log"], tmp_path, entry_points=False)


def test_same_file_loaded_twice_reuses_module(tmp_path):
    """Loading the same plugin file for two configs does not execute it twice."""
    write_plugin(tmp_path, "count.py", """
        import builtins
        builtins.kinrun_test_imports = getattr(builtins, 'kinrun_test_imports', 0) + 1
        """)
    import builtins
    try:
        load_plugins(["count.py"], tmp_path, entry_points=False)
        load_plugins([str(tmp_path / "count.py")], Path("/"), entry_points=False)
        assert builtins.kinrun_test_imports == 1
    finally:
        del builtins.kinrun_test_imports
