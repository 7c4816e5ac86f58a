"""`assetbus state get|set|clear|purge-run|cleanup`: operators read and repair task state and asset state.

Operators work on the database directly (they hold DATABASE_URL); tasks go through the API. Values are
JSON, as in the API.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from assetbus.cli.common import JSON_OPTION, console, database, fail, on_database, run
from assetbus.cli.output import print_json, print_rows

if TYPE_CHECKING:
    import asyncpg
    from sqlalchemy.ext.asyncio import AsyncConnection

    from assetbus.consumers.storage.state import AssetRef, StateEntry

app = typer.Typer(help="Read, write and clear task state and asset state (operators).", no_args_is_help=True)
T = TypeVar("T")

DAG = typer.Option(None, "--dag", help="DAG id (task state).")
RUN = typer.Option(None, "--run", help="DAG run id (task state).")
TASK = typer.Option(None, "--task", help="Task id (task state).")
MAP_INDEX = typer.Option(-1, "--map-index", help="Map index (-1: unmapped).")
ASSET = typer.Option(None, "--asset", help="Asset name (asset state), instead of --dag/--run/--task.")


class Target:
    """A task instance or an asset, from the command line."""

    def __init__(self, dag: str | None, run_id: str | None, task: str | None, map_index: int,
                 asset: str | None) -> None:
        task_given = [dag, run_id, task]
        if asset is not None and any(v is not None for v in task_given):
            fail("name either --asset or --dag/--run/--task, not both")
        if asset is None and any(v is None for v in task_given):
            fail("name a task instance (--dag, --run and --task) or an asset (--asset)")
        from assetbus.consumers.storage.state import TaskKey

        self.asset = asset
        self.ti = TaskKey(dag, run_id, task, map_index) if asset is None else None  # type: ignore[arg-type]

    def __str__(self) -> str:
        if self.ti is not None:
            return f"task {self.ti.dag_id}/{self.ti.run_id}/{self.ti.task_id}[{self.ti.map_index}]"
        return f"asset {self.asset}"

    async def asset_id(self, conn: AsyncConnection) -> int:
        from assetbus.consumers.storage import assets_by_name

        assert self.asset is not None
        found = (await assets_by_name(conn, [self.asset])).get(self.asset)
        if found is None:
            fail(f"asset {self.asset!r} is not registered")
        return found.id

    def ref(self) -> AssetRef:
        from assetbus.consumers.storage.state import AssetRef

        assert self.asset is not None
        return AssetRef("operator", self.asset)

    def statement(self, work: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """`work` with the API's prepared statements (`storage.state`) on the transaction's asyncpg connection."""
        from assetbus.consumers.storage.state import AssetNotRegistered

        async def on_driver(conn: AsyncConnection) -> T:
            return await work((await conn.get_raw_connection()).driver_connection)

        try:
            return _in_transaction(on_driver)
        except AssetNotRegistered:
            fail(f"asset {self.asset!r} is not registered")


def _in_transaction(work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
    from assetbus.consumers.storage.state import StateConflict

    return on_database(work, transaction=True, refused=(StateConflict,))


def _parse_value(value: str, as_text: bool) -> str:
    """VALUE as the JSON text to store (with --text, VALUE as a JSON string), checked as the API checks it."""
    from assetbus.consumers.api.models import encoded_value

    if as_text:
        parsed: Any = value
    else:
        try:
            parsed = json.loads(value)
        except ValueError:
            fail(f"VALUE is not JSON: {value[:60]!r} (quote a string as '\"...\"', or pass --text)")
    checked = encoded_value(parsed)
    if isinstance(checked, tuple):
        fail(checked[1])
    return checked


def _cells(entry: StateEntry) -> tuple[str, ...]:
    text = json.dumps(entry.value, ensure_ascii=False)
    return (entry.key, str(entry.version), entry.updated_at.isoformat(timespec="seconds"),
            text if len(text) <= 80 else text[:77] + "...")


@app.command("get")
def get(key: str | None = typer.Argument(None, help="The key; omit it to list every key."),
        dag: str | None = DAG, run_id: str | None = RUN, task: str | None = TASK, map_index: int = MAP_INDEX,
        asset: str | None = ASSET, as_json: bool = JSON_OPTION) -> None:
    """Print the value under KEY (exit code 1 if absent), or list every key with its version."""
    from assetbus.consumers.storage.state import get_asset_state, get_task_state, list_asset_state, list_task_state

    target = Target(dag, run_id, task, map_index, asset)

    async def work(conn: AsyncConnection) -> list[StateEntry]:
        if key is None:
            return await (list_task_state(conn, target.ti) if target.ti else list_asset_state(
                conn, await target.asset_id(conn)))
        entry = await (get_task_state(conn, target.ti, key) if target.ti else get_asset_state(
            conn, await target.asset_id(conn), key))
        return [entry] if entry is not None else []

    entries = _in_transaction(work)
    if key is not None and not entries:
        fail(f"{target} has no state under key {key!r}")
    if key is None:
        print_rows(entries, as_json, ("key", "version", "updated at", "value"), _cells, title=str(target))
    elif as_json:
        print_json(entries[0])
    else:
        typer.echo(json.dumps(entries[0].value, ensure_ascii=False))


@app.command("set")
def set_(key: str = typer.Argument(..., help="The key."), value: str = typer.Argument(..., help="The value."),
         dag: str | None = DAG, run_id: str | None = RUN, task: str | None = TASK, map_index: int = MAP_INDEX,
         asset: str | None = ASSET,
         if_version: int | None = typer.Option(None, "--if-version",
                                               help="Only if the stored version is this."),
         as_text: bool = typer.Option(False, "--text", help="Store VALUE as a JSON string, not parsed as JSON."),
         expires: str | None = typer.Option(None, "--expires-at", help="Task state: when the retention cleanup "
                                            "may delete the key, time-zone aware (2026-12-31T00:00:00Z).")) -> None:
    """Write the JSON VALUE under KEY (compare-and-set with --if-version)."""
    from assetbus.consumers.storage.state import Precondition, set_asset_value, set_task_value

    target = Target(dag, run_id, task, map_index, asset)
    value_json = _parse_value(value, as_text)
    when = Precondition(versions=frozenset({if_version})) if if_version is not None else Precondition()
    expires_at = None
    if expires is not None:
        try:
            expires_at = datetime.fromisoformat(expires)
        except ValueError:
            fail(f"--expires-at is not an ISO 8601 time: {expires!r}")
        if expires_at.utcoffset() is None:
            fail("--expires-at needs a time zone (…Z or …+00:00)")
        if target.ti is None:
            fail("asset state has no expiry (--expires-at is for task state)")

    async def work(conn: asyncpg.Connection) -> int:
        if target.ti is not None:
            return await set_task_value(conn, target.ti, key, value_json, when, expires_at)
        return await set_asset_value(conn, target.ref(), key, value_json, when)

    console.print(f"{target}: {key} = version {target.statement(work)}")


@app.command("clear")
def clear(key: str | None = typer.Argument(None, help="Delete only this key; omit it to clear everything."),
          dag: str | None = DAG, run_id: str | None = RUN, task: str | None = TASK, map_index: int = MAP_INDEX,
          asset: str | None = ASSET,
          all_map_indices: bool = typer.Option(False, "--all-map-indices",
                                               help="Task state: clear every map index of the task.")) -> None:
    """Delete KEY, or every key of the task instance (or asset)."""
    from assetbus.consumers.storage.state import (
        Precondition,
        clear_asset,
        clear_task,
        delete_asset_value,
        delete_task_value,
    )

    target = Target(dag, run_id, task, map_index, asset)

    async def work(conn: asyncpg.Connection) -> int:
        if target.ti is not None:
            if key is not None:
                return int(await delete_task_value(conn, target.ti, key, Precondition()))
            return await clear_task(conn, target.ti, all_map_indices=all_map_indices)
        if key is not None:
            return int(await delete_asset_value(conn, target.ref(), key, Precondition()))
        return await clear_asset(conn, target.ref())

    console.print(f"{target}: deleted {target.statement(work)} key(s)")


@app.command("purge-run")
def purge_run(dag: str = typer.Option(..., "--dag", help="DAG id."),
              run_id: str = typer.Option(..., "--run", help="DAG run id.")) -> None:
    """Delete the task state of every task of a DAG run."""
    from assetbus.consumers.storage.state import purge_run_state

    deleted = _in_transaction(lambda conn: purge_run_state(conn, dag, run_id))
    console.print(f"run {dag}/{run_id}: deleted {deleted} task state key(s)")


@app.command("cleanup")
def cleanup(dry_run: bool = typer.Option(False, "--dry-run", help="List what would be deleted; delete nothing."),
            batch_size: int = typer.Option(0, "--batch-size", min=0,
                                           help="Rows per transaction (0: all in one).")) -> None:
    """Delete the task state whose expiry has passed (Airflow's `airflow state-store clean`)."""
    from assetbus.consumers.storage.state import delete_expired_state, list_expired_task_state

    if dry_run:
        expired = _in_transaction(list_expired_task_state)
        for ti, entry in expired:
            expiry = entry.expires_at.isoformat(timespec="seconds") if entry.expires_at else "-"
            console.print(f"{ti.dag_id}/{ti.run_id}/{ti.task_id}[{ti.map_index}] {entry.key} expired {expiry}")
        console.print(f"{len(expired)} expired task state key(s) would be deleted")
        return

    async def go() -> int:
        async with database() as engine:
            return await delete_expired_state(engine, batch_size=batch_size)

    console.print(f"deleted {run(go())} expired task state key(s)")
