"""IsoTimes formats each datetime object once, and never answers for another object that merely equals it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from assetbus.schemas.codecs.readiness import signal_bytes
from assetbus.schemas.codecs.text import IsoTimes


def test_equal_instants_in_other_zones_keep_their_own_offsets() -> None:
    times = IsoTimes()
    utc = datetime(2026, 6, 15, 22, 0, tzinfo=UTC)
    amsterdam = datetime(2026, 6, 16, 0, 0, tzinfo=ZoneInfo("Europe/Amsterdam"))
    fixed = utc.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert utc == amsterdam == fixed
    assert [times.iso(t) for t in (utc, amsterdam, fixed, utc)] == [
        "2026-06-15T22:00:00+00:00", "2026-06-16T00:00:00+02:00", "2026-06-16T03:30:00+05:30",
        "2026-06-15T22:00:00+00:00"]
    assert times.iso(None) is None


def test_a_fold_keeps_its_offset() -> None:
    zone = ZoneInfo("Europe/Amsterdam")
    first, second = datetime(2026, 10, 25, 2, 30, tzinfo=zone), datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=zone)
    times = IsoTimes()
    assert (times.iso(first), times.iso(second)) == ("2026-10-25T02:30:00+02:00", "2026-10-25T02:30:00+01:00")


def test_signals_are_the_same_bytes_with_and_without_it() -> None:
    created = datetime(2026, 12, 1, 9, 0, 0, 123456, tzinfo=UTC)
    dates = [datetime(2026, 6, 16, tzinfo=ZoneInfo("Europe/Amsterdam")), datetime(2026, 6, 15, 22, tzinfo=UTC), None]
    times = IsoTimes()
    for i, when in enumerate(dates):
        args = (f"r{i}", "daily", "2026-06-16", when, 1, created, "scheduler", "[]")
        assert signal_bytes(*args, times) == signal_bytes(*args)
