"""SIGINT/SIGTERM (stop) and SIGHUP (reload the config) for the main job, through signal
handlers that take no lock.

Why a self-pipe: CPython runs a Python signal handler in the main thread between two bytecodes,
wherever that thread is — inside ``threading.Event.wait()`` holding the Event's condition lock,
inside a logging handler holding its lock, inside ``print`` holding stdout's buffer lock. Those
locks are not reentrant, so a handler that logs or calls ``Event.set()`` deadlocks the process
when the signal lands at such a moment (seen as "kinrun did not exit within 60 s of SIGTERM",
the log ending at "SIGTERM received"). Here the handler only writes the signal number, one
byte, to a pipe (``os.write``: no Python lock). One daemon thread, the *signal thread*, reads
the pipe and does everything else: log, set the run's stop Event, arm the exit deadline, and
on a second signal flush the output and exit 130.

What a signal does, by the state of the process-wide :class:`StopSignals`:

    waiting   installed, no run attached yet (CLI start-up: imports, config loading): the first
              signal is recorded; :meth:`StopSignals.attach` then sets the run's stop Event at
              once (the run stops before starting anything, exit 0)
    attached  the first signal is logged ("SIGTERM received") and sets the stop Event, and the
              exit deadline is armed: if the process is still running ``exit_bound`` seconds
              later, it logs the main thread's stack and exits 1
    finished  the run returned: signals are ignored (the process is already exiting with the
              run's code; the default action would turn it into -15); the CLI's own process
              then sets them to SIG_IGN (:meth:`StopSignals.ignore_from_now`)

SIGHUP is not a stop request: while a run has a reload callback set
(:meth:`StopSignals.on_reload`, the hot reload of ``kinrun.reload``) it is logged and calls
it on the signal thread (the callback only wakes the reload loop); before that (the run is
starting) it is logged and remembered for the callback; once the run finished it is ignored
(before hot reload, SIGHUP's default action ended the process).

In ``waiting`` and ``attached``, another signal within SECOND_SIGNAL_GRACE seconds of the first
is the same request (``timeout`` and some supervisors signal both the process and its group)
and is ignored; a later one, or any signal once the stop Event was set by something else
(leadership lost), exits at once with 130 after flushing stdout, stderr and the log handlers.

Thread-safety: :func:`install`, :meth:`StopSignals.uninstall` run in the main thread only
(``signal.signal`` requires it); ``attach``/``detach``/``arm_deadline`` from any thread. The
signal handler touches only ``_wfd`` (read) and the pipe; every other field is guarded by
``_lock``, which the handler never takes (nor ``_read_lock``, held while reading the pipe
and handling what was read). This module imports only the standard library, so
the CLI installs it before its heavy imports.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import threading
import traceback
from collections.abc import Callable
from types import FrameType

from kinrun.clock import REAL_CLOCK
from kinrun.threads import SupervisedThread, SupervisedTimer

_log = logging.getLogger("kinrun")

SECOND_SIGNAL_GRACE = 1.0
"""Seconds after a stop signal during which another one is taken as the same request."""

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
RELOAD_SIGNALS = (signal.SIGHUP,)
HANDLED_SIGNALS = (*STOP_SIGNALS, *RELOAD_SIGNALS)
"""Every signal :class:`StopSignals` installs a handler for."""

EXIT_INTERRUPTED = 130
EXIT_OVERDUE = 1

_installed: StopSignals | None = None


def hard_exit(code: int) -> None:
    """Flush stdout, stderr and every log handler, then end the process with ``code`` at once
    (``os._exit``: no atexit, no clean-up; callable from any thread)."""
    for handler in logging.getLogger().handlers:
        try:
            handler.flush()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass
    os._exit(code)


def install(*, exit: Callable[[int], None] = hard_exit) -> StopSignals:
    """The process-wide StopSignals, installed on first call (idempotent; ``exit`` counts only
    then): SIGINT and SIGTERM handled as the module docstring says. Main thread only
    (ValueError otherwise, from ``signal.signal``)."""
    global _installed
    if _installed is None:
        watcher = StopSignals(exit=exit)
        watcher._install()
        _installed = watcher
    return _installed


def current() -> StopSignals | None:
    """The installed StopSignals, or None."""
    return _installed


class StopSignals:
    """SIGINT/SIGTERM -> a run's stop Event, through a self-pipe and the signal thread.

    ``exit(code)`` ends the process (default :func:`hard_exit`; tests pass a recorder).
    Fields under ``_lock``: ``_stop`` (the attached run's Event, or None), ``_exit_bound``
    (seconds from the first signal to a forced exit 1), ``_first`` ((signal name, monotonic
    time) of the first signal since install/attach, or None), ``_finished`` (signals ignored),
    ``_deadline`` (the armed Timer, or None). Invariant: ``_deadline`` is armed only while
    ``_stop`` is set.
    """

    def __init__(self, *, exit: Callable[[int], None] = hard_exit) -> None:
        self._exit = exit
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()  # taken before _lock; see _read_pending
        self._stop: threading.Event | None = None
        self._exit_bound = 0.0
        self._first: tuple[str, float] | None = None
        self._finished = False
        self._deadline: threading.Timer | None = None
        self._rfd, self._wfd = -1, -1
        self._previous: dict[int, object] = {}
        self._thread: threading.Thread | None = None
        self._reload: Callable[[], None] | None = None  # guarded by _lock
        self._hup_pending = False  # a SIGHUP before on_reload was set; guarded by _lock

    # --- the handler: no lock, no logging, no allocation beyond one bytes object ----------

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The signal handler: write ``signum`` to the pipe; nothing else (see the module
        docstring). A full pipe (64 KiB of pending signals) drops the byte."""
        fd = self._wfd
        if fd < 0:
            return
        try:
            os.write(fd, bytes((signum,)))
        except OSError:  # full (BlockingIOError) or closed by uninstall
            pass

    # --- main thread ------------------------------------------------------------------------

    def _install(self) -> None:
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._wfd, False)
        os.set_blocking(self._rfd, False)  # read by the signal thread and by attach
        self._thread = SupervisedThread(target=self._read_pipe, name="kinrun-signals", daemon=True)
        self._thread.start()
        self._previous = {sig: signal.signal(sig, self.handle) for sig in HANDLED_SIGNALS}

    def uninstall(self) -> None:
        """Restore the previous handlers, cancel the deadline, end the signal thread (main
        thread only). For library callers and in-process CLI runs; the CLI's own process keeps
        the handlers until it exits."""
        global _installed
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self.detach()
        self.cancel_deadline()
        wfd, self._wfd = self._wfd, -1
        os.close(wfd)  # the signal thread reads EOF and ends
        if self._thread is not None:
            self._thread.join(5.0)
        os.close(self._rfd)
        if _installed is self:
            _installed = None

    # --- any thread -------------------------------------------------------------------------

    def attach(self, stop: threading.Event, exit_bound: float) -> None:
        """Direct signals to ``stop`` (a run starts). ``exit_bound``: seconds from the first
        signal to a forced exit 1. A signal that came before (CLI start-up), handled or still
        in the pipe, sets ``stop`` now."""
        self._read_pending()  # bytes the signal thread has not taken yet came before attach
        with self._lock:
            self._stop, self._exit_bound, self._finished = stop, exit_bound, False
            early = self._first
            if early is not None:
                stop.set()
                self._arm_locked()
        if early is not None:
            _log.info("%s received before the run started: stopping", early[0])

    def on_reload(self, callback: Callable[[], None] | None) -> None:
        """Call ``callback()`` (on the signal thread; keep it quick) for each SIGHUP from now
        on (and now, for one that came while the run was starting); None: SIGHUP is logged
        and remembered for the next callback."""
        with self._lock:
            self._reload = callback
            pending, self._hup_pending = self._hup_pending and callback is not None, False
        if pending:  # a SIGHUP came while the run was starting
            callback()  # type: ignore[misc]

    def ignore_from_now(self) -> None:
        """The process is exiting with the run's code: set SIGINT/SIGTERM/SIGHUP to SIG_IGN
        (main thread only). The ``finished`` state alone is not enough: interpreter finalization
        resets Python-level handlers to SIG_DFL, so a late signal would end the process with
        -15; SIG_IGN is left as it is."""
        self.detach()
        for sig in HANDLED_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)

    def detach(self) -> None:
        """The run returned: ignore signals from now on (until the next ``attach``); cancel
        nothing else (the deadline stays armed while the process exits)."""
        with self._lock:
            self._stop, self._finished, self._first = None, True, None
            self._reload, self._hup_pending = None, False

    def arm_deadline(self) -> None:
        """Arm the exit deadline now (a run stopping for a reason other than a signal, such as
        lost leadership); no-op when not attached or already armed."""
        with self._lock:
            if self._stop is not None:
                self._arm_locked()

    def cancel_deadline(self) -> None:
        """Cancel the exit deadline, if armed."""
        with self._lock:
            timer, self._deadline = self._deadline, None
        if timer is not None:
            timer.cancel()

    # --- the signal thread ------------------------------------------------------------------

    def _read_pipe(self) -> None:
        """The signal thread: wait for bytes, handle each; end at EOF (uninstall)."""
        while True:
            try:
                select.select([self._rfd], [], [])
            except (OSError, ValueError):
                return
            if not self._read_pending():
                return

    def _read_pending(self) -> bool:
        """Handle the signals in the pipe now, without waiting; False at EOF or once closed.
        Each byte is read by one reader only (the signal thread, or ``attach``), and handled
        before ``_read_lock`` is released: a reader that finds the pipe empty knows every
        signal written before was handled."""
        with self._read_lock:
            while True:
                try:
                    data = os.read(self._rfd, 64)
                except BlockingIOError:
                    return True
                except OSError:
                    return False
                if not data:
                    return False
                for signum in data:
                    self._on_signal(signum)

    def _on_signal(self, signum: int) -> None:
        """One signal, on the signal thread: the state machine of the module docstring."""
        name = signal.Signals(signum).name
        if signum in RELOAD_SIGNALS:
            with self._lock:
                reload = None if self._finished else self._reload
                self._hup_pending = reload is None and not self._finished
            if reload is None:
                _log.info("%s received: the config is reloaded once the run is started", name)
                return
            _log.info("%s received: reloading the config", name)
            reload()
            return
        with self._lock:
            if self._finished:
                return
            stop, first, now = self._stop, self._first, REAL_CLOCK.now()
            if first is not None and now - first[1] < SECOND_SIGNAL_GRACE:
                return  # the same stop request delivered twice
            second = first is not None or (stop is not None and stop.is_set())
            if not second:
                self._first = (name, now)
                if stop is not None:
                    stop.set()
                    self._arm_locked()
        if second:
            _log.warning("second %s: exiting without draining", name)
            self._exit(EXIT_INTERRUPTED)
        elif stop is not None:
            _log.info("%s received", name)

    def _arm_locked(self) -> None:
        if self._deadline is None:
            self._deadline = SupervisedTimer(self._exit_bound, self._overdue, (self._exit_bound,),
                                             name="kinrun-exit-deadline")
            self._deadline.daemon = True
            self._deadline.start()

    def _overdue(self, bound: float) -> None:
        """The deadline fired: log where the main thread is, exit 1."""
        frame = sys._current_frames().get(threading.main_thread().ident or 0)
        where = "".join(traceback.format_stack(frame)) if frame is not None else "(gone)"
        _log.error("did not stop within %.1fs of the stop request: exiting now; main thread "
                   "at:\n%s", bound, where)
        self._exit(EXIT_OVERDUE)


__all__ = ["SECOND_SIGNAL_GRACE", "StopSignals", "current", "hard_exit", "install"]
