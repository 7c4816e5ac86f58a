"""`assetbus bench [emit|persister|pg-ceiling|scheduler|subscriber|api|all|scale|soak|airflow]`: figures with their
conditions.

The measurements live in `assetbus.benchmarks`, imported when a command runs.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from typing import Annotated, Literal

import typer

from assetbus.cli import bench_airflow, bench_all, bench_scale
from assetbus.cli.bench_all import print_table, run_bench
from assetbus.cli.common import JSON_OPTION, console, fail, run, settings
from assetbus.cli.output import json_line

app = typer.Typer(help="Benchmarks (run on a quiet machine; figures go to the README).")


Mode = Literal["both", "broker", "receipts", "latency"]
Compression = Literal["none", "gzip"]


@app.command("emit")
def emit(
    count: Annotated[int, typer.Option(help="Emissions per run.")] = 100_000,
    in_flight: Annotated[int, typer.Option(help="Most commands without a receipt (receipts run).")] = 10_000,
    extra_bytes: Annotated[int, typer.Option(help="Size of each emission's `extra`.")] = 100,
    linger_ms: Annotated[int, typer.Option(help="How long a batch may wait to fill.")] = 5,
    compression: Annotated[Compression, typer.Option(help="Record batch compression.")] = "none",
    assets: Annotated[int, typer.Option(help="Distinct assets (message keys).")] = 6,
    mode: Annotated[Mode, typer.Option(help="broker: emitter alone; receipts: with a persister; both; "
                                             "latency: emit → receipt p50/p99 at --rate.")] = "both",
    rate: Annotated[list[int] | None, typer.Option(help="Offered emissions/s (latency mode; repeat for several "
                                                         "runs).")] = None,
    seconds: Annotated[float, typer.Option(help="How long each rate is offered (latency mode).")] = 10.0,
    trace: Annotated[bool, typer.Option(help="Install an OpenTelemetry SDK TracerProvider (no-op exporter): every "
                                             "emission opens a recorded span and carries `traceparent`.")] = False,
) -> None:
    """Emission throughput of one process not waiting on each receipt (emit_nowait), to the broker
    and, with a persister subprocess, to stored-and-receipted."""
    from rich.table import Table

    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # leader-election chatter on fresh topics
    rates = tuple(rate or (1000,))
    if count < 1 or in_flight < 1 or min(rates) < 1 or seconds <= 0:
        fail("--count, --in-flight, --rate and --seconds must be positive")
    from assetbus.benchmarks.emit import EmitBenchOptions, run_emit_benchmark

    options = EmitBenchOptions(count=count, in_flight=in_flight, extra_bytes=extra_bytes, linger_ms=linger_ms,
                               compression=None if compression == "none" else compression,
                               assets=assets,
                               modes=("broker", "receipts") if mode == "both" else (mode,),
                               rates=rates, seconds=seconds, warmup_s=min(1.0, seconds / 5), trace=trace)
    if mode == "latency":
        console.print(f"emit benchmark: emit → receipt at {', '.join(f'{r:,}/s' for r in rates)} offered "
                      f"for {seconds:g} s each ...")
    else:
        console.print(f"emit benchmark: {count:,} emissions per run ({', '.join(options.modes)}) ...")
    report = run_bench(run_emit_benchmark(settings(), options), "emit benchmark failed")
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


@app.command("persister")
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
    from rich.table import Table

    from assetbus.benchmarks.persister import BenchOptions, run_benchmark
    from assetbus.benchmarks.stats import load_text

    if profile and importlib.util.find_spec("pyinstrument") is None:
        fail("--profile needs pyinstrument: .venv/bin/pip install pyinstrument")
    tuning = {"max_records": max_records, "chunk_size": chunk_size, "transactions_in_flight": transactions_in_flight}
    options = BenchOptions(commands=commands, size=size, assets=assets, timeout_s=timeout_s, keep=keep,
                           profile=Path(profile) if profile else None, db_tls=db_tls,
                           **{name: value for name, value in tuning.items() if value is not None})
    report = run_bench(run_benchmark(settings(), options), "persister benchmark failed")
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


@app.command("pg-ceiling")
def pg_ceiling(
    as_json: bool = JSON_OPTION,
    rows: Annotated[int, typer.Option(help="Rows inserted.")] = 100_000,
    chunk_size: Annotated[int | None, typer.Option(help="Rows per transaction (default: the persister's).")] = None,
    in_flight: Annotated[int | None, typer.Option(
        help="Transactions at once, one connection each (default: the persister's).")] = None,
) -> None:
    """The ceiling the persister is measured against: rows of its events' shape into `asset_events` (same indexes,
    constraints), with its idempotent statement, chunk size and transactions in flight, and nothing else."""
    from assetbus.benchmarks.pg_ceiling import CeilingOptions, run_pg_ceiling

    given = {"chunk_size": chunk_size, "in_flight": in_flight}
    options = CeilingOptions(rows=rows, **{name: value for name, value in given.items() if value is not None})
    if min(options.rows, options.chunk_size, options.in_flight) < 1:
        fail("--rows, --chunk-size and --in-flight take positive integers")
    report = run(run_pg_ceiling(settings(), options, progress=lambda line: console.print(line)))
    console.print(f"PostgreSQL ceiling: {report.rows_per_s:,.0f} rows/s ({report.inserted:,} rows in "
                  f"{report.seconds:.2f} s; {options.chunk_size:,} per transaction, {options.in_flight} in flight)")
    if as_json:
        print(json_line({k: round(v, 2) for k, v in report.figures().items()}))


@app.command("scheduler")
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
    report = run_bench(run_benchmark(settings(), options), "scheduler benchmark failed")
    table = Table("figure", "value", title="assetbus bench scheduler", title_justify="left")
    if (backlog := report.throughput).events:
        table.add_row("scheduler throughput", f"{backlog.events_per_s:,.0f} events/s "
                      f"({backlog.events:,} events in {backlog.seconds:.2f} s, after the first runs)")
        table.add_row("scheduler CPU per event", f"{backlog.cpu_us_per_event:,.0f} µs (user + system, "
                      f"{backlog.cpu_s:.2f} s over the throughput run)")
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


@app.command("subscriber")
def subscriber(
    as_json: bool = JSON_OPTION,
    signals: Annotated[int, typer.Option(help="Readiness signals on the topic before the subscriber starts.")] = 20_000,
    partitions: Annotated[int, typer.Option(help="Partitions of the readiness topic.")] = 3,
) -> None:
    """Signals handled per second by the SDK's `ReadinessSubscriber` alone: a no-op handler, `MemoryLedger`."""
    from assetbus.benchmarks.subscriber import SubscriberBenchOptions, run_subscriber_benchmark

    if signals < 2 or partitions < 1:
        fail("--signals takes at least 2 (the clock runs from the first handler to the last), --partitions at least 1")
    options = SubscriberBenchOptions(signals=signals, partitions=partitions)
    report = run_bench(run_subscriber_benchmark(settings(), options), "subscriber benchmark failed")
    console.print(f"readiness subscriber: {report.events_per_s:,.0f} signals/s, {report.cpu_us_per_event:,.1f} µs CPU "
                  "per signal", highlight=False)
    console.print(f"  {report.events:,} signals of {report.signal_bytes} bytes in {report.seconds:.2f} s after the "
                  f"first, {partitions} partitions; subscriber stats: "
                  + ", ".join(f"{name} {n:,}" for name, n in report.counted.items()), highlight=False)
    if as_json:
        print(json_line({k: round(v, 2) for k, v in report.figures().items()}))


@app.command("api")
def api(
    requests: Annotated[int, typer.Option(help="Requests per state measurement.")] = 4000,
    concurrency: Annotated[int, typer.Option(help="Concurrent clients (task instances).")] = 16,
    emits: Annotated[int, typer.Option(help="HTTP emits per emit measurement (at most 15,000).")] = 2000,
    workers: Annotated[int, typer.Option(help="API worker processes.")] = 1,
    python: Annotated[str | None, typer.Option(help="Interpreter that runs the services, e.g. another checkout's "
                                               ".venv/bin/python, to compare two builds under the same load.")] = None,
    profile: Annotated[str | None, typer.Option(help="Path prefix: py-spy records the API during each measurement "
                                                "into <prefix>-<phase>.txt (collapsed stacks).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as one JSON object on the last line.")]
    = False,
) -> None:
    """Latency and throughput of the execution API (one uvicorn worker by default) with a persister behind it."""
    import sys

    from assetbus.benchmarks.api import ApiBenchOptions, run_api_benchmark

    if min(requests, concurrency, emits, workers) < 1 or emits > 15_000:
        fail("--requests, --concurrency, --emits and --workers must be positive, --emits at most 15,000")
    options = ApiBenchOptions(requests=requests, concurrency=concurrency, emits=emits, workers=workers,
                              python=python or sys.executable, profile=profile)
    console.print(f"api benchmark: {requests:,} state requests and {emits:,} HTTP emits per measurement ...")
    report = run_bench(run_api_benchmark(settings(), options), "api benchmark failed")
    print_table("assetbus bench api",
                ("operation", "rate", "p50 ms", "p99 ms", "API CPU/request", "client CPU/request"),
                [(p.label, f"[bold]{p.per_s:,.0f}[/]/s", f"{p.p50_ms:.1f}", f"{p.p99_ms:.1f}",
                  f"{p.api_cpu_us:,.0f} µs", f"{p.client_cpu_us:,.0f} µs") for p in report.phases])
    before, after = report.load_before, report.load_after
    console.print(f"  conditions: load average {before[0]:.2f} before, {after[0]:.2f} after; API = `assetbus run api "
                  f"--workers {report.options.workers}` and `assetbus run persister` as subprocesses on a fresh "
                  "database; load from a separate process (raw HTTP/1.1 over keep-alive connections, one request in "
                  "flight per client) on the same machine; every emit waits for its receipt (stored in PostgreSQL).")
    for name, value in report.conditions.items():
        console.print(f"  {name}: {value}")
    if as_json:
        print(json.dumps(report.figures()))


app.command("all")(bench_all.all_)
app.command("scale")(bench_scale.scale)
app.command("soak")(bench_scale.soak)
app.command("airflow")(bench_airflow.airflow)


@app.callback(invoke_without_command=True)
def all_benchmarks(ctx: typer.Context) -> None:
    """With no sub-command: run every benchmark with its defaults (`all` runs them at smaller sizes)."""
    if ctx.invoked_subcommand is None:
        for bench in (emit, persister, scheduler, subscriber, api):
            ctx.invoke(bench)
