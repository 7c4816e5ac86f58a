"""`assetbus bench persister`: pre-load N commands, start a persister process, time until all are receipted."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from assetbus.cli.common import console, fail, run, settings

if TYPE_CHECKING:
    from assetbus.benchmarks.persister import BenchReport


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
    print_report(report)


def print_report(report: BenchReport) -> None:
    from rich.table import Table

    from assetbus.benchmarks.stats import load_text

    o = report.options
    console.print(f"[bold]persister benchmark[/]: {o.commands:,} commands of {report.command_bytes} bytes, "
                  f"{o.assets} assets over 6 partitions, --max-records {o.max_records} --chunk-size {o.chunk_size} "
                  f"--transactions-in-flight {o.transactions_in_flight}")
    table = Table(show_header=False)
    table.add_row("events/s (first receipt → last receipt)", f"[bold]{report.events_per_s:,.0f}[/]")
    table.add_row("events/s including process start", f"{report.stored / report.total_s:,.0f}")
    table.add_row("time to all receipted", f"{report.run_s:.2f} s (+ {report.startup_s:.2f} s start-up)")
    table.add_row("events stored / receipts published", f"{report.stored:,} / {report.receipts:,}")
    table.add_row("persister CPU (user + system)",
                  f"{report.cpu_s:.1f} s in all; {report.run_cpu_s:.1f} s from first to last receipt "
                  f"≈ {report.run_cpu_s / max(report.stored, 1) * 1e6:.0f} µs per event")
    table.add_row("persister peak RSS (psutil, sampled every 50 ms)", f"{report.peak_rss_mb:.0f} MB")
    b = report.batch_sizes
    table.add_row("batches from Kafka", f"{b.count:,.0f}, mean {b.mean:,.0f} records, "
                                        f"median ≤ {b.quantile(0.5):g}, p90 ≤ {b.quantile(0.9):g}")
    table.add_row("batch size distribution", ", ".join(f"{label}: {share:.0%}" for label, share in b.shares()))
    d = report.db_commit
    table.add_row("DB transactions", f"{d.count:,.0f}, mean {d.mean * 1000:.1f} ms, "
                                     f"p50 ≤ {d.quantile(0.5) * 1000:g} ms, p99 ≤ {d.quantile(0.99) * 1000:g} ms")
    table.add_row("pre-load", f"{report.preload_s:.1f} s")
    table.add_row("load average before / after", f"{load_text(report.load_before)} / {load_text(report.load_after)}")
    for key, value in report.conditions.items():
        table.add_row(key, value)
    console.print(table)

