"""Durations: unit strings, combinations and numbers become float seconds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinrun.config import format_duration, load_schema, parse_duration


@pytest.mark.parametrize(("text", "seconds"), [
    ("500ms", 0.5), ("30s", 30.0), ("10m", 600.0), ("1h", 3600.0), ("1m30s", 90.0),
    ("1h2m3s4ms", 3723.004), ("1.5h", 5400.0), ("0s", 0.0), (0, 0.0), (15, 15.0), (2.5, 2.5),
    ("30", 30.0), ("0.25", 0.25),
])
def test_parse_duration_accepts(text: object, seconds: float) -> None:
    """Each accepted form parses to the number of seconds it means."""
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["", "30sec", "1d", "-5s", "s", "1m 30s", "ms", -1, True, None, "1e3"])
def test_parse_duration_rejects(value: object) -> None:
    """Anything else is a ValueError naming the value."""
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(value)


@given(st.integers(min_value=0, max_value=10**9))
def test_format_then_parse_round_trips_milliseconds(ms: int) -> None:
    """format_duration gives a string that parses back to the same number of milliseconds."""
    assert round(parse_duration(format_duration(ms / 1000)) * 1000) == ms


@given(st.from_regex(r"\A(?:[0-9]{1,4}(?:ms|s|m|h)){1,4}\Z"))
def test_schema_pattern_and_parser_agree_on_unit_strings(text: str) -> None:
    """Every string the schema's duration pattern accepts, the parser accepts too."""
    pattern = load_schema()["$defs"]["duration"]["pattern"]
    assert re.search(pattern, text)
    assert parse_duration(text) >= 0
