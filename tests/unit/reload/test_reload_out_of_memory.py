"""A reload that runs out of memory (or stack) says which file it was loading and that the
running config stays, instead of logging a bare ``MemoryError()``."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from kinrun.config import ConfigErrors, load
from kinrun.config import parse as config_parse
from kinrun.reload import Reloader


@pytest.mark.parametrize(("error", "what"), [(MemoryError(), "ran out of memory"),
                                             (RecursionError(), "ran out of stack")])
def test_loading_a_file_that_exhausts_memory_is_a_config_error_naming_it(
        tmp_path: Path, monkeypatch, error: BaseException, what: str) -> None:
    """kinrun.config.load turns MemoryError/RecursionError into one ConfigError for the file."""
    path = tmp_path / "c.yaml"
    path.write_text("apiVersion: kinrun.dev/v1alpha1\n")

    def exhausted(*args, **kw):
        raise error
    monkeypatch.setattr(config_parse, "load_text", exhausted)
    with pytest.raises(ConfigErrors) as caught:
        load(path)
    assert [(e.file, "\n" in str(e)) for e in caught.value.errors] == [(str(path), False)]
    assert what in str(caught.value)


def test_a_reload_failing_without_a_message_names_the_files(tmp_path: Path, caplog) -> None:
    """An exception with no text is logged with its type and the files being reloaded."""
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\n")
    manager = SimpleNamespace(plan=SimpleNamespace(config=SimpleNamespace(sharding=None)),
                              waiting_informers=dict)

    def load_config():
        raise MemoryError()
    reloader = Reloader(manager, load_config, compile=lambda c: c, files=lambda: [str(path)])
    path.write_text("a: 2\n")
    with caplog.at_level(logging.ERROR, logger="kinrun"):
        assert reloader.reload() is False
    [record] = caplog.records
    message = record.getMessage()
    assert "still running the previous config" in message
    assert f"MemoryError while reloading {path}" in message
