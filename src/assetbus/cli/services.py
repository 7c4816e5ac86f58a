"""`assetbus run ...`: the long-running services, stopped cleanly by SIGINT/SIGTERM."""

from __future__ import annotations

import gc
from typing import Annotated

import typer

from assetbus.cli.airflow import airflow_account, optional_airflow_account
from assetbus.cli.common import run, settings, setup_logging
from assetbus.consumers.airflow import AirflowBridge, BridgeConfig, Minter
from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.persister import PersisterConfig, create_app
from assetbus.producers.tokens import dag_token, task_token
from assetbus.schemas import Topics
from assetbus.settings import ApiSettings

app = typer.Typer(help="Run a service in the foreground.", no_args_is_help=True)


@app.command("persister")
def persister(
    max_records: int = typer.Option(4000, help="Largest batch taken from Kafka; its offsets are committed together."),
    chunk_size: int = typer.Option(1000, help="Records per database transaction (a batch's chunks are pipelined)."),
    transactions_in_flight: int = typer.Option(2, help="Chunks of a batch in their transactions at once."),
    batch_timeout_ms: int = typer.Option(50, help="How long to wait to fill a batch."),
    group_id: str = typer.Option("assetbus-persister", help="Consumer group shared by persister processes."),
    session_timeout_ms: int = typer.Option(10_000, help="How soon the group gives a killed member's partitions "
                                           "away (the broker's minimum is 6000)."),
    max_poll_interval_ms: int = typer.Option(600_000, help="A batch stuck longer (database down) makes this "
                                             "process leave the group; the batch is redelivered."),
    metrics_port: int | None = typer.Option(None, help="Serve Prometheus metrics on this port at /metrics."),
    metrics_host: str = typer.Option("0.0.0.0", help="Address the metrics endpoint binds to."),
    log_level: str = typer.Option("INFO", help="Logging level."),
    log_format: str = typer.Option("kv", help="Log lines as `kv` (key=value) or `json`."),
) -> None:
    """Consume emissions, store each event once, publish receipts and asset events."""
    from assetbus.consumers.persister import logs

    logs.configure(log_level, log_format)
    s = settings()
    config = PersisterConfig(bootstrap_servers=s.bootstrap_servers, database_url=s.database_url,
                             token_secret=s.token_secret, topics=Topics(prefix=s.topic_prefix),
                             group_id=group_id, max_records=max_records, chunk_size=chunk_size,
                             transactions_in_flight=transactions_in_flight,
                             batch_timeout_ms=batch_timeout_ms, session_timeout_ms=session_timeout_ms,
                             max_poll_interval_ms=max_poll_interval_ms, metrics_port=metrics_port,
                             metrics_host=metrics_host)
    app = create_app(config)
    # Everything imported so far lives as long as the process: keep the cyclic collector from walking
    # it again and again (full collections were 50-100 ms pauses every few thousand commands).
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    run(app.run())


@app.command("api")
def api(
    host: str | None = typer.Option(None, help="Address to bind (default ASSETBUS_API_HOST, 127.0.0.1)."),
    port: int | None = typer.Option(None, help="Port to listen on (default ASSETBUS_API_PORT, 8321)."),
    receipt_timeout_s: float | None = typer.Option(None, help="Seconds the HTTP emit waits for a receipt."),
    log_level: str = typer.Option("INFO", help="Logging level."),
) -> None:
    """Serve the execution API (task state, asset state, HTTP emit); OpenAPI at /docs and /openapi.json."""
    import uvicorn

    setup_logging(log_level)
    s, api_settings = settings(), ApiSettings()
    config = ApiConfig(bootstrap_servers=s.bootstrap_servers, database_url=s.database_url,
                       token_secret=s.token_secret, topics=Topics(prefix=s.topic_prefix),
                       receipt_timeout_s=receipt_timeout_s or api_settings.receipt_timeout_s,
                       airflow=optional_airflow_account())
    minter = Minter(task=task_token, dag=dag_token)
    uvicorn.run(create_api(config, minter=minter), host=host or api_settings.host, port=port or api_settings.port,
                log_level=log_level.lower(), lifespan="on")


@app.command("scheduler")
def scheduler(
    group_id: str = typer.Option("assetbus-scheduler", help="Consumer group shared by scheduler processes."),
    max_records: int = typer.Option(2000, help="Largest batch of asset events applied in one transaction."),
    batch_timeout_ms: int = typer.Option(20, help="How long to wait to fill a batch."),
    republish_interval_s: float = typer.Option(5.0, help="How often runs left unpublished are looked for."),
    session_timeout_ms: int = typer.Option(10_000, help="How soon the group gives a killed member's partitions "
                                           "away (the broker's minimum is 6000)."),
    log_level: str = typer.Option("INFO", help="Logging level."),
) -> None:
    """Fan asset events out to consumer DAGs: queue per partition, create runs, publish readiness."""
    from assetbus.consumers.scheduler import SchedulerConfig, serve

    setup_logging(log_level)
    s = settings()
    run(serve(SchedulerConfig(bootstrap_servers=s.bootstrap_servers, database_url=s.database_url,
                              topics=Topics(prefix=s.topic_prefix), group_id=group_id, max_records=max_records,
                              batch_timeout_ms=batch_timeout_ms, republish_interval_s=republish_interval_s,
                              session_timeout_ms=session_timeout_ms)))


@app.command("airflow-bridge")
def airflow_bridge(
    dag: Annotated[list[str], typer.Option("--dag", help="An Airflow DAG the bridge starts runs of (repeatable); "
                                           "its readiness rule is the assetbus consumer DAG of the same id.")],
    airflow_url: str | None = typer.Option(None, "--airflow-url", help="Airflow's API server (default "
                                           "ASSETBUS_AIRFLOW_URL); the account is ASSETBUS_AIRFLOW_USERNAME/PASSWORD."),
    group_id: str = typer.Option("assetbus-airflow-bridge", help="Consumer group of the bridge processes."),
    poll_interval_s: float = typer.Option(2.0, help="How often the outcomes of open Airflow runs are read."),
    log_level: str = typer.Option("INFO", help="Logging level."),
) -> None:
    """Turn each readiness signal of these DAGs into exactly one Airflow DAG run, and bring its outcome back."""
    setup_logging(log_level)
    s = settings()
    config = BridgeConfig(bootstrap_servers=s.bootstrap_servers, database_url=s.database_url,
                          airflow=airflow_account(airflow_url), dag_ids=tuple(dag),
                          topics=Topics(prefix=s.topic_prefix), group_id=group_id, poll_interval_s=poll_interval_s)

    async def serve() -> None:
        async with AirflowBridge(config) as bridge:
            await bridge.run_forever()

    run(serve())
