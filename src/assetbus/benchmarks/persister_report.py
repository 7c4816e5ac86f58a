"""Printing a persister benchmark report: the figure, the distribution behind it, the conditions."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from assetbus.benchmarks.persister import BenchReport


def print_report(console: Console, report: BenchReport) -> None:
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
    table.add_row("load average before / after", f"{_load(report.load_before)} / {_load(report.load_after)}")
    for key, value in report.conditions.items():
        table.add_row(key, value)
    console.print(table)


def _load(values: tuple[float, float, float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)
