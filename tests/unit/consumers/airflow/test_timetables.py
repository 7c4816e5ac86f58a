"""Airflow 3.3's PartitionedAssetTimetable and its mappers, as Airflow serializes them, become assetbus rules.

The timetables below are the output of `airflow.serialization.encoders.encode_timetable` in
apache-airflow 3.3.2 for the DAG code in each test's docstring.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from assetbus.consumers.airflow.timetables import translate_mapper, translate_timetable
from assetbus.consumers.scheduler import AllOf, AnyOf, DailyToMonthly, HourlyToDaily, Identity, StaticMap

M = "airflow.partition_mappers."


def asset(name: str) -> dict[str, Any]:
    return {"__type": "asset", "name": name, "uri": f"s3://x/{name}", "group": "asset", "extra": {}}


def mapper(path: str, **var: Any) -> dict[str, Any]:
    return {"__type": M + path, "__var": var}


def temporal(name: str, tz: str = "UTC", fmt: str = "%Y-%m-%d") -> dict[str, Any]:
    return mapper(f"temporal.{name}", timezone=tz, input_format="%Y-%m-%dT%H:%M:%S", output_format=fmt)


def rollup(upstream: dict[str, Any], window: str, policy: dict[str, Any] | None = None, **window_var: Any) -> \
        dict[str, Any]:
    return mapper("base.RollupMapper", upstream_mapper=upstream,
                  window={"__type": M + f"window.{window}", "__var": window_var or {"direction": "forward"}},
                  wait_policy=policy or mapper("wait_policy.WaitForAll"))


def timetable(condition: dict[str, Any], config: list[list[dict[str, Any]]],
              default: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"__type": "airflow.timetables.simple.PartitionedAssetTimetable", "__var": {
        "asset_condition": condition, "default_partition_mapper": default or mapper("identity.IdentityMapper"),
        "partition_mapper_config": config}}


def test_roll_up_of_hours_into_days_becomes_hourly_to_daily_in_the_same_zone() -> None:
    """RollupMapper(upstream_mapper=StartOfDayMapper(timezone="Europe/Amsterdam"), window=DayWindow())"""
    mapping = translate_mapper(rollup(temporal("StartOfDayMapper", "Europe/Amsterdam"), "DayWindow"))
    assert mapping == HourlyToDaily("Europe/Amsterdam")
    day = datetime(2026, 10, 1, tzinfo=UTC) - timedelta(hours=2)  # local midnight in Amsterdam (CEST)
    mapped = mapping.map(None, day)
    assert getattr(mapped, "target_key", None) == "2026-10-01"
    assert len(mapping.window("2026-10-01") or ()) == 24


def test_identity_allowed_keys_segments_and_months_translate() -> None:
    assert translate_mapper(mapper("identity.IdentityMapper")) == Identity()
    assert translate_mapper(mapper("allowed_key.AllowedKeyMapper", allowed_keys=["eu", "us"])) == \
        StaticMap({"eu": "eu", "us": "us"})
    segments = rollup(mapper("fixed_key.FixedKeyMapper", downstream_key="all"), "SegmentWindow", segments=["eu", "us"])
    assert translate_mapper(segments) == StaticMap({"eu": "all", "us": "all"}, require_all=True)
    months = rollup(temporal("StartOfMonthMapper", fmt="%Y-%m"), "MonthWindow")
    assert translate_mapper(months) == DailyToMonthly("UTC")


def test_a_whole_timetable_keeps_its_all_and_any_structure_and_default_mapper() -> None:
    """PartitionedAssetTimetable(assets=(clicks & regions) | fx, partition_mapper_config={clicks: <day roll-up>,
    regions: AllowedKeyMapper(["eu"])})"""
    translated = translate_timetable("report", timetable(
        {"__type": "asset_any", "objects": [{"__type": "asset_all", "objects": [asset("clicks"), asset("regions")]},
                                            asset("fx")]},
        [[asset("clicks"), rollup(temporal("StartOfDayMapper"), "DayWindow")],
         [asset("regions"), mapper("allowed_key.AllowedKeyMapper", allowed_keys=["eu"])]]))
    assert translated.problem is None and translated.dag is not None
    schedule = translated.dag.schedule
    assert isinstance(schedule, AnyOf) and isinstance(schedule.conditions[0], AllOf)
    assert translated.dag.mapping_for("clicks") == HourlyToDaily("UTC")
    assert translated.dag.mapping_for("regions") == StaticMap({"eu": "eu"})
    assert translated.dag.mapping_for("fx") == Identity()  # the default mapper


def test_mappers_without_an_assetbus_equivalent_are_named_and_give_no_rule() -> None:
    fan_out = mapper("temporal.FanOutMapper", upstream_mapper=temporal("StartOfWeekMapper", fmt="%Y-%m-%d (W%V)"),
                     window={"__type": M + "window.WeekWindow", "__var": {"direction": "forward"}},
                     downstream_mapper=temporal("StartOfDayMapper"))
    at_least = rollup(temporal("StartOfDayMapper"), "DayWindow", mapper("wait_policy.MinimumCount", n=20))
    translated = translate_timetable("report", timetable(
        {"__type": "asset_all", "objects": [asset("weekly"), asset("clicks"), asset("daily")]},
        [[asset("weekly"), fan_out], [asset("clicks"), at_least]], default=temporal("StartOfDayMapper")))
    assert translated.dag is None
    assert translated.unsupported == ["weekly: FanOutMapper",
                                      "clicks: RollupMapper(StartOfDayMapper, DayWindow, MinimumCount): "
                                      "wait policy MinimumCount",
                                      "daily: StartOfDayMapper"]
    assert "FanOutMapper" in (translated.problem or "")


def test_a_dag_without_a_partitioned_asset_timetable_has_no_rule() -> None:
    translated = translate_timetable("orders", {"__type": "airflow.timetables.simple.PartitionedAtRuntime",
                                                "__var": {}})
    assert translated.dag is None and "PartitionedAtRuntime" in (translated.problem or "")
    assert translate_timetable("orders", None).dag is None


def test_a_malformed_timetable_is_named_never_raised() -> None:
    """What the rule route may be sent: anything shaped like a timetable."""
    kind = "airflow.timetables.simple.PartitionedAssetTimetable"
    for var in ({"asset_condition": ["not", "a", "dict"]}, {"partition_mapper_config": [["one"]]},
                {"asset_condition": {"__type": "asset"}}, {"asset_condition": asset("a"),
                                                           "partition_mapper_config": [[asset("a"), "mapper"]]}):
        found = translate_timetable("d", {"__type": kind, "__var": var})
        assert found.dag is None and found.problem is not None and "cannot translate" in found.problem, var
