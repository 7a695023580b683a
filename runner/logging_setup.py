"""Logging for the CLI: one line per record, as text or as JSON.

Text: ``2026-01-02T03:04:05.678Z INFO kinrun.controller.pods: message key=value ...``.
JSON: ``{"ts": "...Z", "level": "info", "logger": "...", "message": "...", <extra fields>}``,
plus ``exc`` (the formatted traceback) when the record carries one. Extra fields are the
``extra={...}`` of the logging call. Newlines inside a message or traceback are escaped in the
text form so that every record stays one line.

Reconcile fields (JSON only), as controller-runtime's structured logs carry them: every record
emitted on a worker thread during a reconcile wrapped by :func:`reconcile_log_fields` (the
``kinrun.bound`` wrap seam) carries ``controller``, ``kind`` (the controller's primary kind),
``namespace`` and ``name`` (from the key), ``key`` and ``reconcileID`` (a fresh UUID per
reconcile): actions' ``log`` lines, hook plugins' ``ctx.logger``, the reconciler's own lines.
The fields live in a context variable (:data:`RECONCILE_FIELDS`, one per thread) that the JSON
formatter reads. They stay set after the reconcile returns, until the worker's next reconcile,
so that the controller's lines about its outcome (``will retry``, ``retry in``, ``dropping``,
``failed permanently``), logged once the reconcile returned, carry them too; a worker thread
logs nothing else between two reconciles. An ``extra=`` field of the same name yields to them.

Zap (``--log-format zap``): one JSON object per record with the keys controller-runtime's
zap logger writes, for pipelines built on them (kubebuilder operators): ``ts`` (ISO 8601, as
``--zap-time-encoding=iso8601``), ``level`` (``debug``/``info``/``warn``/``error``),
``logger``, ``caller`` (``module.py:line``), ``msg``, then during a reconcile ``controller``,
``controllerGroup``, ``controllerKind``, ``<Kind>: {name, namespace}``, ``namespace``
(omitted for a cluster-scoped object, never ``""``), ``name``, ``reconcileID``; ``error`` (an
``extra={"error": ...}`` field, or the exception of ``exc_info``) and ``stacktrace``. Extra
fields follow under their own names. A failed reconcile is an ``error`` record whose ``msg``
is ``Reconciler error`` and whose ``error`` says why, as controller-runtime writes it
(:data:`RECONCILER_ERROR`), with kinrun's own line (what happens next: a retry, a requeue
after a delay, a drop) in ``detail``; the controller marks such records with
``extra={"_reconciler_error": error}`` (underscored: the text and JSON formats skip it).

Secrets: a core/v1 Secret passed as a ``%`` argument or an ``extra=`` field is printed with its
values redacted (``kinrun.redact``), in both forms.
"""

from __future__ import annotations

import contextvars
import logging
import random
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

import orjson

from kinrun.log_batching import BatchedStreamHandler, batching_pays
from kinrun.redact import redact_value

_SRCFILE = logging._srcfile  # type: ignore[attr-defined]  # see configure_logging
LEVELS = ("debug", "info", "warning", "error")
_HANDLER_NAME = "kinrun.cli"
FORMATS = ("text", "json", "zap")
RECONCILER_ERROR = "Reconciler error"
"""The ``msg`` of a failed reconcile in the zap format (controller-runtime's)."""
_ZAP_LEVELS = {"WARNING": "warn", "CRITICAL": "error"}

# Attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime",
                                                                           "taskName"}


RECONCILE_FIELDS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "kinrun_reconcile_fields", default=None)
"""The reconcile fields of the current (or last) reconcile on this thread, or None."""


_RANDOM_BITS = random.Random().getrandbits  # seeded from os.urandom; atomic under the GIL
_VERSION_4 = 4 << 76
_VARIANT_RFC4122 = 0x8000 << 48
_KEEP = ~((0xF << 76) | (0xC000 << 48))


def new_reconcile_id() -> str:
    """A random (version 4) UUID string, as ``str(uuid.uuid4())`` but from a PRNG seeded once
    from the OS: an identifier to join log lines, not a secret, and about 4x cheaper on the
    reconcile path (``uuid4`` reads ``os.urandom`` each time)."""
    h = f"{_RANDOM_BITS(128) & _KEEP | _VERSION_4 | _VARIANT_RFC4122:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def reconcile_log_fields(kind: str | Callable[[str], str],
                         group: str | Callable[[str], str] = ""
                         ) -> Callable[[str, Callable[..., Any]], Callable[..., Any]]:
    """A wrap ``(controller, reconcile) -> reconcile`` (``kinrun.bound``) that sets the
    reconcile fields (see the module docstring) of each call; ``kind``: the controller's
    primary kind, ``kind(controller)`` when a callable; ``group``: its API group ("" core),
    likewise."""
    def wrap(controller: str, reconcile: Callable[..., Any]) -> Callable[..., Any]:
        controller_kind = kind(controller) if callable(kind) else kind
        controller_group = group(controller) if callable(group) else group
        fields_var, new_id = RECONCILE_FIELDS, new_reconcile_id

        def with_fields(key: Any, obj: Any, *args: Any) -> Any:
            namespace, _, name = str(key).rpartition("/")
            fields_var.set({"controller": controller, "kind": controller_kind,
                            "group": controller_group, "namespace": namespace, "name": name,
                            "key": key, "reconcileID": new_id()})
            return reconcile(key, obj, *args)
        return with_fields
    return wrap


_SECOND: list[Any] = [None, ""]
"""The last whole second :func:`_timestamp` formatted, and its text (one list: replaced in one
assignment, so a thread reads a matching pair; strftime is the costly part of a log line)."""


def _timestamp(record: logging.LogRecord) -> str:
    """UTC ISO 8601 with milliseconds and a ``Z``."""
    global _SECOND
    second = int(record.created)
    last = _SECOND
    if last[0] != second:
        last = _SECOND = [second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))]
    return f"{last[1]}.{int(record.msecs):03d}Z"


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The ``extra=`` fields of a record, in the order they were set, any core/v1 Secret in
    them with its values redacted (``kinrun.redact.redact_value``)."""
    fields = vars(record)
    if fields.keys() <= _STANDARD:  # most records: no extra field (one C-level comparison)
        return {}
    return {k: redact_value(v) for k, v in fields.items()
            if k not in _STANDARD and not k.startswith("_")}


def message(record: logging.LogRecord) -> str:
    """``record.getMessage()``, with any core/v1 Secret among its ``%`` arguments (an object a
    plugin logs) redacted first (``kinrun.redact``); the record is not changed."""
    args = record.args
    if not args:  # most records (a ``log`` action's line): nothing to format or redact
        return record.getMessage()
    if isinstance(args, tuple) and any(isinstance(a, (Mapping, list, tuple)) for a in args):
        shown = logging.makeLogRecord(vars(record))
        shown.args = tuple(redact_value(a) for a in args)
        return shown.getMessage()
    if isinstance(args, Mapping) and args:
        shown = logging.makeLogRecord(vars(record))
        shown.args = redact_value(args)
        return shown.getMessage()
    return record.getMessage()


class TextFormatter(logging.Formatter):
    """``ts LEVEL logger: message k=v ...`` on one line (newlines escaped)."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname} {record.name}: {message(record)}"
        for key, value in extra_fields(record).items():
            line += f" {key}={value}"
        if record.exc_info:
            line += " | " + self.formatException(record.exc_info)
        return line.replace("\n", "\\n")


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, message, reconcile fields, extra
    fields, exc."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {"ts": _timestamp(record), "level": record.levelname.lower(),
                               "logger": record.name, "message": message(record)}
        fields = RECONCILE_FIELDS.get()
        if fields:
            for key, value in fields.items():
                if key != "group":
                    out.setdefault(key, value)
        for key, value in extra_fields(record).items():
            out.setdefault(key, value)
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


class ZapFormatter(logging.Formatter):
    """One JSON object per record with controller-runtime's zap keys (module docstring)."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "level": _ZAP_LEVELS.get(record.levelname, record.levelname.lower()),
            "ts": _timestamp(record), "logger": record.name,
            "caller": f"{record.module}.py:{record.lineno}", "msg": message(record)}
        out.update(_zap_reconcile(RECONCILE_FIELDS.get()))
        extra = extra_fields(record)
        failed = getattr(record, "_reconciler_error", None)
        if failed is not None:  # controller-runtime: every failed reconcile, at error
            out.update(level="error", msg=RECONCILER_ERROR, error=str(failed),
                       detail=message(record))
        elif "error" in extra:
            out["error"] = str(extra.pop("error"))
        elif record.exc_info and record.exc_info[1] is not None:
            out["error"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        for key, value in extra.items():
            out.setdefault(key, value)
        if record.exc_info:
            out["stacktrace"] = self.formatException(record.exc_info)
        return orjson.dumps(out, default=str).decode()


def _zap_reconcile(fields: dict[str, Any] | None) -> dict[str, Any]:
    """controller-runtime's reconcile keys from :data:`RECONCILE_FIELDS`: ``controller``,
    ``controllerGroup``, ``controllerKind``, ``<Kind>: {name[, namespace]}``, ``namespace``
    (only when there is one), ``name``, ``reconcileID``."""
    if not fields:
        return {}
    kind, namespace, name = fields["kind"], fields["namespace"], fields["name"]
    ref = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"controller": fields["controller"], "controllerGroup": fields.get("group", ""),
            "controllerKind": kind, kind: ref, **({"namespace": namespace} if namespace else {}),
            "name": name, "reconcileID": fields["reconcileID"]}


def _skip_unprinted_fields(fmt: str) -> None:
    """Records stop computing fields no kinrun format prints (Python's Logging HOWTO,
    "Optimization"): the caller's file and line, but for zap (its ``caller``), and the
    process: about 1.2 of a log line's 6 us (a reconcile's ``log`` action)."""
    logging._srcfile = _SRCFILE if fmt == "zap" else None  # type: ignore[attr-defined]
    logging.logProcesses = logging.logMultiprocessing = False


_FORMATTERS: dict[str, type[logging.Formatter]] = {"text": TextFormatter, "json": JsonFormatter,
                                                    "zap": ZapFormatter}


def configure_logging(level: str = "info", fmt: str = "text", stream: IO[str] | None = None,
                      *, batched: bool = False) -> logging.Handler:
    """Route every ``logging`` record at ``level`` or above to ``stream`` (default stderr) in
    ``fmt`` (text, json or zap): sets the root level and adds one handler to the root logger,
    replacing the handler of an earlier call (other handlers stay). Returns the handler.
    urllib3's own retry warnings ("Retrying (Retry(...)) after connection broken ...", three
    per failed connection) are shown only at ``debug``: kinrun logs each failure itself.

    ``batched``: info and debug lines are written in batches when ``stream`` is a pipe or a
    file, not a terminal (``kinrun.log_batching``: at most ``FLUSH_INTERVAL`` seconds late,
    warnings at once).

    Records carry no caller (file, line, function; but in the zap format) or process fields
    (``logging.logProcesses`` and its kin are turned off): no kinrun format prints them, and
    finding them costs a fifth of a log line. A handler a plugin adds that prints them shows
    None (``%(lineno)d``: 0).

    Raises ValueError for an unknown level or format.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (one of {', '.join(LEVELS)})")
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (one of {', '.join(FORMATS)})")
    _skip_unprinted_fields(fmt)
    out = stream if stream is not None else sys.stderr
    handler = BatchedStreamHandler(out) if batched and batching_pays(out) \
        else logging.StreamHandler(out)
    handler.setFormatter(_FORMATTERS[fmt]())
    handler.set_name(_HANDLER_NAME)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    root.addHandler(handler)
    root.setLevel(level.upper())
    logging.getLogger("urllib3").setLevel(logging.DEBUG if level == "debug" else logging.ERROR)
    return handler
