"""The main job's log lines written in batches: info lines wait (at most the interval),
warnings write everything before them at once, nothing is lost on flush or close."""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Iterator

import pytest

from kinrun.log_batching import BATCH_CHARS, BatchedStreamHandler, batching_pays, flush_logs


class Writes(io.StringIO):
    """A stream recording each write call; ``written`` is set at each."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.written = threading.Event()

    def write(self, text: str) -> int:
        self.calls.append(text)
        self.written.set()
        return super().write(text)


@pytest.fixture
def logger() -> Iterator[logging.Logger]:
    log = logging.getLogger("kinrun.test.batching")
    log.propagate, log.level = False, logging.DEBUG
    yield log
    for handler in list(log.handlers):
        log.removeHandler(handler)
        handler.close()
    log.propagate = True


def attach(log: logging.Logger, interval: float = 3600.0) -> tuple[Writes, BatchedStreamHandler]:
    out = Writes()
    handler = BatchedStreamHandler(out, interval)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    log.addHandler(handler)
    return out, handler


def test_info_lines_wait_and_a_warning_writes_them_first_in_one_call(logger) -> None:
    out, _ = attach(logger)
    logger.info("one")
    logger.debug("two")
    assert out.calls == []
    logger.warning("three")
    assert out.calls == ["INFO one\nDEBUG two\nWARNING three\n"]


def test_flush_and_close_write_what_waits_and_later_lines_go_at_once(logger) -> None:
    out, handler = attach(logger)
    logger.info("one")
    handler.flush()
    assert out.calls == ["INFO one\n"]
    logger.info("two")
    handler.close()
    logger.info("three")  # closed: nothing waits any more
    assert out.calls == ["INFO one\n", "INFO two\n", "INFO three\n"]


def test_a_full_batch_is_written_without_waiting(logger) -> None:
    out, _ = attach(logger)
    line = "x" * 1000
    for _ in range(BATCH_CHARS // 1000 + 1):
        logger.info(line)
    assert len(out.calls) == 1 and out.calls[0].count("\n") == BATCH_CHARS // 1000 + 1


def test_waiting_lines_are_written_by_the_flusher_within_the_interval(logger) -> None:
    out, handler = attach(logger, interval=0.01)
    with handler.lock:  # both wait before the flusher can take the lock (it is reentrant)
        logger.info("one")
        logger.info("two")
    assert out.written.wait(30)
    assert out.calls == ["INFO one\nINFO two\n"]


def test_only_pipes_and_files_are_batched(tmp_path) -> None:
    read, write = os.pipe()
    with os.fdopen(write, "w") as pipe, open(tmp_path / "log", "w") as file:
        assert batching_pays(pipe) and batching_pays(file)
    os.close(read)
    assert not batching_pays(io.StringIO())


def test_a_forked_child_does_not_write_its_parent_s_waiting_lines(logger) -> None:
    out, handler = attach(logger)
    logger.info("parent's")
    pid = os.fork()
    if pid == 0:  # the child: its handler holds nothing of the parent's
        code = 0 if not handler._waiting and handler._flusher is None else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    handler.flush()
    assert out.calls == ["INFO parent's\n"]


def test_without_a_thread_for_later_lines_are_written_at_once(logger, monkeypatch) -> None:
    out, _ = attach(logger)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")
    monkeypatch.setattr(threading.Thread, "start", refuse)
    logger.info("one")
    logger.info("two")
    assert out.calls == ["INFO one\n", "INFO two\n"]


def test_flush_logs_writes_the_root_batched_handlers_lines(logger) -> None:
    """Before text goes to stdout after a log line (``export KUBECONFIG=...``), the line is
    written: ``flush_logs`` empties the root logger's batched handlers."""
    out = Writes()
    handler = BatchedStreamHandler(out, 3600.0)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        logger.propagate = True
        logger.info("before stdout")
        assert out.calls == []
        flush_logs()
        assert out.calls == ["before stdout\n"]
    finally:
        root.removeHandler(handler)
        handler.close()
