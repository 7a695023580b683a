"""Cron expressions read as CronJob reads them: :class:`CronSchedule` (parsing and fire times).

Used by a controller's ``schedule:`` (:mod:`kinrun.schedule`, which fires them) and by the
template functions ``cron_next``/``cron_prev`` (:mod:`kinrun.templating`): one parser, so a
template and a schedule agree on every expression. A standard five-field expression (minute
hour day-of-month month day-of-week; ``*/5``, ranges, lists, names such as ``MON``) or one of
the macros ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``,
``@hourly``; times are UTC unless a time zone names an IANA zone (``Europe/Berlin``; CronJob
``spec.timeZone``), daylight-saving changes included. ``TZ=``/``CRON_TZ=`` prefixes are refused
as CronJob refuses them. An expression that never fires (``0 0 30 2 *``: there is no Feb 30)
is refused when parsed: croniter raises ``CroniterBadDateError`` when it finds no fire time
within :data:`HORIZON_YEARS`, and a five-field expression that fires at all fires at least every
eight years (Feb 29, skipped in 2100), so one search from a fixed instant decides it. Parsing
is croniter's; zones are ``zoneinfo``'s. Pure computation.
"""

from __future__ import annotations

import datetime
import zoneinfo

HORIZON_YEARS = 50
"""Years croniter searches for a fire time before it gives up (``CroniterBadDateError``): its
``max_years_between_matches``, given for the check that an expression fires (the default of
the searches at run time too)."""
_CHECKED_FROM = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
"""The fixed instant whether an expression fires is decided from (no clock is read)."""
_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class ScheduleError(ValueError):
    """A ``schedule`` or ``timeZone`` the scheduler cannot use; the message says why."""


class CronSchedule:
    """A parsed cron ``expression`` in ``time_zone`` (an IANA name, None = UTC).

    :meth:`next_after` gives the next fire time. Immutable; thread-safe. Raises
    :class:`ScheduleError` for an expression croniter refuses, one that is not five fields or
    a macro (``@reboot`` and seconds fields included), one that never fires (``0 0 30 2 *``),
    and for an unknown zone."""

    __slots__ = ("expression", "time_zone", "zone")

    def __init__(self, expression: str, time_zone: str | None = None) -> None:
        text = " ".join(str(expression).split())
        if text.upper().startswith(("TZ=", "CRON_TZ=")):
            raise ScheduleError(f"schedule {expression!r}: write the zone in timeZone, not as a "
                                "TZ= prefix (as CronJob)")
        if text.startswith("@"):
            if text.lower() not in _MACROS:
                raise ScheduleError(f"schedule {expression!r}: unknown macro (known: "
                                    f"{', '.join(_MACROS)})")
            text = text.lower()
        elif len(text.split()) != 5:
            raise ScheduleError(f"schedule {expression!r}: a cron expression has five fields "
                                "(minute hour day-of-month month day-of-week)")
        croniter = _croniter()
        if not croniter.is_valid(text):
            bad = _bad_field(text)
            if bad is not None:
                raise ScheduleError(f"schedule {expression!r}: {bad}") from None
            try:
                croniter(text)
            except ValueError as exc:
                raise ScheduleError(f"schedule {expression!r}: {exc}") from None
            raise ScheduleError(f"schedule {expression!r} is not a valid cron expression")
        _check_fires(text, expression)
        self.expression, self.time_zone = text, time_zone
        self.zone = _zone(time_zone)

    def next_after(self, unix: float) -> float:
        """The first fire time (Unix seconds) strictly after ``unix`` (Unix seconds). Raises
        ScheduleError when croniter finds none (or fails otherwise)."""
        start = datetime.datetime.fromtimestamp(unix, tz=self.zone)
        return self._search(start, "get_next", "after")

    def latest_at_or_before(self, unix: float) -> float:
        """The latest fire time (Unix seconds) at or before ``unix``: cron fires on whole
        minutes, so croniter's previous time from one second past ``unix``'s minute. Raises
        ScheduleError as :meth:`next_after`."""
        start = datetime.datetime.fromtimestamp(unix, tz=self.zone).replace(second=1,
                                                                            microsecond=0)
        return self._search(start, "get_prev", "at or before")

    def _search(self, start: datetime.datetime, method: str, relation: str) -> float:
        """croniter's ``method`` from ``start``; its errors (``CroniterError``, a ValueError;
        ``CroniterBadDateError`` when no time is within :data:`HORIZON_YEARS`) as a
        ScheduleError naming the expression and ``start``."""
        try:
            return float(getattr(_croniter()(self.expression, start), method)(float))
        except ValueError as exc:
            raise ScheduleError(f"schedule {self.expression!r}: no fire time {relation} "
                                f"{start.isoformat()} ({exc})") from None

    def __repr__(self) -> str:
        zone = f" in {self.time_zone}" if self.time_zone else " (UTC)"
        return f"CronSchedule({self.expression!r}{zone})"


def _croniter() -> type:
    """croniter's class, imported on first use: only a config with a ``schedule`` needs it
    (tens of milliseconds of start-up otherwise)."""
    from croniter import croniter

    return croniter


_FIELDS = (("minute", "0-59"), ("hour", "0-23"), ("day of month", "1-31"),
           ("month", "1-12 or JAN-DEC"), ("day of week", "0-6 or SUN-SAT, 7 is Sunday too"))
"""The five cron fields in order, with the values each takes (as crontab(5) and CronJob)."""


def _bad_field(text: str) -> str | None:
    """Which field of a five-field ``text`` croniter refuses, as ``hour field '25' is out of
    range (hour takes 0-23)``: each field is tried alone, the others ``*`` (croniter's own
    message does not say which field). None when every field alone is valid (a macro, or
    fields valid alone but refused together)."""
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return None
    for index, ((name, allowed), value) in enumerate(zip(_FIELDS, fields)):
        alone = " ".join(value if i == index else "*" for i in range(len(_FIELDS)))
        if not _croniter().is_valid(alone):
            return f"{name} field {value!r} is not valid ({name} takes {allowed})"
    return None


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_LONGEST = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
"""The most days each month has (Feb 29 in leap years)."""


def _check_fires(text: str, expression: str) -> None:
    """Raise ScheduleError when ``text`` (valid to croniter) never fires: no time within
    :data:`HORIZON_YEARS` after a fixed instant (module docstring)."""
    from croniter import CroniterBadDateError

    try:
        _croniter()(text, _CHECKED_FROM, max_years_between_matches=HORIZON_YEARS).get_next(float)
    except CroniterBadDateError:
        raise ScheduleError(f"schedule {expression!r} never fires: {_why_never(text)}") from None


def _why_never(text: str) -> str:
    """Why a five-field ``text`` never fires, as ``no Feb 30``: each listed day of month that
    no listed month has (the day of week unrestricted: croniter, as cron, fires on either
    when both are); croniter's horizon otherwise."""
    fields, _ = _croniter().expand(text)
    days, months = fields[2], fields[3]
    if all(isinstance(v, int) for v in (*days, *months)):
        missing = [f"{_MONTHS[m - 1]} {d}" for m in months for d in days if d > _LONGEST[m - 1]]
        if missing:
            written = text.split()
            return f"no {' or '.join(missing)} (day of month {written[2]!r} never falls in " \
                   f"month {written[3]!r})"
    return f"croniter finds no fire time within {HORIZON_YEARS} years"


def _zone(name: str | None) -> datetime.tzinfo:
    if name is None:
        return datetime.timezone.utc
    try:
        return zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"timeZone {name!r} is not a known IANA time zone (such as UTC, "
                            f"Europe/Berlin, America/New_York): {exc}") from None


__all__ = ["HORIZON_YEARS", "CronSchedule", "ScheduleError"]
