"""The execution API application: `create_api(config)` → a FastAPI app (serve it with uvicorn). Its lifespan
closes what it opened in reverse order, whatever fails (a start-up timeout too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.workers import Minter
from assetbus.consumers.api.body_limit import BodyLimitMiddleware
from assetbus.consumers.api.config import ApiConfig
from assetbus.consumers.api.database import Database
from assetbus.consumers.api.errors import install_handlers
from assetbus.consumers.api.fast_path import FastPath
from assetbus.consumers.api.gateway import EmissionGateway
from assetbus.consumers.api.models import BODY_MAX_BYTES
from assetbus.consumers.api.probes import ApiMetrics, RequestMetricsMiddleware
from assetbus.consumers.api.probes import router as probes_router
from assetbus.consumers.api.routes import airflow as airflow_routes
from assetbus.consumers.api.routes import asset_state, emit, runs, task_state
from assetbus.consumers.api.ui import routes as ui
from assetbus.consumers.api.versioning import API_VERSIONS, LATEST_VERSION, VERSION_HEADER, ApiVersionMiddleware
from assetbus.consumers.auth import CachedTokenVerifier, TokenVerifier
from assetbus.consumers.observe.logs import install_loop_handler
from assetbus.consumers.observe.pipeline import PipelineGauges
from assetbus.consumers.observe.process_metrics import register_process_metrics
from assetbus.consumers.observe.readiness import ReadinessChecks
from assetbus.consumers.observe.service import wait_for_dependencies
from assetbus.consumers.storage import create_engine
from assetbus.consumers.storage.raw_pool import create_raw_pool
from assetbus.consumers.storage.state import periodic_cleanup
from assetbus.producers.kafka.access import AccessRefusals

DESCRIPTION = f"""Task state, asset state and HTTP emission for assetbus.

Every route needs a bearer token (`assetbus token issue`). Send `{VERSION_HEADER}: <date>` with the
API version your client was written for (supported: {", ".join(API_VERSIONS)}); responses carry the
version that served them. Responses may gain fields: ignore the ones you do not know.
"""


log = logging.getLogger("assetbus.api")


class Health(BaseModel):
    status: str = Field(description="`ok` once the API serves requests.")
    api_versions: list[str] = Field(description="The API versions this server speaks, oldest first.")


def create_api(config: ApiConfig, *, minter: Minter | None = None) -> FastAPI:
    """The app; nothing connects until its lifespan starts. `minter` signs tokens for Airflow attempts."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        install_loop_handler(asyncio.get_running_loop())  # uvicorn's loop: a failed TLS connection is reported once
        async with contextlib.AsyncExitStack() as stack:
            engine = create_engine(config.database_url, pool_size=config.db_pool_size, max_overflow=0,
                                   pre_ping=False)
            stack.push_async_callback(engine.dispose)
            await wait_for_dependencies(config, log, engine=engine, required=config.required_topics())
            raw_pool = await create_raw_pool(config.database_url, size=config.db_pool_size)
            stack.push_async_callback(raw_pool.close)
            if config.airflow is not None:
                app.state.airflow = await stack.enter_async_context(AirflowClient(config.airflow))
            gateway = EmissionGateway(config.kafka, config.topics, receipt_timeout_s=config.receipt_timeout_s,
                                      instance_id=config.instance_id, refusals=refusals)
            await gateway.start()
            stack.push_async_callback(gateway.stop)
            app.state.database = Database(engine, raw_pool)
            app.state.gateway = gateway
            if config.pipeline_gauges_interval_s is not None:
                gauges = PipelineGauges(kafka, config.topics, registry, interval_s=config.pipeline_gauges_interval_s,
                                        refusals=refusals)
                await gauges.start()
                stack.push_async_callback(gauges.stop)
            await stack.enter_async_context(periodic_cleanup(engine, config.state_cleanup_interval_s,
                                                             batch_size=config.state_cleanup_batch_size))
            yield

    app = FastAPI(title="assetbus execution API", version=LATEST_VERSION, description=DESCRIPTION,
                  lifespan=lifespan)
    kafka = config.kafka
    metrics = ApiMetrics()
    registry = metrics.registry
    verifier = TokenVerifier.configured(jwks=config.token_jwks, secret=config.token_secret)
    app.state.verifier = CachedTokenVerifier(verifier, size=10_000)  # a token's signature is checked once
    app.state.operator_verifier = verifier  # uncached: the /ui sign-in's operator tokens, and subscriber tokens
    app.state.config = config
    app.state.airflow = None
    app.state.minter = minter
    app.state.kafka = kafka
    app.state.topics = config.topics
    # the state routes need PostgreSQL only: a broker outage degrades the API (emits answer 503), it stays ready;
    # a refusal by the cluster's ACLs does not (it lasts until the ACL is added)
    refusals = AccessRefusals()
    register_process_metrics(registry, refusals)
    app.state.readiness = ReadinessChecks(broker=kafka, database_url=config.database_url,
                                          degraded_without=frozenset({"broker"}), access=refusals)
    app.state.metrics_registry = registry
    install_handlers(app)
    for router in (task_state.router, asset_state.router, emit.router, runs.router, airflow_routes.router,
                   probes_router, ui.router, ui.api):
        app.include_router(router)
    app.mount("/ui/static", StaticFiles(packages=[("assetbus.consumers.api.ui", "static")]), name="ui-static")

    @app.get("/health", response_model=Health, tags=["service"], summary="Liveness (alias of /healthz)")
    async def health() -> Health:
        return Health(status="ok", api_versions=list(API_VERSIONS))

    if config.fast_path:  # innermost: the hot task state and emit routes, counted by the metrics around it
        app.add_middleware(FastPath)
    app.add_middleware(RequestMetricsMiddleware, metrics=metrics)
    app.add_middleware(BodyLimitMiddleware, max_bytes=BODY_MAX_BYTES)
    app.add_middleware(ApiVersionMiddleware)  # outermost: a bad version is answered before anything else
    return app
