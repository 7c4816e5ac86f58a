"""Asset conditions: all-of / any-of, nestable, evaluated per target partition against arrived slots."""

from __future__ import annotations

from assetbus.consumers.scheduler import AllOf, AnyOf, AssetWait, HourlyToDaily, Identity

DAY = "2026-10-01"


def test_an_asset_wait_holds_once_any_event_of_the_asset_arrived() -> None:
    wait = AssetWait("orders")
    assert not wait.holds({}, "k")
    assert wait.holds({"orders": frozenset({"k"})}, "k")


def test_all_of_needs_every_asset() -> None:
    condition = AllOf(AssetWait("orders"), AssetWait("customers"))
    assert not condition.holds({"orders": frozenset({"k"})}, "k")
    assert condition.holds({"orders": frozenset({"k"}), "customers": frozenset({"k"})}, "k")


def test_any_of_needs_one_asset() -> None:
    condition = AnyOf(AssetWait("eu"), AssetWait("us"))
    assert not condition.holds({}, "k")
    assert condition.holds({"us": frozenset({"k"})}, "k")


def test_conditions_nest() -> None:
    condition = AllOf(AssetWait("orders"), AnyOf(AssetWait("eu"), AssetWait("us")))
    assert not condition.holds({"orders": frozenset({"k"})}, "k")
    assert condition.holds({"orders": frozenset({"k"}), "eu": frozenset({"k"})}, "k")
    assert [w.asset for w in condition.waits()] == ["orders", "eu", "us"]


def test_a_roll_up_wait_holds_only_with_the_whole_window() -> None:
    wait = AssetWait("clicks", mapping=HourlyToDaily("UTC"))
    hours = sorted(wait.mapping.window(DAY) or ())
    assert not wait.holds({"clicks": frozenset(hours[:23])}, DAY)
    assert wait.holds({"clicks": frozenset(hours)}, DAY)


def test_progress_says_what_is_missing() -> None:
    condition = AllOf(AssetWait("clicks", mapping=HourlyToDaily("UTC")), AssetWait("fx", mapping=Identity()))
    hours = sorted(AssetWait("clicks", mapping=HourlyToDaily("UTC")).mapping.window(DAY) or ())
    report = condition.progress({"clicks": frozenset(hours[:2])}, DAY)
    assert [str(p) for p in report] == ["clicks 2/24 hours", "fx 0/1 events"]
    assert not any(p.complete for p in report)


def test_conditions_round_trip_through_json() -> None:
    condition = AllOf(AssetWait("a", mapping=HourlyToDaily("Europe/Amsterdam")), AnyOf(AssetWait("b")))
    assert AllOf.model_validate(condition.model_dump(mode="json")) == condition
