"""A folder laid out as a Kubernetes ConfigMap volume, updated the way kubelet updates one.

Kubelet's AtomicWriter (``pkg/volume/util/atomic_writer.go``) writes a volume's files into a
new hidden directory named after the time (``..2026_12_01_22_30_00.123456789``), points a
``..data_tmp`` symlink at it and renames that over ``..data`` (the one atomic step), makes each
visible file a symlink ``name -> ..data/name`` (created once, never changed), then removes the
previous directory. A program reading ``name`` sees either the old or the new content, never a
mix; the visible symlink itself never changes. For hot-reload tests (``kinrun.config_watch``).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Mapping
from pathlib import Path

_counter = itertools.count(1)


def write_configmap_volume(root: str | os.PathLike[str], files: Mapping[str, str]) -> Path:
    """Write (or update) ``files`` (name -> text) into ``root`` as kubelet does; returns the new
    timestamped directory. Names are plain file names (no ``/``)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime())
    new_dir = root / f"..{stamp}.{next(_counter):09d}"
    new_dir.mkdir()
    for name, text in files.items():
        (new_dir / name).write_text(text, encoding="utf-8")
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
    return new_dir
