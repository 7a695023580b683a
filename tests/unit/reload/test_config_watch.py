"""kinrun.config_watch: a changed config file is seen however it was replaced: in place, by an
editor's rename, or by a ConfigMap volume's ``..data`` symlink swap (kubelet AtomicWriter)."""

from __future__ import annotations

import os
from pathlib import Path

from kinrun.config_watch import ConfigWatcher
from kinrun.testing.configmap_volume import write_configmap_volume


def test_unchanged_file_is_not_a_change(tmp_path: Path) -> None:
    f = tmp_path / "kinrun.yaml"
    f.write_text("a: 1\n")
    watcher = ConfigWatcher([str(f)])
    assert not watcher.changed()
    assert not watcher.changed()


def test_in_place_write_is_a_change_seen_once(tmp_path: Path) -> None:
    f = tmp_path / "kinrun.yaml"
    f.write_text("a: 1\n")
    watcher = ConfigWatcher([str(f)])
    f.write_text("a: 22\n")
    assert watcher.changed()
    assert not watcher.changed()


def test_editor_write_temp_then_rename(tmp_path: Path) -> None:
    f = tmp_path / "kinrun.yaml"
    f.write_text("a: 1\n")
    watcher = ConfigWatcher([str(f)])
    tmp = tmp_path / ".kinrun.yaml.swp"
    tmp.write_text("a: 2\n")  # same size: only the inode tells
    os.replace(tmp, f)
    assert watcher.changed()


def test_configmap_volume_data_symlink_swap(tmp_path: Path) -> None:
    """The visible file's symlink never changes; ``..data`` is re-pointed: seen."""
    first = write_configmap_volume(tmp_path, {"kinrun.yaml": "a: 1\n"})
    watcher = ConfigWatcher([str(tmp_path / "kinrun.yaml")])
    assert not watcher.changed()
    write_configmap_volume(tmp_path, {"kinrun.yaml": "a: 2\n"})
    assert watcher.changed()
    assert not first.exists() and os.readlink(tmp_path / "kinrun.yaml") == "..data/kinrun.yaml"
    assert (tmp_path / "kinrun.yaml").read_text() == "a: 2\n"
    assert not watcher.changed()


def test_a_missing_file_is_waited_for_then_seen(tmp_path: Path) -> None:
    f = tmp_path / "kinrun.yaml"
    f.write_text("a: 1\n")
    watcher = ConfigWatcher([str(f)])
    f.unlink()
    assert not watcher.changed()  # the config in force stays
    f.write_text("a: 3\n")
    assert watcher.changed()


def test_plugin_files_count_and_new_paths_start_from_now(tmp_path: Path) -> None:
    f, plugin = tmp_path / "kinrun.yaml", tmp_path / "hooks.py"
    f.write_text("a: 1\n")
    plugin.write_text("x = 1\n")
    watcher = ConfigWatcher([str(f)])
    watcher.set_paths([str(f), str(plugin)])
    assert not watcher.changed()
    plugin.write_text("x = 22\n")
    assert watcher.changed()
