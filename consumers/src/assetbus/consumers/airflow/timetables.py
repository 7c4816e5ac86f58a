"""Airflow 3.3's serialized `PartitionedAssetTimetable` translated into an assetbus readiness rule (a ConsumerDag),
purely. docs/airflow.md, "Consumer DAGs declared once, in Airflow", tables the mappers that have an assetbus
mapping; anything else is reported by name, and the DAG then gets no rule rather than a different one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assetbus.consumers.scheduler.conditions import AllOf, AnyOf, AssetWait, Condition
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.scheduler.mappings import (
    DailyToMonthly,
    HourlyToDaily,
    Identity,
    PartitionMapping,
    StaticMap,
)

PARTITIONED_ASSET_TIMETABLE = "airflow.timetables.simple.PartitionedAssetTimetable"
_MAPPERS = "airflow.partition_mappers."


class Untranslatable(ValueError):
    """The timetable (or one of its mappers) has no assetbus equivalent; the message names it."""


@dataclass(frozen=True)
class Translation:
    """The readiness rule read from one Airflow DAG, or why there is none."""

    dag_id: str
    dag: ConsumerDag | None
    problem: str | None = None
    unsupported: list[str] = field(default_factory=list)
    """Airflow class names with no assetbus equivalent."""


def _name(encoded: dict[str, Any]) -> str:
    return str(encoded.get("__type", "?")).rsplit(".", 1)[-1]


def _var(encoded: dict[str, Any]) -> dict[str, Any]:
    value = encoded.get("__var", {})
    return value if isinstance(value, dict) else {}


def _timezone(var: dict[str, Any]) -> str:
    zone = var.get("timezone", "UTC")
    if isinstance(zone, dict):  # encode_timezone of a fixed offset: {"__type": ..., "__var": seconds}
        raise Untranslatable(f"fixed-offset time zone {zone!r}")
    return str(zone)


def translate_mapper(encoded: dict[str, Any]) -> PartitionMapping:
    """One serialized Airflow partition mapper → an assetbus mapping (Untranslatable names what has none)."""
    kind = str(encoded.get("__type", ""))
    var = _var(encoded)
    if not kind.startswith(_MAPPERS):
        raise Untranslatable(f"custom partition mapper {kind}")
    name = _name(encoded)
    if name == "IdentityMapper":
        return Identity()
    if name == "AllowedKeyMapper":
        keys = [str(key) for key in var.get("allowed_keys", [])]
        if not keys:
            raise Untranslatable("AllowedKeyMapper without keys")
        return StaticMap({key: key for key in keys})
    if name == "RollupMapper":
        return _rollup(var)
    raise Untranslatable(name)


def _rollup(var: dict[str, Any]) -> PartitionMapping:
    upstream, window, policy = var.get("upstream_mapper", {}), var.get("window", {}), var.get("wait_policy", {})
    pair = f"RollupMapper({_name(upstream)}, {_name(window)}, {_name(policy)})"
    if policy and _name(policy) != "WaitForAll":
        raise Untranslatable(f"{pair}: wait policy {_name(policy)}")
    if _var(window).get("direction", "forward") != "forward":
        raise Untranslatable(f"{pair}: backward window")
    up = _var(upstream)
    match _name(upstream), _name(window):
        case "StartOfDayMapper", "DayWindow" if up.get("output_format", "%Y-%m-%d") == "%Y-%m-%d":
            return HourlyToDaily(_timezone(up))
        case "StartOfMonthMapper", "MonthWindow" if up.get("output_format", "%Y-%m") == "%Y-%m":
            return DailyToMonthly(_timezone(up))
        case "FixedKeyMapper", "SegmentWindow":
            target = str(up.get("downstream_key", ""))
            segments = [str(s) for s in _var(window).get("segments", [])]
            return StaticMap({segment: target for segment in segments}, require_all=True)
    raise Untranslatable(pair)


def _condition(encoded: dict[str, Any], mappers: dict[str, dict[str, Any]], default: dict[str, Any],
               unsupported: list[str]) -> Condition:
    kind = encoded.get("__type")
    if kind == "asset":
        name = str(encoded["name"])
        try:
            return AssetWait(name, mapping=translate_mapper(mappers.get(name, default)))
        except Untranslatable as error:
            unsupported.append(f"{name}: {error}")
            return AssetWait(name)  # discarded: the DAG gets no rule
    if kind in ("asset_all", "asset_any"):
        parts = [_condition(item, mappers, default, unsupported) for item in encoded.get("objects", [])]
        return AllOf(*parts) if kind == "asset_all" else AnyOf(*parts)
    raise Untranslatable(f"asset expression {kind}")


def translate_timetable(dag_id: str, timetable: dict[str, Any] | None, *, description: str = "") -> Translation:
    """The assetbus rule of an Airflow DAG whose serialized timetable is `timetable`."""
    kind = str((timetable or {}).get("__type", "none"))
    if kind != PARTITIONED_ASSET_TIMETABLE:
        return Translation(dag_id, None, f"its timetable is {kind.rsplit('.', 1)[-1]}, not a PartitionedAssetTimetable")
    var = _var(timetable or {})
    unsupported: list[str] = []
    try:  # a timetable sent to the API may be anything: a malformed one is named, never a crash
        mappers = {str(asset["name"]): mapper for asset, mapper in var.get("partition_mapper_config", [])
                   if isinstance(asset, dict) and asset.get("__type") == "asset"}
        default = var.get("default_partition_mapper") or {"__type": _MAPPERS + "identity.IdentityMapper"}
        condition = _condition(var.get("asset_condition", {}), mappers, default, unsupported)
        if unsupported:
            return Translation(dag_id, None, "no assetbus equivalent for " + "; ".join(unsupported), unsupported)
        return Translation(dag_id, ConsumerDag(dag_id=dag_id, schedule=condition, description=description))
    except (ValueError, KeyError, TypeError, AttributeError) as error:  # Untranslatable, ValidationError too
        return Translation(dag_id, None, f"cannot translate its timetable: {type(error).__name__}: {error}",
                           [str(error)])
