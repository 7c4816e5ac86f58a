"""`assetbus runs list | skips | waiting`: consumer runs and their outcomes, skipped events, pending partitions."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from assetbus.cli.common import JSON_OPTION, fail, on_database
from assetbus.cli.output import print_rows

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncConnection

    from assetbus.consumers.storage.dags import DagRow

app = typer.Typer(help="Consumer runs: their outcomes, skipped events, partitions still waiting.",
                  no_args_is_help=True)

Status = Literal["queued", "running", "success", "failed"]
_STYLE = {"queued": "cyan", "running": "yellow", "success": "green", "failed": "red"}


async def require_dag(conn: AsyncConnection, dag_id: str) -> DagRow:
    """The consumer DAG's row, or one line and exit code 1 (the same for every command)."""
    from assetbus.consumers.storage.dags import get_dag

    row = await get_dag(conn, dag_id)
    if row is None:
        fail(f"no consumer DAG {dag_id!r}; see `assetbus dags list` (or sync it: `assetbus dags sync PATH`)")
    return row


@app.command("list")
def list_(
    dag: str | None = typer.Option(None, "--dag", help="Only this consumer DAG."),
    status: Annotated[Status | None, typer.Option("--status", help="Only runs with this outcome.")] = None,
    limit: int = typer.Option(30, "--limit", help="Newest N runs."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Newest runs first: partition, generation, triggering events, outcome reported by the subscriber."""
    from rich.markup import escape
    from rich.table import Column

    from assetbus.consumers.storage.runs import RunRow, list_runs

    async def go(conn: AsyncConnection) -> list[RunRow]:
        if dag is not None:
            await require_dag(conn, dag)
        return await list_runs(conn, dag_id=dag, status=status, limit=limit)

    def cells(row: RunRow) -> list[str]:
        style = _STYLE.get(row.status, "white")
        external = f"{row.external_run_id} ({row.external_state})" if row.external_run_id else None
        detail = " · ".join(part for part in (row.consumer, external, row.detail) if part)
        date = f"{row.partition_date.astimezone(UTC):%Y-%m-%d %H:%M}" if row.partition_date else "-"
        signal = "sent" if row.published else "[yellow]pending[/]"
        return [*([] if dag else [row.dag_id]), row.run_id[:8], escape(row.partition_key or "(unpartitioned)"), date,
                str(row.generation), str(len(row.events)), f"[{style}]{row.status}[/]", signal, row.origin,
                escape(detail or "-")]

    names = [*([] if dag else ["dag"]), "run id", "partition", "date (UTC)", "gen", "events", "outcome", "signal",
             "origin"]
    print_rows(on_database(go), as_json, [*(Column(name, no_wrap=True) for name in names),
                                          Column("consumer · orchestrator run (state) · detail", overflow="fold")],
               cells, title=f"consumer runs of {dag}, newest first" if dag else "consumer runs, newest first")


@app.command("skips")
def skips(dag: str | None = typer.Option(None, "--dag", help="Only this consumer DAG."),
          limit: int = typer.Option(30, "--limit", help="Newest N."),
          as_json: bool = JSON_OPTION) -> None:
    """Events a DAG's partition mapping could not map, with the reason."""
    from rich.markup import escape

    from assetbus.consumers.storage.queue import SkipRow, list_skips

    async def go(conn: AsyncConnection) -> list[SkipRow]:
        if dag is not None:
            await require_dag(conn, dag)
        return await list_skips(conn, dag, limit)

    print_rows(on_database(go), as_json, ("dag", "event", "asset", "partition key", "reason", "detail"),
               lambda row: (row.dag_id, str(row.event_id), row.asset_name, escape(row.partition_key or "-"),
                            row.reason, escape(row.detail)))


@app.command("waiting")
def waiting(dag: str = typer.Option(..., "--dag", help="Consumer DAG."), as_json: bool = JSON_OPTION) -> None:
    """Target partitions with queued events but no run yet, and what each still lacks."""
    from pydantic import ValidationError
    from rich.markup import escape

    from assetbus.consumers.scheduler import ConsumerDag
    from assetbus.consumers.scheduler.apply import pending
    from assetbus.consumers.scheduler.planner import PendingEntry, progress
    from assetbus.consumers.storage.queue import QueueRow, pending_for_dag

    async def go(conn: AsyncConnection) -> tuple[DagRow, list[QueueRow]]:
        return await require_dag(conn, dag), await pending_for_dag(conn, dag)

    row, queued_rows = on_database(go)
    try:
        definition = ConsumerDag.from_definition(row.definition)
    except ValidationError as error:
        fail(f"the definition of {dag} is unreadable: {error.errors()[0]['msg']}")
    by_target: dict[str | None, list[PendingEntry]] = defaultdict(list)
    for queued in queued_rows:
        by_target[queued.target_key].append(pending(queued))
    found: list[dict[str, Any]] = []
    for key, entries in sorted(by_target.items(), key=lambda kv: kv[0] or ""):
        lacking = [str(p) for p in progress(definition, key, entries) if not p.complete]
        found.append({"partition_key": key, "queued_events": len(entries), "still_missing": lacking})
    print_rows(found, as_json, ("partition", "queued events", "still missing"),
               lambda item: (escape(item["partition_key"] or "(unpartitioned)"), str(item["queued_events"]),
                             ", ".join(item["still_missing"]) or "-"))
