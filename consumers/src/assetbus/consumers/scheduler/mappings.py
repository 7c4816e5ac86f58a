"""Partition mappings: how an upstream event's partition maps to a consumer DAG's partition.

Pure functions, no I/O. `map()` gives the target partition and the upstream *slot* the event
fills; `window()` gives the slots a target needs before it is ready (None: any one event is
enough). A mapping that cannot map an event returns `Unmappable` with a machine-readable reason;
it never raises for bad event data.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum
from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from assetbus.consumers.scheduler import tzcalendar as cal
from assetbus.schemas import KEY_MAX_LENGTH

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

PartitionKey = Annotated[str, StringConstraints(min_length=1, max_length=KEY_MAX_LENGTH)]

NEVER: frozenset[str] = frozenset({"\x00never"})
"""The window of a target key the mapping cannot produce: no set of events ever fills it."""


class SkipReason(StrEnum):
    """Why an event was not queued for a DAG (stored in `mapping_skips.reason`)."""

    UNPARTITIONED = "unpartitioned"
    """The mapping needs a partition key; the event has none."""
    NO_PARTITION_TIME = "no_partition_time"
    """The mapping needs a partition date (or a key that is an ISO date/time); the event has neither."""
    NOT_ALIGNED = "not_aligned"
    """The partition time is not the start of an hour (or day) in the mapping's time zone."""
    UNMAPPED_KEY = "unmapped_key"
    """A static map has no entry for the event's key."""
    SELF_TRIGGER = "self_trigger"
    """The event was emitted by a run of the consumer DAG itself (its provenance): a DAG never triggers itself."""


@dataclass(frozen=True, slots=True)
class Mapped:
    """Where an event goes: the target partition, and the upstream slot it fills there."""

    target_key: str | None
    target_date: datetime | None
    slot: str


@dataclass(frozen=True, slots=True)
class Unmappable:
    reason: SkipReason
    detail: str


class _Mapping(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    unit: ClassVar[str] = "partitions"
    label: ClassVar[str]

    def map(self, key: str | None, when: datetime | None) -> Mapped | Unmappable:
        raise NotImplementedError

    def window(self, target_key: str | None) -> frozenset[str] | None:
        """Upstream slots the target needs; None means any single event makes it ready."""
        return None

    @property
    def any_event(self) -> bool:
        """Whether `window` is None for every target (any one mapped event makes its target ready)."""
        return type(self).window is _Mapping.window

    def describe(self) -> str:
        return self.label


class Identity(_Mapping):
    """The target partition is the event's partition (key and date); unpartitioned stays unpartitioned."""

    kind: Literal["identity"] = Field(default="identity", description="Mapping type.")
    label = "identity"

    def map(self, key: str | None, when: datetime | None) -> Mapped | Unmappable:
        return Mapped(key, when, key or "")


class ToUnpartitioned(_Mapping):
    """Any partition (or none) → the one unpartitioned target: events coalesce into one pending run."""

    kind: Literal["unpartitioned"] = Field(default="unpartitioned", description="Mapping type.")
    label = "any → unpartitioned"

    def map(self, key: str | None, when: datetime | None) -> Mapped | Unmappable:
        return Mapped(None, None, key or "")


class StaticMap(_Mapping):
    """A fixed key → key table. With `require_all`, a target waits for every source key mapped to it."""

    kind: Literal["static"] = Field(default="static", description="Mapping type.")
    mapping: dict[PartitionKey, PartitionKey] = Field(min_length=1,
                                                      description="Upstream partition key → target partition key.")
    require_all: bool = Field(default=False, description="Wait for every upstream key that maps to the target.")

    unit: ClassVar[str] = "keys"

    def __init__(self, mapping: dict[str, str] | None = None, /, **data: Any) -> None:
        if mapping is not None:
            data["mapping"] = mapping
        super().__init__(**data)

    def map(self, key: str | None, when: datetime | None) -> Mapped | Unmappable:
        if key is None:
            return Unmappable(SkipReason.UNPARTITIONED, "a static map needs a partition key")
        target = self.mapping.get(key)
        if target is None:
            return Unmappable(SkipReason.UNMAPPED_KEY, f"no entry for partition key {key!r}")
        return Mapped(target, None, key)

    @property
    def any_event(self) -> bool:
        return not self.require_all

    def window(self, target_key: str | None) -> frozenset[str] | None:
        if not self.require_all:
            return None
        sources = frozenset(source for source, target in self.mapping.items() if target == target_key)
        return sources or NEVER

    def describe(self) -> str:
        return f"static map ({len(self.mapping)} keys{', all required' if self.require_all else ''})"


class _Zoned(_Mapping):
    timezone: str = Field(default="UTC", description="IANA time zone the calendar is taken in.")

    def __init__(self, timezone: str | None = None, /, **data: Any) -> None:
        if timezone is not None:
            data["timezone"] = timezone
        super().__init__(**data)

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        cal.zone(value)
        return value

    def describe(self) -> str:
        return f"{self.label} ({self.timezone})"


class HourlyToDaily(_Zoned):
    """Hourly partitions roll up into local days; a day is ready when all its hours (23, 24 or 25) arrived."""

    kind: Literal["hourly_to_daily"] = Field(default="hourly_to_daily", description="Mapping type.")
    label = "hourly → daily"

    unit: ClassVar[str] = "hours"

    def __init__(self, timezone: str | None = None, /, **data: Any) -> None:  # positional for the type checker too
        super().__init__(timezone, **data)

    def map(self, key: str | None, when: datetime | None) -> Mapped | Unmappable:
        instant = _instant(key, when)
        if instant is None:
            return Unmappable(SkipReason.NO_PARTITION_TIME,
                              "needs a partition date, or a key that is an ISO date-time with an offset")
        mapped = _hour_to_day(instant.astimezone(UTC), self.timezone)  # UTC: a key that keeps a DST fold apart
        if mapped is None:
            return Unmappable(SkipReason.NOT_ALIGNED,
                              f"{instant.isoformat()} is not the start of an hour in {self.timezone}")
        return mapped

    def window(self, target_key: str | None) -> frozenset[str] | None:
        if target_key is None or not _ISO_DATE.match(target_key):
            return NEVER
        return _hours_of_day_slots(target_key, self.timezone)


class _DailyRollup(_Zoned):
    """Daily partitions roll up into a calendar period (keyed by `_period`, made of `_days_of`)."""

    unit: ClassVar[str] = "days"

    def __init__(self, timezone: str | None = None, /, **data: Any) -> None:
        super().__init__(timezone, **data)

    def _period(self, day: date) -> tuple[str, date]:
        """The key of the period holding `day`, and the period's first day."""
        raise NotImplementedError

    def _days_of(self, period_key: str) -> Iterable[date]:
        """The days of a period (ValueError if `period_key` names none)."""
        raise NotImplementedError

    def map(self, key: str | None, when: datetime | None) -> Mapped | Unmappable:
        day: date | None = None  # the upstream day: the key when it is an ISO date, else the partition date
        if key is not None and _ISO_DATE.match(key):
            try:
                day = date.fromisoformat(key)
            except ValueError:
                pass
        if day is None:
            instant = _instant(key, when)
            if instant is None:
                return Unmappable(SkipReason.NO_PARTITION_TIME,
                                  "needs a partition date, or a key that is an ISO date such as 2026-10-01")
            if not cal.is_day_start(instant, self.timezone):
                return Unmappable(SkipReason.NOT_ALIGNED,
                                  f"{instant.isoformat()} is not the start of a day in {self.timezone}")
            day = instant.astimezone(cal.zone(self.timezone)).date()
        period, first = self._period(day)
        return Mapped(period, cal.day_start(first, self.timezone), day.isoformat())

    def window(self, target_key: str | None) -> frozenset[str] | None:
        try:
            return frozenset(d.isoformat() for d in self._days_of(target_key or ""))
        except ValueError:
            return NEVER


class DailyToWeekly(_DailyRollup):
    """Daily partitions roll up into ISO weeks (Monday to Sunday), keyed like `2026-W40`."""

    kind: Literal["daily_to_weekly"] = Field(default="daily_to_weekly", description="Mapping type.")
    label = "daily → weekly"

    def __init__(self, timezone: str | None = None, /, **data: Any) -> None:
        super().__init__(timezone, **data)

    def _period(self, day: date) -> tuple[str, date]:
        week = cal.iso_week_key(day)
        return week, cal.days_of_iso_week(week)[0]

    def _days_of(self, period_key: str) -> Iterable[date]:
        return cal.days_of_iso_week(period_key)


class DailyToMonthly(_DailyRollup):
    """Daily partitions roll up into calendar months, keyed like `2026-10`."""

    kind: Literal["daily_to_monthly"] = Field(default="daily_to_monthly", description="Mapping type.")
    label = "daily → monthly"

    def __init__(self, timezone: str | None = None, /, **data: Any) -> None:
        super().__init__(timezone, **data)

    def _period(self, day: date) -> tuple[str, date]:
        return cal.month_key(day), day.replace(day=1)

    def _days_of(self, period_key: str) -> Iterable[date]:
        return cal.days_of_month(period_key)


@lru_cache(maxsize=8192)
def _hour_to_day(instant: datetime, timezone: str) -> Mapped | None:
    """An hour's local day, None if `instant` (in UTC) does not start an hour there (cached: the same hours
    are mapped again for every DAG and batch)."""
    local = instant.astimezone(cal.zone(timezone))
    if local.minute or local.second or local.microsecond:  # not the start of a local hour
        return None
    day = local.date()
    return Mapped(day.isoformat(), cal.day_start(day, timezone), instant.isoformat())  # `cal.utc_slot`: in UTC


@lru_cache(maxsize=4096)
def _hours_of_day_slots(day_key: str, timezone: str) -> frozenset[str] | None:
    """The hour slots of a local day (`HourlyToDaily.window`, cached: evaluated per target and batch)."""
    try:
        day = date.fromisoformat(day_key)
    except ValueError:
        return NEVER
    return frozenset(cal.utc_slot(hour) for hour in cal.hours_of_day(day, timezone))


def _instant(key: str | None, when: datetime | None) -> datetime | None:
    """The partition's time: its date when given, else its key if that is an ISO date-time with an offset."""
    if when is not None:
        return when if when.utcoffset() is not None else None
    if key is None:
        return None
    try:
        parsed = datetime.fromisoformat(key)
    except ValueError:
        return None
    return parsed if parsed.utcoffset() is not None else None


PartitionMapping = Annotated[
    Identity | ToUnpartitioned | StaticMap | HourlyToDaily | DailyToWeekly | DailyToMonthly,
    Field(discriminator="kind"),
]
"""Any mapping, as stored in a DAG definition (tagged by `kind`)."""
