"""`assetbus run ...`: the long-running services, stopped cleanly by SIGINT/SIGTERM.

Each command's options are the fields of the service's settings model (`assetbus.cli.options`). Only the
settings models are imported here: each command imports its own service (`run scheduler` imports neither
FastAPI nor the Airflow bridge).
"""

from __future__ import annotations

import functools
import gc
import logging
from collections.abc import Coroutine
from typing import Any

import typer

from assetbus.cli.airflow import airflow_account
from assetbus.cli.common import database, fail, run, settings, signing_key
from assetbus.cli.options import CONNECTION, LogSettings, build, settings_options
from assetbus.consumers.airflow.config import BridgeConfig, ForwarderConfig
from assetbus.consumers.api.config import ApiConfig
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.scheduler.config import SchedulerConfig

app = typer.Typer(help="Run a service in the foreground.", no_args_is_help=True)

SIGNING_KEY_HOLDERS: dict[str, str] = {
    "api": "only with Airflow configured (ASSETBUS_AIRFLOW_URL): it mints the tokens of Airflow attempts and "
           "DAG runs (POST /airflow/tokens)",
}
"""The `assetbus run` services that may load the private signing key, and when (docs/security.md, "Who holds
which key"). Every other service gets the public keys (persister, API) or no key at all (scheduler, bridge)."""


def _signing_key(service: str) -> Any:
    """The minting key, for a service named in SIGNING_KEY_HOLDERS only (a clear exit if none is configured)."""
    if service not in SIGNING_KEY_HOLDERS:
        raise RuntimeError(f"`assetbus run {service}` must not hold the signing key (see SIGNING_KEY_HOLDERS)")
    return signing_key()


def _connection(service: str, *, token: bool = True) -> dict[str, Any]:
    from assetbus.schemas import Topics
    from assetbus.security_settings import SecurityConfigError

    s = settings()
    values: dict[str, Any] = {"kafka": s.kafka.for_service(service), "database_url": s.database_url,
                              "topics": Topics(prefix=s.topic_prefix), "create_topics": s.create_topics}
    if token:
        try:
            values.update(s.verification_keys)
        except SecurityConfigError as error:
            fail(str(error))
    return values


def _configure_logs(options: dict[str, Any], *, quiet_httpx: bool = False) -> LogSettings:
    """The service's log level and format (`quiet_httpx`: not one line per Airflow request)."""
    from assetbus.consumers.observe import logs

    log = build(LogSettings, options)
    logs.configure(log.log_level, log.log_format)
    if quiet_httpx:
        logging.getLogger("httpx").setLevel(logging.WARNING)
    return log


@app.command("persister")
@settings_options(PersisterConfig, LogSettings)
def persister(options: dict[str, Any]) -> None:
    """Consume emissions, store each event once, publish receipts and asset events."""
    from assetbus.consumers.persister import Persister

    _configure_logs(options)
    config = build(PersisterConfig, options, **_connection("persister"))
    _freeze_startup_objects()
    _serve(Persister(config).serve_until_signalled())


def _freeze_startup_objects() -> None:
    """Everything imported so far lives as long as the process: keep the cyclic collector from walking
    it again and again (full collections were 50-100 ms pauses every few thousand commands in the
    persister; in the scheduler, collections were a third of its CPU per event)."""
    gc.freeze()
    gc.set_threshold(50_000, 20, 20)


async def _dependencies_up(config: ApiConfig) -> None:
    from assetbus.consumers.observe.service import wait_for_dependencies

    async with database(config.database_url) as engine:
        await wait_for_dependencies(config, logging.getLogger("assetbus.api"), engine=engine,
                                    required=config.required_topics())


def _serve(service: Coroutine[Any, Any, None]) -> None:
    """Run a service (on uvloop, see `event_loop`); giving up on Kafka or PostgreSQL at start-up is one line
    and exit code 75, no traceback."""
    from assetbus.cli.event_loop import service_loop_factory
    from assetbus.producers.kafka.startup import StartupTimeout

    try:
        factory = service_loop_factory()
    except ValueError as error:
        service.close()
        fail(str(error))
    try:
        run(service, loop_factory=factory)
    except StartupTimeout as error:
        fail(str(error), code=error.exit_code)


@app.command("api")
@settings_options(ApiConfig, LogSettings, skip=CONNECTION | {"airflow"})
def api(options: dict[str, Any]) -> None:
    """Serve the execution API (task state, asset state, HTTP emit), the /ui page, /metrics, /healthz and /readyz;
    OpenAPI at /docs and /openapi.json."""
    from assetbus.consumers.airflow.workers import Minter
    from assetbus.consumers.api import create_api
    from assetbus.consumers.api.server import prepare_multiprocess
    from assetbus.consumers.api.server import serve as serve_api
    from assetbus.producers.tokens import dag_token, task_token
    from assetbus.settings import AirflowSettings

    log = _configure_logs(options)
    airflow = airflow_account() if AirflowSettings().url else None  # the token route needs it
    config = build(ApiConfig, options, **_connection("api"), airflow=airflow)
    prepare_multiprocess(config.workers)  # /metrics sums the workers' request counters
    minter = None
    if config.airflow is not None:  # the token endpoint signs with the SDK's functions and the minting key
        key = _signing_key("api")
        minter = Minter(task=functools.partial(task_token, key), dag=functools.partial(dag_token, key))
    _serve(_dependencies_up(config))  # before uvicorn, so that giving up is one line, not a lifespan traceback

    def build_app(worker: int) -> Any:
        own = config
        if config.instance_id is not None and config.workers > 1:  # each worker reads its own receipts
            own = config.model_copy(update={"instance_id": f"{config.instance_id}-{worker}"})
        app = create_api(own, minter=minter)
        gc.freeze()  # what is imported and built so far lives as long as the process (as in the persister)
        return app

    code = serve_api(build_app, config, log.log_level)
    if code:
        raise typer.Exit(code)


@app.command("scheduler")
@settings_options(SchedulerConfig, LogSettings)
def scheduler(options: dict[str, Any]) -> None:
    """Fan asset events out to consumer DAGs: queue per partition, create runs, publish readiness."""
    from assetbus.consumers.scheduler import Scheduler

    _configure_logs(options)
    config = build(SchedulerConfig, options, **_connection("scheduler", token=False))
    _freeze_startup_objects()
    _serve(Scheduler(config).serve_until_signalled())


@app.command("airflow-bridge")
@settings_options(BridgeConfig, LogSettings, skip=CONNECTION | {"airflow"})
def airflow_bridge(options: dict[str, Any]) -> None:
    """Turn each readiness signal of these DAGs into exactly one Airflow DAG run, and bring its outcome back
    (Airflow: ASSETBUS_AIRFLOW_URL, and one of ASSETBUS_AIRFLOW_PASSWORD with ASSETBUS_AIRFLOW_USERNAME,
    ASSETBUS_AIRFLOW_TOKEN or ASSETBUS_AIRFLOW_AUTH)."""
    from assetbus.consumers.airflow import AirflowBridge

    _configure_logs(options, quiet_httpx=True)
    config = build(BridgeConfig, options, **_connection("bridge", token=False), airflow=airflow_account())
    _serve(AirflowBridge(config).serve_until_signalled())


@app.command("airflow-forwarder")
@settings_options(ForwarderConfig, LogSettings, skip=CONNECTION | {"airflow"})
def airflow_forwarder(options: dict[str, Any]) -> None:
    """Post every stored event of an asset that Airflow knows to Airflow's REST API as an asset event, exactly
    once (Airflow: ASSETBUS_AIRFLOW_URL, and one of ASSETBUS_AIRFLOW_PASSWORD with ASSETBUS_AIRFLOW_USERNAME,
    ASSETBUS_AIRFLOW_TOKEN or ASSETBUS_AIRFLOW_AUTH)."""
    from assetbus.consumers.airflow.forwarder import AirflowForwarder

    _configure_logs(options, quiet_httpx=True)
    config = build(ForwarderConfig, options, **_connection("forwarder", token=False), airflow=airflow_account())
    _serve(AirflowForwarder(config).serve_until_signalled())
