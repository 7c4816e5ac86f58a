"""Task state and asset state: JSON values with a version for compare-and-set, and an expiry.

Every write bumps `version` (a new key starts at 1). A `Precondition` turns a write into a
compare-and-set: it only happens if the stored version is one of the expected ones (or the key
is absent), so two workers cannot silently overwrite each other's checkpoint. Each operation is
one statement (a second one only to report a failed compare-and-set).

Task state may carry `expires_at`: as in Airflow 3.3, an expired row stays readable until the
retention cleanup (`delete_expired_task_state`) deletes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Table, and_, delete, func, select, tuple_, update
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
    """A compare-and-set failed; `current` is what is stored now (None: the key is absent, or only its version
    was read); `current_version` its version (None: the key is absent)."""

    def __init__(self, key: str, current: StateEntry | None, *, current_version: int | None = None) -> None:
        version = current.version if current is not None else current_version
        found = f"version {version}" if version is not None else "no value"
        super().__init__(f"key {key!r} has {found}; the precondition does not hold")
        self.key = key
        self.current = current
        self.current_version = version


_ANY = Precondition()


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


async def _set(conn: AsyncConnection, table: Table, ident: Mapping[str, Any], key: str, value: Any,
               when: Precondition, extra: Mapping[str, Any]) -> StateEntry:
    if when.must_be_absent:
        stmt: Any = (insert(table).values(**ident, key=key, value=value, **extra)
                     .on_conflict_do_nothing().returning(*_columns(table)))
    elif when.unconditional:
        fresh = insert(table).values(**ident, key=key, value=value, **extra)
        stmt = fresh.on_conflict_do_update(
            index_elements=[*ident, "key"],
            set_={"value": fresh.excluded.value, "version": table.c.version + 1, "updated_at": func.now(),
                  **{name: fresh.excluded[name] for name in extra}},
        ).returning(*_columns(table))
    else:
        condition = _where(table, ident, key)
        if when.versions is not None:
            condition = and_(condition, table.c.version.in_(sorted(when.versions)))
        stmt = (update(table).where(condition)
                .values(value=value, version=table.c.version + 1, updated_at=func.now(), **extra)
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
    if when.unconditional:
        return False
    current = await _get(conn, table, ident, key)
    if current is not None or when.must_exist or when.versions is not None:
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


async def set_task_state(conn: AsyncConnection, ti: TaskKey, key: str, value: Any,
                         when: Precondition = _ANY, *, expires_at: datetime | None = None) -> StateEntry:
    """Write the JSON `value` under `key` (replacing its expiry); raises StateConflict if `when` does not hold."""
    return await _set(conn, task_state, _task(ti), key, value, when, {"expires_at": expires_at})


async def delete_task_state(conn: AsyncConnection, ti: TaskKey, key: str, when: Precondition = _ANY) -> bool:
    """Delete one key; False if it was absent; StateConflict if a precondition (`If-Match`) does not hold,
    an absent key included."""
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


async def set_asset_state(conn: AsyncConnection, asset_id: int, key: str, value: Any,
                          when: Precondition = _ANY) -> StateEntry:
    return await _set(conn, asset_state, {"asset_id": asset_id}, key, value, when, {})


async def delete_asset_state(conn: AsyncConnection, asset_id: int, key: str, when: Precondition = _ANY) -> bool:
    return await _delete(conn, asset_state, {"asset_id": asset_id}, key, when)


async def clear_asset_state(conn: AsyncConnection, asset_id: int) -> int:
    return await _clear(conn, asset_state, {"asset_id": asset_id})


async def delete_expired_task_state(conn: AsyncConnection, *, now: datetime | None = None, limit: int = 0) -> int:
    """Delete task state whose `expires_at` has passed (rows without one are kept), at most `limit` rows
    when `limit` > 0, in one statement. Returns how many rows were deleted."""
    moment: Any = now if now is not None else func.now()
    expired = task_state.c.expires_at < moment
    if limit <= 0:
        return int((await conn.execute(delete(task_state).where(expired))).rowcount)
    keys = (task_state.c.dag_id, task_state.c.run_id, task_state.c.task_id, task_state.c.map_index,
            task_state.c.key)
    batch = select(*keys).where(expired).limit(limit)
    return int((await conn.execute(delete(task_state).where(tuple_(*keys).in_(batch)))).rowcount)

async def list_expired_task_state(conn: AsyncConnection, *, now: datetime | None = None,
                                  limit: int = 1000) -> list[tuple[TaskKey, StateEntry]]:
    """What the cleanup would delete (a dry run), oldest expiry first."""
    moment: Any = now if now is not None else func.now()
    rows = await conn.execute(select(task_state).where(task_state.c.expires_at < moment)
                              .order_by(task_state.c.expires_at).limit(limit))
    return [(TaskKey(row.dag_id, row.run_id, row.task_id, row.map_index), _entry(row)) for row in rows]
