"""`assetbus run ...`: the long-running services, stopped cleanly by SIGINT/SIGTERM.

Each command's options are the fields of the service's settings model (see `assetbus.cli.options`):
`--max-records 500`, `ASSETBUS_PERSISTER_MAX_RECORDS=500` and that line in `.env` are the same setting.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Coroutine
from typing import Any

import typer

from assetbus.cli.common import fail, run, settings, setup_logging
from assetbus.cli.options import LogSettings, build, settings_options
from assetbus.consumers.api.config import ApiConfig
from assetbus.consumers.kafka.startup import StartupTimeout
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.schemas import Topics
from assetbus.security_settings import SecurityConfigError

app = typer.Typer(help="Run a service in the foreground.", no_args_is_help=True)


def _connection(*, token: bool = True) -> dict[str, Any]:
    """The values every service takes from the shared settings (Kafka, database, token key, topics)."""
    s = settings()
    values: dict[str, Any] = {"kafka": s.kafka, "database_url": s.database_url,
                              "topics": Topics(prefix=s.topic_prefix)}
    if token:
        try:
            values.update(s.verification_keys)
        except SecurityConfigError as error:
            fail(str(error))
    return values


@app.command("persister")
@settings_options(PersisterConfig, LogSettings)
def persister(options: dict[str, Any]) -> None:
    """Consume emissions, store each event once, publish receipts and asset events."""
    from assetbus.consumers.persister import logs, serve

    log = build(LogSettings, options)
    logs.configure(log.log_level, log.log_format)
    config = build(PersisterConfig, options, **_connection())
    # Everything imported so far lives as long as the process: keep the cyclic collector from walking
    # it again and again (full collections were 50-100 ms pauses every few thousand commands).
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)
    _serve(serve(config))


async def _dependencies_up(config: ApiConfig) -> None:
    from assetbus.consumers.kafka.startup import startup_policy, wait_for_database, wait_for_kafka
    from assetbus.consumers.storage import create_engine

    policy, log = startup_policy(config.startup_timeout_s), logging.getLogger("assetbus.api")
    engine = create_engine(config.database_url)
    try:
        await wait_for_kafka(config.kafka, policy, log)
        await wait_for_database(engine, policy, log)
    finally:
        await engine.dispose()


def _serve(service: Coroutine[Any, Any, None]) -> None:
    """Run a service; giving up on Kafka or PostgreSQL at start-up is one line and exit code 75, no traceback."""
    try:
        run(service)
    except StartupTimeout as error:
        fail(str(error), code=error.exit_code)


@app.command("api")
@settings_options(ApiConfig, LogSettings)
def api(options: dict[str, Any]) -> None:
    """Serve the execution API (task state, asset state, HTTP emit); OpenAPI at /docs and /openapi.json."""
    import uvicorn

    from assetbus.consumers.api import create_api

    log = build(LogSettings, options)
    setup_logging(log.log_level)
    config = build(ApiConfig, options, **_connection())
    _serve(_dependencies_up(config))  # before uvicorn, so that giving up is one line, not a lifespan traceback
    uvicorn.run(create_api(config), host=config.host, port=config.port, log_level=log.log_level.lower(),
                lifespan="on")


@app.command("scheduler")
@settings_options(SchedulerConfig, LogSettings)
def scheduler(options: dict[str, Any]) -> None:
    """Fan asset events out to consumer DAGs: queue per partition, create runs, publish readiness."""
    from assetbus.consumers.scheduler import serve

    log = build(LogSettings, options)
    setup_logging(log.log_level)
    _serve(serve(build(SchedulerConfig, options, **_connection(token=False))))
