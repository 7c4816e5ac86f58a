"""Task state and asset state: JSON values with a version for compare-and-set, and an expiry (docs/state.md).

The API (on a `raw_pool` connection) and the `assetbus state` CLI run each operation as ONE prepared asyncpg
statement: the asset registration check is a CTE of it, and a failed compare-and-set reports the version
stored now from the same snapshot. Values travel as JSON text both ways; the column is `json`, not `jsonb`, so
a value comes back as written, its keys in their order (as Airflow's store keeps them). Entries with their
times, run purges and the expiry queries run through SQLAlchemy on the caller's connection. An expired row
stays readable until the retention cleanup deletes it, as in Airflow 3.3 (`MetastoreBackend.cleanup()`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy import ColumnElement, Table, and_, delete, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.errors import ConsumerError
from assetbus.consumers.storage.tables import asset_state, task_state
from assetbus.producers.kafka.periodic import every

log = logging.getLogger("assetbus.state.retention")


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


def _where(table: Table, ident: Mapping[str, Any]) -> ColumnElement[bool]:
    return and_(*(table.c[name] == value for name, value in ident.items()))


def _entry(row: Any) -> StateEntry:
    return StateEntry(key=row.key, value=row.value, version=row.version, updated_at=row.updated_at,
                      expires_at=getattr(row, "expires_at", None))


def _columns(table: Table) -> list[Any]:
    return [table.c[name] for name in ("key", "value", "version", "updated_at", "expires_at") if name in table.c]


async def _get(conn: AsyncConnection, table: Table, ident: Mapping[str, Any], key: str) -> StateEntry | None:
    row = (await conn.execute(select(*_columns(table)).where(_where(table, {**ident, "key": key})))).one_or_none()
    return _entry(row) if row is not None else None


async def _list(conn: AsyncConnection, table: Table, ident: Mapping[str, Any]) -> list[StateEntry]:
    rows = await conn.execute(select(*_columns(table)).where(_where(table, ident)).order_by(table.c.key))
    return [_entry(row) for row in rows]


async def get_task_state(conn: AsyncConnection, ti: TaskKey, key: str) -> StateEntry | None:
    return await _get(conn, task_state, asdict(ti), key)


async def list_task_state(conn: AsyncConnection, ti: TaskKey) -> list[StateEntry]:
    return await _list(conn, task_state, asdict(ti))


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


async def delete_expired_state(engine: AsyncEngine, *, batch_size: int = 0) -> int:
    """One cleanup pass: every expired row, `batch_size` per transaction (0: all in one). Returns the count."""
    total = 0
    while True:
        async with engine.begin() as conn:
            deleted = await delete_expired_task_state(conn, limit=batch_size)
        total += deleted
        if batch_size <= 0 or deleted < batch_size:
            return total


@contextlib.asynccontextmanager
async def periodic_cleanup(engine: AsyncEngine, interval_s: float | None, *, batch_size: int = 0
                           ) -> AsyncIterator[None]:
    """A cleanup pass every `interval_s` in the background while the block runs (not at all if `interval_s` is
    None), on the toolkit's periodic loop: a failed pass is logged and tried again next time."""

    async def cleanup_pass() -> None:
        if deleted := await delete_expired_state(engine, batch_size=batch_size):
            log.info("deleted %d expired task state rows", deleted)

    async with contextlib.AsyncExitStack() as stack:
        if interval_s is not None:
            every(interval_s, cleanup_pass, what="state cleanup", log=log, stack=stack)
        yield


@dataclass(frozen=True, slots=True)
class RawValue:
    """A stored value as PostgreSQL prints it (JSON text) and its version."""

    json: str
    version: int


class AssetNotRegistered(ConsumerError):
    """The caller's task is not registered with the asset (or the asset is unknown or inactive)."""

    def __init__(self) -> None:
        super().__init__("the task is not registered with the asset, or the asset is unknown or inactive")


def _versions(when: Precondition) -> list[int] | None:
    return sorted(when.versions) if when.versions is not None else None


# --- task state: $1 dag_id, $2 run_id, $3 task_id, $4 map_index, $5 key -------------------------------

_TI = "dag_id = $1 AND run_id = $2 AND task_id = $3 AND map_index = $4"
_TI_KEY = f"{_TI} AND key = $5"

_TASK_INSERT = ("INSERT INTO task_state (dag_id, run_id, task_id, map_index, key, value, expires_at) "
                "VALUES ($1, $2, $3, $4, $5, $6::json, $7) ON CONFLICT")
_TASK_ANSWER = ("RETURNING version) SELECT (SELECT version FROM changed), "
                f"(SELECT version FROM task_state WHERE {_TI_KEY})")
"""Closes a `changed` CTE: the version it wrote (None: the precondition failed) and the version stored now."""

_TASK_GET = f"SELECT value::text, version FROM task_state WHERE {_TI_KEY}"
_TASK_UPSERT = (f"{_TASK_INSERT} (dag_id, run_id, task_id, map_index, key) DO UPDATE SET value = excluded.value, "
                "version = task_state.version + 1, updated_at = now(), expires_at = excluded.expires_at "
                "RETURNING version")
_TASK_CREATE = f"WITH changed AS ({_TASK_INSERT} DO NOTHING {_TASK_ANSWER}"
_TASK_REPLACE = ("WITH changed AS (UPDATE task_state SET value = $6::json, version = version + 1, updated_at = now(), "
                 f"expires_at = $7 WHERE {_TI_KEY} AND ($8::int[] IS NULL OR version = ANY($8)) {_TASK_ANSWER}")
_TASK_DELETE = f"DELETE FROM task_state WHERE {_TI_KEY} RETURNING version"
_TASK_DELETE_IF = (f"WITH changed AS (DELETE FROM task_state WHERE {_TI_KEY} "
                   f"AND ($6::int[] IS NULL OR version = ANY($6)) {_TASK_ANSWER}")
_TASK_CLEAR = f"DELETE FROM task_state WHERE {_TI}"
_TASK_CLEAR_ALL = "DELETE FROM task_state WHERE dag_id = $1 AND run_id = $2 AND task_id = $3"


def _ti(ti: TaskKey) -> tuple[str, str, str, int]:
    return ti.dag_id, ti.run_id, ti.task_id, ti.map_index


def _count(status: str) -> int:
    """The row count of a command status (`DELETE 3`)."""
    return int(status.rsplit(" ", 1)[-1])


async def get_task_value(conn: asyncpg.Connection, ti: TaskKey, key: str) -> RawValue | None:
    row = await conn.fetchrow(_TASK_GET, *_ti(ti), key)
    return RawValue(row[0], row[1]) if row is not None else None


async def set_task_value(conn: asyncpg.Connection, ti: TaskKey, key: str, value_json: str, when: Precondition,
                         expires_at: datetime | None) -> int:
    """Write `value_json` under `key`; the new version. Raises StateConflict if `when` does not hold."""
    if when.unconditional:
        return int(await conn.fetchval(_TASK_UPSERT, *_ti(ti), key, value_json, expires_at))
    if when.must_be_absent:
        written, current = await conn.fetchrow(_TASK_CREATE, *_ti(ti), key, value_json, expires_at)
    else:
        written, current = await conn.fetchrow(_TASK_REPLACE, *_ti(ti), key, value_json, expires_at,
                                               _versions(when))
    if written is None:
        raise StateConflict(key, current)
    return int(written)


async def delete_task_value(conn: asyncpg.Connection, ti: TaskKey, key: str, when: Precondition) -> bool:
    """Delete one key; False if it was absent; StateConflict if a precondition does not hold (an absent key
    included)."""
    if when.unconditional:
        return await conn.fetchval(_TASK_DELETE, *_ti(ti), key) is not None
    gone, current = await conn.fetchrow(_TASK_DELETE_IF, *_ti(ti), key, _versions(when))
    if gone is None:
        raise StateConflict(key, current)
    return True


async def clear_task(conn: asyncpg.Connection, ti: TaskKey, *, all_map_indices: bool = False) -> int:
    """Delete every key of the task instance (or of every map index of its task); how many."""
    if all_map_indices:
        return _count(await conn.execute(_TASK_CLEAR_ALL, ti.dag_id, ti.run_id, ti.task_id))
    return _count(await conn.execute(_TASK_CLEAR, *_ti(ti)))


# --- asset state: $1 asset name (or URI), $2 dag_id, $3 task_id, $4 key --------------------------------

_CURRENT = "(SELECT version FROM asset_state WHERE asset_id = (SELECT id FROM registered) AND key = $4)"


def _asset_statements(by: str) -> dict[str, str]:
    """`registered` is the asset's id if the task is registered with it (either role) and it is active. An
    operator (`by` "operator", the CLI) names no task ($2 and $3 null) and reaches any registered asset by name."""
    head = ("WITH registered AS (SELECT id FROM assets WHERE name = $1 AND $2::text IS NULL AND $3::text IS NULL)"
            if by == "operator" else
            "WITH registered AS (SELECT assets.id FROM assets JOIN task_assets ON task_assets.asset_id = assets.id "
            f"WHERE assets.{by} = $1 AND assets.active AND task_assets.dag_id = $2 AND task_assets.task_id = $3 "
            "LIMIT 1)")
    insert = "INSERT INTO asset_state (asset_id, key, value) SELECT id, $4, $5::json FROM registered ON CONFLICT"
    answer = f"RETURNING version) SELECT (SELECT id FROM registered), (SELECT version FROM changed), {_CURRENT}"
    return {
        "get": f"{head} SELECT registered.id, asset_state.value::text, asset_state.version FROM registered "
               "LEFT JOIN asset_state ON asset_state.asset_id = registered.id AND asset_state.key = $4",
        "upsert": f"{head}, changed AS ({insert} (asset_id, key) DO UPDATE SET value = excluded.value, "
                  f"version = asset_state.version + 1, updated_at = now() {answer}",
        "create": f"{head}, changed AS ({insert} DO NOTHING {answer}",
        "replace": f"{head}, changed AS (UPDATE asset_state SET value = $5::json, version = version + 1, "
                   "updated_at = now() WHERE asset_id = (SELECT id FROM registered) AND key = $4 "
                   f"AND ($6::int[] IS NULL OR version = ANY($6)) {answer}",
        "delete": f"{head}, changed AS (DELETE FROM asset_state WHERE asset_id = (SELECT id FROM registered) "
                  f"AND key = $4 AND ($5::int[] IS NULL OR version = ANY($5)) {answer}",
        "clear": f"{head}, gone AS (DELETE FROM asset_state WHERE asset_id = (SELECT id FROM registered) "
                 "RETURNING 1) SELECT (SELECT id FROM registered), (SELECT count(*) FROM gone)",
    }


_ASSET = {by: _asset_statements(by) for by in ("name", "uri", "operator")}


@dataclass(frozen=True, slots=True)
class AssetRef:
    """An asset as a route names it (`by` is "name" or "uri"), and the task that asks for its state; or
    as an operator names it (`by` "operator", the name, no task)."""

    by: str
    value: str
    dag_id: str | None = None
    task_id: str | None = None

    async def fetch(self, conn: asyncpg.Connection, what: str, *args: Any) -> Any:
        """The row of statement `what` run for this asset (its name or URI and task, then `args`). Raises
        AssetNotRegistered when the statement found no registered asset (no row, or no asset id in it)."""
        row = await conn.fetchrow(_ASSET[self.by][what], self.value, self.dag_id, self.task_id, *args)
        if row is None or row[0] is None:
            raise AssetNotRegistered()
        return row


async def get_asset_value(conn: asyncpg.Connection, asset: AssetRef, key: str) -> RawValue | None:
    """The value under `key` (None: absent). Raises AssetNotRegistered."""
    row = await asset.fetch(conn, "get", key)
    return RawValue(row[1], row[2]) if row[2] is not None else None


async def set_asset_value(conn: asyncpg.Connection, asset: AssetRef, key: str, value_json: str,
                          when: Precondition) -> int:
    """Write `value_json` under `key`; the new version. Raises AssetNotRegistered, or StateConflict."""
    if when.unconditional or when.must_be_absent:
        row = await asset.fetch(conn, "upsert" if when.unconditional else "create", key, value_json)
    else:
        row = await asset.fetch(conn, "replace", key, value_json, _versions(when))
    _, written, current = row
    if written is None:
        raise StateConflict(key, current)
    return int(written)


async def delete_asset_value(conn: asyncpg.Connection, asset: AssetRef, key: str, when: Precondition) -> bool:
    """Delete one key; False if it was absent. Raises AssetNotRegistered, or StateConflict."""
    _, gone, current = await asset.fetch(conn, "delete", key, _versions(when))
    if gone is not None:
        return True
    if when.unconditional:
        return False
    raise StateConflict(key, current)


async def clear_asset(conn: asyncpg.Connection, asset: AssetRef) -> int:
    """Delete every key of the asset; how many. Raises AssetNotRegistered."""
    _, count = await asset.fetch(conn, "clear")
    return int(count)
