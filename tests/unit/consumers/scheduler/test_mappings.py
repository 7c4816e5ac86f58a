"""Partition mappings are pure functions: identity, roll-ups in a time zone (DST days too), static maps."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from pydantic import ValidationError

from assetbus.consumers.scheduler import (
    DailyToMonthly,
    DailyToWeekly,
    HourlyToDaily,
    Identity,
    Mapped,
    SkipReason,
    StaticMap,
    ToUnpartitioned,
    Unmappable,
)
from assetbus.consumers.scheduler.mappings import NEVER
from assetbus.consumers.scheduler.tzcalendar import hours_of_day

AMS = ZoneInfo("Europe/Amsterdam")


def hourly_slots(mapping: HourlyToDaily, day: date) -> set[str]:
    """Map every local hour of `day` and collect the slots (what the upstream would emit)."""
    slots = set()
    for hour in hours_of_day(day, mapping.timezone):
        mapped = mapping.map(None, hour)
        assert isinstance(mapped, Mapped) and mapped.target_key == day.isoformat()
        slots.add(mapped.slot)
    return slots


def test_identity_keeps_key_and_date() -> None:
    when = datetime(2026, 10, 1, tzinfo=UTC)
    assert Identity().map("batch-41", when) == Mapped("batch-41", when, "batch-41")


def test_identity_keeps_unpartitioned_events_unpartitioned() -> None:
    assert Identity().map(None, None) == Mapped(None, None, "")


def test_any_partition_maps_to_the_one_unpartitioned_target() -> None:
    assert ToUnpartitioned().map("2026-10-01", datetime(2026, 10, 1, tzinfo=UTC)) == Mapped(None, None, "2026-10-01")
    assert ToUnpartitioned().window(None) is None


@pytest.mark.parametrize(("day", "hours"), [(date(2026, 10, 1), 24), (date(2026, 3, 29), 23), (date(2026, 10, 25), 25)])
def test_a_local_day_needs_all_its_hours_and_dst_days_have_23_or_25(day: date, hours: int) -> None:
    mapping = HourlyToDaily("Europe/Amsterdam")
    window = mapping.window(day.isoformat())
    assert window is not None and len(window) == hours
    assert hourly_slots(mapping, day) == window


def test_new_york_fall_back_day_has_25_hours_and_spring_forward_23() -> None:
    mapping = HourlyToDaily("America/New_York")
    assert len(mapping.window("2026-11-01") or ()) == 25
    assert len(mapping.window("2026-03-08") or ()) == 23


def test_the_repeated_hour_of_a_fall_back_day_counts_twice() -> None:
    mapping = HourlyToDaily("Europe/Amsterdam")
    first = datetime(2026, 10, 25, 2, tzinfo=AMS)  # 02:00 CEST (+02:00)
    second = first.replace(fold=1)  # 02:00 CET (+01:00), one hour later
    a, b = mapping.map(None, first), mapping.map(None, second)
    assert isinstance(a, Mapped) and isinstance(b, Mapped)
    assert a.target_key == b.target_key == "2026-10-25"
    assert a.slot != b.slot


def test_hours_map_to_the_local_day_not_the_utc_day() -> None:
    late_utc = datetime(2026, 9, 30, 22, tzinfo=UTC)  # 00:00 on 1 October in Amsterdam
    mapped = HourlyToDaily("Europe/Amsterdam").map(None, late_utc)
    assert isinstance(mapped, Mapped)
    assert mapped.target_key == "2026-10-01"
    assert mapped.target_date == datetime(2026, 10, 1, tzinfo=AMS)


def test_an_hour_can_come_from_an_iso_key_when_there_is_no_date() -> None:
    mapped = HourlyToDaily("UTC").map("2026-10-01T05:00:00+00:00", None)
    assert isinstance(mapped, Mapped) and mapped.target_key == "2026-10-01"


def test_an_event_that_is_not_an_hour_start_is_skipped_with_a_reason() -> None:
    result = HourlyToDaily("UTC").map("x", datetime(2026, 10, 1, 5, 30, tzinfo=UTC))
    assert isinstance(result, Unmappable) and result.reason is SkipReason.NOT_ALIGNED


def test_an_event_without_any_time_is_skipped_with_a_reason() -> None:
    result = HourlyToDaily("UTC").map("batch-41", None)
    assert isinstance(result, Unmappable) and result.reason is SkipReason.NO_PARTITION_TIME


def test_a_target_key_the_mapping_cannot_produce_never_becomes_ready() -> None:
    assert HourlyToDaily("UTC").window("batch-41") is NEVER
    assert DailyToWeekly("UTC").window("2026-10") is NEVER
    assert DailyToMonthly("UTC").window("2026-W40") is NEVER


def test_days_roll_up_into_iso_weeks() -> None:
    mapping = DailyToWeekly("Europe/Amsterdam")
    mapped = mapping.map("2026-10-01", None)
    assert isinstance(mapped, Mapped)
    assert (mapped.target_key, mapped.slot) == ("2026-W40", "2026-10-01")
    assert mapped.target_date == datetime(2026, 9, 28, tzinfo=AMS)
    window = mapping.window("2026-W40")
    assert window == frozenset((date(2026, 9, 28) + timedelta(days=i)).isoformat() for i in range(7))


def test_a_week_across_a_year_end_belongs_to_its_iso_year() -> None:
    mapped = DailyToWeekly("UTC").map("2027-01-01", None)
    assert isinstance(mapped, Mapped) and mapped.target_key == "2026-W53"


@pytest.mark.parametrize(("month", "days"), [("2026-02", 28), ("2028-02", 29), ("2026-10", 31), ("2026-11", 30)])
def test_days_roll_up_into_months_of_their_length(month: str, days: int) -> None:
    assert len(DailyToMonthly("UTC").window(month) or ()) == days


def test_a_daily_partition_date_must_be_the_start_of_the_local_day() -> None:
    mapping = DailyToMonthly("Europe/Amsterdam")
    good = mapping.map("daily", datetime(2026, 10, 1, tzinfo=AMS))
    bad = mapping.map("daily", datetime(2026, 10, 1, tzinfo=UTC))  # 02:00 in Amsterdam
    assert isinstance(good, Mapped) and good.target_key == "2026-10"
    assert isinstance(bad, Unmappable) and bad.reason is SkipReason.NOT_ALIGNED


def test_an_iso_date_key_is_a_calendar_day_whatever_the_partition_date() -> None:
    mapped = DailyToMonthly("America/New_York").map("2026-10-31", datetime(2026, 10, 31, tzinfo=UTC))
    assert isinstance(mapped, Mapped) and mapped.target_key == "2026-10"


def test_static_map_translates_keys_and_skips_unknown_ones() -> None:
    mapping = StaticMap({"eu-west": "europe", "eu-central": "europe", "us-east": "americas"})
    assert mapping.map("eu-west", None) == Mapped("europe", None, "eu-west")
    unknown = mapping.map("ap-south", None)
    unpartitioned = mapping.map(None, None)
    assert isinstance(unknown, Unmappable) and unknown.reason is SkipReason.UNMAPPED_KEY
    assert isinstance(unpartitioned, Unmappable) and unpartitioned.reason is SkipReason.UNPARTITIONED
    assert mapping.window("europe") is None


def test_static_map_with_require_all_waits_for_every_source_key() -> None:
    mapping = StaticMap({"eu-west": "europe", "eu-central": "europe"}, require_all=True)
    assert mapping.window("europe") == frozenset({"eu-west", "eu-central"})
    assert mapping.window("asia") is NEVER


@pytest.mark.parametrize("bad", [lambda: HourlyToDaily("Mars/Olympus"), lambda: StaticMap({"": "x"}),
                                 lambda: StaticMap({})])
def test_bad_mapping_arguments_are_refused_at_definition_time(bad: object) -> None:
    with pytest.raises(ValidationError):
        bad()  # type: ignore[operator]
