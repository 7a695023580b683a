"""Durations as kinrun configs write them: ``500ms``, ``30s``, ``10m``, ``1h``, ``1m30s``, or seconds.

The unit syntax is a subset of Go's ``time.ParseDuration`` (units ms, s, m, h; any order;
fractions allowed, as ``1.5h``), because that is what Kubernetes users already write. A bare
number (YAML int/float, or a numeric string such as ``"30"``) is a number of seconds. Negative
durations are rejected. Everything is returned as float seconds.

Every duration is bounded: :data:`MAX_DURATION` (87600h, ten 365-day years) is the longest one
kinrun accepts, written here once. A config, a flag or a template rendering a longer one (or
NaN, or infinity) is an error naming the value; a delay computed at run time by code kinrun
does not parse (a hook's return value, ``TemporaryError(delay=...)``) is clamped to it by
:func:`clamp_delay` (see docs/limits.md). The bound is far longer than any sensible period and
far below what every wait can take (Python's ``threading.TIMEOUT_MAX``, about 292 years, as Go's
``time.Duration``), so no accepted value can overflow a timer and kill the thread waiting on it.
"""

from __future__ import annotations

import math
import re

_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_WHOLE = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")

DURATION_HINT = "write 500ms, 30s, 10m, 1h, 1m30s, or a number of seconds"

MAX_DURATION = 87600 * 3600.0
"""The longest duration kinrun accepts, in seconds (87600h: ten 365-day years)."""


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
    such as ``1m30s``, at most :data:`MAX_DURATION`. Raises ValueError naming the value and the
    accepted forms (negative, NaN, infinite and too long values included).
    """
    if isinstance(value, bool):
        raise ValueError(f"{_show(value)} is not a duration ({DURATION_HINT})")
    if isinstance(value, (int, float)):
        if value < 0 or value != value or value == math.inf:
            raise ValueError(f"{_show(value)} is not a duration (negative or not finite)")
        return _bounded(value, value)
    if isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):
            return _bounded(float(text), value)
        if _WHOLE.fullmatch(text):
            return _bounded(sum(float(n) * _UNIT_SECONDS[u] for n, u in _PART.findall(text)), value)
    raise ValueError(f"{_show(value)} is not a duration ({DURATION_HINT})")


def _bounded(seconds: float, value: object) -> float:
    if not seconds <= MAX_DURATION:  # an int beyond float range compares exactly
        raise ValueError(f"{_show(value)} is longer than the longest duration kinrun accepts "
                         f"({MAX_DURATION_TEXT})")
    return float(seconds)


def _show(value: object) -> str:
    """``value`` as an error quotes it: its ``repr`` when short, else its type and size, never
    a cut piece (a rendered value may be a Secret's, which ``kinrun.redact`` recognises only
    whole)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"a number of {value.bit_length()} bits"  # repr() refuses above 4300 digits
    text = repr(value)
    if len(text) <= 40:
        return text
    return f"a str of {len(value)} characters" if isinstance(value, str) else \
        f"a {type(value).__name__}"


def clamp_delay(seconds: float) -> float:
    """A delay computed at run time (float seconds) made safe to wait on: values above
    :data:`MAX_DURATION` (infinity included) and NaN become ``MAX_DURATION``; values <= 0
    stay as they are (callers treat them as "now"). Never raises for a number."""
    if seconds != seconds or seconds > MAX_DURATION:
        return MAX_DURATION
    return float(seconds)


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


MAX_DURATION_TEXT = format_duration(MAX_DURATION)
"""MAX_DURATION as configs write it: ``87600h``."""
