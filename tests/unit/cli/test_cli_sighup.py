"""SIGHUP (``kinrun.signals``): a reload request, never a stop. With a reload callback set it
calls it on the signal thread; without one it is ignored; after uninstall the previous
handler is back (the default, which ends a process, is what kinrun had before)."""

from __future__ import annotations

import signal
import threading

from kinrun import signals

WAIT = 10.0


def test_sighup_calls_the_reload_callback_and_does_not_stop() -> None:
    assert signals.current() is None
    before = signal.getsignal(signal.SIGHUP)  # SIG_DFL, or SIG_IGN under nohup
    exits: list[int] = []
    watcher = signals.install(exit=exits.append)
    try:
        stop, reloaded = threading.Event(), threading.Event()
        callers: list[int] = []
        watcher.attach(stop, 60.0)
        handler = signal.getsignal(signal.SIGHUP)
        assert callable(handler)
        handler(signal.SIGHUP, None)  # the run is starting: remembered
        handler(signal.SIGHUP, None)
        watcher._read_pending()  # handled now (the signal thread may not have run yet)
        watcher.on_reload(lambda: (callers.append(threading.get_ident()), reloaded.set()))
        assert reloaded.is_set() and len(callers) == 1  # delivered once, at on_reload
        reloaded.clear()
        handler(signal.SIGHUP, None)
        assert reloaded.wait(WAIT)
        assert callers[1] != threading.get_ident()  # the signal thread
        handler(signal.SIGHUP, None)  # a second one is another reload, not an exit
        watcher.on_reload(None)
        watcher.detach()
        assert not stop.is_set() and exits == []
    finally:
        watcher.uninstall()
    assert signal.getsignal(signal.SIGHUP) is before
