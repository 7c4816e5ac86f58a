"""Calendar arithmetic in a named time zone: which hours make a local day, where a day starts.

Days are not always 24 hours long: on daylight-saving days they have 23 or 25, and in a few zones
midnight does not exist on the switch day. Everything here works from real instants, so those
days come out right without special cases.
"""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, time, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_STEP = timedelta(minutes=15)
"""Every UTC offset in use is a multiple of 15 minutes, so local hour starts fall on this grid."""


def zone(name: str) -> ZoneInfo:
    """The time zone called `name` (IANA), or ValueError naming it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as 'Europe/Amsterdam')") from error


def utc_slot(instant: datetime) -> str:
    return instant.astimezone(UTC).isoformat()


@lru_cache(maxsize=4096)
def hours_of_day(day: date, tz_name: str) -> tuple[datetime, ...]:
    """The starts of the local hours of `day` in `tz_name` (23, 24 or 25 of them), as aware instants."""
    tz = zone(tz_name)
    return _plain_day(day, tz) or _scanned_day(day, tz)


def _plain_day(day: date, tz: ZoneInfo) -> tuple[datetime, ...] | None:
    """The 24 hours of a day without an offset change (most days): local midnight and the 24 hours after it,
    in UTC steps, all at one offset and ending at the next local midnight. None for any other day."""
    first = datetime.combine(day, time(), tzinfo=tz).astimezone(UTC)
    hours = [(first + timedelta(hours=k)).astimezone(tz) for k in range(25)]
    offset = hours[0].utcoffset()
    start, end = hours[0], hours[24]
    if (start.date() != day or start.hour or start.minute or end.date() != day + timedelta(days=1) or end.hour
            or end.minute or any(hour.utcoffset() != offset for hour in hours)):
        return None
    return tuple(hours[:24])


def _scanned_day(day: date, tz: ZoneInfo) -> tuple[datetime, ...]:
    """Every local hour start of `day`, found on the 15-minute grid of UTC instants around it (any day)."""
    naive_midnight = datetime.combine(day, time())
    start = (naive_midnight - timedelta(hours=3)).replace(tzinfo=tz).astimezone(UTC)
    end = (naive_midnight + timedelta(hours=27)).replace(tzinfo=tz).astimezone(UTC)
    hours: list[datetime] = []
    instant = start.replace(minute=start.minute - start.minute % 15, second=0, microsecond=0)
    while instant <= end:
        local = instant.astimezone(tz)
        if local.date() == day and local.minute == 0:
            hours.append(local)
        instant += _STEP
    return tuple(hours)


def day_start(day: date, tz_name: str) -> datetime:
    """The first instant of the local `day` (local midnight, or the first hour where midnight is skipped)."""
    return hours_of_day(day, tz_name)[0]


def is_day_start(instant: datetime, tz_name: str) -> bool:
    local = instant.astimezone(zone(tz_name))
    return local == day_start(local.date(), tz_name)


def iso_week_key(day: date) -> str:
    """`2026-W40`: the ISO week (Monday to Sunday)."""
    iso = day.isocalendar()
    return f"{iso.year}-W{iso.week:02d}"


def days_of_iso_week(key: str) -> tuple[date, ...]:
    """The seven days of an ISO week key such as `2026-W40` (ValueError if it is not one)."""
    year, sep, week = key.partition("-W")
    if not sep or len(week) != 2:
        raise ValueError(f"{key!r} is not an ISO week such as 2026-W40")
    monday = date.fromisocalendar(int(year), int(week), 1)
    return tuple(monday + timedelta(days=offset) for offset in range(7))


def month_key(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def days_of_month(key: str) -> tuple[date, ...]:
    """The days of a month key such as `2026-10` (ValueError if it is not one)."""
    year, sep, month = key.partition("-")
    if not sep or len(year) != 4 or len(month) != 2:
        raise ValueError(f"{key!r} is not a month such as 2026-10")
    y, m = int(year), int(month)
    return tuple(date(y, m, d) for d in range(1, calendar.monthrange(y, m)[1] + 1))
