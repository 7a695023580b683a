"""Every example config in examples/configs/ is valid and carries the editor schema line."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinrun.config import load

EXAMPLES = Path(__file__).parents[3] / "examples" / "configs"
FILES = sorted(EXAMPLES.glob("*.yaml"))
SCHEMA_LINE = "# yaml-language-server: $schema=../../schemas/kinrun.schema.json"


def test_the_four_initial_examples_exist() -> None:
    """The examples the issue asks for are all there."""
    names = {p.name for p in FILES}
    assert {"pod-logger.yaml", "configmap-children.yaml", "pods-by-node.yaml",
            "secondary-watch.yaml"} <= names


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_example_loads(path: Path) -> None:
    """The example passes schema, reference and template checks."""
    config = load(path)
    assert config.controllers


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_example_names_the_schema_for_editors(path: Path) -> None:
    """The first line points yaml-language-server at the schema, and that path exists."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == SCHEMA_LINE
    assert (path.parent / first.split("=", 1)[1]).resolve().is_file()
