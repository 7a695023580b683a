"""Robustness: any mutation of a valid config either loads or gives located ConfigErrors —
never another exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kinrun.config import Config, ConfigErrors, load_text

EXAMPLES = sorted((Path(__file__).parents[3] / "examples" / "configs").glob("*.yaml"))
DOCS = [yaml.safe_load(p.read_text(encoding="utf-8")) for p in EXAMPLES]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 100) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12) | st.sampled_from(["{{ x }", "pods", "30s", "owner", "{plugin: true}"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a document (keys and indexes)."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, prefix + (i,))
    return out


def replaced(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {k: replaced(v, rest, value) if k == head else v for k, v in doc.items()}
    return [replaced(v, rest, value) if i == head else v for i, v in enumerate(doc)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_config_loads_or_fails_cleanly(data: st.DataObject) -> None:
    """Replacing any value of an example with arbitrary data never crashes the loader."""
    doc = data.draw(st.sampled_from(DOCS))
    path = data.draw(st.sampled_from(paths(doc)))
    mutated = replaced(doc, path, data.draw(json_values))
    text = yaml.safe_dump(mutated, sort_keys=False)
    try:
        config = load_text(text, file="m.yaml", base_dir=EXAMPLES[0].parent)
    except ConfigErrors as exc:
        assert all(e.file == "m.yaml" and e.line is not None and e.message for e in exc.errors)
    else:
        assert isinstance(config, Config)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_text_loads_or_fails_cleanly(text: str) -> None:
    """Any text at all gives a Config or ConfigErrors."""
    try:
        load_text(text, file="t.yaml")
    except ConfigErrors as exc:
        assert exc.errors
