"""The bad-config corpus: every file in tests/data/bad-configs/ is rejected with exactly the
messages in its sidecar ``.expected`` file (``{dir}`` stands for the corpus folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.config import ConfigErrors, load, load_text
from kinrun.errors import ConfigError

CORPUS = Path(__file__).parents[2] / "data" / "bad-configs"
BAD_FILES = sorted(CORPUS.glob("*.yaml"))

REQUIRED_CASES = {
    "duplicate-key", "yaml11-boolean-key", "unknown-key", "bad-duration", "dangling-informer",
    "unknown-indexer", "duplicate-controller", "negative-workers", "wrong-type",
    "missing-required", "template-syntax", "missing-plugin-file",
}


def expected_lines(path: Path) -> list[str]:
    text = path.with_suffix(".expected").read_text(encoding="utf-8")
    return text.replace("{dir}", str(CORPUS.resolve())).splitlines()


def test_corpus_covers_the_required_cases() -> None:
    """Each error class the issue lists has a file in the corpus, and each file a sidecar."""
    names = {p.stem for p in BAD_FILES}
    assert REQUIRED_CASES <= names
    assert all(p.with_suffix(".expected").is_file() for p in BAD_FILES)


@pytest.mark.parametrize("path", BAD_FILES, ids=[p.stem for p in BAD_FILES])
def test_bad_config_is_rejected_with_the_expected_messages(path: Path) -> None:
    """Loading the file raises ConfigErrors whose lines are exactly the expected ones."""
    with pytest.raises(ConfigErrors) as info:
        load_text(path.read_text(encoding="utf-8"), file=path.name, base_dir=path.parent)
    assert str(info.value).splitlines() == expected_lines(path)


@pytest.mark.parametrize("path", BAD_FILES, ids=[p.stem for p in BAD_FILES])
def test_errors_are_sorted_by_position_and_located(path: Path) -> None:
    """Every error names the file and a line, and the errors come in file order."""
    with pytest.raises(ConfigErrors) as info:
        load(path)
    errors = info.value.errors
    assert all(e.file == str(path) and e.line is not None for e in errors)
    positions = [(e.line, e.column or 0) for e in errors]
    assert positions == sorted(positions)


def test_config_errors_is_a_config_error_carrying_the_first_error() -> None:
    """ConfigErrors is caught as ConfigError; its fields are those of the first error."""
    path = CORPUS / "many-errors.yaml"
    with pytest.raises(ConfigError) as info:
        load(path)
    first = info.value.errors[0]
    assert (info.value.file, info.value.line, info.value.column, info.value.path) == \
        (first.file, first.line, first.column, first.path)
    assert len(info.value.errors) == len(expected_lines(path))


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    """A missing file gives one ConfigError naming it (no traceback-worthy OSError)."""
    missing = tmp_path / "absent.yaml"
    with pytest.raises(ConfigErrors) as info:
        load(missing)
    assert str(info.value) == f"{missing}: cannot read the file: No such file or directory"
