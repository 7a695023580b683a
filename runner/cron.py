"""Cron expressions read as CronJob reads them: :class:`CronSchedule` (parsing and fire times).

Used by a controller's ``schedule:`` (:mod:`kinrun.schedule`, which fires them) and by the
template functions ``cron_next``/``cron_prev`` (:mod:`kinrun.templating`): one parser, so a
template and a schedule agree on every expression. A standard five-field expression (minute
hour day-of-month month day-of-week; ``*/5``, ranges, lists, names such as ``MON``) or one of
the macros ``@yearly``/``@annually``, ``@monthly``, ``@weekly``, ``@daily``/``@midnight``,
``@hourly``; times are UTC unless a time zone names an IANA zone (``Europe/Berlin``; CronJob
``spec.timeZone``), daylight-saving changes included. ``TZ=``/``CRON_TZ=`` prefixes are refused
as CronJob refuses them. Parsing is croniter's; zones are ``zoneinfo``'s. Pure computation.
"""

from __future__ import annotations

import datetime
import zoneinfo

_MACROS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")


class ScheduleError(ValueError):
    """A ``schedule`` or ``timeZone`` the scheduler cannot use; the message says why."""


class CronSchedule:
    """A parsed cron ``expression`` in ``time_zone`` (an IANA name, None = UTC).

    :meth:`next_after` gives the next fire time. Immutable; thread-safe. Raises
    :class:`ScheduleError` for an expression croniter refuses, one that is not five fields or
    a macro (``@reboot`` and seconds fields included), and for an unknown zone."""

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
        self.expression, self.time_zone = text, time_zone
        self.zone = _zone(time_zone)

    def next_after(self, unix: float) -> float:
        """The first fire time (Unix seconds) strictly after ``unix`` (Unix seconds)."""
        start = datetime.datetime.fromtimestamp(unix, tz=self.zone)
        return float(_croniter()(self.expression, start).get_next(float))

    def latest_at_or_before(self, unix: float) -> float:
        """The latest fire time (Unix seconds) at or before ``unix``: cron fires on whole
        minutes, so croniter's previous time from one second past ``unix``'s minute."""
        start = datetime.datetime.fromtimestamp(unix, tz=self.zone).replace(second=1,
                                                                            microsecond=0)
        return float(_croniter()(self.expression, start).get_prev(float))

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


def _zone(name: str | None) -> datetime.tzinfo:
    if name is None:
        return datetime.timezone.utc
    try:
        return zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"timeZone {name!r} is not a known IANA time zone (such as UTC, "
                            f"Europe/Berlin, America/New_York): {exc}") from None


__all__ = ["CronSchedule", "ScheduleError"]
