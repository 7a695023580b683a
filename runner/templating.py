"""Sandboxed Jinja2 for config templates: actions, ``when:`` conditions, indexers, key mappers.

Design:

* One :class:`TemplateEngine` per config: an ``ImmutableSandboxedEnvironment`` (no attribute
  starting with ``_``, no Python internals, no mutating methods such as ``dict.update``) with
  ``StrictUndefined``, so a typo (``obj.metdata``) is an error, never an empty string.
* Default globals that only widen the attack surface are removed (``lipsum``, ``cycler``,
  ``joiner``); ``range`` is bounded to :data:`MAX_RANGE` items, and ``*``/``**`` refuse to build
  huge strings, lists or numbers (:data:`MAX_SEQUENCE`, :data:`MAX_EXPONENT`).
* Templates cannot read the process environment or files unless the config's
  ``templates: {allowEnv: true, allowFiles: true}`` says so; then ``env(name, default)`` and
  ``read_file(path)`` (relative to the config's folder, at most :data:`MAX_FILE_BYTES`) exist.
  Otherwise those names exist too, but raise an error that names the setting to change.
* Filters: ``to_yaml``, ``to_json``, ``from_yaml``, ``from_json``, ``b64encode``, ``b64decode``,
  ``sha256`` plus Jinja2's own (``indent``, ``default``, ``join`` ...) and the plugins'
  ``kinrun_template_filters``.
* Expressions (``when:``, indexers) are accepted with or without surrounding ``{{ }}``; a text
  mixing literal text and several ``{{ }}`` is rendered as a template instead (a string).

Compiling happens once at start-up (syntax errors -> :class:`kinrun.errors.ConfigError` with the
config's file:line); rendering raises :class:`TemplateRenderError` carrying the template's line.
Compiled templates and expressions are thread-safe (Jinja2 renders without shared state).

Dicts in templates: ``obj.metadata.name`` reads keys, but a key named like a dict method
(``items``, ``keys``, ``values``, ``get``) returns the method: write ``obj['items']``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from kinrun.errors import ConfigError, KinrunError, ReconcileError

MAX_RANGE = 10_000
"""Largest ``range()`` a template may build (items)."""
MAX_SEQUENCE = 1_000_000
"""Largest string/list a template may build with ``*`` (items or characters)."""
MAX_EXPONENT = 128
"""Largest exponent accepted by ``**``."""
MAX_FILE_BYTES = 1 << 20
"""Largest file ``read_file`` returns (bytes); longer files are an error."""

_TEMPLATE_FILENAME = "<kinrun-template>"


# --- locations and options -------------------------------------------------------------------


@dataclass(frozen=True)
class SourceLocation:
    """Where a template came from: ``file`` (as given), 1-based ``line`` or None, key ``path``
    such as ``controllers[0].reconcile.actions[2].log``. ``str()``: ``file:line: path``."""

    file: str = "<config>"
    line: int | None = None
    path: str = ""

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.path}" if self.path else where

    def child(self, suffix: str) -> SourceLocation:
        """The same place with ``suffix`` appended to the path (``.manifest``, ``[2]``)."""
        return SourceLocation(self.file, self.line, f"{self.path}{suffix}")

    def config_error(self, message: str) -> ConfigError:
        """A ConfigError at this location."""
        return ConfigError(message, file=self.file, line=self.line, path=self.path)


def as_location(value: Any, path: str = "") -> SourceLocation:
    """Coerce None, a SourceLocation, a ``(file, line[, path])`` tuple, a mapping with
    ``file``/``line``/``path``, or any object with those attributes (e.g. the config model's
    location) into a :class:`SourceLocation`; ``path`` is used when the value has none."""
    if value is None:
        return SourceLocation(path=path)
    if isinstance(value, SourceLocation):
        return value if value.path or not path else SourceLocation(value.file, value.line, path)
    if isinstance(value, tuple):
        parts = list(value) + [None, None, None]
        return SourceLocation(str(parts[0] or "<config>"), parts[1], str(parts[2] or path))
    get = value.get if isinstance(value, Mapping) else (lambda k: getattr(value, k, None))
    return SourceLocation(str(get("file") or "<config>"), get("line"), str(get("path") or path))


@dataclass(frozen=True)
class TemplateOptions:
    """The config's ``templates:`` section.

    ``allow_env`` (default False): templates may call ``env(name, default=None)``.
    ``allow_files`` (default False): templates may call ``read_file(path)``.
    ``base_dir``: folder relative paths of ``read_file`` are resolved against (the config file's
    folder); None means the current directory.
    """

    allow_env: bool = False
    allow_files: bool = False
    base_dir: Path | None = None

    @classmethod
    def coerce(cls, value: Any, base_dir: Path | None = None) -> TemplateOptions:
        """Accept None, a TemplateOptions, a mapping with ``allowEnv``/``allowFiles`` (config
        spelling) or ``allow_env``/``allow_files``, or an object with those attributes."""
        if isinstance(value, TemplateOptions):
            return value
        if value is None:
            return cls(base_dir=base_dir)
        get = value.get if isinstance(value, Mapping) else (lambda k: getattr(value, k, None))
        env = get("allowEnv") if get("allowEnv") is not None else get("allow_env")
        files = get("allowFiles") if get("allowFiles") is not None else get("allow_files")
        base = get("base_dir") or base_dir
        return cls(bool(env), bool(files), Path(base) if base else None)


class TemplateRenderError(KinrunError):
    """A template or expression failed while rendering.

    ``detail``: the error (``UndefinedError: 'dict object' has no attribute 'nmae'``);
    ``template_line``: the 1-based line inside the template, or None when unknown.
    """

    def __init__(self, detail: str, template_line: int | None = None) -> None:
        self.detail = detail
        self.template_line = template_line
        where = f" (template line {template_line})" if template_line else ""
        super().__init__(f"{detail}{where}")


# --- filters ---------------------------------------------------------------------------------


def to_yaml(value: Any) -> str:
    """YAML block style, keys in their order, without the trailing newline or ``...`` marker."""
    text = yaml.safe_dump(value, default_flow_style=False, sort_keys=False, allow_unicode=True)
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.rstrip("\n")


def to_json(value: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """JSON text (UTF-8 kept); ``indent`` spaces when given, else one line."""
    return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)


def from_yaml(text: str) -> Any:
    """Parse one YAML document (safe loader; libyaml's when available)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506


def from_json(text: str) -> Any:
    """Parse JSON text."""
    return json.loads(text)


def b64encode(value: str | bytes) -> str:
    """Standard base64 of the UTF-8 bytes of ``value`` (as Secret ``data`` wants)."""
    raw = value if isinstance(value, bytes) else str(value).encode()
    return base64.b64encode(raw).decode("ascii")


def b64decode(value: str) -> str:
    """Decode standard base64 to text (UTF-8); invalid input is an error."""
    return base64.b64decode(str(value), validate=True).decode()


def sha256(value: Any) -> str:
    """Hex SHA-256 of a string's UTF-8 bytes; other values are hashed as canonical JSON
    (sorted keys), so ``obj.spec | sha256`` is stable (e.g. a config-hash annotation)."""
    if isinstance(value, bytes):
        raw = value
    elif isinstance(value, str):
        raw = value.encode()
    else:
        raw = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(raw).hexdigest()


BUILTIN_FILTERS: Mapping[str, Callable[..., Any]] = {
    "to_yaml": to_yaml, "to_json": to_json, "from_yaml": from_yaml, "from_json": from_json,
    "b64encode": b64encode, "b64decode": b64decode, "sha256": sha256,
}
"""kinrun's own filters (Jinja2's built-in filters such as ``indent`` stay available)."""


# --- the sandbox -----------------------------------------------------------------------------


def _bounded_range(*args: int) -> range:
    """``range`` refusing more than MAX_RANGE items."""
    rng = range(*args)
    if len(rng) > MAX_RANGE:
        raise SecurityError(f"range() of {len(rng)} items is over the limit of {MAX_RANGE}")
    return rng


class _Sandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox plus size limits on ``*`` and ``**``."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, (int, float)) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"exponent {right} is over the limit of {MAX_EXPONENT}")
        if operator == "*":
            _check_repeat(left, right)
            _check_repeat(right, left)
        return super().call_binop(context, operator, left, right)


def _check_repeat(seq: Any, times: Any) -> None:
    if isinstance(seq, (str, bytes, list, tuple)) and isinstance(times, int):
        if len(seq) * times > MAX_SEQUENCE:
            raise SecurityError(f"a sequence of {len(seq) * times} items is over the limit of "
                                f"{MAX_SEQUENCE}")


def _refused(setting: str, what: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise SecurityError(f"templates may not read {what} (set templates.{setting}: true)")
    return refuse


def _env_function(name: str, default: Any = None) -> Any:
    """``env(name, default=None)``: the environment variable, or ``default`` when unset."""
    return os.environ.get(str(name), default)


def _read_file_function(base_dir: Path | None) -> Callable[[str], str]:
    def read_file(path: str) -> str:
        """``read_file(path)``: a text file's content (relative to the config's folder)."""
        full = (base_dir or Path.cwd()) / str(path)
        with open(full, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise SecurityError(f"{path}: file is larger than {MAX_FILE_BYTES} bytes")
        return data.decode()
    return read_file


def _template_line(exc: BaseException) -> int | None:
    """The template line of the innermost template frame of ``exc``'s traceback, if any."""
    line = getattr(exc, "lineno", None)
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == _TEMPLATE_FILENAME:
            line = frame.lineno
    return line


def _render_error(exc: Exception) -> TemplateRenderError:
    detail = str(exc) or type(exc).__name__
    if not isinstance(exc, KinrunError):
        detail = f"{type(exc).__name__}: {detail}"
    return TemplateRenderError(detail, _template_line(exc))


def split_expression(source: str) -> str | None:
    """The bare expression of ``source``: ``"{{ a.b }}"`` -> ``"a.b"``, ``"a.b"`` -> ``"a.b"``;
    None when ``source`` is a template mixing text and/or several ``{{ }}`` or ``{% %}``."""
    text = source.strip()
    if "{%" in text or "{#" in text:
        return None
    if "{{" not in text:
        return text
    if text.startswith("{{") and text.endswith("}}") and text.count("{{") == 1:
        return text[2:-2].strip()
    return None


class Template:
    """A compiled template; ``render(variables) -> str``. Thread-safe."""

    def __init__(self, template: jinja2.Template, source: str) -> None:
        self._template = template
        self.source = source

    def render(self, variables: Mapping[str, Any]) -> str:
        """Render with ``variables``; raises TemplateRenderError (with the template line).
        A ReconcileError raised by a plugin filter or function propagates unchanged."""
        try:
            return self._template.render(variables)
        except ReconcileError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of user code becomes one error type
            raise _render_error(exc) from exc


class Expression:
    """A compiled expression; ``evaluate(variables) -> value`` (a Python value, not text).

    ``undefined_to_none``: an expression whose result is undefined (``obj.spec.nodeName`` on a
    pod without one) gives None instead of an error; a lookup *through* an undefined value
    (``obj.spec.missing.x``) is an error either way. Thread-safe.
    """

    def __init__(self, compiled: Any, source: str) -> None:
        self._compiled = compiled
        self.source = source

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """Evaluate with ``variables``; raises TemplateRenderError."""
        try:
            return self._compiled(**variables)
        except ReconcileError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise _render_error(exc) from exc


class _TemplateValue:
    """A template used for its string value (adapter giving templates ``evaluate``)."""

    def __init__(self, template: Template) -> None:
        self._template = template
        self.source = template.source

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        return self._template.render(variables)


class TemplateEngine:
    """The sandboxed Jinja2 environment of one config.

    Construction registers filters (kinrun's, then ``extra_filters``; a clash is a ConfigError)
    and the ``env``/``read_file`` functions per ``options``. Thread-safe after construction.
    """

    def __init__(self, options: Any = None, *, extra_filters: Mapping[str, Callable] | None = None,
                 base_dir: Path | None = None) -> None:
        self.options = TemplateOptions.coerce(options, base_dir)
        env = _Sandbox(undefined=jinja2.StrictUndefined, autoescape=False,
                       keep_trailing_newline=True)
        for name in ("lipsum", "cycler", "joiner"):
            env.globals.pop(name, None)
        env.globals["range"] = _bounded_range
        env.globals["env"] = (_env_function if self.options.allow_env
                              else _refused("allowEnv", "environment variables"))
        env.globals["read_file"] = (_read_file_function(self.options.base_dir)
                                    if self.options.allow_files
                                    else _refused("allowFiles", "files"))
        self._add_filters(env, BUILTIN_FILTERS)
        self._add_filters(env, extra_filters or {})
        self._env = env

    @staticmethod
    def _add_filters(env: jinja2.Environment, filters: Mapping[str, Callable]) -> None:
        for name, func in filters.items():
            if name in env.filters:
                raise ConfigError(f"template filter {name!r} is already defined")
            if not callable(func):
                raise ConfigError(f"template filter {name!r} is not callable")
            env.filters[name] = func

    @property
    def filters(self) -> Mapping[str, Callable]:
        """Every filter name templates can use (read-only view)."""
        return dict(self._env.filters)

    def template(self, source: str, location: Any = None) -> Template:
        """Compile ``source`` as a template; syntax errors -> ConfigError at ``location``."""
        loc = as_location(location)
        try:
            code = self._env.compile(source, filename=_TEMPLATE_FILENAME)
            compiled = self._env.template_class.from_code(self._env, code, self._env.globals)
        except jinja2.TemplateSyntaxError as exc:
            raise loc.config_error(f"template syntax error: {exc.message} "
                                   f"(template line {exc.lineno})") from exc
        return Template(compiled, source)

    def expression(self, source: str, location: Any = None, *,
                   undefined_to_none: bool = False) -> Expression:
        """Compile a bare expression (no ``{{ }}``); syntax errors -> ConfigError."""
        loc = as_location(location)
        try:
            compiled = self._env.compile_expression(source, undefined_to_none=undefined_to_none)
        except jinja2.TemplateSyntaxError as exc:
            raise loc.config_error(f"expression syntax error in {source!r}: {exc.message}") from exc
        return Expression(compiled, source)

    def value(self, source: str, location: Any = None, *,
              undefined_to_none: bool = False) -> Expression | _TemplateValue:
        """Compile ``source`` as an expression when it is one (with or without ``{{ }}``), else
        as a template whose value is the rendered string. Both have ``evaluate(variables)``."""
        bare = split_expression(source)
        if bare is not None:
            if not bare:
                raise as_location(location).config_error("empty expression")
            return self.expression(bare, location, undefined_to_none=undefined_to_none)
        return _TemplateValue(self.template(source, location))


# --- indexers and key mappers ----------------------------------------------------------------


class RateLimitedWarner:
    """Logs a warning at most once per ``interval`` seconds, counting the ones it held back.

    Thread-safe (a lock guards the counters). ``clock`` returns monotonic seconds.
    """

    def __init__(self, logger: logging.Logger, interval: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._next_at: float | None = None   # guarded by _lock; None: next warning logs at once
        self._suppressed = 0                 # guarded by _lock; warnings held back since last log

    def warn(self, message: str, *args: Any) -> None:
        """Log ``message % args`` now, or count it when one was logged within ``interval``."""
        with self._lock:
            now = self._clock()
            if self._next_at is not None and now < self._next_at:
                self._suppressed += 1
                return
            suppressed, self._suppressed = self._suppressed, 0
            self._next_at = now + self._interval
        if suppressed:
            message += f" ({suppressed} similar warnings suppressed)"
        self._logger.warning(message, *args)


def index_values(value: Any) -> list[str]:
    """Normalise an indexer result: None/"" -> [], a string -> [it], a list/tuple/set -> its
    non-empty items as strings (duplicates dropped, order kept), a number/bool -> [str(it)].
    A string rendered by a template is split on newlines (one value per line).
    Raises TypeError for mappings and other types."""
    if value is None:
        return []
    if isinstance(value, str):
        return [line.strip() for line in value.splitlines() if line.strip()]
    if isinstance(value, (list, tuple, set, frozenset)):
        out: list[str] = []
        for item in value:
            text = "" if item is None else str(item)
            if text and text not in out:
                out.append(text)
        return out
    if isinstance(value, (int, float)):
        return [str(value)]
    raise TypeError(f"expected a string or a list of strings, got {type(value).__name__}")


def _object_name(obj: Any) -> str:
    try:
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace"), meta.get("name")
        return f"{ns}/{name}" if ns else str(name)
    except AttributeError:
        return repr(obj)[:80]


def _compile_object_func(source: str, location: Any, what: str, *, engine: TemplateEngine | None,
                         options: Any, logger: logging.Logger | None,
                         clock: Callable[[], float]) -> Callable[[dict], list[str]]:
    engine = engine or TemplateEngine(options)
    loc = as_location(location)
    value = engine.value(source, loc, undefined_to_none=True)
    warner = RateLimitedWarner(logger or logging.getLogger("kinrun.templating"), clock=clock)

    def func(obj: dict) -> list[str]:
        try:
            return index_values(value.evaluate({"obj": obj}))
        except (TemplateRenderError, TypeError) as exc:
            warner.warn("%s: %s %r failed for %s: %s", loc, what, source, _object_name(obj), exc)
            return []
    func.__doc__ = f"{what} {source!r} from {loc}"
    return func


def compile_index_func(expr: str, location: Any = None, *, engine: TemplateEngine | None = None,
                       options: Any = None, logger: logging.Logger | None = None,
                       clock: Callable[[], float] = time.monotonic) -> Callable[[dict], list[str]]:
    """Compile a config indexer (``indexers: {byNode: "{{ obj.spec.nodeName }}"}``) into an index
    function for the informer's Indexer (client-go ``IndexFunc``: object -> index values).

    ``expr`` is a Jinja2 expression, with or without ``{{ }}``, seeing ``obj``; its value maps as
    :func:`index_values` (str -> [str], list -> [str...], None/""/undefined -> []). A text mixing
    literal parts renders as a template (one value per line). Syntax errors: ConfigError at
    ``location`` (now). Errors while evaluating never propagate (they would break the store): the
    object is filed under no value and a warning is logged at most once a minute per indexer.
    """
    return _compile_object_func(expr, location, "indexer", engine=engine, options=options,
                                logger=logger, clock=clock)


def compile_key_mapper(template: str, location: Any = None, *, engine: TemplateEngine | None = None,
                       options: Any = None, logger: logging.Logger | None = None,
                       clock: Callable[[], float] = time.monotonic) -> Callable[[dict], list[str]]:
    """Compile a watch's ``mapTo: {template: ...}`` into a function from a secondary object to the
    primary keys to enqueue (``namespace/name``).

    The template sees ``obj`` (the secondary object). The rendered text holds one key per line;
    blank lines are dropped, so ``""`` means no key. A single expression returning a list gives
    several keys. Syntax errors: ConfigError at ``location``. Errors while rendering give no key
    and a rate-limited warning (an event handler must not fail).
    """
    return _compile_object_func(template, location, "key mapper", engine=engine, options=options,
                                logger=logger, clock=clock)


__all__ = [
    "BUILTIN_FILTERS", "Expression", "MAX_EXPONENT", "MAX_FILE_BYTES", "MAX_RANGE",
    "MAX_SEQUENCE", "RateLimitedWarner", "SourceLocation", "Template", "TemplateEngine",
    "TemplateOptions", "TemplateRenderError", "as_location", "b64decode", "b64encode",
    "compile_index_func", "compile_key_mapper", "from_json", "from_yaml", "index_values", "sha256",
    "split_expression", "to_json", "to_yaml",
]
