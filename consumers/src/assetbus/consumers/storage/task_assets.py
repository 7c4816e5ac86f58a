"""Task-asset registrations: which tasks are inlets or outlets of which assets.

Asset state is open only to registered tasks: each state statement checks it (`state`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.storage.tables import ROLES, assets, task_assets


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
    stmt = delete(task_assets).where(task_assets.c.dag_id == dag_id, task_assets.c.task_id == task_id,
                                     task_assets.c.asset_id == asset_id)
    if role is not None:
        stmt = stmt.where(task_assets.c.role == role)
    return int((await conn.execute(stmt)).rowcount)


async def list_task_assets(conn: AsyncConnection, dag_id: str | None = None) -> list[TaskAssetRow]:
    query = (select(task_assets.c.dag_id, task_assets.c.task_id, assets.c.name, task_assets.c.role,
                    task_assets.c.created_at)
             .join(assets, assets.c.id == task_assets.c.asset_id)
             .order_by(task_assets.c.dag_id, task_assets.c.task_id, assets.c.name, task_assets.c.role))
    if dag_id is not None:
        query = query.where(task_assets.c.dag_id == dag_id)
    return [TaskAssetRow(*row) for row in await conn.execute(query)]


async def declared_assets(conn: AsyncConnection, dag_id: str, task_id: str | None = None, *,
                          inlets: bool = False) -> list[dict[str, str]]:
    """The active assets a task's tokens may publish, as {"name", "uri"} objects (their `publish` claim).

    For a task: the outlets it is registered with, and with `inlets` its inlets too (its callbacks'
    tokens). For a DAG run's callbacks (`task_id` None), which Airflow lets declare nothing of their
    own: every asset any task of the DAG is registered with, either role (an asset only a callback
    emits is listed as an inlet so that Airflow knows it).
    """
    query = (select(assets.c.name, assets.c.uri).distinct()
             .join(task_assets, task_assets.c.asset_id == assets.c.id)
             .where(task_assets.c.dag_id == dag_id, assets.c.active.is_(True))
             .order_by(assets.c.name))
    if task_id is not None:
        roles = ROLES if inlets else ("outlet",)
        query = query.where(task_assets.c.task_id == task_id, task_assets.c.role.in_(roles))
    return [{"name": name, "uri": uri} for name, uri in await conn.execute(query)]
