"""`assetbus bench scale` and `assetbus bench soak`: how cost grows with load, and over a long run.

Progress goes to stderr; with `--json` the last stdout line is one JSON object.
"""

from __future__ import annotations

import os
from dataclasses import asdict

import typer

from assetbus.cli.bench_all import int_list, print_table, progress_printer, run_bench
from assetbus.cli.common import JSON_OPTION, console, fail, settings
from assetbus.cli.output import json_line

TABLES = ("partition_queue", "consumer_runs", "asset_events")
"""The scheduler's tables whose rows and size the --partitions table shows."""


def scale(
    as_json: bool = JSON_OPTION,
    rates: str = typer.Option("1000,5000,10000", help="Offered emissions/s, comma-separated ('' for none)."),
    seconds: float = typer.Option(10.0, help="How long each rate is offered (the first second is not measured)."),
    persisters: str = typer.Option("1,2,3", help="Persister processes in one consumer group, comma-separated "
                                                 "('' for none)."),
    commands: int = typer.Option(50_000, help="Commands per persister-group run."),
    schedulers: str = typer.Option("", help="Scheduler processes in one consumer group, comma-separated, e.g. "
                                            "1,2,3 ('': none)."),
    scheduler_events: int = typer.Option(20_000, help="Events per scheduler-group run."),
    pin_schedulers: str = typer.Option("", help="CPUs for the --schedulers processes, e.g. 1 or 2-3 ('': not "
                                                "pinned)."),
    pin_infra: str = typer.Option("", help="CPUs for Kafka, PostgreSQL and the benchmark itself during the "
                                           "--schedulers runs, e.g. 0 ('': not pinned)."),
    dags: str = typer.Option("", help="Consumer DAGs registered, comma-separated, e.g. 1,100,1000 ('': none); "
                                      "each event matches two of them."),
    dag_events: int = typer.Option(20_000, help="Events applied per --dags run."),
    partitions: str = typer.Option("", help="Distinct partitions stored before a latency run, comma-separated, "
                                            "e.g. 1000,100000,1000000 ('': none)."),
    partition_rate: int = typer.Option(1_000, help="Offered emissions/s of each --partitions latency run "
                                                   "(for --seconds)."),
    backlog: str = typer.Option("", help="Stored events replayed to a new consumer DAG, comma-separated, "
                                         "e.g. 1000000 ('': none)."),
    smoke: bool = typer.Option(False, "--smoke", help="Only the --dags, --partitions and --backlog tables, at "
                               "tiny sizes (a check that they run, not a measurement)."),
) -> None:
    """Offered rate against receipt and readiness p50/p99, events/s with 1, 2, 3 persisters in one group,
    (`--schedulers`) with 1, 2, 3 schedulers in one group, and how the scheduler's cost grows with consumer
    DAGs (`--dags`), partitions (`--partitions`) and a replayed backlog (`--backlog`)."""
    from assetbus.benchmarks.scale import ScaleOptions, run_scale
    from assetbus.benchmarks.scheduler_group import parse_cpus
    from assetbus.benchmarks.stats import load_text

    if min(dag_events, partition_rate) < 1:
        fail("--dag-events and --partition-rate must be positive")
    try:
        pins = [parse_cpus(text) if text else None for text in (pin_schedulers, pin_infra)]
    except ValueError as error:
        fail(f"--pin-schedulers/--pin-infra: {error}")
    if any(pins) and not schedulers:
        fail("--pin-schedulers and --pin-infra pin the --schedulers runs: give --schedulers too")
    options = ScaleOptions(rates=int_list(rates, "--rates"), seconds=seconds,
                           persisters=int_list(persisters, "--persisters"), commands=commands,
                           schedulers=int_list(schedulers, "--schedulers"), scheduler_events=scheduler_events,
                           pin_schedulers=pins[0], pin_infra=pins[1],
                           dags=int_list(dags, "--dags"), dag_events=dag_events,
                           partitions=int_list(partitions, "--partitions"), partition_rate=partition_rate,
                           backlog=int_list(backlog, "--backlog"))
    if smoke:
        options = ScaleOptions(rates=(), persisters=(), seconds=1.5, dags=(1, 3), dag_events=4_000,
                               partitions=(100, 1_000), partition_rate=200, backlog=(500,))
    report = run_bench(run_scale(settings(), options, progress_printer()), "bench scale failed")
    print_table("assetbus bench scale: offered rate",
                ("offered", "receipt p50 / p99", "readiness p50 / p99", "signals measured",
                 "peak RSS persister / scheduler", "load before → after"),
                [(f"{f['offered_per_s']:,}/s", f"{f['receipt_p50_ms']:,.0f} / {f['receipt_p99_ms']:,.0f} ms",
                  f"{f['readiness_p50_ms']:,.0f} / {f['readiness_p99_ms']:,.0f} ms",
                  f"{f['signals_measured']:,.0f} of {f['emitted']:,.0f}",
                  f"{f['persister_peak_rss_mb']:.0f} / {f['scheduler_peak_rss_mb']:.0f} MB",
                  f"{f['load_average_before']:.2f} → {f['load_average_after']:.2f}")
                 for f in (row.figures() for row in report.rates)])
    print_table(f"persisters in one group, {options.commands:,} commands of 1 KiB",
                ("persisters", "events/s", "CPU per event (all)", "peak RSS (each)", "rebalances during run",
                 "load before → after"),
                [(str(g.persisters), f"[bold]{g.events_per_s:,.0f}[/]", f"{g.cpu_us_per_event:.0f} µs",
                  f"{g.peak_rss_mb:.0f} MB", str(g.rebalances), f"{g.load_before[0]:.2f} → {g.load_after[0]:.2f}")
                 for g in report.groups])
    pinned = next((f"; {sg.pinned}" for sg in report.scheduler_groups if sg.pinned), "")
    print_table(f"schedulers in one group, {options.scheduler_events:,} events over one asset per asset-events "
                f"partition, a run and a signal each{pinned}",
                ("schedulers", "events/s", "CPU per event (schedulers)", "Kafka + PostgreSQL CPU per event",
                 "peak RSS (largest)", "load before → after"),
                [(str(sg.schedulers), f"[bold]{sg.events_per_s:,.0f}[/]", f"{sg.cpu_us_per_event:.0f} µs",
                  f"{sg.infra_cpu_us_per_event:.0f} µs", f"{sg.peak_rss_mb:.0f} MB",
                  f"{sg.load_before[0]:.2f} → {sg.load_after[0]:.2f}") for sg in report.scheduler_groups])
    print_table(f"consumer DAGs registered: one scheduler applies {options.dag_events:,} stored events",
                ("DAGs registered", "matching per event", "events/s", "CPU per event", "peak RSS"),
                [(f"{d.dags:,}", str(d.matching), f"[bold]{d.run.events_per_s:,.0f}[/]",
                  f"{d.run.cpu_us_per_event:.0f} µs", f"{d.run.peak_rss_mb:.0f} MB") for d in report.growth.dags])
    print_table(f"distinct partitions: their history stored, then {options.partition_rate:,}/s offered for "
                f"{options.seconds:g} s on new ones (table rows and size after)",
                ("partitions stored", "readiness p50 / p99", "signals measured", "scheduler peak RSS", *TABLES),
                [(f"{p.partitions:,}", f"{p.latency.percentile(50):,.0f} / {p.latency.percentile(99):,.0f} ms",
                  f"{len(p.latency.latencies_ms):,}", f"{p.latency.scheduler_peak_rss_mb:.0f} MB",
                  *(f"{p.tables[t][0]:,} rows, {p.tables[t][1]:,.0f} MB" for t in TABLES))
                 for p in report.growth.partitions])
    print_table("a backlog replayed to a new per-event consumer DAG (`replay`, its own process)",
                ("stored events", "runs created", "seconds", "events/s", "peak RSS"),
                [(f"{b.events:,}", f"{b.runs:,}", f"{b.seconds:.1f}", f"[bold]{b.figures()['events_per_s']:,.0f}[/]",
                  f"{b.peak_rss_mb:.0f} MB") for b in report.growth.backlog])
    console.print(f"  conditions: {os.cpu_count()} cores shared by the emitter, the services, Kafka and PostgreSQL; "
                  f"load average {load_text(report.load_before)} before, {load_text(report.load_after)} after; "
                  f"each rate offered {options.seconds:g} s", highlight=False)
    if as_json:
        print(json_line({"rates": [r.figures() for r in report.rates],
                         "persisters": [{**asdict(g), "events_per_s": g.events_per_s,
                                         "cpu_us_per_event": g.cpu_us_per_event} for g in report.groups],
                         "schedulers": [{"schedulers": sg.schedulers, "events": sg.events,
                                         "events_per_s": sg.events_per_s, "cpu_us_per_event": sg.cpu_us_per_event,
                                         "infra_cpu_us_per_event": sg.infra_cpu_us_per_event, "pinned": sg.pinned,
                                         "peak_rss_mb": sg.peak_rss_mb, "load_average_before": sg.load_before,
                                         "load_average_after": sg.load_after} for sg in report.scheduler_groups],
                         **report.growth.figures(),
                         "load_average_before": report.load_before, "load_average_after": report.load_after,
                         "cores": os.cpu_count()}))


def soak(
    as_json: bool = JSON_OPTION,
    events: int = typer.Option(1_000_000, help="Events to emit (the run stops earlier at --max-seconds)."),
    rate: int = typer.Option(2_000, help="Offered emissions/s."),
    max_seconds: float = typer.Option(600.0, help="Stop offering after this long (what was emitted drains ≤ 60 s)."),
    interval: float = typer.Option(30.0, help="Seconds per sampled window."),
) -> None:
    """A long run at a fixed rate: RSS, CPU and receipt/readiness p50/p99 per window, to see them stay flat."""
    from assetbus.benchmarks.soak import SoakOptions, run_soak
    from assetbus.benchmarks.stats import load_text

    if min(events, rate) < 1 or min(max_seconds, interval) <= 0:
        fail("--events, --rate, --max-seconds and --interval must be positive")
    options = SoakOptions(events=events, rate=rate, max_seconds=max_seconds, interval_s=interval)
    load_before = os.getloadavg()
    report = run_bench(run_soak(settings(), options, progress_printer()), "bench soak failed")
    print_table(f"assetbus bench soak: {rate:,}/s offered",
                ("at", "emitted", "signalled", "receipt p50 / p99", "readiness p50 / p99",
                 "RSS persister / scheduler", "CPU persister / scheduler", "load"),
                [(f"{w.at_s:.0f} s", f"{w.emitted:,}", f"{w.signalled:,}",
                  f"{w.receipt_p50_ms:,.0f} / {w.receipt_p99_ms:,.0f} ms",
                  f"{w.readiness_p50_ms:,.0f} / {w.readiness_p99_ms:,.0f} ms",
                  f"{w.persister_rss_mb:.0f} / {w.scheduler_rss_mb:.0f} MB",
                  f"{w.persister_cpu_pct:.0f} / {w.scheduler_cpu_pct:.0f} %", f"{w.load_1m:.2f}")
                 for w in report.windows])
    console.print(f"  {report.emitted:,} emitted, {report.receipted:,} receipted, {report.signalled:,} signalled in "
                  f"{report.seconds:.0f} s; load average {load_text(load_before)} before, {load_text(os.getloadavg())} "
                  f"after; {os.cpu_count()} cores shared by the emitter, the services, Kafka and PostgreSQL",
                  highlight=False)
    if as_json:
        print(json_line({**asdict(report),
                         "options": options, "load_average_before": load_before,
                         "load_average_after": os.getloadavg()}))
