"""Task state and asset state: JSON values with a version for compare-and-set, and an expiry.

Every write bumps `version` (a new key starts at 1). A `Precondition` turns a write into a
compare-and-set: it only happens if the stored version is one of the expected ones (or the key
is absent), so two workers cannot silently overwrite each other's checkpoint. The writes are the
prepared statements of `state_statements` (the API and the CLI); this module reads entries with
their times (the CLI, the UI), purges runs, and finds expired task state.

Task state may carry `expires_at`: as in Airflow 3.3, an expired row stays readable until the
retention cleanup (`delete_expired_task_state`) deletes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, delete, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection

from assetbus.consumers.errors import ConsumerError
from assetbus.consumers.storage.state_tables import asset_state, task_state


@dataclass(frozen=True, slots=True)
class TaskKey:
    """A task instance: all tries of one (dag, run, task, map index) share its state."""

    dag_id: str
    run_id: str
    task_id: str
    map_index: int


@dataclass(frozen=True, slots=True)
class StateEntry:
    key: str
    value: Any
    """A JSON value (decoded: dict, list, str, int, float or bool)."""
    version: int
    updated_at: datetime
    expires_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Precondition:
    """A compare-and-set condition. The default (all empty) is an unconditional write."""

    versions: frozenset[int] | None = None
    """The stored version must be one of these (`If-Match: "3"`)."""
    must_exist: bool = False
    """The key must exist, whatever its version (`If-Match: *`)."""
    must_be_absent: bool = False
    """The key must not exist (`If-None-Match: *`): create only."""

    @property
    def unconditional(self) -> bool:
        return self.versions is None and not self.must_exist and not self.must_be_absent


class StateConflict(ConsumerError):
    """A compare-and-set failed; `current_version` is the version stored now (None: the key is absent)."""

    def __init__(self, key: str, current_version: int | None) -> None:
        found = f"version {current_version}" if current_version is not None else "no value"
        super().__init__(f"key {key!r} has {found}; the precondition does not hold")
        self.key = key
        self.current_version = current_version


def _where(table: Table, ident: Mapping[str, Any], key: str | None = None) -> ColumnElement[bool]:
    clauses = [table.c[name] == value for name, value in ident.items()]
    if key is not None:
        clauses.append(table.c.key == key)
    return and_(*clauses)


def _entry(row: Any) -> StateEntry:
    return StateEntry(key=row.key, value=row.value, version=row.version, updated_at=row.updated_at,
                      expires_at=getattr(row, "expires_at", None))


def _columns(table: Table) -> tuple[Any, ...]:
    expiry = (table.c.expires_at,) if "expires_at" in table.c else ()
    return (table.c.key, table.c.value, table.c.version, table.c.updated_at, *expiry)


async def _get(conn: AsyncConnection, table: Table, ident: Mapping[str, Any], key: str) -> StateEntry | None:
    row = (await conn.execute(select(*_columns(table)).where(_where(table, ident, key)))).one_or_none()
    return _entry(row) if row is not None else None


async def _list(conn: AsyncConnection, table: Table, ident: Mapping[str, Any]) -> list[StateEntry]:
    rows = await conn.execute(select(*_columns(table)).where(_where(table, ident)).order_by(table.c.key))
    return [_entry(row) for row in rows]


def _task(ti: TaskKey) -> dict[str, Any]:
    return {"dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id, "map_index": ti.map_index}


async def get_task_state(conn: AsyncConnection, ti: TaskKey, key: str) -> StateEntry | None:
    return await _get(conn, task_state, _task(ti), key)


async def list_task_state(conn: AsyncConnection, ti: TaskKey) -> list[StateEntry]:
    return await _list(conn, task_state, _task(ti))


async def purge_run_state(conn: AsyncConnection, dag_id: str, run_id: str) -> int:
    """Delete the task state of every task of a DAG run (called when the run is purged)."""
    purged = delete(task_state).where(_where(task_state, {"dag_id": dag_id, "run_id": run_id}))
    return int((await conn.execute(purged)).rowcount)


async def get_asset_state(conn: AsyncConnection, asset_id: int, key: str) -> StateEntry | None:
    return await _get(conn, asset_state, {"asset_id": asset_id}, key)


async def list_asset_state(conn: AsyncConnection, asset_id: int) -> list[StateEntry]:
    return await _list(conn, asset_state, {"asset_id": asset_id})


async def delete_expired_task_state(conn: AsyncConnection, *, limit: int = 0) -> int:
    """Delete task state whose `expires_at` has passed (rows without one are kept), at most `limit` rows
    when `limit` > 0, in one statement. Returns how many rows were deleted."""
    expired = task_state.c.expires_at < func.now()
    if limit <= 0:
        return int((await conn.execute(delete(task_state).where(expired))).rowcount)
    keys = (task_state.c.dag_id, task_state.c.run_id, task_state.c.task_id, task_state.c.map_index,
            task_state.c.key)
    batch = select(*keys).where(expired).limit(limit)
    return int((await conn.execute(delete(task_state).where(tuple_(*keys).in_(batch)))).rowcount)


async def list_expired_task_state(conn: AsyncConnection, *, limit: int = 1000) -> list[tuple[TaskKey, StateEntry]]:
    """What the cleanup would delete (a dry run), oldest expiry first."""
    rows = await conn.execute(select(task_state).where(task_state.c.expires_at < func.now())
                              .order_by(task_state.c.expires_at).limit(limit))
    return [(TaskKey(row.dag_id, row.run_id, row.task_id, row.map_index), _entry(row)) for row in rows]
