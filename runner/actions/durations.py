"""Durations as the config writes them: ``500ms``, ``30s``, ``10m``, ``1h``, ``1m30s``, or a bare
number of seconds. (A private copy of the config's rule, so actions can parse rendered values.)"""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object) -> float:
    """Seconds (float >= 0) of a duration; raises ValueError naming the bad text."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip()
        seconds = _parse_text(text)
    if seconds < 0 or seconds != seconds:
        raise ValueError(f"not a duration: {value!r} (must be >= 0)")
    return seconds


def _parse_text(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {text!r} (use e.g. 500ms, 30s, 10m, 1h, 1m30s)")
    return total
