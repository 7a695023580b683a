"""Paths in config files: which ``plugins`` entries are files, and resolving relative paths
against the config file's folder. Pure path arithmetic; only ``Path.resolve`` touches the disk."""

from __future__ import annotations

from pathlib import Path


def is_plugin_path(spec: str) -> bool:
    """True if a ``plugins`` entry is a file path (contains a slash or ends with ``.py``),
    False if it is a module name (the rule ``kinrun.plugin_manager`` applies too)."""
    return "/" in spec or "\\" in spec or spec.endswith(".py")


def resolve_path(path: str, base_dir: Path) -> Path:
    """``path`` made absolute against ``base_dir`` (``~`` expanded)."""
    p = Path(path).expanduser()
    return p if p.is_absolute() else (base_dir / p).resolve()
