"""What ``kinrun test`` records of a run: every request a reconcile sends, every Result, and
the controllers' log lines, each attributed to the key being reconciled.

Attribution is a thread-local: the :meth:`Recorder.observe` wrapper (``Bound.manager(wrap=)``)
sets the (controller, key) of the worker thread for the duration of each reconcile call.
:class:`RecordingClient` wraps the ``kinrun.kube.Client`` the plan is bound to and records,
while a key is set, every ``execute`` (what actions send) and every write method hooks may
call (``create``, ``update``, ``apply``, ``patch``, ``patch_status``, ``delete``,
``create_event``), in the shape ``kinrun render`` prints (``ApiRequest.describe``), before
sending it. Reads (``get``, listers) are not recorded. :class:`LogCapture` keeps records of
``kinrun.controller.*`` and of any logger used inside a reconcile (a hook plugin's own), with
the worker thread's last key.

Each record carries the step it happened in (0: start, i: after ``when[i-1]``) and a per-key
sequence number. :meth:`Recorder.requests` etc. give the records in the order they happened:
the runner reconciles one key at a time in a fixed order (``kinrun.testing.quiet``), so that
order is the same in every run.

Thread-safety: every method may be called from any thread; one lock guards the lists.
"""

from __future__ import annotations

import logging
import threading
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kinrun.kube.events import event_for
from kinrun.kube.request import ApiRequest
from kinrun.logging_setup import message as log_message
from kinrun.reconcile import Result

Obj = dict[str, Any]
EPOCH = 1_700_000_000.0
"""Wall-clock seconds at fake time 0 (2023-11-14T22:13:20Z): what Events and the embedded
server stamp in a test run."""
EVENT_HOST = "kinrun-test"
"""The ``source.host`` of Events that hooks create through the recording client."""


@dataclass(frozen=True)
class Sent:
    """One recorded request: ``controller``, ``key``, ``step``, ``seq`` (per key, from 0),
    ``request`` (``ApiRequest.describe()`` shape), ``error`` (the failure's text, or None)."""

    controller: str
    key: str
    step: int
    seq: int
    request: Mapping[str, Any]
    error: str | None = None


@dataclass(frozen=True)
class Reconciled:
    """One reconcile: ``controller``, ``key``, ``step``, ``seq``, ``result``."""

    controller: str
    key: str
    step: int
    seq: int
    result: Result


@dataclass(frozen=True)
class LogLine:
    """One log record: ``controller`` and ``key`` ("" outside a reconcile), ``step``, ``seq``,
    ``level`` (INFO, ...), ``logger``, ``message``."""

    controller: str
    key: str
    step: int
    seq: int
    level: str
    logger: str
    message: str


@dataclass
class _Attribution:
    controller: str = ""
    key: str = ""
    inside: bool = False


class Recorder:
    """The records of one case run (see the module docstring). ``step`` is set by the
    runner before each step's writes."""

    def __init__(self) -> None:
        self.step = 0
        self._lock = threading.Lock()
        self._local = threading.local()
        self._sent: list[Sent] = []
        self._reconciled: list[Reconciled] = []
        self._logs: list[LogLine] = []
        self._seq: dict[tuple[str, str, str], int] = {}  # (what, controller, key) -> next
        self._ticks: dict[str, int] = {}  # key -> wall-clock readings so far
        self._running: dict[int, tuple[str, str]] = {}  # thread id -> (controller, key) inside

    # -- attribution -------------------------------------------------------------------------

    def _here(self) -> _Attribution:
        here = getattr(self._local, "here", None)
        if here is None:
            here = self._local.here = _Attribution()
        return here

    def observe(self, controller: str, reconcile: Callable[..., Any]) -> Callable[..., Any]:
        """The ``wrap`` of ``Bound.manager``: ``reconcile`` with the worker thread attributed
        to (controller, key) while it runs, and its Result recorded."""
        def observed(key: str, obj: Obj | None, cause: Any = None) -> Any:
            here = self._here()
            here.controller, here.key, here.inside = controller, key, True
            self._running[threading.get_ident()] = (controller, key)
            try:
                result = reconcile(key, obj, cause)
            except BaseException as exc:  # recorded as the controller will treat it
                self._add_result(controller, key, Result.failed(exc, cause))
                raise
            finally:
                here.inside = False  # key stays: the controller logs about it next
                self._running.pop(threading.get_ident(), None)
            if isinstance(result, Result):
                self._add_result(controller, key, result)
            return result
        return observed

    def running(self) -> list[str]:
        """``controller c: key default/a`` of each reconcile under way (a hook's included)."""
        return [f"controller {controller}: key {key}"
                for controller, key in list(self._running.values())]

    def current(self) -> tuple[str, str, bool]:
        """(controller, key, inside a reconcile) of the calling thread."""
        here = self._here()
        return here.controller, here.key, here.inside

    def _next(self, what: str, controller: str, key: str) -> int:
        slot = (what, controller, key)
        seq = self._seq.get(slot, 0)
        self._seq[slot] = seq + 1
        return seq

    # -- recording ---------------------------------------------------------------------------

    def _add_result(self, controller: str, key: str, result: Result) -> None:
        with self._lock:
            self._reconciled.append(Reconciled(controller, key, self.step,
                                               self._next("r", controller, key), result))

    def add_request(self, request: Mapping[str, Any]) -> Sent | None:
        """Record ``request`` for the calling thread's key; None (not recorded) outside a
        reconcile. Returns the record, for :meth:`failed`."""
        controller, key, inside = self.current()
        if not inside:
            return None
        with self._lock:
            sent = Sent(controller, key, self.step, self._next("q", controller, key),
                        dict(request))
            self._sent.append(sent)
        return sent

    def failed(self, sent: Sent | None, error: BaseException) -> None:
        """Note that the recorded request ``sent`` failed with ``error``."""
        if sent is None:
            return
        with self._lock:
            i = self._sent.index(sent)
            self._sent[i] = Sent(sent.controller, sent.key, sent.step, sent.seq, sent.request,
                                 f"{type(error).__name__}: {error}")

    def add_log(self, record: logging.LogRecord) -> None:
        """Record a log record with the calling thread's last key (its message as the log
        formatters print it: a Secret among its arguments redacted)."""
        controller, key, _ = self.current()
        with self._lock:
            self._logs.append(LogLine(controller, key, self.step,
                                      self._next("l", controller, key), record.levelname,
                                      record.name, log_message(record)))

    def wall_clock(self, origin: Callable[[], float]) -> Callable[[], float]:
        """The plan's wall clock (Event names and timestamps): ``origin()`` (EPOCH + fake
        time) plus a per-key microsecond tick per reading, offset by a hash of the key, so
        readings differ within one key and across keys without depending on thread timing."""
        def now() -> float:
            _, key, _ = self.current()
            with self._lock:
                tick = self._ticks.get(key, 0)
                self._ticks[key] = tick + 1
            return origin() + (zlib.crc32(key.encode()) % 1000) * 1e-3 + tick * 1e-6
        return now

    # -- reading (after the run) -------------------------------------------------------------

    def requests(self) -> list[Sent]:
        """Every recorded request, in the order sent (the runner's fixed order)."""
        with self._lock:
            return list(self._sent)

    def results(self) -> list[Reconciled]:
        """Every reconcile, in the order run."""
        with self._lock:
            return list(self._reconciled)

    def logs(self) -> list[LogLine]:
        """Every captured log line, in the order logged."""
        with self._lock:
            return list(self._logs)


class RecordingClient:
    """A ``kinrun.kube.Client`` that records what reconciles send (module docstring); every
    other attribute is the wrapped client's. Thread-safe as the client is.

    ``create_event`` builds the Event with the recorder's wall clock and host
    :data:`EVENT_HOST` (the real client uses the time and host name: not reproducible) and
    sends it with ``create``."""

    def __init__(self, client: Any, recorder: Recorder, wall: Callable[[], float]) -> None:
        self._client, self._recorder, self._wall = client, recorder, wall

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _send(self, request: Mapping[str, Any], call: Callable[[], Any]) -> Any:
        sent = self._recorder.add_request(request)
        try:
            return call()
        except Exception as exc:
            self._recorder.failed(sent, exc)
            raise

    def execute(self, req: ApiRequest, **kwargs: Any) -> Any:
        """Record ``req.describe()``, then ``Client.execute``."""
        return self._send(req.describe(), lambda: self._client.execute(req, **kwargs))

    def create(self, body: Mapping[str, Any], *, namespace: str | None = None,
               params: Mapping[str, Any] | None = None) -> Any:
        """Record, then ``Client.create``."""
        return self._send(_described("create", body, namespace, params=params),
                          lambda: self._client.create(body, namespace=namespace, params=params))

    def update(self, body: Mapping[str, Any], **kwargs: Any) -> Any:
        """Record, then ``Client.update``."""
        return self._send(_described("update", body, kwargs.get("namespace"),
                                     subresource=kwargs.get("subresource"),
                                     params=kwargs.get("params")),
                          lambda: self._client.update(body, **kwargs))

    def apply(self, body: Mapping[str, Any], **kwargs: Any) -> Any:
        """Record, then ``Client.apply`` (``params``: fieldManager, force when given)."""
        params = dict(kwargs.get("params") or {})
        for name, arg in (("fieldManager", "field_manager"), ("force", "force")):
            if arg in kwargs:
                params[name] = kwargs[arg]
        return self._send(_described("apply", body, kwargs.get("namespace"),
                                     subresource=kwargs.get("subresource"), params=params),
                          lambda: self._client.apply(body, **kwargs))

    def patch(self, api_version: str, kind: str, name: str, patch: Any, **kwargs: Any) -> Any:
        """Record, then ``Client.patch``."""
        request = ApiRequest("patch", api_version, kind, name, kwargs.get("namespace"),
                             body=patch, patch_type=kwargs.get("patch_type", "merge"),
                             subresource=kwargs.get("subresource"),
                             params=dict(kwargs.get("params") or {}))
        return self._send(request.describe(),
                          lambda: self._client.patch(api_version, kind, name, patch, **kwargs))

    def patch_status(self, api_version: str, kind: str, name: str, patch: Any, *,
                     namespace: str | None = None, patch_type: str = "merge") -> Any:
        """``patch`` of the status subresource (recorded once)."""
        return self.patch(api_version, kind, name, patch, namespace=namespace,
                          patch_type=patch_type, subresource="status")

    def delete(self, api_version: str, kind: str, name: str, namespace: str | None = None,
               **kwargs: Any) -> Any:
        """Record, then ``Client.delete``."""
        request = ApiRequest("delete", api_version, kind, name, namespace)
        return self._send(request.describe(), lambda: self._client.delete(
            api_version, kind, name, namespace, **kwargs))

    def create_event(self, involved: Mapping[str, Any], *, type: str, reason: str,
                     message: str, component: str = "kinrun") -> Any:
        """An Event as ``Client.create_event`` makes it, stamped by the wall clock."""
        event = event_for(dict(involved), type=type, reason=reason, message=message,
                          component=component, host=EVENT_HOST,
                          now_ns=int(self._wall() * 1e9))
        return self.create(event)


def _described(verb: str, body: Mapping[str, Any], namespace: str | None, *,
               subresource: str | None = None,
               params: Mapping[str, Any] | None = None) -> dict[str, Any]:
    meta = body.get("metadata") or {}
    return ApiRequest(verb, str(body.get("apiVersion", "")), str(body.get("kind", "")),
                      str(meta.get("name") or ""), namespace or meta.get("namespace"),
                      body=dict(body), subresource=subresource,
                      params=dict(params or {})).describe()


class LogCapture(logging.Handler):
    """A logging handler that records into a Recorder what ``kinrun test`` checks: records
    of ``kinrun.controller.*`` loggers, and any logger's records emitted inside a reconcile
    except the client stack's (``kinrun.kube``, ``urllib3``, ``kubernetes``).

    ``install()`` adds it to the root logger and lets INFO through ``kinrun`` and the root
    (other handlers of the root get nothing new: the root's level is restored by
    ``uninstall()``, as is every level changed)."""

    _QUIET = ("kinrun.kube", "urllib3", "kubernetes")

    def __init__(self, recorder: Recorder) -> None:
        super().__init__(logging.DEBUG)
        self.recorder = recorder
        self._saved: list[tuple[logging.Logger, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        name = record.name
        if name.startswith("kinrun.controller.") or (
                self.recorder.current()[2] and not name.startswith(self._QUIET)):
            self.recorder.add_log(record)

    def install(self) -> LogCapture:
        """Start capturing (INFO and above); returns self."""
        root = logging.getLogger()
        for logger in (root, logging.getLogger("kinrun")):
            self._saved.append((logger, logger.level))
            logger.setLevel(logging.INFO)
        self._saved_handlers = list(root.handlers)
        for handler in self._saved_handlers:  # others see only what they saw before
            handler.addFilter(_below_saved_level(self._saved[0][1]))
        root.addHandler(self)
        return self

    def uninstall(self) -> None:
        """Stop capturing; restore the levels and filters changed by ``install``."""
        root = logging.getLogger()
        root.removeHandler(self)
        for handler in self._saved_handlers:
            for flt in [f for f in handler.filters if isinstance(f, _below_saved_level)]:
                handler.removeFilter(flt)
        for logger, level in self._saved:
            logger.setLevel(level)
        self._saved.clear()


@dataclass
class _below_saved_level(logging.Filter):  # noqa: N801 - a filter, named for what it keeps
    """Passes records at or above the root's saved level (WARNING by default)."""

    level: int = field(default=logging.WARNING)

    def __post_init__(self) -> None:
        super().__init__()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= (self.level or logging.WARNING)
