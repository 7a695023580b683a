"""Sandboxed Jinja2 for config templates: actions, ``when:`` conditions, indexers, key mappers.

Design:

* One :class:`TemplateEngine` per config: an ``ImmutableSandboxedEnvironment`` (no attribute
  starting with ``_``, no Python internals) with ``StrictUndefined``, so a typo
  (``obj.metdata``) is an error, never an empty string. No template changes an object it did
  not create: every method of a mutable container that its immutable counterpart lacks is
  refused at attribute access and again at call time, however it was reached, and ``dict``
  is a function, not the type (see "immutability" below).
* One C-level operation cannot outrun the budget: printing, ``~``, comparing, hashing,
  serialising and every call and filter check the size of their operands first (shared
  references counted where they occur), ``*``/``**`` the bits of integers, ``to_json`` its
  indent, ``batch`` its size (see "sizes" below).
* Errors never quote a value the template read (``docs/secrets.md``): the failing filter, the
  error's type, and its message with each quoted text the template does not contain replaced
  by its type and size (:func:`scrub_quoted`).
* Default globals that only widen the attack surface are removed (``lipsum``, ``cycler``,
  ``joiner``); ``range`` is bounded to :data:`MAX_RANGE` items, and ``*``/``**`` refuse to build
  huge strings, lists or numbers (:data:`MAX_SEQUENCE`, :data:`MAX_EXPONENT`); so do ``+``,
  ``~``, ``%``, str methods (``zfill``, ``format``, ``replace``, ``join``...) and the string
  filters :data:`STRING_FILTERS`, whose result size is worked out from their arguments before
  they run (``'x'.zfill(300000000)`` is refused, not built).
* A budget (:class:`RenderBudget`, limits :class:`BudgetLimits` from ``templates.budget``)
  bounds time, loop steps and output, so no template ties a worker up: one budget per reconcile
  (the actions open it), per indexer/key mapper call, else per render. The checks are
  cooperative, in the sandbox: compiled ``for`` loops iterate through an environment hook (a
  code generator wraps each loop's iterable), filters that return collections count their
  items, the sandbox's ``call`` counts calls and reads the clock now and then, and the output
  chunks are measured as they are joined. Cost (``benchmarks/template_budget.py``): about 10
  Python calls per render and one generator step per loop iteration. Past a limit:
  :class:`BudgetExceeded`.
* Templates cannot read the process environment or files unless the config's
  ``templates: {allowEnv: true, allowFiles: true}`` says so; then ``env(name, default)`` and
  ``read_file(path)`` (relative to the config's folder, at most :data:`MAX_FILE_BYTES`) exist.
  Otherwise those names exist too, but raise an error that names the setting to change.
* Filters: ``to_yaml``, ``to_json``, ``from_yaml``, ``from_json``, ``b64encode``, ``b64decode``,
  ``sha256``, the time filters ``to_datetime`` (RFC 3339 -> aware UTC datetime), ``isoformat``
  and ``duration`` (``"1h"`` -> timedelta), plus Jinja2's own (``indent``, ``default``, ``join``
  ...) and the plugins' ``kinrun_template_filters``.
* Time: ``now()`` is the engine's clock's ``wall()`` (the plan's clock: fixed under ``kinrun test``)
  as an aware UTC ``datetime``; ``now() - obj.metadata.creationTimestamp | to_datetime >
  "1h" | duration`` reads "older than an hour".
* Expressions (``when:``, indexers) are accepted with or without surrounding ``{{ }}``; a text
  mixing literal text and several ``{{ }}`` is rendered as a template instead (a string).

Compiling happens once at start-up (syntax errors -> :class:`kinrun.errors.ConfigError` with the
config's file:line); rendering raises :class:`TemplateRenderError` carrying the template's line.
Compiled templates and expressions are thread-safe (Jinja2 renders without shared state).

Dicts in templates: ``obj.metadata.name`` reads keys, but a key named like a dict method
(``items``, ``keys``, ``values``, ``get``) returns the method: write ``obj['items']``.
"""

from __future__ import annotations

import ast
import base64
import builtins
import collections
import collections.abc
import contextvars
import datetime
import difflib
import functools
import hashlib
import itertools
import json
import logging
import os
import random
import re
import string
import threading
import traceback
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import jinja2
import yaml
from jinja2 import nodes
from jinja2.compiler import CodeGenerator
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import Namespace

from kinrun.clock import REAL_CLOCK, Clock, with_wall
from kinrun.cron import CronSchedule
from kinrun.durations import format_duration, parse_duration
from kinrun.errors import ConfigError, KinrunError, ReconcileError
from kinrun.plain_templates import PlainTemplate, markers, plain_template

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
    such as ``controllers[0].reconcile.actions[2].log``, 1-based ``column`` or None.
    ``str()``: ``file:line: path`` (what run-time errors show); a ConfigError from
    :meth:`config_error` shows the column too, as every error of ``kinrun validate``."""

    file: str = "<config>"
    line: int | None = None
    path: str = ""
    column: int | None = None

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.path}" if self.path else where

    def child(self, suffix: str) -> SourceLocation:
        """The same place with ``suffix`` appended to the path (``.manifest``, ``[2]``)."""
        return SourceLocation(self.file, self.line, f"{self.path}{suffix}", self.column)

    def config_error(self, message: str) -> ConfigError:
        """A ConfigError at this location."""
        return ConfigError(message, file=self.file, line=self.line, column=self.column,
                           path=self.path)


def as_location(value: Any, path: str = "") -> SourceLocation:
    """Coerce None, a SourceLocation, a ``(file, line[, path])`` tuple, a mapping with
    ``file``/``line``/``path``, or any object with those attributes (e.g. the config model's
    location) into a :class:`SourceLocation`; ``path`` is used when the value has none."""
    if value is None:
        return SourceLocation(path=path)
    if isinstance(value, SourceLocation):
        return value if value.path or not path else SourceLocation(value.file, value.line, path,
                                                                    value.column)
    if isinstance(value, tuple):
        parts = list(value) + [None, None, None]
        return SourceLocation(str(parts[0] or "<config>"), parts[1], str(parts[2] or path))
    get = value.get if isinstance(value, Mapping) else (lambda k: getattr(value, k, None))
    column = get("column")
    return SourceLocation(str(get("file") or "<config>"), get("line"), str(get("path") or path),
                          column if isinstance(column, int) else None)


@dataclass(frozen=True)
class TemplateOptions:
    """The config's ``templates:`` section.

    ``allow_env`` (default False): templates may call ``env(name, default=None)``.
    ``allow_files`` (default False): templates may call ``read_file(path)``.
    ``base_dir``: folder relative paths of ``read_file`` are resolved against (the config file's
    folder); None means the current directory.
    ``budget``: the :class:`BudgetLimits` of every render (``templates.budget``).
    """

    allow_env: bool = False
    allow_files: bool = False
    base_dir: Path | None = None
    budget: BudgetLimits = field(default_factory=lambda: BudgetLimits())  # defined below

    @classmethod
    def coerce(cls, value: Any, base_dir: Path | None = None) -> TemplateOptions:
        """Accept None, a TemplateOptions, a mapping with ``allowEnv``/``allowFiles``/``budget``
        (config spelling) or ``allow_env``/``allow_files``/``budget``, or an object with those
        attributes (the config model's TemplatesSpec). ``budget``: see BudgetLimits.coerce."""
        if isinstance(value, TemplateOptions):
            return value
        if value is None:
            return cls(base_dir=base_dir)
        get = value.get if isinstance(value, Mapping) else (lambda k: getattr(value, k, None))
        env = get("allowEnv") if get("allowEnv") is not None else get("allow_env")
        files = get("allowFiles") if get("allowFiles") is not None else get("allow_files")
        base = get("base_dir") or base_dir
        return cls(bool(env), bool(files), Path(base) if base else None,
                   BudgetLimits.coerce(get("budget")))


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


# --- budgets ---------------------------------------------------------------------------------


def _budget_default(name: str) -> Any:
    """The JSON Schema ``default`` of ``templates.budget.<name>`` (the only place defaults are
    written). Imported late: the config package imports this module."""
    from kinrun.config.schema import load_schema
    budget = load_schema()["$defs"]["templates"]["properties"]["budget"]
    return budget["properties"][name]["default"]


@dataclass(frozen=True)
class BudgetLimits:
    """The config's ``templates.budget``: what the renders sharing one :class:`RenderBudget` may
    spend. Defaults come from ``schemas/kinrun.schema.json`` (``$defs.templates``).

    ``timeout``: seconds of rendering (float >= 0); ``max_loop_steps``: loop steps (int >= 1),
    i.e. iterations of every ``for`` loop plus every item of a list, tuple, set, mapping or
    iterator a filter returns; ``max_output_chars``: characters of template output (int >= 1).
    A field not given takes the schema's ``default`` (read there, written nowhere else). The
    fixed limits :data:`MAX_RANGE`, :data:`MAX_SEQUENCE` and :data:`MAX_EXPONENT` apply on top,
    per operation. Raises ValueError for values out of range (the schema refuses them first).
    """

    timeout: float = field(default_factory=lambda: parse_duration(_budget_default("timeout")))
    max_loop_steps: int = field(default_factory=lambda: int(_budget_default("maxLoopSteps")))
    max_output_chars: int = field(default_factory=lambda: int(_budget_default("maxOutputChars")))

    def __post_init__(self) -> None:
        if not isinstance(self.timeout, (int, float)) or self.timeout < 0:
            raise ValueError(f"templates.budget.timeout must be >= 0 s, got {self.timeout!r}")
        for name, value in (("maxLoopSteps", self.max_loop_steps),
                            ("maxOutputChars", self.max_output_chars)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"templates.budget.{name} must be an integer >= 1, "
                                 f"got {value!r}")

    @classmethod
    def coerce(cls, value: Any) -> BudgetLimits:
        """Accept None (defaults), a BudgetLimits, a mapping in config spelling (``timeout`` as a
        duration, ``maxLoopSteps``, ``maxOutputChars``) or Python spelling, or an object with
        the Python attributes. Missing keys take the defaults. Raises ValueError for a bad
        duration."""
        if value is None or isinstance(value, BudgetLimits):
            return value if value is not None else cls()
        get = value.get if isinstance(value, Mapping) else (lambda k: getattr(value, k, None))
        given = {attr: get(config) if get(config) is not None else get(attr)
                 for config, attr in _BUDGET_KEYS.items()}
        kwargs: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        if "timeout" in kwargs:
            kwargs["timeout"] = parse_duration(kwargs["timeout"])
        return cls(**kwargs)


_BUDGET_KEYS = {"timeout": "timeout", "maxLoopSteps": "max_loop_steps",
                "maxOutputChars": "max_output_chars"}
"""Config key -> BudgetLimits attribute."""


class BudgetExceeded(TemplateRenderError):
    """A render went over its budget: a :class:`BudgetLimits` limit or a fixed size limit.

    ``reason``: ``"timeout"``, ``"maxLoopSteps"``, ``"maxOutputChars"`` (the config key under
    ``templates.budget``) or ``"range"``, ``"sequence"``, ``"exponent"``, ``"size"``,
    ``"integer"``, ``"indent"`` (the fixed limits, checked before the operation runs);
    ``used``: what was spent when the check failed (seconds, steps, characters, items);
    ``limit``: the limit in the same unit; ``setting``: the config path to raise it, or None for
    a fixed limit. ``detail`` reads ``template budget exceeded: more than 100000 loop steps
    (templates.budget.maxLoopSteps)``. Rendering fails; it is not a ReconcileError, so a
    reconcile that hit it is retried with backoff like any render failure.
    """

    def __init__(self, reason: str, used: float, limit: float, what: str,
                 template_line: int | None = None) -> None:
        self.reason, self.used, self.limit = reason, used, limit
        self.setting = f"templates.budget.{reason}" if reason in _BUDGET_KEYS else None
        self.what = what
        where = f" ({self.setting})" if self.setting else ""
        super().__init__(f"template budget exceeded: {what}{where}", template_line)

    def at_line(self, template_line: int | None) -> BudgetExceeded:
        """The same error located at ``template_line`` (inside the template)."""
        return BudgetExceeded(self.reason, self.used, self.limit, self.what, template_line)


OUTPUT_BATCH = 64
"""Output chunks (one per literal text or ``{{ }}`` between loop steps) measured at a time: the
output may overshoot ``max_output_chars`` by at most this many chunks before the render fails."""

CLOCK_EVERY = 32
"""Loop steps (or template calls) between two reads of the budget's clock. A clock read costs
about as much as a loop step (0.3-0.4 us on the 2-core VMs, ``time.monotonic``), so reading it
at every step would double the cost of loops; 32 steps of a template take tens of microseconds,
far inside any sensible timeout."""

_ACTIVE: contextvars.ContextVar[RenderBudget | None] = contextvars.ContextVar(
    "kinrun_render_budget", default=None)
"""The budget the current thread's renders spend (set by ``with budget:``)."""


class RenderBudget:
    """What one render, or all the renders of one reconcile, have spent against ``limits``.

    ``with budget:`` makes it the current thread's active budget (a context variable) until the
    block ends, so every template, expression and filter rendered inside spends it; nested
    ``with`` of another budget replaces it for the inner block. :meth:`Template.render` and
    :meth:`Expression.evaluate` open a fresh budget of their engine's limits when none is active.
    The checks are cooperative, inside the sandbox: :meth:`step` at every loop iteration and every
    item a filter returns, :meth:`call` at every call a template makes, :meth:`add_output` per
    output chunk; the clock is read every :data:`CLOCK_EVERY` steps and every CLOCK_EVERY calls.
    Work inside one C-level operation (``join`` of a huge list) is not interrupted; the
    fixed limits (:data:`MAX_RANGE` ...) keep each such operation small.

    ``clock``: its ``now()`` (monotonic seconds; a FakeClock in tests), read once at
    construction and then every CLOCK_EVERY calls and loop steps.
    Counters (``steps``, ``output_chars``) only grow: once exceeded, every later check fails too.
    Not thread-safe: one reconcile (one thread) uses it at a time.
    """

    __slots__ = ("limits", "_clock", "started", "_deadline", "steps", "calls", "output_chars",
                 "sizes", "_tokens")

    def __init__(self, limits: BudgetLimits, clock: Clock = REAL_CLOCK) -> None:
        self.limits = limits
        self._clock = clock.now   # bound once: read per loop step
        self.started = self._clock()
        self._deadline = self.started + limits.timeout   # monotonic seconds
        self.steps = 0          # loop steps spent; exceeded when > limits.max_loop_steps
        self.calls = 0          # calls made by templates (the clock is read every CLOCK_EVERY)
        self.output_chars = 0   # output characters; exceeded when > limits.max_output_chars
        self.sizes: dict[int, tuple[Any, int, int]] = {}  # id -> (container, size, len)
        self._tokens: list[contextvars.Token] = []   # one per open ``with``, innermost last

    def __enter__(self) -> RenderBudget:
        self._tokens.append(_ACTIVE.set(self))
        return self

    def __exit__(self, *exc_info: Any) -> None:
        _ACTIVE.reset(self._tokens.pop())

    @property
    def elapsed(self) -> float:
        """Seconds since the budget was made."""
        return self._clock() - self.started

    def step(self, count: int = 1) -> None:
        """Spend ``count`` loop steps; check time when they pass a multiple of CLOCK_EVERY.
        Raises BudgetExceeded."""
        before = self.steps
        self.steps += count
        if self.steps > self.limits.max_loop_steps:
            raise self._over_steps()
        if before // CLOCK_EVERY != self.steps // CLOCK_EVERY:
            self.check_time()

    def call(self) -> None:
        """Count one call made by a template; every CLOCK_EVERY-th checks time."""
        self.calls += 1
        if not self.calls % CLOCK_EVERY:
            self.check_time()

    def check_time(self) -> None:
        """Raise BudgetExceeded when more than ``limits.timeout`` seconds have passed."""
        if self._clock() > self._deadline:
            raise self._over_time()

    def add_output(self, chars: int) -> None:
        """Spend ``chars`` characters of output; raises BudgetExceeded."""
        self.output_chars += chars
        if self.output_chars > self.limits.max_output_chars:
            raise self._over_output()

    def iterate(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """Yield ``iterable``'s items, spending one step before each (time checked every
        CLOCK_EVERY steps). ``step`` inlined: this runs once per loop iteration of every
        template."""
        limit, clock, deadline = self.limits.max_loop_steps, self._clock, self._deadline
        for item in iterable:
            self.steps += 1
            if self.steps > limit:
                raise self._over_steps()
            if not self.steps % CLOCK_EVERY and clock() > deadline:
                raise self._over_time()
            yield item

    def join_output(self, chunks: Iterable[str]) -> str:
        """Concatenate a template's output chunks, spending their characters as they come, in
        batches of OUTPUT_BATCH chunks (taken and measured at C speed: a Python step per chunk
        doubled the cost of a loop's output)."""
        chunks = iter(chunks)
        out = list(itertools.islice(chunks, OUTPUT_BATCH))
        self.add_output(sum(map(len, out)))
        batch = out
        while len(batch) == OUTPUT_BATCH:  # more may follow
            batch = list(itertools.islice(chunks, OUTPUT_BATCH))
            self.add_output(sum(map(len, batch)))
            out += batch
        return "".join(out)

    def _over_steps(self) -> BudgetExceeded:
        limit = self.limits.max_loop_steps
        return BudgetExceeded("maxLoopSteps", self.steps, limit, f"more than {limit} loop steps")

    def _over_time(self) -> BudgetExceeded:
        limit = self.limits.timeout
        return BudgetExceeded("timeout", self.elapsed, limit,
                              f"more than {format_duration(limit)} of rendering")

    def _over_output(self) -> BudgetExceeded:
        limit = self.limits.max_output_chars
        return BudgetExceeded("maxOutputChars", self.output_chars, limit,
                              f"more than {limit} characters of output")


def spend_loop_step() -> None:
    """Spend one loop step of the active budget (none active: nothing): an action's
    ``forEach`` item counts as a template loop's. Raises BudgetExceeded."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.step()


def _counted_items(result: Any) -> Any:
    """Spend a filter result's items on the active budget: a list, tuple, set or mapping counts
    its length now; an iterator (lazy ``map``, ``select``...) counts each item as it is taken."""
    budget = _ACTIVE.get()
    if budget is None:
        return result
    if isinstance(result, (list, tuple, dict, set, frozenset)):
        budget.step(len(result))
    elif type(result) is types.GeneratorType or isinstance(result, Iterator):  # map(), select()
        return budget.iterate(result)
    return result


def _counting_filter(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` with its result's items spent as loop steps (keeps Jinja2's pass_* markers)."""
    @functools.wraps(func)
    def counted(*args: Any, **kwargs: Any) -> Any:
        return _counted_items(func(*args, **kwargs))
    return counted


ITERATING_FILTERS = ("batch", "dictsort", "groupby", "items", "list", "map", "reject",
                     "rejectattr", "reverse", "select", "selectattr", "slice", "sort", "unique")
"""Jinja2's filters that return collections or iterators: their items are counted as loop
steps. Every plugin filter is counted the same way. ``join``, ``sum``, ``min``, ``max`` fold to
one value and are bounded by the time limit only."""


# --- filters ---------------------------------------------------------------------------------


def to_yaml(value: Any) -> str:
    """YAML block style, keys in their order, without the trailing newline or ``...`` marker."""
    text = yaml.safe_dump(value, default_flow_style=False, sort_keys=False, allow_unicode=True)
    if text.endswith("\n...\n"):
        text = text[: -len("\n...\n")]
    return text.rstrip("\n")


def to_json(value: Any, indent: int | None = None, sort_keys: bool = False) -> str:
    """JSON text (UTF-8 kept); ``indent`` spaces when given, else one line.

    ``indent``: at most :data:`MAX_INDENT`; the indented size is checked first
    (:func:`check_indent`)."""
    check_indent(value, indent, "to_json")
    return json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)


def check_indent(value: Any, indent: Any, what: str) -> None:
    """Refuse (BudgetExceeded, reason ``indent``) an ``indent`` (spaces, or a string) over
    :data:`MAX_INDENT`, or one that would make ``value``'s JSON larger than
    :data:`MAX_VALUE_SIZE` (each item's line repeats the indent once per nesting level)."""
    if indent is None or isinstance(indent, bool):
        return
    width = len(indent) if isinstance(indent, str) else indent if _is_int(indent) else 0
    if width > MAX_INDENT:
        raise BudgetExceeded("indent", width, MAX_INDENT,
                             f"{what}: an indent over the limit of {MAX_INDENT}")
    if width > 0 and _indented_size(value, width, MAX_VALUE_SIZE) > MAX_VALUE_SIZE:
        raise BudgetExceeded("indent", MAX_VALUE_SIZE + 1, MAX_VALUE_SIZE,
                             f"{what}: indented text over the limit of {MAX_VALUE_SIZE} "
                             "characters")


def _indented_size(value: Any, width: int, cap: int) -> int:
    """Characters of indentation JSON with ``width`` adds to ``value`` (each item of a
    container at depth d is indented d times); counting stops past ``cap``."""
    total, stack = 0, [(value, 1)]
    while stack and total <= cap:
        item, depth = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            total += len(item) * depth * width
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children
                         if isinstance(child, (dict, list, tuple)))
    return total


def from_yaml(text: str) -> Any:
    """Parse one YAML document (safe loader; libyaml's when available)."""
    from kinrun import safe_yaml  # its alias and depth limits (kinrun.safe_yaml)

    return safe_yaml.load(text)


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


# --- time: now(), to_datetime, isoformat, duration ------------------------------------------

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$")
"""An RFC 3339 ``date-time`` (``2023-11-14T22:13:20Z``, ``...20.5+01:00``): what Kubernetes
writes in ``metav1.Time`` (seconds) and ``metav1.MicroTime`` (microseconds) fields."""


def to_datetime(value: Any) -> datetime.datetime:
    """``"2023-11-14T22:13:20Z" | to_datetime``: an RFC 3339 timestamp (``Z`` or an offset;
    fractions beyond microseconds are cut) as an aware UTC ``datetime``; an aware datetime is
    converted to UTC; a number is read as Unix seconds. Raises ValueError for anything else
    (a timestamp without an offset included: its zone would be a guess)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            raise ValueError("to_datetime: a datetime without a time zone")
        return value.astimezone(datetime.timezone.utc)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.datetime.fromtimestamp(value, tz=datetime.timezone.utc)
        except (OverflowError, OSError, ValueError):
            raise ValueError(f"to_datetime: {describe(value)} out of the range of "
                             "timestamps") from None
    text = str(value) if isinstance(value, str) else None
    match = _RFC3339.match(text.strip()) if text is not None else None
    if match is None:   # the message names the type, never the value (docs/secrets.md)
        raise ValueError(f"to_datetime: cannot parse {describe(value)} as an RFC 3339 "
                         "timestamp (such as 2023-11-14T22:13:20Z)")
    text = text.strip()
    fraction = match.group(1) or ""
    if len(fraction) > 7:  # more than microseconds: fromisoformat wants at most 6 digits
        text = text.replace(fraction, fraction[:7], 1)
    text = text[:-1] + "+00:00" if text[-1] in "Zz" else text
    try:
        return datetime.datetime.fromisoformat(text).astimezone(datetime.timezone.utc)
    except ValueError:   # month 13, hour 25
        raise ValueError(f"to_datetime: {describe(value)} is not a valid date and "
                         "time") from None


def isoformat(value: Any, timespec: str = "seconds") -> str:
    """A time as RFC 3339 text in UTC with ``Z``, as Kubernetes writes it: ``now() |
    isoformat`` -> ``2023-11-14T22:13:20Z`` (``metav1.Time``: whole seconds, the fraction cut);
    ``isoformat("microseconds")`` -> ``2023-11-14T22:13:20.123456Z`` (``metav1.MicroTime``).
    ``value``: anything :func:`to_datetime` takes. Raises ValueError for another
    ``timespec`` than seconds, milliseconds or microseconds."""
    if timespec not in ("seconds", "milliseconds", "microseconds"):
        raise ValueError(f"isoformat: timespec must be seconds, milliseconds or microseconds, "
                         f"got {describe(timespec)}")
    moment = to_datetime(value).replace(tzinfo=None)
    return moment.isoformat(timespec=timespec) + "Z"


def duration(value: Any) -> datetime.timedelta:
    """``"1h" | duration``: a duration as the config writes them (``30s``, ``1m30s``, ``250ms``,
    or a number of seconds) as a ``timedelta``, to compare with the difference of two times:
    ``now() - obj.metadata.creationTimestamp | to_datetime > "1h" | duration``. Raises
    ValueError for text that is not a duration."""
    if isinstance(value, datetime.timedelta):
        return value
    try:
        return datetime.timedelta(seconds=parse_duration(value))
    except (ValueError, TypeError, OverflowError):   # the message names the type, not the value
        raise ValueError(f"duration: cannot parse {describe(value)} as a duration (such as "
                         "30s, 1m30s or 250ms)") from None


@functools.lru_cache(maxsize=256)
def _cron(expression: str, time_zone: str | None) -> Any:
    return CronSchedule(expression, time_zone)


def _cron_functions(clock: Clock) -> dict[str, Callable[..., Any]]:
    """``cron_next`` and ``cron_prev`` over the plan's wall clock (their default time)."""
    def moment(at: Any) -> float:
        return clock.wall() if at is None else to_datetime(at).timestamp()

    def cron_next(expression: str, time_zone: str | None = None,
                  after: Any = None) -> datetime.datetime:
        """``cron_next('0 * * * *', 'Europe/Berlin')``: the first time strictly after ``after``
        (default ``now()``; anything ``to_datetime`` takes) that the cron expression fires in
        ``time_zone`` (IANA; default UTC), an aware UTC datetime. Cron syntax, macros and
        zones as ``schedule:`` (croniter; CronJob); ValueError for a bad one."""
        schedule = _cron(str(expression), time_zone)
        return datetime.datetime.fromtimestamp(schedule.next_after(moment(after)),
                                               tz=datetime.timezone.utc)

    def cron_prev(expression: str, time_zone: str | None = None,
                  at: Any = None) -> datetime.datetime:
        """``cron_prev('*/5 * * * *')``: the latest time at or before ``at`` (default
        ``now()``) that the expression fires in ``time_zone`` (default UTC), an aware UTC
        datetime: the most recent scheduled time, as the CronJob controller computes it.
        ValueError as ``cron_next``."""
        schedule = _cron(str(expression), time_zone)
        return datetime.datetime.fromtimestamp(schedule.latest_at_or_before(moment(at)),
                                               tz=datetime.timezone.utc)
    return {"cron_next": cron_next, "cron_prev": cron_prev}


def template_seed(name: str) -> int:
    """The seed of the ``random`` filter for ``name`` (a ``kinrun test`` case's name, or
    ``render``): the first 8 bytes of its SHA-256, so one name draws the same items on every
    run and machine (Python's ``hash`` of a str is salted per process)."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")


def _random_filter(seed: int) -> Callable[..., Any]:
    """Jinja2's ``random`` filter drawing from one ``random.Random(seed)`` (under a lock: the
    sequence of draws is the order of the calls), instead of the process's shared generator."""
    generator, lock = random.Random(seed), threading.Lock()

    @jinja2.pass_context
    def seeded_random(context: Any, seq: Any) -> Any:
        """``seq | random``: one item of ``seq``, the seeded generator's next choice."""
        try:
            with lock:
                return generator.choice(seq)
        except IndexError:
            return context.environment.undefined("No random item, sequence was empty.")
    return seeded_random


def _now_function(clock: Clock) -> Callable[[], datetime.datetime]:
    def now() -> datetime.datetime:
        """``now()``: the current time from the plan's wall clock, an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(clock.wall(), tz=datetime.timezone.utc)
    return now


BUILTIN_FILTERS: Mapping[str, Callable[..., Any]] = {
    "to_yaml": to_yaml, "to_json": to_json, "from_yaml": from_yaml, "from_json": from_json,
    "b64encode": b64encode, "b64decode": b64decode, "sha256": sha256,
    "to_datetime": to_datetime, "isoformat": isoformat, "duration": duration,
}
"""kinrun's own filters (Jinja2's built-in filters such as ``indent`` stay available)."""


# --- immutability: no template changes an object it did not create ---------------------------
#
# Jinja2's ImmutableSandboxedEnvironment refuses ``obj.update`` (an attribute of an *instance*
# named in its list of known mutating methods) but not the same method reached another way: the
# unbound ``dict.update`` of the ``dict`` global, a bound method handed back by a filter, a
# method descriptor. kinrun closes the class, in three layers, each enough on its own:
#
# 1. no type object is a global (``dict`` is a function building a dict), so no unbound method
#    of a builtin type is reachable by name;
# 2. attribute access (``x.name``, ``attr``, ``map(attribute=)``, ``str.format`` fields) refuses
#    every method of a mutable container, instance or class, that its immutable counterpart does
#    not have (:func:`mutates`): an allowlist, so a method not listed is refused;
# 3. every call a template makes checks the callable itself (:meth:`_Sandbox.is_safe_callable`):
#    a bound method, method descriptor or slot wrapper of a mutable container that mutates is
#    refused, however it was reached.
#
# Cost: one ``isinstance`` per attribute access of a non-dict, two ``getattr`` per call.

_MUTABLE_CONTAINERS: tuple[tuple[type, frozenset[str]], ...] = (
    (collections.abc.MutableMapping,
     frozenset(dir(types.MappingProxyType)) | {"fromkeys"}),
    (collections.abc.MutableSet, frozenset(dir(frozenset))),
    (bytearray, frozenset(dir(bytes))),
    (collections.deque, frozenset(dir(tuple)) | {"copy", "maxlen"}),
    (collections.abc.MutableSequence, frozenset(dir(tuple)) | {"copy"}),
)
"""Each mutable container type (abstract: ``dict``, ``list``, ``set``, ``OrderedDict``,
``UserDict``... are covered) with the attributes it may be used by: those of its immutable
counterpart (``mappingproxy``, ``frozenset``, ``bytes``, ``tuple``), which cannot mutate,
plus ``copy`` and ``fromkeys``, which build new objects."""


def mutates(owner: Any, name: str) -> bool:
    """Whether the attribute ``name`` of ``owner`` (an instance or a class) may change a mutable
    container: ``mutates({}, "update")``, ``mutates(dict, "setdefault")``, ``mutates([],
    "sort")`` are True; ``mutates({}, "get")``, ``mutates("", "upper")`` are False. Anything
    that is not a mutable container (str, tuple, datetime, Namespace) gives False."""
    return _mutates(owner if isinstance(owner, type) else type(owner), name)


@functools.lru_cache(maxsize=4096)
def _mutates(kind: type, name: str) -> bool:
    """:func:`mutates` of a class (cached: a few hundred (class, name) pairs ever occur)."""
    for container, read_only in _MUTABLE_CONTAINERS:
        if issubclass(kind, container):
            return name not in read_only
    return False


def _callable_owner(func: Any) -> tuple[Any, str] | None:
    """``(owner, name)`` of a method: the instance (or class, for a class method) a bound method
    is bound to, else the class a method descriptor or slot wrapper belongs to
    (``dict.update.__objclass__``); ``functools.partial`` is looked through. None for anything
    else (functions, classes, builtins of a module)."""
    while isinstance(func, functools.partial):
        func = func.func
    owner = getattr(func, "__self__", None)
    if owner is None or isinstance(owner, types.ModuleType):
        owner = getattr(func, "__objclass__", None)
    name = getattr(func, "__name__", None)
    return (owner, name) if owner is not None and isinstance(name, str) else None


def _new_dict(*args: Any, **kwargs: Any) -> dict[str, Any]:
    """``dict(a=1)``, ``dict(obj.metadata.labels, extra='x')``: a new dict (a copy; the
    template's own). The ``dict`` global: a function, not the type, so ``dict.update`` does not
    exist in templates."""
    return dict(*args, **kwargs)


# --- sizes: bounding C-level work before it runs ---------------------------------------------
#
# The budget is checked between steps; one C-level operation (``json.dumps``, ``str()``, ``==``,
# ``sum``, ``**``) runs to its end holding the GIL. So every operation whose cost grows with
# its operands is bounded before it runs, from the operands' sizes:
#
# * a value's size (:func:`value_size`) counts what serialising it expands: one per container
#   and per item, plus the characters of each string, a shared reference counted every time it
#   occurs (``[[[0]*1000]*1000]*1000`` is a thousand million, though three lists exist). It is
#   computed once per container and budget (memoised by ``id``; containers a template sees are
#   never mutated: the sandbox refuses it, and the cache's objects are read-only), so growing a
#   list in a loop with ``+`` costs O(1) per step;
# * output (``{{ }}``, through ``finalize``), ``~``, ``*``, ``+`` and ``%`` refuse operands
#   whose size passes :func:`sequence_limit`; comparisons, dict keys, subscripts, every call's
#   receiver and arguments and every filter's and test's arguments refuse values over
#   :data:`MAX_VALUE_SIZE` (:data:`MAX_SLOW_VALUE_SIZE` for the pure-Python serialisers);
# * ``*`` and ``**`` of integers refuse results over :data:`MAX_INT_BITS`; ``sum`` of lists is
#   done in linear time; ``batch``, ``to_json``/``tojson`` indents and ``str.format`` widths
#   are bounded before anything is allocated.

MAX_VALUE_SIZE = 4_000_000
"""Largest value (:func:`value_size`: about characters of JSON) a filter, a test, a call or a
comparison takes: serialising one takes about 0.2 s. A 1.5 MB object (etcd's limit) fits."""
MAX_SLOW_VALUE_SIZE = 50_000
"""Largest value the pure-Python serialisers (:data:`SLOW_FILTERS`) take: about 0.5 s."""
SLOW_FILTERS = frozenset({"to_yaml", "pprint", "urlencode", "xmlattr"})
"""Filters that walk their value in Python (PyYAML's emitter, ``pprint``): bounded by
:data:`MAX_SLOW_VALUE_SIZE`."""
CHEAP_FILTERS = frozenset({"length", "count", "default", "d", "first", "last", "lower", "upper",
                           "capitalize", "title", "trim", "int", "float", "abs", "round",
                           "map", "select", "selectattr", "reject", "rejectattr"})
"""Jinja2's filters that take constant time, or time linear in a string, or return a lazy
iterator whose items are counted as loop steps as they are taken (``map``, ``select``,
``selectattr``, ``reject``, ``rejectattr``: what consumes the iterator, and every filter
they apply to an item, is checked itself): never expanding a container, they are not
wrapped by the size check (a wrapper costs ~0.3 us per call, which showed in loops; its walk
of a cached object's list, such as a Pod's ``spec.containers``, cost about 90 us per
render). Every other filter is, the plugins' included."""
CHEAP_TESTS = frozenset({"boolean", "callable", "defined", "divisibleby", "escaped", "even",
                         "false", "filter", "float", "integer", "iterable", "lower",
                         "mapping", "none", "number", "odd", "sameas", "sequence", "string",
                         "test", "true", "undefined", "upper"})
"""Jinja2's tests that only look at a value's type or a number (not the comparisons, ``in``
and ``eq``, which walk containers): not wrapped, as :data:`CHEAP_FILTERS`."""
MAX_INT_BITS = 8_192
"""Largest integer ``*`` and ``**`` may build (bits; about 2,466 decimal digits)."""
MAX_INDENT = 64
"""Largest ``indent`` of ``to_json``/``tojson`` (spaces, or characters of an indent string)."""

_CONTAINERS = (list, tuple, dict, set, frozenset)
_SIZED = (*_CONTAINERS, Namespace)
"""What :func:`_check_value` measures; anything else passes it at the cost of an isinstance."""


def value_size(value: Any) -> int:
    """The size of ``value`` as serialising it expands it: 1 per container, item, key and
    scalar, plus the length of each string (shared references counted at each occurrence).
    Counting stops past :func:`_size_cap` (the result is then ``cap + 1``), so the cost is at
    most that many steps, and once per container per active budget (memoised)."""
    if isinstance(value, (str, bytes)):
        return len(value) + 1
    if isinstance(value, Namespace):
        attrs = object.__getattribute__(value, "_Namespace__attrs")
        return _container_size(attrs, *_size_memo(), remember=False)
    if not isinstance(value, _CONTAINERS):
        return 1
    return _container_size(value, *_size_memo())


def _size_cap(budget: RenderBudget | None) -> int:
    output = budget.limits.max_output_chars if budget is not None else MAX_SEQUENCE
    return max(MAX_VALUE_SIZE, output)


def _size_memo() -> tuple[dict[int, tuple[Any, int, int]], int]:
    """The active budget's memo of container sizes (a throw-away dict without one) and cap."""
    budget = _ACTIVE.get()
    return ({} if budget is None else budget.sizes), _size_cap(budget)


def _container_size(value: Any, memo: dict[int, tuple[Any, int, int]], cap: int,
                    remember: bool = True) -> int:
    """:func:`value_size` of a container; memoised by id (the memo holds the value, so its id
    is not reused while the memo lives). Recursion: one level per nesting level."""
    hit = memo.get(id(value))
    if hit is not None and hit[2] == len(value):   # a container that grew is counted again
        return hit[1]
    total = 1 + len(value)
    if total <= cap:
        items = itertools.chain.from_iterable(value.items()) if isinstance(value, dict) \
            else value
        for item in items:
            if isinstance(item, (str, bytes)):
                total += len(item)
            elif isinstance(item, _SIZED):
                total += value_size(item) - 1
            if total > cap:
                break
    total = min(total, cap + 1)
    if remember:
        memo[id(value)] = (value, total, len(value))
    return total


def _remember_size(value: Any, size: int) -> Any:
    """``value`` (a container just built from operands of known size) with its size memoised."""
    budget = _ACTIVE.get()
    if budget is not None and isinstance(value, _CONTAINERS):
        budget.sizes[id(value)] = (value, min(size, _size_cap(budget) + 1), len(value))
    return value


COSTLY_SIZE = 10_000
"""A value at least this large (:func:`value_size`, or characters of a string given to a
filter) makes the operation about to take it read the budget's clock first: a loop of
fewer than CLOCK_EVERY steps, each serialising a value just under the limits, would otherwise
run CLOCK_EVERY such operations before the timeout was noticed."""


def _check_time_before_costly() -> None:
    budget = _ACTIVE.get()
    if budget is not None:
        budget.check_time()


def _check_value(value: Any, limit: int, what: str) -> None:
    """Refuse (BudgetExceeded, reason ``size``) a container whose :func:`value_size` is over
    ``limit``; anything else passes at the cost of one isinstance (strings are bounded where
    they are built)."""
    if isinstance(value, _SIZED):
        size = value_size(value)
        if size > limit:
            raise BudgetExceeded("size", size, limit,
                                 f"{what}: a {type(value).__name__} over the limit of size {limit} "
                                 "(each shared reference counted where it occurs)")
        if size >= COSTLY_SIZE:
            _check_time_before_costly()


def _check_values(values: Iterable[Any], limit: int, what: str) -> None:
    for value in values:
        if isinstance(value, _SIZED):   # inlined: runs for every argument of every call
            _check_value(value, limit, what)


def _check_int_bits(bits: int, what: str) -> None:
    if bits > MAX_INT_BITS:
        raise BudgetExceeded("integer", bits, MAX_INT_BITS,
                             f"{what} over the limit of {MAX_INT_BITS} bits")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# --- the sandbox -----------------------------------------------------------------------------


def _bounded_range(*args: int) -> range:
    """``range`` refusing more than :data:`MAX_RANGE` items, or more than the active budget's
    ``maxLoopSteps`` when that is larger (a longer range could not be iterated within the
    budget anyway; raising the budget raises this limit) (BudgetExceeded, reason ``range``)."""
    rng = range(*args)
    budget = _ACTIVE.get()
    limit = max(MAX_RANGE, budget.limits.max_loop_steps) if budget is not None else MAX_RANGE
    try:
        size = len(rng)
    except OverflowError:   # more items than a C ssize_t: range(10**30)
        size = limit + 1
    if size > limit:
        raise BudgetExceeded("range", size, limit,
                             f"range() over the limit of {limit} items"
                             f"{' (templates.budget.maxLoopSteps)' if budget else ''}")
    return rng


_SIZED_TYPES = frozenset({list, tuple, range, dict, set, frozenset, str})
"""Iterables whose length is the number of iterations of a loop over them (no break in Jinja2)."""

_DICT_ATTRIBUTES = frozenset(dir(dict))
"""Every attribute a plain ``dict`` instance has (its methods and ``object``'s): only these
names can resolve as attributes on one; any other ``.name`` of a dict is its key."""

_ITER_HOOK = "kinrun_budget_iter"
"""The environment attribute every compiled ``for`` loop iterates through."""
_SIZED_HOOK = "kinrun_budget_sized"
"""The environment attribute every compiled ``~`` concatenation passes its result through."""
_TEXT_HOOK = "kinrun_budget_text"
"""The environment attribute each operand of ``~`` passes through before ``str()``."""
_VALUE_HOOK = "kinrun_budget_value"
"""The environment attribute each operand of a comparison and each computed dict key passes
through before it is compared or hashed."""
_HOOKS = frozenset({_ITER_HOOK, _TEXT_HOOK, _VALUE_HOOK})


def _hooked(hook: str, node: nodes.Expr) -> nodes.Expr:
    """``node`` passed through ``environment.<hook>`` (a constant as it is)."""
    if isinstance(node, nodes.Const):
        return node
    return nodes.Call(nodes.EnvironmentAttribute(hook), [node], [], None, None,
                      lineno=node.lineno)


_TEXT_FILTERS = frozenset({"string", "to_json", "tojson", "to_yaml", "sha256", "b64encode",
                           "b64decode", "join", "lower", "upper", "trim", "replace", "indent",
                           "isoformat", "length", "count", "int", "float"})
"""Filters whose result is never a container: their output needs no size check."""


def _scalar_finalize(node: nodes.Expr, finalize: Any) -> Any:
    """``finalize`` for an output expression, or one without its runtime call (``src``) when
    the expression never gives a container (a comparison, a test, ``not``, ``~``, a filter of
    :data:`_TEXT_FILTERS`): the size check of :func:`_finalize_output` would be a no-op there,
    and one call per output in a loop showed in the render cost."""
    scalar = isinstance(node, (nodes.Compare, nodes.Test, nodes.Not, nodes.Concat)) or (
        isinstance(node, nodes.Filter) and node.name in _TEXT_FILTERS)
    return finalize._replace(src=None) if scalar and finalize.src is not None else finalize


class _BudgetCodeGenerator(CodeGenerator):
    """Jinja2's code generator (``Environment.code_generator_class``), with every ``for``
    loop's iterable wrapped in a call of ``environment.kinrun_budget_iter`` (a
    ``nodes.EnvironmentAttribute``, the node Jinja2 offers extensions for callbacks), so each
    iteration spends a loop step; the operands of ``~`` go through ``kinrun_budget_text`` and
    those of comparisons and computed dict keys through ``kinrun_budget_value`` (size checks
    before ``str()``, ``==`` or ``hash`` expand them). These calls are written as direct calls,
    not through the sandbox's ``environment.call``, whose safety checks cost more."""

    def visit_Template(self, node: nodes.Template, frame: Any = None) -> None:
        for loop in list(node.find_all(nodes.For)):
            loop.iter = _hooked(_ITER_HOOK, loop.iter)
        for concat in list(node.find_all(nodes.Concat)):
            concat.nodes = [_hooked(_TEXT_HOOK, part) for part in concat.nodes]
        for compare in list(node.find_all(nodes.Compare)):
            compare.expr = _hooked(_VALUE_HOOK, compare.expr)
            for operand in compare.ops:
                operand.expr = _hooked(_VALUE_HOOK, operand.expr)
        for pair in list(node.find_all(nodes.Pair)):
            pair.key = _hooked(_VALUE_HOOK, pair.key)
        super().visit_Template(node, frame)

    def _output_child_pre(self, node: nodes.Expr, frame: Any, finalize: Any) -> None:
        super()._output_child_pre(node, frame, _scalar_finalize(node, finalize))

    def _output_child_post(self, node: nodes.Expr, frame: Any, finalize: Any) -> None:
        super()._output_child_post(node, frame, _scalar_finalize(node, finalize))

    def visit_Concat(self, node: nodes.Concat, frame: Any) -> None:
        """``a ~ b``: the joined string goes through ``environment.kinrun_budget_sized`` (a
        size check), so repeated concatenation cannot grow a string without bound."""
        self.write(f"environment.{_SIZED_HOOK}(")
        super().visit_Concat(node, frame)
        self.write(")")

    def visit_Call(self, node: nodes.Call, frame: Any, forward_caller: bool = False) -> None:
        hook = node.node
        if isinstance(hook, nodes.EnvironmentAttribute) and hook.name in _HOOKS:
            self.write(f"environment.{hook.name}(")
            self.visit(node.args[0], frame)
            self.write(")")
            return
        super().visit_Call(node, frame, forward_caller=forward_caller)


class _Sandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox plus the render budget and size limits on ``*`` and ``**``.

    Budget hooks (all spend the thread's active :class:`RenderBudget`, none when there is none):
    ``for`` loops iterate through :meth:`kinrun_budget_iter` (one step per item); :meth:`call`
    counts every call in a template (macros, ``range``, lookups; the clock is read every
    CLOCK_EVERY calls) and counts the items of recursive ``loop(...)`` calls. Immutability:
    :meth:`is_safe_attribute` and :meth:`is_safe_callable` refuse what :func:`mutates` (see
    "immutability" above). Sizes: see "sizes" above.
    """

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BudgetCodeGenerator

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """Jinja2's rules (no ``_`` names, no internals, no known mutating method) and no
        attribute :func:`mutates` refuses, of an instance or of a class (``dict.update``)."""
        return super().is_safe_attribute(obj, attr, value) and not mutates(obj, attr)

    def is_safe_callable(self, obj: Any) -> bool:
        """Jinja2's rule (``unsafe``, ``alters_data``) and no method that :func:`mutates` its
        container, bound or not, however it was reached."""
        method = _callable_owner(obj)
        return super().is_safe_callable(obj) and (method is None or not mutates(*method))

    def getitem(self, obj: Any, argument: Any) -> Any:
        """``obj[argument]``, a tuple key's size checked before it is hashed."""
        if isinstance(argument, tuple):
            _check_value(argument, MAX_VALUE_SIZE, "a subscript")
        if obj is _new_dict:
            return self.unsafe_undefined(dict, str(argument))
        return super().getitem(obj, argument)

    @staticmethod   # no bound method made per call
    def kinrun_budget_text(value: Any) -> Any:
        """A ``~`` operand, refused when ``str()`` of it would pass :func:`sequence_limit`."""
        if isinstance(value, _SIZED):
            _check_value(value, sequence_limit(), "a value joined with '~'")
        return value

    @staticmethod   # no bound method made per call
    def kinrun_budget_value(value: Any) -> Any:
        """A compared value or dict key, refused over :data:`MAX_VALUE_SIZE`."""
        if isinstance(value, _SIZED):
            _check_value(value, MAX_VALUE_SIZE, "a compared value or dict key")
        return value

    def getattr(self, obj: Any, attribute: str) -> Any:
        """``obj.attribute`` in a template, as Jinja2's sandbox (the attribute first, else the
        item), with a shortcut for plain dicts, the objects templates read most: a name that
        is not an attribute of ``dict`` (:data:`_DICT_ATTRIBUTES`) is looked up as a key
        directly, since ``getattr`` would fail on it anyway. That failure (an AttributeError
        made and caught) was most of a render's cost: ~4 us per ``.name`` of
        ``obj.metadata.name``. A dict-method name (``obj.items``) and every other type take
        Jinja2's path, safety checks included."""
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except (TypeError, LookupError):
                return self.undefined(obj=obj, name=attribute)
        if obj is _new_dict:   # the ``dict`` global stands for the type: no dict.update
            return self.unsafe_undefined(dict, attribute)
        return super().getattr(obj, attribute)

    def kinrun_budget_sized(self, value: Any) -> Any:
        """``value`` (a ``~`` result) when its size is within :func:`sequence_limit`."""
        _check_size(len(value), "a string")
        return value

    def kinrun_budget_iter(self, iterable: Any) -> Any:
        """A ``for`` loop's iterable, spending one loop step per item: a list, tuple, range,
        dict, set or str of at most CLOCK_EVERY items spends them all now (the clock would be
        read at most once during it anyway) and is iterated as it is, at no cost per step;
        anything else is iterated through :meth:`RenderBudget.iterate`."""
        budget = _ACTIVE.get()
        if budget is None:
            return iterable
        if type(iterable) in _SIZED_TYPES and len(iterable) <= CLOCK_EVERY:
            budget.step(len(iterable))
            return iterable
        return budget.iterate(iterable)

    def call(__self, __context: Any, __obj: Any, *args: Any,  # noqa: N805 - as Jinja2's
             **kwargs: Any) -> Any:
        """Every call a template makes: counted on the budget, checked (:func:`_check_call`:
        Jinja2's callable check, no mutating method, sizes), str methods bounded by the size
        of their result before they run."""
        budget = _ACTIVE.get()
        if budget is not None:
            budget.call()
            if args and isinstance(__obj, LoopContext):   # loop(children) of a recursive loop
                args = (budget.iterate(args[0]), *args[1:])
        _check_call(__self, __obj, args, kwargs)   # Jinja2's is_safe_callable check included
        method = getattr(__obj, "__wrapped__", __obj)  # str.format: the sandbox's wrapper
        text = getattr(method, "__self__", None)
        if isinstance(text, str) and isinstance(method, types.BuiltinMethodType):
            name = method.__name__
            if name == "join" and args and not isinstance(args[0], (list, tuple)):
                args = (list(args[0]), *args[1:])   # measured before it is joined
            what = f"str.{name}()'s result"
            _check_size(_str_method_bound(name, text, args, kwargs), what, "characters")
            return _checked_text(__context.call(__obj, *args, **kwargs), what)
        return __context.call(__obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """``*``, ``**``, ``+``, ``%``, bounded before they run: sizes of the sequences built
        (shared references counted), bits of the integers, the length of formatted text."""
        if operator == "**":
            _check_power(left, right)
        elif operator == "*":
            if _is_int(left) and _is_int(right):
                _check_int_bits(left.bit_length() + right.bit_length(), "an integer product")
            size = _check_repeat(left, right) or _check_repeat(right, left)
            return _remember_size(super().call_binop(context, operator, left, right), size)
        elif operator == "+" and isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
            size = value_size(left) + value_size(right) - 1
            _check_size(size, "a sequence")
            return _remember_size(super().call_binop(context, operator, left, right), size)
        elif operator == "%" and isinstance(left, str):   # printf-style formatting
            _check_value(right, sequence_limit(), "a '%' format's arguments")
            _check_size(_percent_bound(left, right), "a '%' format's result", "characters")
            return _checked_text(super().call_binop(context, operator, left, right),
                                 "a '%' format's result")
        return super().call_binop(context, operator, left, right)


_SEQUENCES = (str, bytes, list, tuple)


def sequence_limit() -> int:
    """The largest string or list a template may build with ``*``, ``+`` or ``~`` (items or
    characters): the active budget's ``maxOutputChars``, else :data:`MAX_SEQUENCE`."""
    budget = _ACTIVE.get()
    return budget.limits.max_output_chars if budget is not None else MAX_SEQUENCE


def _check_size(size: int, what: str, unit: str = "items") -> None:
    limit = sequence_limit()
    if size > limit:
        raise BudgetExceeded("sequence", size, limit,
                             f"{what} (in {unit}) over the limit of {limit} "
                             f"(templates.budget.maxOutputChars)")


def _check_repeat(seq: Any, times: Any) -> int:
    """The size of ``seq * times`` (0 when it is not a sequence times an int), refused over
    sequence_limit(): a list's items counted with what they hold (``[[0]*1000]*1000`` is a
    million)."""
    if not (isinstance(seq, _SEQUENCES) and _is_int(times)):
        return 0
    size = len(seq) * times if isinstance(seq, (str, bytes)) \
        else 1 + max(times, 0) * (value_size(seq) - 1)
    _check_size(size, "a sequence")
    return size


def _check_power(base: Any, exponent: Any) -> None:
    """Refuse ``base ** exponent`` past :data:`MAX_EXPONENT` or :data:`MAX_INT_BITS` (an
    integer result; a float one overflows with an error on its own)."""
    if isinstance(exponent, (int, float)) and abs(exponent) > MAX_EXPONENT:
        raise BudgetExceeded("exponent", abs(exponent), MAX_EXPONENT,
                             f"an exponent over the limit of {MAX_EXPONENT}")
    if _is_int(base) and _is_int(exponent) and exponent > 1 and abs(base) > 1:
        _check_int_bits(base.bit_length() * exponent, "an integer power")


def _check_call(env: _Sandbox, func: Any, args: tuple, kwargs: Mapping[str, Any]) -> None:
    """Before a template calls ``func``: refuse what ``env.is_safe_callable`` refuses
    (SecurityError naming a method that :func:`mutates` its container), and a receiver or
    argument over :data:`MAX_VALUE_SIZE`."""
    if not env.is_safe_callable(func):
        method = _callable_owner(func)
        if method is None:
            raise SecurityError(f"{type(func).__name__} is not safely callable")
        owner, name = method
        kind = owner if isinstance(owner, type) else type(owner)
        raise SecurityError(f"{kind.__name__}.{name}() is refused: templates may not change "
                            "objects (the sandbox is read-only)")
    owner = getattr(func, "__self__", None)
    if isinstance(owner, _SIZED):
        _check_value(owner, MAX_VALUE_SIZE, f"the object of {type(owner).__name__}."
                                            f"{getattr(func, '__name__', '')}()")
    _check_values(args, MAX_VALUE_SIZE, "a call's argument")
    if kwargs:
        _check_values(kwargs.values(), MAX_VALUE_SIZE, "a call's argument")


# Strings built by one C-level call (``'x'.zfill(N)``, ``'%Ns' % x``, ``|center(N)``) are
# bounded before the call: the size the result can reach is worked out from the arguments and
# checked against sequence_limit(), as ``*`` is; every str result is measured after the call
# too, so a bound missed here is still caught before the string is used further.

_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([a-zA-Z%])")
"""One printf-style conversion (``%-10.3s``): width, precision, type."""


def _text_len(value: Any) -> int:
    """The length of ``value`` when it is text (other values: 0; they are bounded elsewhere)."""
    return len(value) if isinstance(value, str) else 0


def _spec_widths(spec: str) -> list[int]:
    """The numbers (widths, precisions) written in a ``str.format`` field's spec."""
    return [int(digits) for digits in re.findall(r"\d+", spec)]


def _format_bound(fmt: str, values: Iterable[Any]) -> int:
    """The most characters ``str.format``/``format_map`` of ``fmt`` can give: the literal text
    plus, per field, its widest width or the longest text value. Nested fields in a spec are
    arguments, checked as integers."""
    values = list(values)
    longest = max(map(_text_len, values), default=0)
    nested = _width_args(values)   # ``{:>{w}}``: a width given as an argument
    total = len(fmt)
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return total  # str.format raises the same error
    for _literal, name, spec, _conversion in fields:
        if name is not None:
            spec = spec or ""
            total += max([longest, *_spec_widths(spec), nested if "{" in spec else 0])
    return total


def _percent_bound(fmt: str, args: Any) -> int:
    """The most characters ``fmt % args`` can give (printf-style): the literal text plus, per
    conversion, its width or precision (``*`` takes an integer argument) or the longest text
    argument."""
    values = list(args.values()) if isinstance(args, Mapping) else \
        list(args) if isinstance(args, tuple) else [args]
    longest = max(map(_text_len, values), default=0)
    stars = [v for v in values if isinstance(v, int) and not isinstance(v, bool)]
    total = len(fmt)
    for match in _PERCENT_SPEC.finditer(fmt):
        widths = [longest]
        for part in match.group(1, 2):
            if part == "*":
                widths.append(max(stars, default=0))
            elif part:
                widths.append(int(part))
        total += max(widths)
    return total


def _width_args(args: Iterable[Any]) -> int:
    """The largest width ``args`` can give a nested ``str.format`` field (``'{:{w}}'``): the
    field's spec is the argument's text, so every run of digits in an integer, float or string
    argument counts (``w='+1000000000'``, ``w=1e9``); 19 digits or more count as more than any
    limit."""
    widths = [0]
    for arg in args:
        if isinstance(arg, (int, float, str)) and not isinstance(arg, bool):
            text = arg if isinstance(arg, str) else str(arg)
            widths += [int(run) if len(run) < 19 else 10 ** 19
                       for run in re.findall(r"\d+", text)]
    return max(widths)


def _int_args(args: Iterable[Any]) -> int:
    """The largest integer (not bool) among ``args``, else 0."""
    return max((a for a in args if isinstance(a, int) and not isinstance(a, bool)), default=0)


def _str_method_bound(name: str, text: str, args: tuple, kwargs: Mapping[str, Any]) -> int:
    """The most characters ``text.<name>(*args, **kwargs)`` can give (a str method), as far
    as it can grow: widths (``center``, ``ljust``, ``rjust``, ``zfill``), ``expandtabs``,
    ``replace``, ``join``, ``translate``, ``format``/``format_map``; any other method is bounded
    by its largest integer argument (a width or count over the limit is refused)."""
    if name == "format":
        return _format_bound(text, [*args, *kwargs.values()])
    if name == "format_map":
        return _format_bound(text, list(args[0].values()) if args and
                             isinstance(args[0], Mapping) else [])
    if name == "expandtabs":
        return len(text) + text.count("\t") * max(_int_args([*args, *kwargs.values()]), 8)
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str) and \
            isinstance(args[1], str):
        grows = max(0, len(args[1]) - len(args[0]))
        count = text.count(args[0]) if args[0] else len(text) + 1
        return len(text) + count * grows
    if name == "join" and args and isinstance(args[0], (list, tuple)):
        items = args[0]   # items that are not text make join() raise
        return sum(map(_text_len, items)) + max(0, len(items) - 1) * len(text)
    if name == "translate" and args and isinstance(args[0], Mapping):
        return len(text) * max([1, *map(_text_len, args[0].values())])
    return max(len(text), _int_args([*args, *kwargs.values()]))


def _checked_text(result: Any, what: str) -> Any:
    """``result``, refused when it is text longer than sequence_limit()."""
    if isinstance(result, str):
        _check_size(len(result), what, "characters")
    return result


def _filter_bound(name: str, value: Any, args: tuple, kwargs: Mapping[str, Any]) -> int:
    """The most characters the Jinja2 string filter ``name`` can give for ``value``."""
    text = value if isinstance(value, str) else ""
    every = [*args, *kwargs.values()]
    if name == "format":
        return _percent_bound(text, kwargs or tuple(args))
    if name == "join":   # ``value``: a list (the wrapper made it one); items are str()-ed
        items = value if isinstance(value, (list, tuple)) else []
        sep = args[0] if args else kwargs.get("d", "")
        return sum(map(_text_len, items)) + max(0, len(items) - 1) * \
            len(str(sep))
    if name == "replace" and len(args) >= 2:
        return _str_method_bound("replace", text, (str(args[0]), str(args[1])), {})
    if name == "truncate":   # never longer than the text and its ``end``
        return len(text) + sum(map(_text_len, every)) + 3
    if name == "indent":
        width = args[0] if args else kwargs.get("width", 4)
        step = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        return len(text) + (text.count("\n") + 1) * step
    if name == "wordwrap":
        width = _int_args(args[:1]) or 79
        wrap = _text_len(args[3] if len(args) > 3 else kwargs.get("wrapstring")) or 1
        return len(text) + (len(text) // max(width, 1) + 1) * wrap + _int_args(every)
    return max(len(text), _int_args(every))


STRING_FILTERS = ("center", "format", "indent", "join", "replace", "truncate", "wordwrap")
"""Jinja2's filters that build a string whose size their arguments set: the size is checked
before they run (:func:`_filter_bound`) and after."""


def _bounded_string_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` (the Jinja2 filter ``name``) refusing a result over sequence_limit() before it
    is built (keeps Jinja2's pass_* markers: the passed context is not the value)."""
    passed = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    what = f"the {name} filter's result"

    @functools.wraps(func)
    def bounded(*args: Any, **kwargs: Any) -> Any:
        if len(args) > passed:
            if name == "join" and not isinstance(args[passed], (list, tuple, Mapping)):
                args = (*args[:passed], list(args[passed]), *args[passed + 1:])
            _check_size(_filter_bound(name, args[passed], args[passed + 1:], kwargs), what,
                        "characters")
        return _checked_text(func(*args, **kwargs), what)
    return bounded


# --- errors that never quote a value (docs/secrets.md) ---------------------------------------


def describe(value: Any) -> str:
    """What an error may say of ``value``: its type and size, never its content. ``"a str of 12
    characters"``, ``"a list of 3 items"``, ``"a dict of 2 keys"``, ``"an int"``, ``"None"``."""
    if value is None:
        return "None"
    name = type(value).__name__
    article = "an" if name[:1] in "aeiouAEIOU" else "a"
    if isinstance(value, (str, bytes)):
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{article} {name} of {len(value)} {unit}"
    if isinstance(value, Mapping):
        return f"{article} {name} of {len(value)} keys"
    if isinstance(value, (list, tuple, set, frozenset)):
        return f"{article} {name} of {len(value)} items"
    return f"{article} {name}"


_QUOTED = re.compile(r"""(?<![\w])(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?![\w])""")
"""A quoted text in a message (``'abc'``, ``"it's"``, as ``repr`` writes strings), not an
apostrophe inside a word (``can't``)."""

_TYPE_WORDS = frozenset(
    {name for name, value in vars(builtins).items() if isinstance(value, type)}
    | {"NoneType", "None", "datetime", "timedelta", "date", "time", "timezone", "Undefined",
       "StrictUndefined", "Namespace", "LoopContext", "Macro", "method", "function",
       "builtin_function_or_method", "method_descriptor", "module", "utf-8", "ascii",
       "<", "<=", ">", ">=", "==", "!=", "+", "-", "*", "/", "//", "%", "**", "~", "in"})
"""Quoted words that name a type, an operator or a codec: what Python's and Jinja2's messages
quote besides values (``'<' not supported between instances of 'str' and 'int'``)."""
_TYPE_PHRASE = re.compile(r"^[A-Za-z_][\w.]* object$")
"""Jinja2's ``'dict object'``: a type's name, not a value."""


def scrub_quoted(message: str, source: str) -> str:
    """``message`` (an error from Python, Jinja2 or a filter) with every quoted text replaced by
    its type and size (``'hunter2'`` -> ``<a str of 7 characters>``), unless the text is
    written in ``source`` (the template: config, not data; a misspelt ``obj.metdata`` stays
    readable), names a type, an operator or a codec (:data:`_TYPE_WORDS`), or is one
    punctuation character. Python's and
    Jinja2's messages quote the values they are about with ``repr``; this is how a template
    error never repeats a value the template read."""
    def replace(match: re.Match[str]) -> str:
        text = match.group(0)[1:-1]
        if text in _TYPE_WORDS or _TYPE_PHRASE.match(text) or (text and text in source) \
                or (len(text) == 1 and not text.isalnum()):   # YAML's "expected ',' or ']'"
            return match.group(0)
        return f"<{describe(_unquoted(match.group(0)))}>"
    return _QUOTED.sub(replace, message)


def _unquoted(literal: str) -> str:
    """The text a quoted ``repr`` stands for (escapes undone), else the text between quotes."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal[1:-1]
    return value if isinstance(value, str) else literal[1:-1]


class _FilterFailed(Exception):
    """A filter (or test) ``name`` raised ``error`` (not a KinrunError or a Jinja2 error): the
    render error names the filter (:func:`_render_error`)."""

    def __init__(self, name: str, error: Exception) -> None:
        super().__init__(name)
        self.name, self.error = name, error


def _guarded(name: str, func: Callable[..., Any], limit: int) -> Callable[..., Any]:
    """``func`` (the filter or test ``name``) refusing a container argument whose
    :func:`value_size` is over ``limit`` before it runs, and naming itself when it fails
    (keeps Jinja2's pass_* markers). Every filter and test is wrapped: Jinja2's, kinrun's and
    the plugins'. Cost: one isinstance per argument."""
    what = f"{name}'s argument"

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        for arg in args:   # inlined _check_values: this runs for every filter call
            if isinstance(arg, _SIZED):
                _check_value(arg, limit, what)
            elif isinstance(arg, str) and len(arg) >= COSTLY_SIZE:   # from_yaml of 1 MB
                _check_time_before_costly()
        if kwargs:
            _check_values(kwargs.values(), limit, what)
        try:
            return func(*args, **kwargs)
        except (KinrunError, jinja2.TemplateError):
            raise
        except Exception as exc:  # noqa: BLE001 - named, then described by _render_error
            raise _FilterFailed(name, exc) from exc
    return guarded


def _parsed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """A parser filter (``from_yaml``, ``from_json``) whose result's :func:`value_size` is
    checked: a YAML alias bomb parses into shared references, cheaply, and explodes only when
    something walks it; it is refused here, at most :data:`MAX_VALUE_SIZE` steps in."""
    @functools.wraps(func)
    def parsed(*args: Any, **kwargs: Any) -> Any:
        result = func(*args, **kwargs)
        _check_value(result, MAX_VALUE_SIZE, f"{name}'s result")
        return result
    return parsed


def _linear_sum(func: Callable[..., Any]) -> Callable[..., Any]:
    """Jinja2's ``sum`` filter, but ``sum(start=[])`` (concatenating lists or tuples) is built
    in one pass, its size checked first: Python's ``sum`` copies the growing list at every
    item (quadratic) in one C call."""
    @functools.wraps(func)
    def summed(environment: Any, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
        if not isinstance(start, (list, tuple)):
            return func(environment, iterable, attribute, start)
        if attribute is not None:
            iterable = map(jinja2.filters.make_attrgetter(environment, attribute), iterable)
        parts = list(iterable)
        for part in parts:
            if type(part) is not type(start):
                raise TypeError(f"sum: cannot add a {type(part).__name__} to a "
                                f"{type(start).__name__}")
        size = value_size(start) + sum(value_size(part) - 1 for part in parts)
        _check_size(size, "sum()'s result")
        joined = type(start)(itertools.chain(start, *parts))
        return _remember_size(joined, size)
    return summed


def _bounded_batch(func: Callable[..., Any]) -> Callable[..., Any]:
    """Jinja2's ``batch``, refusing a batch size over sequence_limit() before the last batch
    is padded to it (``batch(10**9, 'x')`` would allocate gigabytes)."""
    @functools.wraps(func)
    def batch(value: Any, linecount: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(linecount, (int, float)):
            _check_size(int(min(linecount, 2 ** 62)), "batch()'s size")
        return func(value, linecount, *args, **kwargs)
    return batch


def _bounded_tojson(func: Callable[..., Any]) -> Callable[..., Any]:
    """Jinja2's ``tojson`` with its ``indent`` checked first (:func:`check_indent`)."""
    @functools.wraps(func)
    def tojson(eval_ctx: Any, value: Any, indent: Any = None) -> Any:
        check_indent(value, indent, "tojson")
        return func(eval_ctx, value, indent)
    return tojson


def _finalize_output(value: Any) -> Any:
    """The environment's ``finalize``: every ``{{ }}`` value before ``str()``, refused when its
    text would pass the output limit (sequence_limit())."""
    if isinstance(value, _SIZED):
        _check_value(value, sequence_limit(), "a printed value")
    return value


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


def _render_error(exc: Exception, source: str) -> TemplateRenderError:
    """The TemplateRenderError for ``exc`` raised rendering ``source``: safe by construction
    (docs/secrets.md): the failing filter's name, the error's type, and its message with every
    quoted text that ``source`` does not contain replaced by its type and size
    (:func:`scrub_quoted`); a YAML error gives its problem and position, not
    its snippet of the document."""
    error, prefix = exc, ""
    if isinstance(exc, _FilterFailed):
        error, prefix = exc.error, f"{exc.name}: "
    return TemplateRenderError(prefix + scrub_quoted(_error_text(error), source),
                               _template_line(exc))


def _error_text(error: BaseException) -> str:
    """``Type: message`` of an error (ours: the message), before scrubbing."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return (f"{type(error).__name__}: {error.problem or 'invalid YAML'} "
                f"(line {mark.line + 1}, column {mark.column + 1})")
    detail = str(error) or type(error).__name__
    return detail if isinstance(error, KinrunError) else f"{type(error).__name__}: {detail}"


def split_expression(source: str) -> str | None:
    """The bare expression of ``source``: ``"{{ a.b }}"`` -> ``"a.b"``, ``"a.b"`` -> ``"a.b"``;
    None when ``source`` is a template mixing text and/or several ``{{ }}`` or ``{% %}``."""
    text = source.strip()
    if "{%" in text or "{#" in text:
        return None
    if "{{" not in text:
        return text
    if text.startswith("{{") and text.endswith("}}") and text.count("{{") == 1:
        inner = text[2:-2]   # {{- x -}}: Jinja2's whitespace control, no part of x
        return inner.removeprefix("-").removesuffix("-").strip()
    return None


class Template:
    """A compiled template; ``render(variables) -> str``. Thread-safe.

    ``budgets``: makes the budget a render spends when no budget is active (the engine's).
    ``plain``: the template's plain form when it has one (``kinrun.plain_templates``), tried
    first at each render; Jinja2 renders whenever it answers None.
    """

    def __init__(self, template: jinja2.Template, source: str,
                 budgets: Callable[[], RenderBudget],
                 plain: PlainTemplate | None = None) -> None:
        self._template = template
        self._budgets = budgets
        self._plain = plain
        self.source = source

    def render(self, variables: Mapping[str, Any]) -> str:
        """Render with ``variables``, spending the active budget (else a fresh one of the
        engine's limits). Raises TemplateRenderError (with the template line), BudgetExceeded
        (a TemplateRenderError) past the budget. A ReconcileError raised by a plugin filter or
        function propagates unchanged."""
        budget = _ACTIVE.get()
        if budget is not None:
            return self._render(variables, budget)
        budget = self._budgets()
        token = _ACTIVE.set(budget)  # ``with budget:`` inlined: this runs once per render
        try:
            return self._render(variables, budget)
        finally:
            _ACTIVE.reset(token)

    def _render(self, variables: Mapping[str, Any], budget: RenderBudget) -> str:
        plain = self._plain
        if plain is not None:
            text = plain.render(variables, _finalize_output,
                                budget.limits.max_output_chars - budget.output_chars)
            if text is not None:
                budget.add_output(len(text))  # as join_output spends Jinja2's chunks
                return text
        template = self._template
        try:
            try:  # jinja2.Template.render, but its output chunks spend the budget
                chunks = template.root_render_func(template.new_context(variables))
                return budget.join_output(chunks)
            except Exception:  # noqa: BLE001 - rethrown with template line numbers
                template.environment.handle_exception()
        except ReconcileError:
            raise
        except BudgetExceeded as exc:
            raise exc.at_line(_template_line(exc)) from None
        except Exception as exc:  # noqa: BLE001 - any failure of user code becomes one error type
            raise _render_error(exc, self.source) from None   # its message may quote values


class Expression:
    """A compiled expression; ``evaluate(variables) -> value`` (a Python value, not text).

    ``undefined_to_none``: an expression whose result is undefined (``obj.spec.nodeName`` on a
    pod without one) gives None instead of an error; a lookup *through* an undefined value
    (``obj.spec.missing.x``) is an error either way. Thread-safe.
    """

    def __init__(self, compiled: Any, source: str, budgets: Callable[[], RenderBudget]) -> None:
        self._compiled = compiled
        self._budgets = budgets
        self.source = source

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """Evaluate with ``variables``, spending the active budget (else a fresh one); raises
        TemplateRenderError, BudgetExceeded (a TemplateRenderError) past the budget."""
        if _ACTIVE.get() is None:
            with self._budgets():
                return self._evaluate(variables)
        return self._evaluate(variables)

    def _evaluate(self, variables: Mapping[str, Any]) -> Any:
        try:
            return self._compiled(**variables)
        except (ReconcileError, BudgetExceeded):
            raise
        except Exception as exc:  # noqa: BLE001
            raise _render_error(exc, self.source) from None   # its message may quote values


class _TemplateValue:
    """A template used for its string value (adapter giving templates ``evaluate``)."""

    def __init__(self, template: Template) -> None:
        self._template = template
        self.source = template.source

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        return self._template.render(variables)


MAX_TREE_DEPTH = 200
"""The deepest template or expression syntax tree a config may hold (levels of nodes; refused
when it loads, ``kinrun.config.template_syntax``): Python compiles no code nested deeper (200
parentheses, 100 indentation levels), and the recursive walks of the read analyses would pass
the interpreter's recursion limit on a much deeper one."""


def deeper_than(tree: Any, limit: int) -> bool:
    """Whether ``tree`` (a Jinja2 node) has a path from it longer than ``limit`` nodes,
    without recursion."""
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in node.iter_child_nodes())
    return False


def _too_deep(exc: BaseException) -> str:
    """The message of a template or expression nested deeper than Python compiles (a
    SyntaxError "too many nested parentheses" or a RecursionError from Jinja2's compiler)."""
    return (f"template nested too deeply to compile ({type(exc).__name__}: "
            f"{getattr(exc, 'msg', None) or exc}); split it into vars")


def _bound_jinja2_filters(env: jinja2.Environment) -> None:
    """Jinja2's own filters as kinrun's templates get them: each one with an async variant
    replaced by its sync function (the environment is never async; the wrapper chose the sync
    one at every call), the iterating ones counting their items as loop steps, the string
    builders bounded before they build, ``sum``, ``batch`` and ``tojson`` bounded."""
    for name, func in list(env.filters.items()):
        if getattr(func, "jinja_async_variant", False):
            env.filters[name] = func.__wrapped__
    for name in ITERATING_FILTERS:
        if name in env.filters:  # every one exists in Jinja2 >= 3.1
            env.filters[name] = _counting_filter(env.filters[name])
    for name in STRING_FILTERS:
        env.filters[name] = _bounded_string_filter(name, env.filters[name])
    env.filters.update(sum=_linear_sum(env.filters["sum"]),
                       batch=_bounded_batch(env.filters["batch"]),
                       tojson=_bounded_tojson(env.filters["tojson"]))


_BY_NAME = {"map": ("filter", 0), "select": ("test", 0), "reject": ("test", 0),
            "selectattr": ("test", 1), "rejectattr": ("test", 1)}
"""Jinja2's filters that take another filter or test by name, and that argument's index."""


def _named_callables(node: Any) -> list[tuple[str, Any]]:
    """(``filter`` or ``test``, name) for a Filter or Test node: its own name, and the name of
    the filter or test a ``map``/``select``-like filter is given as a literal argument
    (``map('upper')``; not ``map(attribute='x')``)."""
    kind = "filter" if isinstance(node, nodes.Filter) else "test"
    found: list[tuple[str, Any]] = [(kind, node.name)]
    by_name = _BY_NAME.get(node.name) if kind == "filter" else None
    if by_name is not None and len(node.args) > by_name[1] \
            and isinstance(node.args[by_name[1]], nodes.Const) \
            and not any(k.key == "attribute" for k in node.kwargs):
        found.append((by_name[0], node.args[by_name[1]].value))
    return found


class TemplateEngine:
    """The sandboxed Jinja2 environment of one config.

    Construction registers filters (kinrun's, then ``extra_filters``; a clash is a ConfigError)
    and the ``env``/``read_file`` functions per ``options``. Every render spends a
    :class:`RenderBudget` of ``options.budget`` (:meth:`budget`), timed on
    ``budget_clock.now()`` (None: ``clock``'s; ``kinrun test`` and ``render`` fix ``clock``
    but time the budgets on the real one, as a run does);
    ``clock.wall()`` (the plan's clock, fixed in ``kinrun test`` and ``render``) is what the
    template functions ``now()``, ``cron_next`` and ``cron_prev`` read, each call. ``clock``
    defaults to ``REAL_CLOCK``; ``wall_clock`` (a callable of Unix seconds) is deprecated.
    ``seed`` (an int; :func:`template_seed`): the ``random`` filter draws from its own
    generator seeded with it (``kinrun test`` and ``render``); None: from Python's shared,
    unseeded one (a run). ``random`` is the templates' only source of chance (no shuffle or
    uuid; ``now()`` is ``clock``). Thread-safe after construction.
    """

    def __init__(self, options: Any = None, *, extra_filters: Mapping[str, Callable] | None = None,
                 base_dir: Path | None = None,
                 clock: Clock = REAL_CLOCK,
                 wall_clock: Callable[[], float] | None = None,
                 budget_clock: Clock | None = None, seed: int | None = None) -> None:
        self.options = TemplateOptions.coerce(options, base_dir)
        self.clock = with_wall(clock, wall_clock, where="TemplateEngine")
        self._budget_clock = budget_clock or self.clock
        self.wall_clock = self.clock.wall   # Unix seconds: what actions stamp
        env = _Sandbox(undefined=jinja2.StrictUndefined, autoescape=False,
                       keep_trailing_newline=True, finalize=_finalize_output)
        for name in ("lipsum", "cycler", "joiner"):
            env.globals.pop(name, None)
        env.globals["range"] = _bounded_range
        env.globals["dict"] = _new_dict   # not the type: no dict.update (see immutability)
        env.globals["now"] = _now_function(self.clock)
        env.globals.update(_cron_functions(self.clock))
        env.globals["env"] = (_env_function if self.options.allow_env
                              else _refused("allowEnv", "environment variables"))
        env.globals["read_file"] = (_read_file_function(self.options.base_dir)
                                    if self.options.allow_files
                                    else _refused("allowFiles", "files"))
        if seed is not None:
            env.filters["random"] = _random_filter(seed)
        _bound_jinja2_filters(env)
        self._add_filters(env, BUILTIN_FILTERS)
        self._add_filters(env, {name: _counting_filter(func) if callable(func) else func
                                for name, func in (extra_filters or {}).items()})
        for name in ("from_yaml", "from_json"):
            env.filters[name] = _parsed(name, env.filters[name])
        for table, cheap in ((env.filters, CHEAP_FILTERS), (env.tests, CHEAP_TESTS)):
            for name, func in table.items():
                limit = MAX_SLOW_VALUE_SIZE if name in SLOW_FILTERS else MAX_VALUE_SIZE
                if name not in cheap:   # a plugin cannot take a cheap name: they clash
                    table[name] = _guarded(name, func, limit)
        self._env = env
        self._trees: dict[tuple[str, bool], Any] = {}  # syntax_tree's, per source

    def budget(self) -> RenderBudget:
        """A fresh budget of ``options.budget``, timed from now; ``with engine.budget():``
        makes every render inside spend it (one reconcile, one key mapper call)."""
        return RenderBudget(self.options.budget, self._budget_clock)

    @staticmethod
    def _add_filters(env: jinja2.Environment, filters: Mapping[str, Callable]) -> None:
        for name, func in filters.items():
            if name in env.filters:
                raise ConfigError(f"template filter {name!r} is already defined")
            if not callable(func):
                raise ConfigError(f"template filter {name!r} is not callable")
            env.filters[name] = func

    @property
    def global_names(self) -> frozenset[str]:
        """The names every template sees without being given them (``range``, ``now``,
        ``dict``, ``namespace``, ``env``...)."""
        return frozenset(self._env.globals)

    @property
    def filters(self) -> Mapping[str, Callable]:
        """Every filter name templates can use (read-only view)."""
        return dict(self._env.filters)

    def template(self, source: str, location: Any = None) -> Template:
        """Compile ``source`` as a template; syntax errors -> ConfigError at ``location``.
        Constant folding (a filter over literals runs at compile time) spends a budget of its own;
        past it the expression is left to run, and spend, at render time."""
        loc = as_location(location)
        try:
            with self.budget():
                code = self._env.compile(source, filename=_TEMPLATE_FILENAME)
            compiled = self._env.template_class.from_code(self._env, code, self._env.globals)
            self._check_names(self.syntax_tree(source))
        except jinja2.TemplateSyntaxError as exc:
            raise loc.config_error(f"template syntax error: {self._hint(exc.message)} "
                                   f"(template line {exc.lineno})") from exc
        except (SyntaxError, RecursionError) as exc:  # Python's limits on the generated code
            raise loc.config_error(_too_deep(exc)) from None
        return Template(compiled, source, self.budget, self._plain_form(source, compiled))

    def _hint(self, message: str | None) -> str:
        """Jinja2's compile error ``message``, with the closest filter (or test) of this engine
        when it names an unknown one (``No filter named 'defualt'.`` -> ``...; did you mean
        'default'?``)."""
        text = message or ""
        unknown = re.match(r"No (filter|test) named '([^']+)'", text)
        names = (self._env.filters if unknown.group(1) == "filter" else self._env.tests) \
            if unknown else {}
        near = difflib.get_close_matches(unknown.group(2), sorted(names), 1, 0.6) \
            if unknown else []
        return f"{text.rstrip('.')}; did you mean {near[0]!r}?" if near else text

    def _check_names(self, tree: Any) -> None:
        """Every filter and test ``tree`` names is one this engine has, also where Jinja2 looks
        it up only when the line runs: inside an ``if`` branch, or given by name to ``map``,
        ``select``, ``reject``, ``selectattr`` and ``rejectattr``. Raises
        TemplateAssertionError (``No filter named 'x'.``) at the first unknown one."""
        for node in tree.find_all((nodes.Filter, nodes.Test)) if tree is not None else ():
            for kind, name in _named_callables(node):
                known = self._env.filters if kind == "filter" else self._env.tests
                if isinstance(name, str) and name not in known:
                    raise jinja2.TemplateAssertionError(f"No {kind} named '{name}'.",
                                                        node.lineno)

    def _plain_form(self, source: str, compiled: jinja2.Template) -> PlainTemplate | None:
        """The plain form of ``source`` (``kinrun.plain_templates``), kept only when it renders
        what Jinja2 renders under :func:`~kinrun.plain_templates.markers`; else None."""
        plain = plain_template(self.syntax_tree(source), _DICT_ATTRIBUTES, OUTPUT_BATCH)
        if plain is None:
            return None
        variables = markers(plain)
        try:
            with self.budget() as budget:
                want = budget.join_output(
                    compiled.root_render_func(compiled.new_context(variables)))
                got = plain.render(variables, _finalize_output, budget.limits.max_output_chars)
        except Exception:  # noqa: BLE001 - no plain form: Jinja2 renders it at every render
            return None
        return plain if got == want else None

    def expression(self, source: str, location: Any = None, *,
                   undefined_to_none: bool = False) -> Expression:
        """Compile a bare expression (no ``{{ }}``); syntax errors -> ConfigError."""
        loc = as_location(location)
        try:
            with self.budget():  # constant folding, as in template()
                compiled = self._env.compile_expression(source,
                                                        undefined_to_none=undefined_to_none)
            self._check_names(self.syntax_tree(source, expression=True))
        except jinja2.TemplateSyntaxError as exc:
            raise loc.config_error(f"expression syntax error in {source!r}: "
                                   f"{self._hint(exc.message)}") from exc
        except (SyntaxError, RecursionError) as exc:  # Python's limits on the generated code
            raise loc.config_error(_too_deep(exc)) from None
        return Expression(compiled, source, self.budget)

    def syntax_tree(self, source: str, *, expression: bool = False) -> Any:
        """The Jinja2 syntax tree of ``source`` (a template, or with ``expression`` a bare
        expression, ``{{ }}`` optional), for analysis (``kinrun.template_reads``); None when
        it does not parse (compiling it reports that). Parsed once per source and kind: the
        plan's checks and ``kinrun.kept_paths`` read the same strings; callers only read the
        tree, never change it."""
        if (source, expression) in self._trees:
            return self._trees[(source, expression)]
        text = source
        bare = split_expression(source) if expression else None
        if bare:
            text = "{{ " + bare + " }}"
        try:
            tree = self._env.parse(text)
        except jinja2.TemplateSyntaxError:
            tree = None
        self._trees[(source, expression)] = tree
        return tree

    def value_node(self, source: str) -> Any:
        """The expression :meth:`value` compiles ``source`` to, as a syntax-tree node, for
        analysis (``kinrun.template_reads``, ``kinrun.kept_paths``); None when :meth:`value`
        compiles it as a template (its value is the rendered text, never an object, even for
        ``{% if c %}{{ obj }}{% endif %}``) or it does not parse."""
        if not split_expression(source):
            return None
        tree = self.syntax_tree(source, expression=True)
        outputs = list(tree.find_all(nodes.Output)) if tree is not None else []
        return outputs[0].nodes[0] if len(outputs) == 1 and len(outputs[0].nodes) == 1 \
            else None

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

    Thread-safe (a lock guards the counters). ``clock``: intervals on its ``now()``.
    """

    def __init__(self, logger: logging.Logger, interval: float = 60.0,
                 clock: Clock = REAL_CLOCK) -> None:
        self._logger = logger
        self._interval = interval
        self._clock = clock.now
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
                         clock: Clock) -> Callable[[dict], list[str]]:
    engine = engine or TemplateEngine(options, clock=clock)
    loc = as_location(location)
    value = engine.value(source, loc, undefined_to_none=True)
    warner = RateLimitedWarner(logger or logging.getLogger("kinrun.templating"), clock=clock)

    def func(obj: dict) -> list[str]:
        try:
            with engine.budget():  # a budget per call, whatever the caller's
                return index_values(value.evaluate({"obj": obj}))
        except (TemplateRenderError, TypeError) as exc:
            warner.warn("%s: %s %r failed for %s: %s", loc, what, source, _object_name(obj), exc)
            return []
    func.__doc__ = f"{what} {source!r} from {loc}"
    return func


def compile_index_func(expr: str, location: Any = None, *, engine: TemplateEngine | None = None,
                       options: Any = None, logger: logging.Logger | None = None,
                       clock: Clock = REAL_CLOCK) -> Callable[[dict], list[str]]:
    """Compile a config indexer (``indexers: {byNode: "{{ obj.spec.nodeName }}"}``) into an index
    function for the informer's Indexer (client-go ``IndexFunc``: object -> index values).

    ``expr`` is a Jinja2 expression, with or without ``{{ }}``, seeing ``obj``; its value maps as
    :func:`index_values` (str -> [str], list -> [str...], None/""/undefined -> []). A text mixing
    literal parts renders as a template (one value per line). Syntax errors: ConfigError at
    ``location`` (now). Each call spends a budget of its own (the engine's ``templates.budget``).
    Errors while evaluating, a BudgetExceeded included, never propagate (they would break the
    store): the object is filed under no value and a warning is logged at most once a minute per
    indexer.
    """
    return _compile_object_func(expr, location, "indexer", engine=engine, options=options,
                                logger=logger, clock=clock)


def _index_read(informer: str, index: str, what: str, read: Callable[[], Any]) -> Any:
    """``read()``, an index read of ``informer``'s lister: an unknown index raises the cache's
    own error (a KinrunError that says it already), another KeyError a LookupError naming the
    informer and the index."""
    try:
        return read()
    except KeyError as err:
        if isinstance(err, KinrunError):
            raise
        raise LookupError(f"{what}: informer {informer!r} has no index {index!r}") from None


def lookup_functions(listers: Mapping[str, Any]) -> dict[str, Callable[..., Any]]:
    """The template functions ``get(informer, key)``, ``list(informer[, namespace])``,
    ``by_index(informer, index, value)`` and ``index_keys(informer, index)`` (the values the
    index files objects under, sorted: the lister's ``list_index_func_values``) over ``listers`` (informer name -> a Lister: the cache,
    never the API server). An unknown informer raises LookupError naming the known ones; an
    unknown index, the lister's error when it is a KinrunError, else a LookupError naming the
    informer (in a template error, a name built by the template is shown as its type and
    size: ``docs/secrets.md``). The objects returned are the
    cache's, read-only (the sandbox refuses mutating methods). Used by action templates
    (``kinrun.actions``) and by ``mapTo`` key mappers (:meth:`KeyMapper.bind`)."""
    def lister(informer: str) -> Any:
        try:
            return listers[informer]
        except KeyError:
            known = ", ".join(sorted(listers)) or "none"
            raise LookupError(f"unknown informer {informer!r} (known: {known})") from None

    def by_index(informer: str, index: str, value: Any) -> Any:
        found = lister(informer)
        return _index_read(informer, index, "by_index", lambda: found.by_index(index, value))

    def index_keys(informer: str, index: str) -> list[str]:
        found = lister(informer)
        return _index_read(informer, index, "index_keys",
                           lambda: found.list_index_func_values(index))

    return {
        "get": lambda informer, key: lister(informer).get(key),
        "list": lambda informer, namespace=None: (lister(informer).list() if namespace is None
                                                  else lister(informer).list(namespace)),
        "by_index": by_index,
        "index_keys": index_keys,
    }


LOOKUP_NAMES = ("get", "list", "by_index", "index_keys")
"""The names :func:`lookup_functions` defines."""

_PARSE_ONLY = jinja2.Environment()
"""Parses template sources for :func:`lookup_calls` (no filters or tests are resolved)."""


class LookupCall(NamedTuple):
    """One call of a lookup function in a template: ``function`` (``get``, ``list``,
    ``by_index``, ``index_keys``), ``informer`` and ``index`` (the first and, for
    :data:`INDEX_READS`, second argument when written as a string literal; None when computed
    or not taken) and its template ``line`` (1-based)."""

    function: str
    informer: str | None
    index: str | None
    line: int


INDEX_READS = ("by_index", "index_keys")
"""The lookups whose second argument names an index of the informer."""


def lookup_calls(source: str) -> list[LookupCall]:
    """The lookups a template or expression makes, one :class:`LookupCall` per call of
    :data:`LOOKUP_NAMES`, in the source's order. A source that does not parse gives []
    (compiling reports it)."""
    bare = split_expression(source)
    text = f"{{{{ {bare} }}}}" if bare is not None else source
    try:
        tree = _PARSE_ONLY.parse(text)
    except jinja2.TemplateSyntaxError:
        return []
    calls = []
    for call in tree.find_all(nodes.Call):
        if isinstance(call.node, nodes.Name) and call.node.name in LOOKUP_NAMES:
            function = call.node.name
            index = _literal_text(call.args, 1) if function in INDEX_READS else None
            calls.append(LookupCall(function, _literal_text(call.args, 0), index, call.lineno))
    return calls


def _literal_text(args: list[nodes.Expr], position: int) -> str | None:
    """The ``position``-th argument when it is a string literal, else None."""
    arg = args[position] if len(args) > position else None
    return arg.value if isinstance(arg, nodes.Const) and isinstance(arg.value, str) else None


class KeyMapper:
    """A compiled ``mapTo: {template: ...}``: ``mapper(obj, initial_list=False) -> [key, ...]``.

    The template sees ``obj`` (the secondary object), ``initial_list`` (True when the object
    comes from its informer's first list, or is replayed to a handler added later, as
    client-go's ``OnAdd(obj, isInInitialList)``; False for real adds, updates and deletions),
    and, once :meth:`bind` gave it the listers, ``get``/``list``/``by_index`` over the caches.
    Its value maps as :func:`index_values`: one key per line of rendered text, or a list of
    keys; ``""``/None: no key. Each call spends a budget of its own (``templates.budget``).
    Errors, a BudgetExceeded or a lookup of an unknown informer included, give no key and a
    warning at most once a minute (an event handler must not fail). ``uses_lookups``: the
    template names ``get``, ``list`` or ``by_index``. Immutable; thread-safe.
    """

    __slots__ = ("_value", "_engine", "location", "source", "_warner", "_lookups",
                 "uses_lookups")

    def __init__(self, value: Any, engine: TemplateEngine, location: SourceLocation,
                 source: str, warner: RateLimitedWarner,
                 lookups: Mapping[str, Callable[..., Any]] | None = None) -> None:
        self._value, self._engine, self.location, self.source = value, engine, location, source
        self._warner = warner
        self._lookups = dict(lookups or {})
        self.uses_lookups = bool(lookup_calls(source))

    def bind(self, listers: Mapping[str, Any]) -> KeyMapper:
        """The same mapper with ``get``/``list``/``by_index`` over ``listers`` (informer name
        -> Lister): what ``kinrun.bound`` wires."""
        return KeyMapper(self._value, self._engine, self.location, self.source, self._warner,
                         lookup_functions(listers))

    def __call__(self, obj: dict, initial_list: bool = False) -> list[str]:
        try:
            with self._engine.budget():  # a budget per call, whatever the caller's
                return index_values(self._value.evaluate(
                    {"obj": obj, "initial_list": initial_list, **self._lookups}))
        except (TemplateRenderError, TypeError, LookupError) as exc:
            self._warner.warn("%s: key mapper %r failed for %s: %s", self.location, self.source,
                              _object_name(obj), exc)
            return []

    def __repr__(self) -> str:
        return f"key mapper {self.source!r} from {self.location}"


def compile_key_mapper(template: str, location: Any = None, *, engine: TemplateEngine | None = None,
                       options: Any = None, logger: logging.Logger | None = None,
                       clock: Clock = REAL_CLOCK) -> KeyMapper:
    """Compile a watch's ``mapTo: {template: ...}`` into a :class:`KeyMapper`: a secondary
    object -> the primary keys to enqueue (``namespace/name``, or ``name`` for cluster-scoped
    primaries).

    The template sees ``obj``, ``initial_list`` and, once bound to the listers, the lookups
    ``get``/``list``/``by_index`` (so one Secret can fan out to every Namespace:
    ``list('namespaces') | map(attribute='metadata.name') | list``). The rendered text holds one
    key per line; blank lines are dropped, so ``""`` means no key; an expression returning a
    list gives several keys. Syntax errors: ConfigError at ``location``. Each call spends a
    budget of its own; errors give no key and a rate-limited warning (see KeyMapper).
    """
    engine = engine or TemplateEngine(options, clock=clock)
    loc = as_location(location)
    value = engine.value(template, loc, undefined_to_none=True)
    warner = RateLimitedWarner(logger or logging.getLogger("kinrun.templating"), clock=clock)
    return KeyMapper(value, engine, loc, template, warner)


# --- what templates can see: the registry the reference page is generated from -------------

PLACES: Mapping[str, str] = {
    "actions": "the fields of `reconcile.actions`",
    "when": "an action's `when:`",
    "vars": "`reconcile.vars` (each var also sees the vars before it)",
    "onDelete": "`reconcile.onDelete` (`obj` is None, `old` the final state)",
    "finalize": "`reconcile.finalize` (the terminating object is still `obj`)",
    "onError": "`reconcile.onError` (after a failed reconcile; `error` says what failed)",
    "mapTo": "`watches[].mapTo.template` (the key mapper)",
    "indexers": "`informers.*.indexers` expressions",
}
"""Where templates render, by the name the reference page uses."""

_ACTIONS = ("actions", "when", "vars", "onDelete", "finalize", "onError")
_EVERYWHERE = tuple(PLACES)


@dataclass(frozen=True)
class TemplateName:
    """One name a template can use: ``name``; ``kind`` (``variable``, ``function`` or
    ``filter``); ``places`` (keys of :data:`PLACES`); ``usage`` (how it is written); ``doc``
    (what it is). The registry :data:`TEMPLATE_NAMES` is what ``docs/templates.md`` is
    generated from (``python -m kinrun.reference``); a test checks that every name the
    engine and the action scope expose is in it."""

    name: str
    kind: str
    places: tuple[str, ...]
    usage: str
    doc: str


def _first_paragraph(func: Callable[..., Any]) -> str:
    text = (func.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in text.splitlines())


TEMPLATE_NAMES: tuple[TemplateName, ...] = (
    TemplateName("obj", "variable", _EVERYWHERE, "obj.metadata.name",
                 "The object: in actions, `when`, `vars` and `finalize` the reconciled primary "
                 "object (None in `onDelete`); in `mapTo` the secondary object that changed; in "
                 "indexers the object being indexed; in a controller's `finalizer.when` the live "
                 "primary object. Read-only (the cache's object)."),
    TemplateName("old", "variable", _ACTIONS, "old.spec",
                 "In `onDelete` the object's final state; otherwise the version this controller "
                 "reconciled last when `reconcile.keepOld` (by default: when a template names "
                 "`old`), else None. Keys coalesce: never rely on seeing every version."),
    TemplateName("key", "variable", _ACTIONS, "key",
                 "The key being reconciled: `namespace/name`, or `name` for a cluster-scoped "
                 "primary."),
    TemplateName("controller", "variable", _ACTIONS, "controller",
                 "The controller's `name`."),
    TemplateName("reason", "variable", _ACTIONS, "reason == 'added'",
                 "Why the key was queued: `added`, `updated`, `resync`, `mapped from INFORMER`, "
                 "`requeued`, `retried`, `scheduled` (an object created again after a "
                 "deletion is `added`, one that left the selectors and came back `updated`; "
                 "docs/controllers.md#deletions); in `onDelete` why the object is gone: "
                 "`deleted`, `left` (no longer matches the selectors) or `unknown` (a relist "
                 "no longer found it)."),
    TemplateName("initial_list", "variable", _ACTIONS + ("mapTo",), "not initial_list",
                 "True for an add from the informer's first list (start-up, or the cache "
                 "replayed to a handler added later), False for a real creation and every other "
                 "event (client-go `OnAdd(obj, isInInitialList)`). In actions: the `added` "
                 "cause's flag."),
    TemplateName("results", "variable", tuple(p for p in _ACTIONS if p != "vars"),
                 "results.make_child.metadata.uid",
                 "What the server answered to each earlier named action (`name:`) of this "
                 "reconcile: the object an apply/create/patch got back, None for an action that "
                 "sent nothing. An action that reads it is rendered after the ones it reads ran; "
                 "`kinrun render` shows placeholders. Not in `vars`: they are evaluated before "
                 "any action runs."),
    TemplateName("error", "variable", ("onError",),
                 "error.reason == 'AlreadyExists'",
                 "In `onError` only (its `when` and vars too): why the reconcile failed. "
                 "`error.message` (the error's own message: the server's for an API error, a "
                 "`fail`'s rendered message), `error.where` (the whole logged line: file:line, "
                 "action, request), `error.reason` (an API error's reason such as "
                 "`AlreadyExists`; `ActionFailed` for `fail`; else the error's type), "
                 "`error.code` (an API error's HTTP status, else none), `error.action` (the "
                 "failed action's `name:` or kind; `finalizer` for the finalizer patch)."),
    TemplateName("<var>", "variable", _ACTIONS, "managed",
                 "Each `reconcile.vars` entry by its name, evaluated once per reconcile in "
                 "order (a var sees the vars before it)."),
    TemplateName("<item>", "variable", tuple(p for p in _ACTIONS if p != "vars"), "item.metadata.name",
                 "In an action with `forEach` (and in `applySet.manifests` with `applySet."
                 "forEach`): the current item, named by `as` (default `item`); the action's "
                 "`when:` and templates see it."),
    TemplateName("get", "function", _ACTIONS + ("mapTo",), "get('informer', 'ns/name')",
                 "The cached object of a config informer under a key, or None. Reads the "
                 "informer's cache (lister), never the API server."),
    TemplateName("list", "function", _ACTIONS + ("mapTo",), "list('informer'[, 'namespace'])",
                 "Every cached object of a config informer (of one namespace when given)."),
    TemplateName("by_index", "function", _ACTIONS + ("mapTo",),
                 "by_index('informer', 'index', value)",
                 "The cached objects an informer's index files under `value` (an `indexers:` "
                 "name, or `namespace`)."),
    TemplateName("index_keys", "function", _ACTIONS + ("mapTo",),
                 "index_keys('informer', 'index')",
                 "The values an informer's index files at least one cached object under, "
                 "sorted (client-go `ListIndexFuncValues`; as kopf's indexes are read): loop "
                 "over them and call `by_index` for the objects."),
    TemplateName("now", "function", _EVERYWHERE, "now() | isoformat",
                 "The current time from the plan's clock, an aware UTC datetime (fixed under "
                 "`kinrun test` and `kinrun render`, so their output is deterministic)."),
    TemplateName("cron_next", "function", _EVERYWHERE,
                 "cron_next('0 9 * * MON', 'Europe/Berlin')",
                 "The first time strictly after `now()` (or a third argument, anything "
                 "`to_datetime` takes) that a cron expression fires in an IANA time zone "
                 "(default UTC), an aware UTC datetime. Cron syntax and zones as `schedule:` "
                 "(croniter, as CronJob); a literal expression or zone `schedule:` would refuse "
                 "(one that never fires, such as `0 0 30 2 *`, included) is refused by "
                 "`validate` at the template's place."),
    TemplateName("cron_prev", "function", _EVERYWHERE, "cron_prev('*/5 * * * *')",
                 "The latest time at or before `now()` (or a third argument) that a cron "
                 "expression fires in a time zone (default UTC): the most recent scheduled "
                 "time, as the CronJob controller computes it. Literal arguments checked by "
                 "`validate` as `cron_next`'s."),
    TemplateName("range", "function", _EVERYWHERE, "range(3)",
                 f"Python's `range`, at most {MAX_RANGE} items (or `templates.budget."
                 "maxLoopSteps` when larger)."),
    TemplateName("env", "function", _EVERYWHERE, "env('NAME', 'default')",
                 "An environment variable of the kinrun process, or the default. Only with "
                 "`templates.allowEnv: true`; otherwise an error naming the setting."),
    TemplateName("read_file", "function", _EVERYWHERE, "read_file('ca.pem')",
                 f"A text file relative to the config's folder (at most {MAX_FILE_BYTES} "
                 "bytes). Only with `templates.allowFiles: true`."),
    TemplateName("dict", "function", _EVERYWHERE, "dict(a=1)", "Jinja2's `dict`."),
    TemplateName("namespace", "function", _EVERYWHERE, "namespace(count=0)",
                 "Jinja2's `namespace` (a mutable holder for loops; `{% set ns.count = ... %}`)."),
    *(TemplateName(name, "filter", _EVERYWHERE, f"value | {name}", _first_paragraph(func))
      for name, func in BUILTIN_FILTERS.items()),
)
"""Everything a kinrun template can see besides Jinja2's built-in filters and tests (which
the reference lists by name) and the plugins' ``kinrun_template_filters``."""


__all__ = [
    "BUILTIN_FILTERS", "BudgetExceeded", "BudgetLimits", "CHEAP_FILTERS", "CHEAP_TESTS",
    "CLOCK_EVERY", "Expression", "INDEX_READS", "ITERATING_FILTERS", "KeyMapper", "LOOKUP_NAMES",
    "LookupCall",
    "MAX_EXPONENT", "MAX_FILE_BYTES", "MAX_INDENT", "MAX_INT_BITS", "MAX_RANGE", "MAX_SEQUENCE",
    "MAX_SLOW_VALUE_SIZE", "MAX_VALUE_SIZE", "OUTPUT_BATCH", "PLACES", "RateLimitedWarner",
    "RenderBudget", "SLOW_FILTERS", "STRING_FILTERS", "SourceLocation", "TEMPLATE_NAMES",
    "Template", "TemplateEngine", "TemplateName", "TemplateOptions", "TemplateRenderError",
    "as_location", "b64decode", "b64encode", "check_indent", "compile_index_func",
    "compile_key_mapper", "describe", "duration", "from_json", "from_yaml", "index_values",
    "isoformat", "lookup_calls", "lookup_functions", "mutates", "scrub_quoted", "sha256",
    "spend_loop_step", "split_expression", "to_datetime", "to_json", "to_yaml", "value_size",
]
