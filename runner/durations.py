"""Durations as kinrun configs write them: ``500ms``, ``30s``, ``10m``, ``1h``, ``1m30s``, or seconds.

The unit syntax is a subset of Go's ``time.ParseDuration`` (units ms, s, m, h; any order;
fractions allowed, as ``1.5h``), because that is what Kubernetes users already write. A bare
number (YAML int/float, or a numeric string such as ``"30"``) is a number of seconds. Negative
durations are rejected. Everything is returned as float seconds.
"""

from __future__ import annotations

import re

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")

DURATION_HINT = "write 500ms, 30s, 10m, 1h, 1m30s, or a number of seconds"


def is_duration(value: object) -> bool:
    """True if ``value`` is something :func:`parse_duration` accepts."""
    try:
        parse_duration(value)
    except ValueError:
        return False
    return True


def parse_duration(value: object) -> float:
    """Parse a duration into float seconds.

    Accepts a non-negative int/float (seconds), a numeric string (seconds), or a unit string
    such as ``1m30s``. Raises ValueError naming the value and the accepted forms.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration ({DURATION_HINT})")
    if isinstance(value, (int, float)):
        if value < 0 or value != value or value == float("inf"):
            raise ValueError(f"{value!r} is not a duration (negative or not finite)")
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            return float(text)
        if _WHOLE.fullmatch(text):
            return sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text))
    raise ValueError(f"{value!r} is not a duration ({DURATION_HINT})")


def format_duration(seconds: float) -> str:
    """Format seconds back into the shortest unit string (``90.0`` -> ``1m30s``; ``0.5`` -> ``500ms``)."""
    if seconds < 0:
        raise ValueError(f"negative duration {seconds!r}")
    ms = round(seconds * 1000)
    if ms == 0:
        return "0s"
    parts = []
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)):
        count, ms = divmod(ms, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
