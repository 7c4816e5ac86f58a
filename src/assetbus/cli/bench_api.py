"""`assetbus bench api`: execution API latency and throughput, printed with their conditions.

The measurement lives in `assetbus.benchmarks.api` (imported when the command runs).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from assetbus.cli.bench_all import run_bench
from assetbus.cli.common import console, fail, settings

if TYPE_CHECKING:
    from assetbus.benchmarks.api import ApiBenchReport


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
    print_report(report)
    if as_json:
        print(json.dumps(report.figures()))


def print_report(report: ApiBenchReport) -> None:
    table = Table("operation", "rate", "p50 ms", "p99 ms", "API CPU/request", "client CPU/request",
                  title="assetbus bench api", title_justify="left")
    for p in report.phases:
        table.add_row(p.label, f"[bold]{p.per_s:,.0f}[/]/s", f"{p.p50_ms:.1f}", f"{p.p99_ms:.1f}",
                      f"{p.api_cpu_us:,.0f} µs", f"{p.client_cpu_us:,.0f} µs")
    console.print(table)
    before, after = report.load_before, report.load_after
    console.print(f"  conditions: load average {before[0]:.2f} before, {after[0]:.2f} after; API = `assetbus run api "
                  f"--workers {report.options.workers}` and `assetbus run persister` as subprocesses on a fresh "
                  "database; load from a separate process (raw HTTP/1.1 over keep-alive connections, one request in "
                  "flight per client) on the same machine; every emit waits for its receipt (stored in PostgreSQL).")
    for name, value in report.conditions.items():
        console.print(f"  {name}: {value}")


if __name__ == "__main__":
    typer.run(api)
