"""Log lines written in batches: one write for many info lines, at once for a warning.

A log line written to a pipe or a file is one ``write`` system call, and in CPython each such
call releases the GIL, which hands the CPU to another thread (the reflector) and back: most
of a log line's cost when a controller logs one line per reconcile (the pod-logger example,
``benchmarks/run.py`` events: 61% of its worker's samples were in the handler's ``emit``; a
reconcile went from 30 to 22.5 us of the worker's CPU). The main job's
handler (:class:`BatchedStreamHandler`) keeps info and debug lines for at most
:data:`FLUSH_INTERVAL` seconds, or until :data:`BATCH_CHARS` characters wait, and writes them
with one call; a warning or an error is written at once, after every line before it (the order
of lines never changes). ``flush()`` writes what waits: ``logging.shutdown`` (at exit) and
:func:`kinrun.signals.hard_exit` call it, so a stopping process loses nothing; a killed one
(``SIGKILL``) loses at most the last :data:`FLUSH_INTERVAL` seconds of info lines.

The same trade as glog/klog's file output (buffered, flushed every few seconds by a daemon;
klog ``--log-flush-frequency``, 5 s), with a much shorter wait and warnings unbuffered. Only
where nobody watches the output as it comes: on a terminal, every line is written at once.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from typing import IO

from kinrun.threads import SupervisedThread

FLUSH_INTERVAL = 0.1
"""Seconds an info or debug line waits at most before it is written."""

BATCH_CHARS = 1 << 16
"""Characters of waiting lines that are written at once, without waiting for the interval."""


_HANDLERS: weakref.WeakSet[BatchedStreamHandler] = weakref.WeakSet()
"""Every live handler, for the fork hook below."""


class BatchedStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A ``logging.StreamHandler`` writing info and debug lines in batches (module docstring):
    each waits at most ``interval`` seconds (real time); a record at WARNING or above writes
    every waiting line and itself at once.

    Thread-safety: the handler's lock (``logging.Handler.lock``, held by ``handle``) guards the
    waiting lines; the flusher thread (``log-flush``, started at the first waiting line) takes
    it to write them.
    """

    def __init__(self, stream: IO[str], interval: float = FLUSH_INTERVAL) -> None:
        super().__init__(stream)
        self._interval = interval
        self._waiting: list[str] = []
        self._chars = 0
        self._due = threading.Event()  # set while lines wait for the flusher
        self._closing = threading.Event()
        self._flusher: SupervisedThread | None = None
        _HANDLERS.add(self)

    def emit(self, record: logging.LogRecord) -> None:
        """Format ``record`` and keep it, or write it with the lines before it (a warning or
        above, a full batch, a closed handler). Lock held (``Handler.handle``)."""
        try:
            line = self.format(record) + self.terminator
        except Exception:  # noqa: BLE001 - logging's contract: report, never raise
            self.handleError(record)
            return
        self._waiting.append(line)
        self._chars += len(line)
        if record.levelno >= logging.WARNING or self._chars >= BATCH_CHARS \
                or self._closing.is_set():
            self._write_locked(record)
        elif not self._due.is_set():
            self._due.set()
            if self._flusher is None and not self._start_flusher_locked():
                self._write_locked(record)  # no thread to write it later: now

    def flush(self) -> None:
        """Write every waiting line now, then flush the stream."""
        with self.lock:  # type: ignore[union-attr]
            self._write_locked(None)

    def close(self) -> None:
        """Write what waits and stop the flusher; later records are written at once."""
        with self.lock:  # type: ignore[union-attr]
            self._closing.set()
            self._write_locked(None)
        self._due.set()  # wakes the flusher to end
        super().close()

    def _start_flusher_locked(self) -> bool:
        flusher = SupervisedThread(target=self._flush_loop, name="log-flush")
        try:
            flusher.start()
        except RuntimeError:  # "can't start new thread": lines are written one by one
            self._closing.set()
            return False
        self._flusher = flusher
        return True

    def _forget_in_child(self) -> None:
        """After ``fork``, in the child: the parent writes its waiting lines; the child has no
        flusher thread (threads do not survive a fork) and starts its own when it logs."""
        self._waiting, self._chars, self._flusher = [], 0, None
        closed = self._closing.is_set()  # new events: a parent's thread may have held theirs
        self._due, self._closing = threading.Event(), threading.Event()
        if closed:
            self._closing.set()

    def _write_locked(self, record: logging.LogRecord | None) -> None:
        self._due.clear()
        if not self._waiting:
            return
        text = "".join(self._waiting)
        self._waiting, self._chars = [], 0
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:  # noqa: BLE001 - logging's contract: report, never raise
            self.handleError(record or logging.makeLogRecord({"msg": text}))

    def _flush_loop(self) -> None:
        while not self._closing.is_set():
            self._due.wait()
            if self._closing.wait(self._interval):
                return
            self.flush()


def batching_pays(stream: IO[str]) -> bool:
    """Whether lines to ``stream`` are worth batching: a pipe or a file (a real descriptor)
    that is not a terminal. In-memory streams (tests' captures) are written line by line."""
    try:
        return not os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return False


def _after_fork_in_child() -> None:
    for handler in list(_HANDLERS):
        handler._forget_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


def flush_logs() -> None:
    """Write every line the root logger's batched handlers hold: before text goes to another
    stream (stdout) that must follow the lines logged before it."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, BatchedStreamHandler):
            handler.flush()
