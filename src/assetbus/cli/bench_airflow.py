"""`assetbus bench airflow`: emit → Airflow with a real Airflow 3, every path in one run, with its conditions.

Progress goes to stderr; with `--json` the last line on stdout is one JSON object of every figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from assetbus.cli.bench_all import print_table, progress_printer, run_bench
from assetbus.cli.common import JSON_OPTION, console, fail, settings
from assetbus.cli.output import json_line

if TYPE_CHECKING:
    from assetbus.benchmarks.airflow import AirflowBenchReport

PATHS = (
    ("event", "emit → Airflow asset event exists (forwarder)"),
    ("native_run", "emit → Airflow-native asset-triggered run (forwarder, schedule=[asset])"),
    ("bridge_run", "emit → run made by the bridge"),
    ("rest_run", "Airflow's own path: POST /api/v2/assets/events → asset-triggered run"),
)


def airflow(
    as_json: bool = JSON_OPTION,
    metadata: Annotated[str, typer.Option(help="Airflow's metadata DB: postgres (a fresh database on the "
                                          "configured PostgreSQL server, dropped afterwards) or sqlite.")] = "postgres",
    samples: Annotated[int, typer.Option(help="Measured rounds; each takes one sample of every latency path.")] = 50,
    partitions: Annotated[int, typer.Option(help="Ready partitions for each runs-per-second figure.")] = 200,
    warmup: Annotated[int, typer.Option(help="Rounds before the measured ones (not counted).")] = 2,
    bridge_concurrency: Annotated[int | None, typer.Option(help="The bridge's --concurrency (default 4 on "
                                                           "PostgreSQL, 1 on SQLite).")] = None,
    airflow_setting: Annotated[list[str] | None, typer.Option(
        "--airflow-setting", help="section.key=value: an Airflow setting over the benchmark's (repeatable), e.g. "
        "scheduler.scheduler_idle_sleep_time=0.2.")] = None,
    smoke: Annotated[bool, typer.Option(help="Tiny sizes (3 rounds, 5 partitions, one api-server worker): checks "
                                        "that every path runs.")]
    = False,
    keep_home: Annotated[bool, typer.Option(help="Keep Airflow's home (config, logs) after the run.")] = False,
    first_emits: Annotated[int, typer.Option(help="Also time a task's first emit() (its token included) in each "
                                             "identity mode, attested and credential: this many runs per mode, "
                                             "alternating.")] = 0,
    only_first_emits: Annotated[bool, typer.Option(help="Measure only the first emits (no latency rounds, no "
                                                   "bursts).")] = False,
) -> None:
    """emit → Airflow event, native run, bridge run; Airflow's own REST path; runs/s through the bridge and through
    Airflow's own scheduling. Needs the Airflow venv (`make airflow-venv`) next to Kafka and PostgreSQL."""
    import signal
    import sys
    from dataclasses import replace

    from assetbus.benchmarks.airflow import AirflowBenchOptions, run_airflow_benchmark
    from assetbus.infra.airflow import AIRFLOW_VENV, METADATA_DATABASES, POSTGRES, airflow_bin, postgres_driver_missing
    from assetbus.infra.errors import InfraError

    if metadata not in METADATA_DATABASES:
        fail(f"--metadata is one of {', '.join(METADATA_DATABASES)}, not {metadata!r}")
    overrides = []
    for item in airflow_setting or []:
        name, sep, value = item.partition("=")
        if not sep or "." not in name:
            fail(f"--airflow-setting takes section.key=value, not {item!r}")
        overrides.append((name.strip().lower(), value.strip()))
    try:
        airflow_bin(AIRFLOW_VENV)
    except InfraError as error:
        fail(str(error))
    if metadata == POSTGRES and (problem := postgres_driver_missing(AIRFLOW_VENV)):
        fail(problem)
    options = AirflowBenchOptions.smoke(metadata) if smoke else AirflowBenchOptions(
        metadata=metadata, samples=samples, partitions=partitions, warmup=warmup)
    options = replace(options, bridge_concurrency=bridge_concurrency,
                      airflow_settings=(*options.airflow_settings, *overrides), keep_home=keep_home,
                      first_emits=first_emits, only_first_emits=only_first_emits)
    if only_first_emits and first_emits < 1:
        fail("--only-first-emits needs --first-emits N (N >= 1)")
    if min(options.samples, options.partitions) < 2 or options.warmup < 0 or (bridge_concurrency or 1) < 1:
        fail("--samples and --partitions must be at least 2, --warmup not negative, --bridge-concurrency positive")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the stack and drop its databases on SIGTERM too
    report = run_bench(run_airflow_benchmark(settings(), options, progress_printer()), "bench airflow failed")
    print_report(report)
    if as_json:
        figures = {k: round(v, 2) for k, v in report.figures().items()}
        print(json_line({**figures, "conditions": report.conditions}))


def print_report(report: AirflowBenchReport) -> None:
    from rich.markup import escape

    from assetbus.benchmarks.stats import load_text, percentile

    o, c = report.options, report.conditions
    print_table("a task's first emit() (its token included), runs alternating",
                ("identity mode", "p50", "p90", "min", "max", "runs"),
                [(mode, f"[bold]{_ms(percentile(values, 50))}[/]", _ms(percentile(values, 90)),
                  _ms(min(values, default=float("nan"))), _ms(max(values, default=float("nan"))), str(len(values)))
                 for mode, values in report.first_emit_ms.items()])
    if o.only_first_emits:
        return
    latencies = {label: report.latencies_ms(name) for name, label in PATHS}
    print_table(f"assetbus bench airflow: latency, {o.samples} interleaved rounds",
                ("path", "p50", "p99", "max", "samples"),
                [(escape(label), f"[bold]{_ms(percentile(values, 50))}[/]", _ms(percentile(values, 99)),
                  _ms(max(values, default=float("nan"))), str(len(values))) for label, values in latencies.items()])
    runs = []
    if report.bridge is not None:
        runs.append((f"the bridge (--concurrency {o.concurrency})", f"[bold]{report.bridge.runs_per_s:,.1f}[/]",
                     f"{report.bridge.start_to_last_s:,.1f} s", "partitions made ready by the assetbus scheduler "
                     "while no bridge ran"))
    if report.native is not None:
        n = report.native
        runs.append(("Airflow's own scheduling (forwarder, PartitionedAssetTimetable)", f"[bold]{n.runs_per_s:,.1f}[/]",
                     f"{n.start_to_last_s:,.1f} s", f"forwarder posted {n.events_per_s:,.1f} events/s; each event → "
                     f"its run p50 {_ms(percentile(n.lag_ms, 50))}, p99 {_ms(percentile(n.lag_ms, 99))}"))
    print_table(f"runs per second, {o.partitions:,} ready partitions",
                ("through", "runs/s (first → last run)", "service start → last run", "notes"), runs)
    settings_text = ", ".join(f"{k} {v}" for k, v in c["airflow_settings"].items())
    console.print(f"  Airflow: {c['airflow']}, metadata DB {c['metadata_db']}; {settings_text}; "
                  "api-server, scheduler, dag-processor and triggerer on this machine", highlight=False)
    console.print(f"  bridge --concurrency {c['bridge_concurrency']}; forwarder: {c['forwarder']}; emitter: the SDK's "
                  "AsyncEmitter with a task token, outside Airflow", highlight=False)
    console.print(f"  conditions: {c['cores']} cores ({c['machine']}) shared by Airflow, assetbus, Kafka "
                  f"{c['kafka']} and PostgreSQL {c['postgresql']}; Python {c['python']}; load average "
                  f"{load_text(c['load_average_before'])} before, {load_text(c['load_average_after'])} after; "
                  f"busiest other processes: {c['other_processes_top3']}; took {c['duration_s']:.0f} s",
                  highlight=False)
    if report.skipped_posts:
        console.print(f"  {len(report.skipped_posts)} REST samples skipped: Airflow answered "
                      f"{report.skipped_posts[0]}", highlight=False)


def _ms(value: float) -> str:
    if value != value:  # NaN: no sample
        return "—"
    return f"{value / 1000:,.2f} s" if value >= 10_000 else f"{value:,.0f} ms"
