"""ProcessorListener and SharedProcessor: a stopped or removed listener calls its handler no more."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from kinrun.cache.processor import ADD, UPDATE, ProcessorListener, SharedProcessor
from kinrun.clock import FakeClock

WAIT = 10.0


class BlockingHandler:
    """Records every call; the first call blocks until ``release`` is set."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        self._cond = threading.Condition()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._call("add", obj)

    def on_update(self, old: Any, new: Any) -> None:
        self._call("update", new)

    def on_delete(self, obj: Any) -> None:
        self._call("delete", obj)

    def _call(self, kind: str, obj: Any) -> None:
        with self._cond:
            self.calls.append((kind, obj))
            self._cond.notify_all()
        if len(self.calls) == 1:
            self.entered.set()
            assert self.release.wait(WAIT)

    def count_reaches(self, n: int) -> bool:
        """Wait until ``n`` calls were made."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.calls) >= n, WAIT)


def _listener(handler: BlockingHandler) -> ProcessorListener:
    return ProcessorListener(handler, 0.0, 0.0, FakeClock(), "test")


def _fill(listener: ProcessorListener) -> None:
    """Three notifications buffered together, so the thread takes them as one batch."""
    listener.add((ADD, "a", False))
    listener.add((UPDATE, "a", "a2"))
    listener.add((UPDATE, "a2", "a3"))


@pytest.mark.parametrize("how", ["stop", "remove_listener"])
def test_stopped_listener_drops_the_rest_of_its_current_batch(how: str) -> None:
    """Stopped while its handler blocks in a batch's first call: the batch's other
    notifications are never delivered."""
    handler = BlockingHandler()
    listener = _listener(handler)
    processor = SharedProcessor(FakeClock(), "test")
    processor.add_listener(listener)
    _fill(listener)  # buffered before the thread runs: it takes all three in one batch
    processor.run()
    assert handler.entered.wait(WAIT)
    if how == "stop":
        listener.stop()
    else:
        assert processor.remove_listener(listener)
    handler.release.set()
    listener.join(WAIT)
    assert listener._thread is not None and not listener._thread.is_alive()
    assert handler.calls == [("add", "a")]


def test_stopped_listener_forgets_undelivered_initial_adds() -> None:
    """Initial-list adds dropped by a stop no longer count as pending."""
    handler = BlockingHandler()
    listener = _listener(handler)
    for name in "abc":
        listener.add((ADD, name, True))
    listener.start()
    assert handler.entered.wait(WAIT)
    listener.stop()
    handler.release.set()
    listener.join(WAIT)
    assert listener.initial_list_handled()
    listener.add((ADD, "d", True))  # after stop: neither buffered nor counted
    assert listener.initial_list_handled()
    assert handler.calls == [("add", "a")]


def test_running_listener_delivers_every_notification_in_order() -> None:
    """Not stopped: every notification of a batch reaches the handler, in order."""
    handler = BlockingHandler()
    handler.release.set()
    listener = _listener(handler)
    _fill(listener)
    listener.start()
    assert handler.count_reaches(3)
    listener.stop()
    listener.join(WAIT)
    assert handler.calls == [("add", "a"), ("update", "a2"), ("update", "a3")]
