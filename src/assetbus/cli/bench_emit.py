"""`assetbus bench emit`: emissions per second from one process, printed with their conditions."""

from __future__ import annotations

import logging
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from assetbus.cli.bench_all import run_bench
from assetbus.cli.common import console, fail, settings

if TYPE_CHECKING:
    from assetbus.benchmarks.emit import EmitReport


class Mode(StrEnum):
    both = "both"
    broker = "broker"
    receipts = "receipts"
    latency = "latency"


class Compression(StrEnum):
    none = "none"
    gzip = "gzip"


def emit(
    count: Annotated[int, typer.Option(help="Emissions per run.")] = 100_000,
    in_flight: Annotated[int, typer.Option(help="Most commands without a receipt (receipts run).")] = 10_000,
    extra_bytes: Annotated[int, typer.Option(help="Size of each emission's `extra`.")] = 100,
    linger_ms: Annotated[int, typer.Option(help="How long a batch may wait to fill.")] = 5,
    compression: Annotated[Compression, typer.Option(help="Record batch compression.")] = Compression.none,
    assets: Annotated[int, typer.Option(help="Distinct assets (message keys).")] = 6,
    mode: Annotated[Mode, typer.Option(help="broker: emitter alone; receipts: with a persister; both; "
                                             "latency: emit → receipt p50/p99 at --rate.")] = Mode.both,
    rate: Annotated[list[int] | None, typer.Option(help="Offered emissions/s (latency mode; repeat for several "
                                                         "runs).")] = None,
    seconds: Annotated[float, typer.Option(help="How long each rate is offered (latency mode).")] = 10.0,
    trace: Annotated[bool, typer.Option(help="Install an OpenTelemetry SDK TracerProvider (no-op exporter): every "
                                             "emission opens a recorded span and carries `traceparent`.")] = False,
) -> None:
    """Emission throughput of one process not waiting on each receipt (emit_nowait), to the broker
    and, with a persister subprocess, to stored-and-receipted."""
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # leader-election chatter on fresh topics
    rates = tuple(rate or (1000,))
    if count < 1 or in_flight < 1 or min(rates) < 1 or seconds <= 0:
        fail("--count, --in-flight, --rate and --seconds must be positive")
    from assetbus.benchmarks.emit import EmitBenchOptions, run_emit_benchmark

    options = EmitBenchOptions(count=count, in_flight=in_flight, extra_bytes=extra_bytes, linger_ms=linger_ms,
                               compression=None if compression is Compression.none else compression.value,
                               assets=assets,
                               modes=("broker", "receipts") if mode is Mode.both else (mode.value,),
                               rates=rates, seconds=seconds, warmup_s=min(1.0, seconds / 5), trace=trace)
    if mode is Mode.latency:
        console.print(f"emit benchmark: emit → receipt at {', '.join(f'{r:,}/s' for r in rates)} offered "
                      f"for {seconds:g} s each ...")
    else:
        console.print(f"emit benchmark: {count:,} emissions per run ({', '.join(options.modes)}) ...")
    report = run_bench(run_emit_benchmark(settings(), options), "emit benchmark failed")
    print_report(report)


def print_report(report: EmitReport) -> None:
    from rich.table import Table

    for r in report.runs:
        table = Table(show_header=False, title=f"assetbus bench emit: {r.mode} run", title_justify="left")
        table.add_row("emissions/s to the broker",
                      f"[bold]{r.broker_rate:,.0f}[/]  ({r.count:,} in {r.broker_s:.2f} s)")
        if r.receipt_rate is None:
            table.add_row("receipts", "not part of this run (no persister; nothing answers)")
        else:
            table.add_row("emissions/s stored and receipted", f"{r.receipt_rate:,.0f}  ({r.receipts_s:.2f} s)")
            table.add_row("receipts", f"all awaited: {r.accepted:,} accepted, from `assetbus run persister` "
                                      "as a subprocess on a fresh database")
        table.add_row("in-flight bound (peak)", f"{r.in_flight_bound:,} ({r.peak_in_flight:,})")
        table.add_row("CPU of the emitting process", f"{r.cpu_us_per_emission:.0f} µs per emission "
                                                    f"(≈ {1e6 / r.cpu_us_per_emission:,.0f}/s on a free core)")
        table.add_row("batches to Kafka / resends", f"{r.batches:,} / {r.resent}")
        console.print(table)
    for lat in report.latency:
        table = Table(show_header=False, title=f"assetbus bench emit: latency at {lat.rate:,}/s offered",
                      title_justify="left")
        table.add_row("emit → receipt p50 / p99 / max",
                      f"[bold]{lat.p50_ms:.1f} ms / {lat.p99_ms:.1f} ms[/] / {lat.max_ms:.1f} ms")
        table.add_row("offered", f"{lat.offered:,} in {lat.seconds:g} s ({lat.offered_rate:,.0f}/s), "
                                 f"{lat.accepted:,} accepted; {len(lat.latencies_ms):,} timed after the warm-up")
        console.print(table)
    for key, value in report.conditions().items():
        console.print(f"  {key}: {value}")
    console.print("  emissions/s to the broker = emissions / (first emit_nowait → broker acked the last batch); "
                  "stored and receipted = emissions / (first emit_nowait → last receipt). In the broker run "
                  "nothing answers, so its in-flight bound is the count; in the receipts run the bound holds "
                  "and the emitter runs ahead of the persister by at most that many commands.")
