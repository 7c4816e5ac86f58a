"""`assetbus bench scheduler`: scheduler throughput (events/s) and emit → readiness latency at an offered rate."""

from __future__ import annotations

import typer

from assetbus.cli.common import console, fail, run, settings


def scheduler(
    events: int = typer.Option(20_000, help="Events pre-loaded for the throughput run."),
    rate: int = typer.Option(1_000, help="Offered emissions per second for the latency run."),
    seconds: float = typer.Option(10.0, help="How long the latency run offers that rate."),
    max_records: int | None = typer.Option(None, help="The scheduler's --max-records (default: its own)."),
    timeout_s: float = typer.Option(300.0, help="Give up after this many seconds."),
) -> None:
    """Scheduler throughput and end-to-end readiness latency, each on a fresh prefix and database."""
    from dataclasses import replace

    from rich.table import Table

    from assetbus.benchmarks.scheduler import SchedulerBenchOptions, run_benchmark

    options = SchedulerBenchOptions(events=events, rate=rate, seconds=seconds, timeout_s=timeout_s)
    if max_records is not None:
        options = replace(options, max_records=max_records)
    try:
        report = run(run_benchmark(settings(), options))
    except RuntimeError as error:
        fail(str(error))
    table = Table("figure", "value", title="assetbus bench scheduler", title_justify="left")
    table.add_row("scheduler throughput", f"{report.events_per_s:,.0f} events/s "
                  f"({report.throughput_events:,} events in {report.throughput_s:.2f} s, after the first runs)")
    table.add_row("runs created", ", ".join(f"{dag}: {n:,}" for dag, n in report.runs_created.items()))
    table.add_row("offered", f"{report.offered:,} emissions at {report.offered_rate:,.0f}/s")
    table.add_row("emit → receipt p50 / p99 (persister)", f"{report.percentile(50, receipts=True):.1f} ms / "
                  f"{report.percentile(99, receipts=True):.1f} ms")
    table.add_row("emit → readiness p50", f"{report.percentile(50):.1f} ms")
    table.add_row("emit → readiness p99", f"{report.percentile(99):.1f} ms")
    table.add_row("measured signals", f"{len(report.latencies_ms):,} (first {options.warmup_s:.0f} s excluded)")
    for name, value in report.conditions.items():
        table.add_row(name, value)
    table.add_row("load average", f"{report.load_before[0]:.2f} before, {report.load_after[0]:.2f} after")
    console.print(table)
