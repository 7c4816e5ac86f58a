"""Task-asset registrations: which tasks are inlets or outlets of which assets.

Asset state is open only to registered tasks; `registered_asset_id` is that check.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.state_tables import ROLES, task_assets
from assetbus.consumers.storage.tables import assets


@dataclass(frozen=True, slots=True)
class TaskAssetRow:
    dag_id: str
    task_id: str
    asset_name: str
    role: str
    created_at: datetime


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")


async def _asset_id(conn: AsyncConnection, asset_name: str) -> int:
    found = (await conn.execute(select(assets.c.id).where(assets.c.name == asset_name))).scalar_one_or_none()
    if found is None:
        raise ValueError(f"asset {asset_name!r} is not registered (`assetbus assets register` it first)")
    return int(found)


async def attach_task_asset(conn: AsyncConnection, dag_id: str, task_id: str, asset_name: str, role: str) -> bool:
    """Register the task as an inlet or outlet of the asset. True if new; registering twice is a no-op."""
    _check_role(role)
    asset_id = await _asset_id(conn, asset_name)
    stmt = (insert(task_assets).values(dag_id=dag_id, task_id=task_id, asset_id=asset_id, role=role)
            .on_conflict_do_nothing().returning(task_assets.c.role))
    return (await conn.execute(stmt)).one_or_none() is not None


async def detach_task_asset(conn: AsyncConnection, dag_id: str, task_id: str, asset_name: str,
                            role: str | None = None) -> int:
    """Remove the task's registration with the asset (one role, or both); returns how many went."""
    if role is not None:
        _check_role(role)
    asset_id = await _asset_id(conn, asset_name)
    condition = and_(task_assets.c.dag_id == dag_id, task_assets.c.task_id == task_id,
                     task_assets.c.asset_id == asset_id)
    if role is not None:
        condition = and_(condition, task_assets.c.role == role)
    return int((await conn.execute(delete(task_assets).where(condition))).rowcount)


async def list_task_assets(conn: AsyncConnection, dag_id: str | None = None) -> list[TaskAssetRow]:
    query = (select(task_assets.c.dag_id, task_assets.c.task_id, assets.c.name, task_assets.c.role,
                    task_assets.c.created_at)
             .join(assets, assets.c.id == task_assets.c.asset_id)
             .order_by(task_assets.c.dag_id, task_assets.c.task_id, assets.c.name, task_assets.c.role))
    if dag_id is not None:
        query = query.where(task_assets.c.dag_id == dag_id)
    return [TaskAssetRow(*row) for row in await conn.execute(query)]


def registered_asset_query(dag_id: str, task_id: str, asset_name: str | None = None, *,
                           uri: str | None = None) -> Select[Any]:
    """The id of the active asset named `asset_name` (or with URI `uri`), if the task is registered
    with it (either role): a query, to embed in a state statement (one round trip)."""
    if (asset_name is None) == (uri is None):
        raise ValueError("pass an asset name or a URI")
    which = assets.c.name == asset_name if asset_name is not None else assets.c.uri == uri
    return (select(assets.c.id)
            .join(task_assets, task_assets.c.asset_id == assets.c.id)
            .where(which, assets.c.active.is_(True),
                   task_assets.c.dag_id == dag_id, task_assets.c.task_id == task_id)
            .limit(1))


async def registered_asset_id(conn: AsyncConnection, dag_id: str, task_id: str, asset_name: str | None = None,
                              *, uri: str | None = None) -> int | None:
    """The asset's id if the task is registered with it (either role) and it is active; else None."""
    query = registered_asset_query(dag_id, task_id, asset_name, uri=uri)
    found = (await conn.execute(query)).scalar_one_or_none()
    return int(found) if found is not None else None
