"""kinrun.config_watch: a changed config file is seen however it was replaced: in place, by an
editor's rename, or by a ConfigMap volume's ``..data`` symlink swap (kubelet AtomicWriter)."""

from __future__ import annotations

import os
from pathlib import Path

from kinrun.config_watch import ConfigWatcher


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


def configmap_volume(root: Path, stamp: str, files: dict[str, str]) -> None:
    """Lay out (or update) ``root`` as kubelet's AtomicWriter does: the files in a new
    ``..<timestamp>`` directory, ``..data_tmp`` pointing at it renamed over ``..data``, each
    visible file a symlink ``name -> ..data/name``, the previous directory removed."""
    new_dir = root / f"..{stamp}"
    new_dir.mkdir()
    for name, text in files.items():
        (new_dir / name).write_text(text)
    data = root / "..data"
    old = os.readlink(data) if data.is_symlink() else None
    tmp = root / "..data_tmp"
    os.symlink(new_dir.name, tmp)
    os.rename(tmp, data)
    for name in files:
        link = root / name
        if not link.is_symlink():
            os.symlink(f"..data/{name}", link)
    if old is not None:
        for child in (root / old).iterdir():
            child.unlink()
        (root / old).rmdir()


def test_configmap_volume_data_symlink_swap(tmp_path: Path) -> None:
    """The visible file's symlink never changes; ``..data`` is re-pointed: seen."""
    configmap_volume(tmp_path, "2026_12_01_22_00_00.000000001", {"kinrun.yaml": "a: 1\n"})
    watcher = ConfigWatcher([str(tmp_path / "kinrun.yaml")])
    assert not watcher.changed()
    configmap_volume(tmp_path, "2026_12_01_22_05_00.000000002", {"kinrun.yaml": "a: 2\n"})
    assert watcher.changed()
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
