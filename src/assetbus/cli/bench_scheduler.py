"""`assetbus bench scheduler`: scheduler throughput (events/s) and emit → readiness latency at offered rates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from assetbus.cli.common import console, fail, run, settings


def scheduler(
    events: int = typer.Option(20_000, help="Events pre-loaded for the throughput run (0: no throughput run)."),
    rate: Annotated[list[int] | None, typer.Option(help="Offered emissions per second of a latency run (repeat for "
                                                   "several runs; default 1000 and 5000).")] = None,
    seconds: float = typer.Option(10.0, help="How long each latency run offers its rate."),
    max_records: int | None = typer.Option(None, help="The scheduler's --max-records (default: its own)."),
    timeout_s: float = typer.Option(300.0, help="Give up after this many seconds."),
    profile: Annotated[Path | None, typer.Option(help="Profile the throughput run's scheduler with py-spy into "
                                                 "this file (collapsed stacks).")] = None,
    as_json: bool = typer.Option(False, "--json", help="Print the figures as one JSON object, last line."),
) -> None:
    """Scheduler throughput and end-to-end readiness latency, each on a fresh prefix and database."""
    from rich.table import Table

    from assetbus.benchmarks.scheduler import SchedulerBenchOptions, run_benchmark
    from assetbus.benchmarks.stats import percentile

    options = SchedulerBenchOptions(events=events, rates=tuple(rate or (1_000, 5_000)), seconds=seconds,
                                    max_records=max_records, timeout_s=timeout_s, profile=profile)
    try:
        report = run(run_benchmark(settings(), options))
    except RuntimeError as error:
        fail(str(error))
    table = Table("figure", "value", title="assetbus bench scheduler", title_justify="left")
    if report.throughput_events:
        table.add_row("scheduler throughput", f"{report.events_per_s:,.0f} events/s "
                      f"({report.throughput_events:,} events in {report.throughput_s:.2f} s, after the first runs)")
        table.add_row("scheduler CPU per event", f"{report.cpu_us_per_event:,.0f} µs (user + system, "
                      f"{report.throughput_cpu_s:.2f} s over the throughput run)")
        table.add_row("runs created", ", ".join(f"{dag}: {n:,}" for dag, n in report.runs_created.items()))
    table.add_row("scheduler peak RSS", f"{report.peak_rss_mb:.0f} MB")
    for latency in report.latency:
        at = f"at {latency.rate:,}/s"
        table.add_row(f"offered {at}", f"{latency.offered:,} emissions at {latency.offered_rate:,.0f}/s "
                      f"(load average {latency.load_before[0]:.2f} before)")
        table.add_row(f"emit → receipt p50 / p99 {at}", f"{latency.percentile(50, receipts=True):.1f} ms / "
                      f"{latency.percentile(99, receipts=True):.1f} ms")
        table.add_row(f"emit → readiness p50 / p99 {at}", f"{latency.percentile(50):.1f} ms / "
                      f"{latency.percentile(99):.1f} ms ({len(latency.latencies_ms):,} signals, first "
                      f"{options.warmup_s:.0f} s excluded)")
        for stage, values in latency.stages_ms.items():
            table.add_row(f"  {stage} p50 / p99", f"{percentile(values, 50):.1f} ms / {percentile(values, 99):.1f} ms")
        table.add_row(f"scheduler CPU {at}", f"{latency.scheduler_cpu_s / max(latency.offered, 1) * 1e6:,.0f} µs "
                      "per event")
    for name, value in report.conditions.items():
        table.add_row(name, value)
    table.add_row("load average", f"{report.load_before[0]:.2f} before, {report.load_after[0]:.2f} after")
    console.print(table)
    if as_json:
        print(json.dumps(report.summary()))
