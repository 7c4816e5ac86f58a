"""`assetbus events list | tail`: stored events by asset, partition and time, and new ones as they arrive."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import typer

from assetbus.cli.common import JSON_OPTION, connect, console, fail, on_database, run
from assetbus.cli.output import print_rows, to_json

if TYPE_CHECKING:
    from assetbus.consumers.storage.events import StoredEvent

app = typer.Typer(help="Stored asset events: list them, follow new ones.", no_args_is_help=True)

ASSET = typer.Option(None, "--asset", help="Only events of this asset (by name).")
PARTITION = typer.Option(None, "--partition", help="Only events with this partition key.")


def parse_since(value: str | None) -> datetime | None:
    """An ISO date-time (naive = UTC), or a duration back from now: `90s`, `15m`, `2h`, `7d`."""
    if value is None:
        return None
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    if value[-1:] in units and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(**{units[value[-1]]: int(value[:-1])})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is neither an ISO date-time nor a duration like 15m",
                                 param_hint="--since") from None
    return parsed if parsed.utcoffset() is not None else parsed.replace(tzinfo=UTC)


def _cells(row: StoredEvent) -> tuple[str, ...]:
    from rich.markup import escape

    source = f"{row.dag_id}/{row.run_id}" + (f"/{row.task_id}" if row.task_id else " (dag)")
    extra = to_json(row.extra, compact=True)
    return (str(row.id), f"{row.created_at.astimezone(UTC):%Y-%m-%d %H:%M:%S}", escape(row.asset_name),
            escape(row.partition_key or "-"), escape(source), escape(row.dedupe_key),
            escape(extra if len(extra) <= 60 else extra[:57] + "..."))


@app.command("list")
def list_(asset: str | None = ASSET, partition: str | None = PARTITION,
          since: str | None = typer.Option(None, "--since", help="Stored at or after this ISO date-time "
                                           "(naive = UTC), or this long ago: 90s, 15m, 2h, 7d."),
          before: int | None = typer.Option(None, "--before", help="Only events with a smaller id (next page)."),
          limit: int = typer.Option(50, "--limit", min=1, max=500, help="At most this many, newest first."),
          as_json: bool = JSON_OPTION) -> None:
    """Stored events, newest first, with their partition and provenance (page back with --before)."""
    from assetbus.consumers.storage.catalog import list_events

    start = parse_since(since)
    rows = on_database(lambda conn: list_events(conn, asset=asset, partition_key=partition, since=start,
                                                before_id=before, limit=limit))
    print_rows(rows, as_json, ("id", "stored at (UTC)", "asset", "partition", "source", "dedupe key", "extra"), _cells,
               title="stored events, newest first")
    if not as_json and len(rows) == limit:
        console.print(f"[dim]more: --before {rows[-1].id}[/]")


@app.command("tail")
def tail(asset: str | None = ASSET, partition: str | None = PARTITION,
         count: int | None = typer.Option(None, "--count", min=1, help="Stop after this many new events."),
         timeout_s: float | None = typer.Option(None, "--timeout", help="Stop after this many seconds."),
         from_id: int | None = typer.Option(None, "--from-id", help="Start after this event id (default: the "
                                            "newest stored event, so only new ones are shown)."),
         interval_s: float = typer.Option(0.5, "--interval", help="Seconds between looks at the database."),
         as_json: bool = JSON_OPTION) -> None:
    """Follow events as the persister stores them (one line each; with --json one JSON object per line).

    Exit code 1 when --count events did not arrive before --timeout."""
    import asyncio

    from assetbus.consumers.storage.catalog import latest_event_id, list_events

    async def go() -> int:
        shown = 0
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        async with connect() as conn:
            after = from_id if from_id is not None else await latest_event_id(conn)
            await conn.commit()
            while (count is None or shown < count) and (deadline is None or time.monotonic() < deadline):
                rows = await list_events(conn, asset=asset, partition_key=partition, after_id=after,
                                         limit=500 if count is None else count - shown)
                await conn.commit()  # each look sees what was committed since
                for row in rows:
                    _print_line(row, as_json)
                    after = row.id
                shown += len(rows)
                if not rows:
                    await asyncio.sleep(interval_s)
        return shown

    shown = run(go())
    if count is not None and shown < count:
        fail(f"{shown} of {count} event(s) arrived in {timeout_s} s")


def _print_line(row: StoredEvent, as_json: bool) -> None:
    if as_json:
        typer.echo(to_json(row, compact=True))
        return
    source = f"{row.dag_id}/{row.run_id}" + (f"/{row.task_id}" if row.task_id else "")
    typer.echo(f"{row.id} {row.created_at.astimezone(UTC):%H:%M:%S} {row.asset_name} "
               f"partition={row.partition_key or '-'} source={source} dedupe={row.dedupe_key}")
