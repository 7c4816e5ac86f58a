"""`assetbus bench [emit|persister|pg-ceiling|scheduler|api|all|scale|soak|airflow]`: figures with their conditions."""

from __future__ import annotations

import typer

from assetbus.cli import (
    bench_airflow,
    bench_all,
    bench_api,
    bench_emit,
    bench_persister,
    bench_pg_ceiling,
    bench_scale,
    bench_scheduler,
)

app = typer.Typer(help="Benchmarks (run on a quiet machine; figures go to the README).")
app.command("emit")(bench_emit.emit)
app.command("persister")(bench_persister.persister)
app.command("pg-ceiling")(bench_pg_ceiling.pg_ceiling)
app.command("scheduler")(bench_scheduler.scheduler)
app.command("api")(bench_api.api)
app.command("all")(bench_all.all_)
app.command("scale")(bench_scale.scale)
app.command("soak")(bench_scale.soak)
app.command("airflow")(bench_airflow.airflow)


@app.callback(invoke_without_command=True)
def all_benchmarks(ctx: typer.Context) -> None:
    """With no sub-command: run every benchmark with its defaults (`all` runs them at smaller sizes)."""
    if ctx.invoked_subcommand is None:
        for bench in (bench_emit.emit, bench_persister.persister, bench_scheduler.scheduler, bench_api.api):
            ctx.invoke(bench)
