"""`assetbus runs list | skips | waiting`: consumer runs and their outcomes, skipped events, pending partitions."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from assetbus.cli.common import connect, console, fail, run
from assetbus.consumers.scheduler import ConsumerDag
from assetbus.consumers.scheduler.apply import pending
from assetbus.consumers.scheduler.planner import PendingEntry, progress
from assetbus.consumers.storage.dags import get_dag
from assetbus.consumers.storage.queue import list_skips, pending_for_dag
from assetbus.consumers.storage.runs import RunStatus, list_runs

app = typer.Typer(help="Consumer runs: their outcomes, skipped events, partitions still waiting.",
                  no_args_is_help=True)

_STYLE = {RunStatus.QUEUED: "cyan", RunStatus.RUNNING: "yellow", RunStatus.SUCCESS: "green", RunStatus.FAILED: "red"}


@app.command("list")
def list_(
    dag: str | None = typer.Option(None, "--dag", help="Only this consumer DAG."),
    status: Annotated[RunStatus | None, typer.Option("--status", help="Only runs with this outcome.")] = None,
    limit: int = typer.Option(30, "--limit", help="Newest N runs."),
) -> None:
    """Newest runs first: partition, generation, triggering events, outcome reported by the subscriber."""

    async def go() -> None:
        async with connect() as conn:
            rows = await list_runs(conn, dag_id=dag, status=status.value if status else None, limit=limit)
        table = Table(title=f"consumer runs of {dag}, newest first" if dag else "consumer runs, newest first",
                      title_justify="left")
        columns = ["run id", "partition", "date (UTC)", "gen", "events", "outcome", "signal", "origin"]
        for name in ([] if dag else ["dag"]) + columns:
            table.add_column(name, no_wrap=True)
        table.add_column("consumer · orchestrator run (state) · detail", overflow="fold")
        for row in rows:
            style = _STYLE.get(RunStatus(row.status), "white")
            external = f"{row.external_run_id} ({row.external_state})" if row.external_run_id else None
            detail = " · ".join(part for part in (row.consumer, external, row.detail) if part)
            date = f"{row.partition_date.astimezone(UTC):%Y-%m-%d %H:%M}" if row.partition_date else "-"
            signal = "sent" if row.published else "[yellow]pending[/]"
            cells = [row.run_id[:8], escape(row.partition_key or "(unpartitioned)"), date, str(row.generation),
                     str(len(row.events)), f"[{style}]{row.status}[/]", signal, row.origin, escape(detail or "-")]
            table.add_row(*([] if dag else [row.dag_id]), *cells)
        console.print(table)

    run(go())


@app.command("skips")
def skips(dag: str | None = typer.Option(None, "--dag", help="Only this consumer DAG."),
          limit: int = typer.Option(30, "--limit", help="Newest N.")) -> None:
    """Events a DAG's partition mapping could not map, with the reason."""

    async def go() -> None:
        async with connect() as conn:
            rows = await list_skips(conn, dag, limit)
        table = Table("dag", "event", "asset", "partition key", "reason", "detail")
        for row in rows:
            table.add_row(row.dag_id, str(row.event_id), row.asset_name, escape(row.partition_key or "-"), row.reason,
                          escape(row.detail))
        console.print(table)

    run(go())


@app.command("waiting")
def waiting(dag: str = typer.Option(..., "--dag", help="Consumer DAG.")) -> None:
    """Target partitions with queued events but no run yet, and what each still lacks."""

    async def go() -> None:
        async with connect() as conn:
            row = await get_dag(conn, dag)
            rows = await pending_for_dag(conn, dag) if row is not None else []
        if row is None:
            fail(f"no consumer DAG {dag!r}; see `assetbus dags list`")
        try:
            definition = ConsumerDag.from_definition(row.definition)
        except ValidationError as error:
            fail(f"the definition of {dag} is unreadable: {error.errors()[0]['msg']}")
        by_target: dict[str | None, list[PendingEntry]] = defaultdict(list)
        for queued in rows:
            by_target[queued.target_key].append(pending(queued))
        table = Table("partition", "queued events", "still missing")
        for key, entries in sorted(by_target.items(), key=lambda kv: kv[0] or ""):
            lacking = [str(p) for p in progress(definition, key, entries) if not p.complete]
            table.add_row(escape(key or "(unpartitioned)"), str(len(entries)), ", ".join(lacking) or "-")
        console.print(table)

    run(go())
