"""Assets and task↔asset registrations kept in step with Airflow's `GET /api/v2/assets` (docs/airflow.md,
"Keeping assets and registrations in step"): `outlets` attach as role `outlet`, `inlets` as `inlet`.
Idempotent; an asset registered with another URI is reported, not overwritten.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.storage import assets_by_name, register_asset
from assetbus.consumers.storage.task_assets import attach_task_asset


@dataclass(frozen=True)
class AirflowAsset:
    name: str
    uri: str
    outlets: tuple[tuple[str, str], ...]
    """(dag_id, task_id) of the tasks that declare it as an outlet."""
    inlets: tuple[tuple[str, str], ...]


@dataclass
class AirflowSyncReport:
    registered: list[str] = field(default_factory=list)
    """Assets new in assetbus."""
    unchanged: list[str] = field(default_factory=list)
    attached: list[tuple[str, str, str, str]] = field(default_factory=list)
    """New (dag_id, task_id, asset, role) registrations."""
    errors: dict[str, str] = field(default_factory=dict)
    """Asset name → why it was not synced."""

    @property
    def ok(self) -> bool:
        return not self.errors


def _tasks(refs: list[dict[str, Any]], dag_ids: Collection[str] | None) -> tuple[tuple[str, str], ...]:
    found = {(ref["dag_id"], ref["task_id"]) for ref in refs if dag_ids is None or ref["dag_id"] in dag_ids}
    return tuple(sorted(found))


async def read_airflow_assets(airflow: AirflowClient, dag_ids: Collection[str] | None = None) -> list[AirflowAsset]:
    """Airflow's assets with their producing and consuming tasks (only those of `dag_ids`, if given)."""
    found = []
    for item in await airflow.pages("/assets", "assets"):
        outlets = _tasks(item.get("producing_tasks", []), dag_ids)
        inlets = _tasks(item.get("consuming_tasks", []), dag_ids)
        scheduled = [ref["dag_id"] for ref in item.get("scheduled_dags", [])]
        if dag_ids is not None and not (outlets or inlets or set(scheduled) & set(dag_ids)):
            continue
        found.append(AirflowAsset(item["name"], item["uri"], outlets, inlets))
    return sorted(found, key=lambda a: a.name)


async def apply_airflow_assets(conn: AsyncConnection, found: list[AirflowAsset]) -> AirflowSyncReport:
    """Register the assets and attach their tasks (call in one transaction)."""
    report = AirflowSyncReport()
    known = await assets_by_name(conn, [a.name for a in found])
    for asset in found:
        existing = known.get(asset.name)
        if existing is not None and existing.uri != asset.uri:
            report.errors[asset.name] = (f"registered in assetbus with URI {existing.uri!r}, "
                                         f"but Airflow declares {asset.uri!r}")
            continue
        try:
            await register_asset(conn, asset.name, asset.uri)
        except ValueError as error:
            report.errors[asset.name] = str(error)
            continue
        (report.unchanged if existing is not None and existing.active else report.registered).append(asset.name)
        for role, tasks in (("outlet", asset.outlets), ("inlet", asset.inlets)):
            for dag_id, task_id in tasks:
                if await attach_task_asset(conn, dag_id, task_id, asset.name, role):
                    report.attached.append((dag_id, task_id, asset.name, role))
    return report
