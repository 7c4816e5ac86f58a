"""`assetbus bench persister`: pre-load N commands, start a persister process, time until all are receipted."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from assetbus.cli.common import console, fail, run, settings


def persister(
    commands: Annotated[int, typer.Option(help="Commands pre-loaded on the emissions topic.")] = 100_000,
    size: Annotated[int, typer.Option(help="Approximate size of one command in bytes.")] = 1024,
    assets: Annotated[int, typer.Option(help="Registered assets the commands are spread over (topic keys).")] = 16,
    max_records: Annotated[int | None, typer.Option(help="The persister's --max-records (default: its own).")] = None,
    chunk_size: Annotated[int | None, typer.Option(help="The persister's --chunk-size (default: its own).")] = None,
    transactions_in_flight: Annotated[int | None, typer.Option(
        help="The persister's --transactions-in-flight (default: its own).")] = None,
    timeout_s: Annotated[float, typer.Option(help="Give up after this many seconds.")] = 600.0,
    keep: Annotated[bool, typer.Option(help="Keep the benchmark's topics and database afterwards.")] = False,
    profile: Annotated[str | None, typer.Option(
        help="Run the persister under pyinstrument; report here (.html, or text otherwise).")] = None,
    db_tls: Annotated[bool, typer.Option(
        help="Let the persister use TLS to PostgreSQL (asyncpg's default preference).")] = True,
) -> None:
    """Persister throughput end to end: durable + receipt published, with batch sizes and peak RSS."""
    from assetbus.benchmarks.persister import BenchOptions, run_benchmark
    from assetbus.benchmarks.persister_report import print_report

    if profile and importlib.util.find_spec("pyinstrument") is None:
        fail("--profile needs pyinstrument: .venv/bin/pip install pyinstrument")
    tuning = {"max_records": max_records, "chunk_size": chunk_size, "transactions_in_flight": transactions_in_flight}
    options = BenchOptions(commands=commands, size=size, assets=assets, timeout_s=timeout_s, keep=keep,
                           profile=Path(profile) if profile else None, db_tls=db_tls,
                           **{name: value for name, value in tuning.items() if value is not None})
    try:
        report = run(run_benchmark(settings(), options))
    except RuntimeError as error:
        fail(str(error))
    print_report(console, report)
