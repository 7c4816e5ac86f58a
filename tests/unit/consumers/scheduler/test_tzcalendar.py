"""Calendar arithmetic: the shortcut for days without an offset change gives what the scan of every
15-minute instant gives, on every day of nine years in zones with odd transitions."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from assetbus.consumers.scheduler.tzcalendar import _scanned_day, hours_of_day, zone

ZONES = ["UTC", "Europe/Amsterdam", "America/New_York", "Australia/Lord_Howe", "America/Santiago",
         "Asia/Kathmandu", "America/Havana", "Asia/Gaza"]


@pytest.mark.parametrize("tz_name", ZONES)
def test_every_day_has_the_hours_the_full_scan_finds(tz_name: str) -> None:
    hours_of_day.cache_clear()
    tz = zone(tz_name)
    day = date(2019, 1, 1)
    while day < date(2028, 1, 1):
        assert hours_of_day(day, tz_name) == _scanned_day(day, tz), day
        day += timedelta(days=1)


def test_a_spring_forward_day_has_23_hours_and_a_fall_back_day_25() -> None:
    assert len(hours_of_day(date(2026, 3, 29), "Europe/Amsterdam")) == 23
    assert len(hours_of_day(date(2026, 10, 25), "Europe/Amsterdam")) == 25


def test_the_day_after_a_skipped_day_has_all_its_hours() -> None:
    """Samoa skipped 30 December 2011 (UTC-10 to UTC+14): the 31st has 24 hours. The scan alone starts three
    local hours before midnight, on the skipped day, and found only the last three."""
    hours = hours_of_day(date(2011, 12, 31), "Pacific/Apia")
    assert len(hours) == 24 and hours[0].hour == 0 and hours[-1].hour == 23
