"""`assetbus bench all [--json]`: every benchmark, one table of figures with their conditions (docs/benchmarks.md)."""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from assetbus.cli.common import JSON_OPTION, console, err_console, fail, run, settings
from assetbus.cli.output import json_line, print_rows

if TYPE_CHECKING:
    from assetbus.benchmarks.suite import SuiteReport

T = TypeVar("T")

AIRFLOW_SAMPLES = 20
"""Rounds of the Airflow benchmark in `bench all` (its own default is 50): about 3 minutes with Airflow's start."""


def all_(
    as_json: bool = JSON_OPTION,
    smoke: bool = typer.Option(False, help="Tiny sizes (seconds, not minutes): checks that every benchmark runs."),
    rates: str = typer.Option("1000,5000,50", help="Offered emissions/s of the latency runs, comma-separated; "
                                               "the first gives receipt_p50_ms … readiness_p99_ms."),
    airflow: bool | None = typer.Option(None, "--airflow/--no-airflow", help="Also run `assetbus bench airflow` "
                                        f"({AIRFLOW_SAMPLES} rounds, 200 partitions; --smoke: its smoke sizes). "
                                        "Default: when the Airflow venv with its PostgreSQL driver is there, "
                                        "and not with --smoke."),
) -> None:
    """Every benchmark (emit, persister, scheduler with latency at offered rates, the SDK's subscriber, api; then
    Airflow when its venv is there) in under 10 minutes."""
    from dataclasses import replace

    from assetbus.benchmarks.suite import SuiteSizes, run_suite

    offered = int_list(rates, "--rates")
    if not offered:
        fail("--rates needs at least one positive rate")
    sizes = SuiteSizes.smoke() if smoke else SuiteSizes()
    if not smoke or rates != "1000,5000,50":
        sizes = replace(sizes, rates=offered)
    with_airflow, why = include_airflow(airflow, smoke)
    started = time.perf_counter()
    progress = progress_printer()
    if why:
        progress(why)
    report = run_bench(run_suite(settings(), sizes, progress), "bench all failed")
    airflow_report = None
    if with_airflow:
        from assetbus.benchmarks.airflow import AirflowBenchOptions, run_airflow_benchmark

        options = AirflowBenchOptions.smoke() if smoke else AirflowBenchOptions(samples=AIRFLOW_SAMPLES)
        progress(f"then airflow: Airflow 3 on PostgreSQL, {options.samples} rounds, {options.partitions} partitions "
                 "(assetbus bench airflow)")
        airflow_report = run_bench(run_airflow_benchmark(settings(), options, progress),
                                   "bench all failed in the Airflow benchmark")
        report.figures.update(airflow_report.figures())
        report.conditions["airflow"] = airflow_report.conditions
    report.conditions["duration_s"] = round(time.perf_counter() - started, 1)
    print_report(report)
    if airflow_report is not None:
        from assetbus.cli.bench_airflow import print_report as print_airflow_report

        print_airflow_report(airflow_report)
    if as_json:
        print(json_line({**{k: round(v, 2) for k, v in report.figures.items()}, "conditions": report.conditions}))


def int_list(text: str, option: str) -> tuple[int, ...]:
    """An option's comma-separated positive integers (none for an empty text); a wrong one ends the command."""
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        fail(f"{option} must be comma-separated integers, not {text!r}")
    if values and min(values) < 1:
        fail(f"{option} takes positive integers")
    return values


def include_airflow(asked: bool | None, smoke: bool) -> tuple[bool, str]:
    """Whether `bench all` runs the Airflow benchmark, and a line saying why not when the venv decided."""
    from assetbus.infra.airflow import AIRFLOW_VENV, postgres_driver_missing

    if asked is False or (asked is None and smoke):
        return False, ""
    problem = postgres_driver_missing(AIRFLOW_VENV)
    if problem is None:
        return True, ""
    if asked:
        fail(f"--airflow: {problem}")
    return False, f"the Airflow benchmark is left out: {problem}"


def run_bench(coro: Coroutine[Any, Any, T], failed: str) -> T:
    """The benchmark's report; an error ends the command with `<failed>: <error type>: <error>`."""
    try:
        return run(coro)
    except Exception as error:
        fail(f"{failed}: {type(error).__name__}: {error}")


def progress_printer() -> Callable[[str], None]:
    started = time.perf_counter()

    def progress(line: str) -> None:
        err_console.print(f"[dim]{time.perf_counter() - started:6.1f}s[/] {line}", highlight=False)

    return progress


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A report's table (`print_rows`); nothing when it has no rows."""
    if shown := list(rows):
        print_rows(shown, False, columns, lambda row: row, title=title)


UNITS = {"per_s": "/s", "_ms": "ms", "_mb": "MB", "us_per_event": "µs", "us_per_emission": "µs", "us_per_signal": "µs",
         "_backlog_s": "s"}


def cell(value: float, unit: str) -> str:
    """A figure as the table shows it: a share or ratio (no unit, under 1) to two places, so 0.56 is not 0.6."""
    if not unit and value < 1:
        return f"{value:.2f}"
    return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"


def print_report(report: SuiteReport) -> None:
    from rich.table import Table

    from assetbus.benchmarks.stats import load_text

    table = Table("figure (JSON key)", "value", title="assetbus bench all", title_justify="left")
    for key, value in report.figures.items():
        unit = next((u for suffix, u in UNITS.items() if key.endswith(suffix) or suffix in key), "")
        table.add_row(key, cell(value, unit))
    console.print(table)
    c = report.conditions
    console.print(f"  conditions: {c['cores']} cores ({c['machine']}), Python {c['python']}, "
                  f"Kafka {c['kafka']}, PostgreSQL {c['postgresql']}; {c['libraries']}", highlight=False)
    console.print(f"  load average before {load_text(c['load_average_before'])}, "
                  f"after {load_text(c['load_average_after'])}; "
                  f"busiest other processes: {c['other_processes_top3']}", highlight=False)
    console.print(f"  commands of {c['emit_command_bytes']} bytes (emit) and {c['persister_command_bytes']} "
                  f"bytes (persister); offered {', '.join(f'{r:,}/s' for r in c['offered_rates_per_s'])} for "
                  f"{c['latency_seconds_per_rate']:g} s each (first second excluded); took {c['duration_s']:.0f} s",
                  highlight=False)
