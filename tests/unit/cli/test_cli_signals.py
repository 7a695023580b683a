"""Stop signals of a run (``kinrun.signals``): the handler takes no lock, the signal thread does
the rest; an early signal stops the run before it starts; the stop is bounded.

The handler is called directly, in the situations a real signal can interrupt, so each test is
deterministic; ``tests/e2e/test_signals.py`` sends real signals to a real process.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator

import pytest

from kinrun import signals

WAIT = 10.0


class Exits:
    """Stands in for ``os._exit``: records the codes, wakes a waiter."""

    def __init__(self) -> None:
        self.codes: list[int] = []
        self._cond = threading.Condition()

    def __call__(self, code: int) -> None:
        with self._cond:
            self.codes.append(code)
            self._cond.notify_all()

    def wait(self) -> list[int]:
        with self._cond:
            self._cond.wait_for(lambda: self.codes, WAIT)
            return list(self.codes)


class Records(logging.Handler):
    """Collects the ``kinrun`` logger's records and the thread that emitted each."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, int | None]] = []
        self._cond = threading.Condition()

    def emit(self, record: logging.LogRecord) -> None:
        with self._cond:
            self.records.append((record.getMessage(), record.thread))
            self._cond.notify_all()

    def wait_for(self, text: str) -> tuple[str, int | None]:
        with self._cond:
            self._cond.wait_for(lambda: any(text in m for m, _ in self.records), WAIT)
            return next((r for r in self.records if text in r[0]), ("", None))


@pytest.fixture
def exits() -> Iterator[Exits]:
    """Installs the process-wide StopSignals with ``exit`` recorded; uninstalls afterwards."""
    assert signals.current() is None
    recorder = Exits()
    watcher = signals.install(exit=recorder)
    try:
        yield recorder
    finally:
        watcher.uninstall()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signals.current() is None


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    logger = logging.getLogger("kinrun")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def _in_thread_holding(lock: threading.Lock | threading.Condition | threading.RLock
                       ) -> tuple[bool, int | None]:
    """Call the installed SIGTERM handler from a thread that holds ``lock`` (as the main thread
    does inside ``Event.wait`` or a log handler's ``emit``). Returns whether the call returned
    (it hangs on a handler that takes a non-reentrant ``lock``: the thread is a daemon, so the
    test fails instead of hanging) and that thread's id."""
    handler = signal.getsignal(signal.SIGTERM)
    assert callable(handler)
    returned = threading.Event()

    def interrupted() -> None:
        with lock:
            handler(signal.SIGTERM, None)
            returned.set()

    thread = threading.Thread(target=interrupted, daemon=True)
    thread.start()
    return returned.wait(WAIT), thread.ident


def test_signal_while_the_stop_events_lock_is_held_does_not_deadlock(
        exits: Exits, records: Records) -> None:
    """The handler, run while its thread holds the stop Event's lock, returns; the stop
    Event is set and "SIGTERM received" logged on another thread."""
    stop = threading.Event()
    signals.current().attach(stop, 60.0)
    returned, caller = _in_thread_holding(stop._cond)
    assert returned, "signal handler deadlocked on the Event's lock"
    assert stop.wait(WAIT)
    message, thread = records.wait_for("SIGTERM received")
    assert message == "SIGTERM received"
    assert thread not in (None, caller)
    assert exits.codes == []


def test_signal_while_a_log_handler_lock_is_held_does_not_log_from_the_handler(
        exits: Exits, records: Records) -> None:
    """The handler, run while its thread is inside a log handler (holding its lock), returns
    without logging: the record is emitted from the signal thread (a handler's lock is
    reentrant, so logging from the handler would re-enter ``emit`` mid-write instead)."""
    stop = threading.Event()
    signals.current().attach(stop, 60.0)
    assert records.lock is not None
    returned, caller = _in_thread_holding(records.lock)
    assert returned, "signal handler blocked on a logging lock"
    assert stop.wait(WAIT)
    message, thread = records.wait_for("SIGTERM received")
    assert message == "SIGTERM received"
    assert thread not in (None, caller)


def test_a_signal_before_the_run_stops_it_when_it_attaches(exits: Exits, records: Records) -> None:
    """A signal during start-up (nothing attached) sets the run's stop Event at attach,
    whether the signal thread handled it already or it is still in the pipe."""
    watcher = signals.current()
    signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
    stop = threading.Event()
    watcher.attach(stop, 60.0)
    assert stop.is_set()
    assert records.wait_for("before the run started")[0] == (
        "SIGTERM received before the run started: stopping")
    assert exits.codes == []


def test_a_second_signal_exits_130(exits: Exits, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the grace period, another signal ends the process with 130."""
    monkeypatch.setattr(signals, "SECOND_SIGNAL_GRACE", 0.0)
    stop = threading.Event()
    signals.current().attach(stop, 60.0)
    handler = signal.getsignal(signal.SIGINT)
    handler(signal.SIGINT, None)
    handler(signal.SIGTERM, None)
    assert exits.wait() == [130]
    assert stop.is_set()


def test_a_duplicate_within_the_grace_period_is_the_same_request(
        exits: Exits, records: Records) -> None:
    """Three signals at once (the process and its group): one stop, no exit. (The signal
    thread's step is called directly, so that "nothing more happened" is observable.)"""
    stop = threading.Event()
    watcher = signals.current()
    watcher.attach(stop, 60.0)
    for signum in (signal.SIGTERM, signal.SIGTERM, signal.SIGINT):
        watcher._on_signal(signum)
    assert stop.is_set()
    assert exits.codes == []
    assert [m for m, _ in records.records if "received" in m] == ["SIGTERM received"]


def test_signals_after_the_run_returned_are_ignored(exits: Exits) -> None:
    """Detached (the run returned, the process is exiting): no stop, no exit."""
    stop = threading.Event()
    watcher = signals.current()
    watcher.attach(stop, 60.0)
    watcher.detach()
    watcher._on_signal(signal.SIGTERM)
    watcher._on_signal(signal.SIGTERM)
    assert not stop.is_set()
    assert exits.codes == []


def test_a_stop_that_overruns_its_bound_exits_1(exits: Exits, records: Records) -> None:
    """The exit deadline, armed by the first signal, ends the process with 1 and logs where
    the main thread was."""
    stop = threading.Event()
    signals.current().attach(stop, 0.01)
    signal.getsignal(signal.SIGTERM)(signal.SIGTERM, None)
    assert exits.wait() == [1]
    message, _ = records.wait_for("did not stop within")
    assert "main thread at:" in message and "test_a_stop_that_overruns" in message


def test_without_a_signal_no_deadline_is_armed_until_asked(exits: Exits) -> None:
    """``arm_deadline`` (a stop by lost leadership) arms the same bound."""
    stop = threading.Event()
    watcher = signals.current()
    watcher.attach(stop, 0.01)
    stop.set()
    watcher.arm_deadline()
    assert exits.wait() == [1]
