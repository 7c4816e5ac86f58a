"""`assetbus demo`: the end-to-end story on the configured (or local) Kafka and PostgreSQL."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assetbus.cli.common import console, fail, run, settings
from assetbus.cli.output import print_rows

if TYPE_CHECKING:
    from assetbus.demo.story import DemoResult

_COLOURS = {"setup": "dim", "ingest_orders": "cyan", "nightly_export": "magenta", "orders_per_batch": "green",
            "orders_daily": "yellow", "incident_triage": "red"}


def demo(dags: Annotated[Path | None, typer.Option("--dags", help="The demo's consumer DAG file (default: the "
                                                   "one shipped in the package, assetbus/demo/dags.py).")] = None
         ) -> None:
    """Producers emit per batch and fail, consumer DAGs react per partition; ends with a summary table."""
    from assetbus.demo.story import DAGS_FILE, run_demo

    # the services log to stderr; the demo's own lines tell the story
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s %(message)s")
    for name in ("assetbus", "aiokafka"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    started = time.monotonic()

    def show(actor: str, text: str) -> None:
        colour = _COLOURS.get(actor, "white")
        console.print(f"[dim]{time.monotonic() - started:6.2f}s[/] [{colour}]{actor:>16}[/] {text}", highlight=False)

    console.print("[bold]assetbus demo[/]: task → Kafka → persister → PostgreSQL → scheduler → consumer DAGs\n")
    try:
        result = run(run_demo(settings(), show, dags or DAGS_FILE))
    except Exception as error:
        fail(f"demo failed: {type(error).__name__}: {error}")
    console.print()
    print_rows(result.rows, False, ("DAG", "role", "events", "duplicates", "runs", "outcome"),
               lambda row: (row.dag, row.role, str(row.events), "-" if row.duplicates is None else str(row.duplicates),
                            "-" if row.runs is None else str(row.runs), row.outcome),
               title="summary")
    problems = _check(result)
    if problems:
        fail("; ".join(problems))
    consumed, writing = result.state.overlap or (0, 0)
    console.print(f"[green]ok[/]: readiness per batch while the task was still running (batch {consumed} "
                  f"processed while the producer wrote batch {writing}), the retry was a duplicate, the daily "
                  "roll-up waited for all 24 hours, and a DAG-level callback signalled without any task. "
                  "See `assetbus runs list`.")


def _check(result: DemoResult) -> list[str]:
    from assetbus.demo.actors import FIRST_BATCH, batch_hours
    from assetbus.demo.story import EXPECTED_RUNS

    rows = {row.dag: row for row in result.rows}
    problems = []
    if (rows["ingest_orders"].events, rows["ingest_orders"].duplicates) != (len(batch_hours()), 1):
        got = [f"{r.status.value}{'(' + r.error_code.value + ')' if r.error_code else ''}"
               for r in result.state.receipts.get("ingest_orders", [])]
        problems.append(f"the ingestion task's receipts are not one per batch plus one duplicate: {got}")
    if rows["nightly_export"].events != 1:
        problems.append("the failure callback's emission was not accepted")
    for dag_id, expected in EXPECTED_RUNS.items():
        if rows[dag_id].runs != expected:
            problems.append(f"{dag_id} has {rows[dag_id].runs} runs, expected {expected}")
    writing = result.state.overlap[1] if result.state.overlap else 0
    if not FIRST_BATCH + 3 <= writing < FIRST_BATCH + len(batch_hours()):
        problems.append("the consumer did not process a batch while the producer was two or more batches ahead "
                        "and still writing")
    if result.state.task_error is None:
        problems.append("the ingestion task did not fail as it should")
    return problems
