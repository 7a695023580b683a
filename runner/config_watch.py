"""Watching the config file (and the plugin files it names) for changes, by polling.

A file counts as changed when what its path designates now differs from what it designated at
the last look: the resolved path (``os.path.realpath``), device, inode, size, mtime or ctime
(``os.stat``, which follows symlinks). That covers the three ways a config is replaced:

* in place (``echo ... > config.yaml``): mtime and size change;
* an editor's write-to-a-temporary-file-then-rename (vim's ``backupcopy=no``, most editors,
  ``kubectl cp``): the path now names a new inode;
* a ConfigMap volume. Kubelet's AtomicWriter (``pkg/volume/util/atomic_writer.go``) lays the
  volume out as ``config.yaml -> ..data/config.yaml`` and ``..data ->
  ..2026_12_01_22_30_00.123456789/``; an update writes a new timestamped directory, points a
  ``..data_tmp`` symlink at it and renames that over ``..data`` (one atomic rename), then
  deletes the old directory. The file symlink itself never changes, which is why watching it
  with inotify misses updates (the inotify watch stays on the old, deleted inode); its
  resolved path and inode do change, which this polling sees.

Polling rather than inotify: no dependency, works on every filesystem (NFS, overlay, the
kubelet's tmpfs), and a poll of a few files costs a few ``stat`` calls per interval. A missing
file (deleted, or between an unlink and a rename) is not a change: the config in force stays,
and the file is looked at again at the next poll (logged once).

Thread-safety: one thread polls (:meth:`ConfigWatcher.changed`); ``set_paths`` from the same
thread.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import NamedTuple

_log = logging.getLogger("kinrun.reload")


class FileSignature(NamedTuple):
    """What a path designates: resolved path, device, inode, size (bytes), mtime and ctime
    (ns)."""

    realpath: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    ctime_ns: int


def signature(path: str) -> FileSignature | None:
    """The FileSignature of ``path`` now, None when it does not exist (or cannot be read)."""
    try:
        st = os.stat(path)
        return FileSignature(os.path.realpath(path), st.st_dev, st.st_ino, st.st_size,
                             st.st_mtime_ns, st.st_ctime_ns)
    except OSError:
        return None


class ConfigWatcher:
    """Polls ``paths`` (the config file first, then its plugin files, as given: symlinks are
    followed at each look, never resolved once). :meth:`changed` is True when any path's
    FileSignature differs from the last look (the first look is at construction)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self._paths: list[str] = []
        self._seen: dict[str, FileSignature | None] = {}
        self._missing: set[str] = set()  # logged as missing, not yet back
        self.set_paths(paths)

    @property
    def paths(self) -> list[str]:
        """The watched paths."""
        return list(self._paths)

    def set_paths(self, paths: Iterable[str]) -> None:
        """Watch ``paths`` from now on (after a reload: the new config's plugin files); a path
        watched before keeps its last look, a new one is looked at now."""
        self._paths = list(dict.fromkeys(str(p) for p in paths))
        self._seen = {p: self._seen[p] if p in self._seen else signature(p) for p in self._paths}

    def changed(self) -> bool:
        """Look at every path once; True when one changed since the last look (and is there:
        a missing file is logged once and waited for)."""
        changed = False
        for path in self._paths:
            now = signature(path)
            if now is None:
                if path not in self._missing:
                    self._missing.add(path)
                    _log.warning("config watch: %s is missing; keeping the config in force "
                                 "until it is back", path)
                continue
            if path in self._missing:
                self._missing.discard(path)
                _log.info("config watch: %s is back", path)
            if now != self._seen.get(path):
                self._seen[path] = now
                changed = True
        return changed
