"""`assetbus bench pg-ceiling`: PostgreSQL's own rate for the persister's idempotent insert, on this machine now."""

from __future__ import annotations

from typing import Annotated

import typer

from assetbus.cli.common import JSON_OPTION, console, fail, run, settings
from assetbus.cli.output import json_line


def pg_ceiling(
    as_json: bool = JSON_OPTION,
    rows: Annotated[int, typer.Option(help="Rows inserted.")] = 100_000,
    chunk_size: Annotated[int | None, typer.Option(help="Rows per transaction (default: the persister's).")] = None,
    in_flight: Annotated[int | None, typer.Option(
        help="Transactions at once, one connection each (default: the persister's).")] = None,
) -> None:
    """The ceiling the persister is measured against: rows of its events' shape into `asset_events` (same indexes,
    constraints), with its idempotent statement, chunk size and transactions in flight, and nothing else."""
    from dataclasses import replace

    from assetbus.benchmarks.pg_ceiling import CeilingOptions, run_pg_ceiling

    options = CeilingOptions(rows=rows)
    if chunk_size is not None:
        options = replace(options, chunk_size=chunk_size)
    if in_flight is not None:
        options = replace(options, in_flight=in_flight)
    if min(options.rows, options.chunk_size, options.in_flight) < 1:
        fail("--rows, --chunk-size and --in-flight take positive integers")
    report = run(run_pg_ceiling(settings(), options, progress=lambda line: console.print(line)))
    console.print(f"PostgreSQL ceiling: {report.rows_per_s:,.0f} rows/s ({report.inserted:,} rows in "
                  f"{report.seconds:.2f} s; {options.chunk_size:,} per transaction, {options.in_flight} in flight)")
    if as_json:
        print(json_line({k: round(v, 2) for k, v in report.figures().items()}))
