"""Task state and asset state: string values with a version for compare-and-set.

Every write bumps `version` (a new key starts at 1). A `Precondition` turns a write into a
compare-and-set: it only happens if the stored version is one of the expected ones (or the key
is absent), so two workers cannot silently overwrite each other's checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
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
    value: str
    version: int
    updated_at: datetime


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
    """A compare-and-set failed; `current` is what is stored now (None: the key is absent)."""

    def __init__(self, key: str, current: StateEntry | None) -> None:
        found = f"version {current.version}" if current is not None else "no value"
        super().__init__(f"key {key!r} has {found}; the precondition does not hold")
        self.key = key
        self.current = current


_ANY = Precondition()


def _where(table: Table, ident: Mapping[str, Any], key: str | None = None) -> ColumnElement[bool]:
    clauses = [table.c[name] == value for name, value in ident.items()]
    if key is not None:
        clauses.append(table.c.key == key)
    return and_(*clauses)


def _entry(row: Any) -> StateEntry:
    return StateEntry(key=row.key, value=row.value, version=row.version, updated_at=row.updated_at)


def _columns(table: Table) -> tuple[Any, ...]:
    return (table.c.key, table.c.value, table.c.version, table.c.updated_at)


async def _get(conn: AsyncConnection, table: Table, ident: Mapping[str, Any], key: str) -> StateEntry | None:
    row = (await conn.execute(select(*_columns(table)).where(_where(table, ident, key)))).one_or_none()
    return _entry(row) if row is not None else None


async def _list(conn: AsyncConnection, table: Table, ident: Mapping[str, Any]) -> list[StateEntry]:
    rows = await conn.execute(select(*_columns(table)).where(_where(table, ident)).order_by(table.c.key))
    return [_entry(row) for row in rows]


async def _set(conn: AsyncConnection, table: Table, ident: Mapping[str, Any], key: str, value: str,
               when: Precondition) -> StateEntry:
    if when.must_be_absent:
        stmt: Any = (insert(table).values(**ident, key=key, value=value)
                     .on_conflict_do_nothing().returning(*_columns(table)))
    elif when.unconditional:
        fresh = insert(table).values(**ident, key=key, value=value)
        stmt = fresh.on_conflict_do_update(
            index_elements=[*ident, "key"],
            set_={"value": fresh.excluded.value, "version": table.c.version + 1, "updated_at": func.now()},
        ).returning(*_columns(table))
    else:
        condition = _where(table, ident, key)
        if when.versions is not None:
            condition = and_(condition, table.c.version.in_(sorted(when.versions)))
        stmt = (update(table).where(condition)
                .values(value=value, version=table.c.version + 1, updated_at=func.now())
                .returning(*_columns(table)))
    row = (await conn.execute(stmt)).one_or_none()
    if row is None:
        raise StateConflict(key, await _get(conn, table, ident, key))
    return _entry(row)


async def _delete(conn: AsyncConnection, table: Table, ident: Mapping[str, Any], key: str,
                  when: Precondition) -> bool:
    condition = _where(table, ident, key)
    if when.versions is not None:
        condition = and_(condition, table.c.version.in_(sorted(when.versions)))
    deleted = (await conn.execute(delete(table).where(condition).returning(table.c.version))).one_or_none()
    if deleted is not None:
        return True
    current = await _get(conn, table, ident, key)
    if current is not None:
        raise StateConflict(key, current)
    return False


async def _clear(conn: AsyncConnection, table: Table, ident: Mapping[str, Any]) -> int:
    return int((await conn.execute(delete(table).where(_where(table, ident)))).rowcount)


def _task(ti: TaskKey) -> dict[str, Any]:
    return {"dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id, "map_index": ti.map_index}


async def get_task_state(conn: AsyncConnection, ti: TaskKey, key: str) -> StateEntry | None:
    return await _get(conn, task_state, _task(ti), key)


async def list_task_state(conn: AsyncConnection, ti: TaskKey) -> list[StateEntry]:
    return await _list(conn, task_state, _task(ti))


async def set_task_state(conn: AsyncConnection, ti: TaskKey, key: str, value: str,
                         when: Precondition = _ANY) -> StateEntry:
    """Write `value` under `key`; raises StateConflict if `when` does not hold."""
    return await _set(conn, task_state, _task(ti), key, value, when)


async def delete_task_state(conn: AsyncConnection, ti: TaskKey, key: str, when: Precondition = _ANY) -> bool:
    """Delete one key; False if it was absent; StateConflict if its version is not the expected one."""
    return await _delete(conn, task_state, _task(ti), key, when)


async def clear_task_state(conn: AsyncConnection, ti: TaskKey, *, all_map_indices: bool = False) -> int:
    """Delete every key of the task instance (or of every map index of its task); returns how many."""
    ident = _task(ti)
    if all_map_indices:
        del ident["map_index"]
    return await _clear(conn, task_state, ident)


async def purge_run_state(conn: AsyncConnection, dag_id: str, run_id: str) -> int:
    """Delete the task state of every task of a DAG run (called when the run is purged)."""
    return await _clear(conn, task_state, {"dag_id": dag_id, "run_id": run_id})


async def get_asset_state(conn: AsyncConnection, asset_id: int, key: str) -> StateEntry | None:
    return await _get(conn, asset_state, {"asset_id": asset_id}, key)


async def list_asset_state(conn: AsyncConnection, asset_id: int) -> list[StateEntry]:
    return await _list(conn, asset_state, {"asset_id": asset_id})


async def set_asset_state(conn: AsyncConnection, asset_id: int, key: str, value: str,
                          when: Precondition = _ANY) -> StateEntry:
    return await _set(conn, asset_state, {"asset_id": asset_id}, key, value, when)


async def delete_asset_state(conn: AsyncConnection, asset_id: int, key: str, when: Precondition = _ANY) -> bool:
    return await _delete(conn, asset_state, {"asset_id": asset_id}, key, when)


async def clear_asset_state(conn: AsyncConnection, asset_id: int) -> int:
    return await _clear(conn, asset_state, {"asset_id": asset_id})
