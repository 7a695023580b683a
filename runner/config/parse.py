"""The config pipeline: read -> YAML with marks -> schema -> references + template syntax ->
frozen model. Errors of a stage are all reported together (sorted by position) and stop the
pipeline after that stage (later stages need the structure the earlier ones guarantee).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kinrun.config.build import build_config
from kinrun.config.loader import load_yaml
from kinrun.config.model import Config
from kinrun.config.references import check_references
from kinrun.config.schema import sort_errors, validate
from kinrun.config.template_syntax import check_templates
from kinrun.errors import ConfigError


class ConfigErrors(ConfigError):
    """One or more ConfigErrors of one file, sorted by position (``errors``, never empty).

    ``file``/``line``/``column``/``path``/``message`` are the first error's; ``str()`` is one
    ``file:line:column: path: message`` line per error.
    """

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        if not errors:
            raise ValueError("ConfigErrors needs at least one error")
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.message, file=first.file, line=first.line, column=first.column,
                         path=first.path)

    def __str__(self) -> str:
        return "\n".join(ConfigError.__str__(e) for e in self.errors)


def load(path: str | Path) -> Config:
    """Load, validate and build the config file at ``path``.

    Relative paths in the file (plugins, kubeconfig) resolve against the file's folder.
    Raises ConfigErrors (a ConfigError) listing every problem found, including an unreadable
    file and one that exhausts memory or the stack while loading (what was loaded is named,
    so a reload's log says which file failed: the running config stays).
    """
    text = read_file_text(path)
    try:
        return load_text(text, file=str(path), base_dir=Path(path).resolve().parent)
    except (MemoryError, RecursionError) as exc:
        what = "memory" if isinstance(exc, MemoryError) else "stack (nested too deep)"
        raise ConfigErrors([ConfigError(
            f"ran out of {what} while loading this file ({len(text)} characters: its YAML, "
            f"schema check and model): shorten it", file=str(path))]) from None


def read_file_text(path: str | Path) -> str:
    """The UTF-8 text of a config-like file; ConfigErrors naming the file when it cannot be
    read (missing, unreadable, not UTF-8). Shared by every YAML file kinrun loads."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigErrors([ConfigError(f"cannot read the file: {reason}",
                                        file=str(path))]) from None


def load_text(text: str, *, file: str = "<config>", base_dir: str | Path | None = None) -> Config:
    """Validate and build a config from YAML ``text``; ``file`` labels errors; relative paths
    resolve against ``base_dir`` (default: the current directory). Raises ConfigErrors."""
    base = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
    loaded = load_yaml(text, file)
    if loaded.errors:
        raise ConfigErrors(loaded.errors)
    errors = validate(loaded)
    if errors:
        raise ConfigErrors(errors)
    errors = sort_errors(check_references(loaded, base) + check_templates(loaded))
    if errors:
        raise ConfigErrors(errors)
    try:
        return build_config(loaded, base)
    except ConfigErrors:
        raise
    except ConfigError as exc:  # the children graph's checks (kinrun.config.children)
        raise ConfigErrors([exc]) from None
