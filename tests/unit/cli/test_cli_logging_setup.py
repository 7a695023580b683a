"""Logging setup: one line per record, text or JSON, with extra fields."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from kinrun.logging_setup import configure_logging


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    """A stream the root logger writes to; the handler and level are removed afterwards."""
    root = logging.getLogger()
    level = root.level
    out = io.StringIO()
    yield out
    for handler in [h for h in root.handlers if h.get_name() == "kinrun.cli"]:
        root.removeHandler(handler)
    root.setLevel(level)


def emit(stream: io.StringIO, fmt: str) -> list[str]:
    configure_logging("info", fmt, stream)
    log = logging.getLogger("kinrun.test")
    log.info("hello %s\nsecond line", "pod", extra={"key": "default/web", "attempt": 2})
    log.debug("not shown")
    try:
        raise ValueError("bad")
    except ValueError:
        log.exception("failed")
    return stream.getvalue().splitlines()


def test_json_records_are_one_object_per_line(stream: io.StringIO) -> None:
    """JSON lines carry ts, level, logger, message, the extra fields and the traceback."""
    first, second = (json.loads(line) for line in emit(stream, "json"))
    assert {k: first[k] for k in ("level", "logger", "message", "key", "attempt")} == {
        "level": "info", "logger": "kinrun.test", "message": "hello pod\nsecond line",
        "key": "default/web", "attempt": 2}
    assert first["ts"].endswith("Z") and "T" in first["ts"]
    assert second["level"] == "error" and "ValueError: bad" in second["exc"]


def test_text_records_stay_on_one_line(stream: io.StringIO) -> None:
    """Text lines escape newlines (message and traceback) and append key=value extras."""
    first, second = emit(stream, "text")
    assert first.endswith(" INFO kinrun.test: hello pod\\nsecond line key=default/web attempt=2")
    assert " ERROR kinrun.test: failed | Traceback" in second and "ValueError: bad" in second


def test_reconfiguring_replaces_only_its_own_handler(stream: io.StringIO) -> None:
    """A second call swaps kinrun's handler and leaves other handlers alone."""
    other = logging.NullHandler()
    logging.getLogger().addHandler(other)
    try:
        configure_logging("info", "text", stream)
        configure_logging("warning", "json", stream)
        names = [h.get_name() for h in logging.getLogger().handlers]
        assert names.count("kinrun.cli") == 1 and other in logging.getLogger().handlers
    finally:
        logging.getLogger().removeHandler(other)


@pytest.mark.parametrize(("level", "fmt"), [("loud", "text"), ("info", "xml")])
def test_unknown_level_or_format_is_rejected(level: str, fmt: str) -> None:
    """Bad settings raise ValueError instead of being ignored."""
    with pytest.raises(ValueError):
        configure_logging(level, fmt, io.StringIO())


@pytest.mark.parametrize("level, shown", [("info", False), ("warning", False), ("debug", True)])
def test_urllib3_retry_warnings_show_only_at_debug(stream: io.StringIO, level: str,
                                                   shown: bool) -> None:
    """kinrun logs connection failures itself; urllib3's per-try warnings are debug detail."""
    urllib3_log = logging.getLogger("urllib3.connectionpool")
    before = logging.getLogger("urllib3").level
    try:
        configure_logging(level, "text", stream)
        urllib3_log.warning("Retrying (Retry(total=None, connect=2)) after connection broken")
        assert ("Retrying" in stream.getvalue()) is shown
    finally:
        logging.getLogger("urllib3").setLevel(before)


def test_timestamps_follow_each_record_across_seconds() -> None:
    """The formatted second is reused only within that second (the text formatter keeps the
    last one): records of other seconds, earlier ones too, get their own."""
    import logging

    from kinrun.logging_setup import TextFormatter

    formatter = TextFormatter()
    stamps = []
    for created in (1_700_000_000.25, 1_700_000_000.75, 1_700_000_001.5, 1_699_999_999.0):
        record = logging.LogRecord("kinrun", logging.INFO, "", 0, "m", None, None)
        record.created, record.msecs = created, (created % 1) * 1000
        stamps.append(formatter.format(record).split(" ")[0])
    assert stamps == ["2023-11-14T22:13:20.250Z", "2023-11-14T22:13:20.750Z",
                      "2023-11-14T22:13:21.500Z", "2023-11-14T22:13:19.000Z"]


def test_extra_fields_are_shown_and_records_without_them_show_none() -> None:
    import logging

    from kinrun.logging_setup import TextFormatter

    record = logging.LogRecord("kinrun", logging.INFO, "", 0, "m", None, None)
    assert formatter_tail(TextFormatter().format(record)) == "kinrun: m"
    record.__dict__["informer"] = "pods"
    assert formatter_tail(TextFormatter().format(record)) == "kinrun: m informer=pods"


def formatter_tail(line: str) -> str:
    return line.split(" ", 2)[2]


def test_only_zap_records_find_their_caller_and_none_their_process(stream: io.StringIO) -> None:
    """The zap format's ``caller`` names the calling line; the other formats print no caller
    or process, so records skip finding them (a fifth of a line's cost)."""
    seen: list[logging.LogRecord] = []
    keep = logging.Handler()
    keep.emit = seen.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(keep)
    try:
        configure_logging("info", "zap", stream)
        line = sys._getframe().f_lineno + 1
        logging.getLogger("kinrun.test").info("zap")
        assert json.loads(stream.getvalue())["caller"] == f"test_cli_logging_setup.py:{line}"
        configure_logging("info", "text", stream)
        logging.getLogger("kinrun.test").info("text")
    finally:
        logging.getLogger().removeHandler(keep)
    assert (seen[-1].lineno, seen[-1].process) == (0, None)
    assert seen[-1].threadName == "MainThread"  # kept: plugins' handlers and tests read it
