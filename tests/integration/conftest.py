"""Integration fixtures: a running persister on the test's own database and topics."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.api import ApiConfig, create_api
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.scheduler import (
    ConsumerDag,
    LoadedDag,
    LoadResult,
    Scheduler,
    SchedulerConfig,
    SyncReport,
    create_readiness_topics,
    sync_dags,
)
from assetbus.consumers.storage import create_engine
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.airflow.stack import (  # the one Airflow stack, for any integration test that asks for it
    airflow_api,
    airflow_stack,
    credential_api,
    group_stack_modules,
    pytest_runtest_makereport,
    pytest_runtest_teardown,
    stack_engine,
)

__all__ = ["airflow_api", "airflow_stack", "credential_api", "pytest_runtest_makereport", "pytest_runtest_teardown",
           "stack_engine"]

# Hypothesis warns when the global `random` state changes while a strategy draws, and cannot tell which
# thread changed it. Here the threads beside the test do (`tests/ahead.py` makes the next topic prefix and
# database while a test runs; aiokafka picks a random broker for each request), so the warning would fail
# a property test at random. The unit tests, which run no such thread, keep the check.
RANDOM_IN_ANOTHER_THREAD = pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies:hypothesis.errors.HypothesisDeprecationWarning")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)
            item.add_marker(RANDOM_IN_ANOTHER_THREAD)
    group_stack_modules(items)


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(db_url)
    yield engine
    await engine.dispose()


@pytest.fixture
def persister_config(infra: Settings, db_url: str, topics: Topics, token_secret: str) -> PersisterConfig:
    return PersisterConfig(kafka=infra.kafka, database_url=db_url,
                           token_secret=token_secret, topics=topics, group_id=f"{topics.prefix}-persister",
                           batch_timeout_ms=20)


@pytest.fixture
async def persister(persister_config: PersisterConfig) -> AsyncIterator[Persister]:
    async with Persister(persister_config) as running:
        yield running


# --- execution API (issue 6) ---------------------------------------------------------------------


@pytest.fixture
def api_config(infra: Settings, db_url: str, topics: Topics, token_secret: str) -> ApiConfig:
    # no periodic lag/dead-letter gauges: the route tests do not read them (tests/integration/consumers/observe do)
    return ApiConfig(kafka=infra.kafka, database_url=db_url, token_secret=token_secret,
                     topics=topics, receipt_timeout_s=20, pipeline_gauges_interval_s=None)


@pytest.fixture
async def api_app(api_config: ApiConfig) -> AsyncIterator[FastAPI]:
    """The execution API with its lifespan running (engine, producer, reply reader)."""
    app = create_api(api_config)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def api_client(api_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client talking to the API in-process (ASGI), on the test's database and topics."""
    transport = httpx.ASGITransport(app=api_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://assetbus.test") as client:
        yield client


@pytest.fixture
async def api_url(api_config: ApiConfig) -> AsyncIterator[str]:
    """The API served by uvicorn on a free localhost port, in this event loop (call sync clients in a thread)."""
    async with served_api(api_config) as url:
        yield url


@contextlib.asynccontextmanager
async def served_api(api_config: ApiConfig) -> AsyncIterator[str]:
    """`api_url` as a context manager, for a test that starts the API only for some of its parameters."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_api(api_config), log_level="warning", lifespan="on"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))

    async def started() -> bool:
        if serving.done():
            serving.result()
            raise AssertionError("the API server stopped while starting")
        return server.started

    try:
        await wait_for(started, timeout_s=30, what="the API server to start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await serving
        sock.close()


# --- scheduler and readiness (issue 5) -----------------------------------------------------------


@pytest.fixture
async def readiness_cleanup(infra: Settings, topics: Topics) -> AsyncIterator[None]:
    """Deletes this test's readiness topics (`<prefix>.readiness.*`) afterwards."""
    yield
    import os

    from aiokafka.admin import AIOKafkaAdminClient

    if os.environ.get("ASSETBUS_KEEP_TEST_TOPICS"):
        return
    admin = AIOKafkaAdminClient(bootstrap_servers=infra.bootstrap_servers)
    await admin.start()
    try:
        doomed = [t for t in await admin.list_topics() if t.startswith(f"{topics.prefix}.readiness.")]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()


@pytest.fixture
def scheduler_config(infra: Settings, db_url: str, topics: Topics, readiness_cleanup: None) -> SchedulerConfig:
    return SchedulerConfig(kafka=infra.kafka, database_url=db_url, topics=topics,
                           group_id=f"{topics.prefix}-scheduler", republish_interval_s=1.0)


@pytest.fixture
async def scheduler(scheduler_config: SchedulerConfig) -> AsyncIterator[Scheduler]:
    """A running in-process scheduler on the test's database and topics."""
    async with Scheduler(scheduler_config) as running:
        yield running


@pytest.fixture
def define_dags(engine: AsyncEngine, infra: Settings, topics: Topics,
                readiness_cleanup: None) -> Callable[..., Awaitable[SyncReport]]:
    """`await define_dags(dag, ...)`: sync consumer DAG definitions (as from one file) and create their topics."""

    async def define(*dags: ConsumerDag, fileloc: str = "/dags/test_dags.py") -> SyncReport:
        loaded = LoadResult(root=fileloc, dags=[LoadedDag(dag, fileloc) for dag in dags])
        async with engine.begin() as conn:
            report = await sync_dags(conn, loaded)
        await create_readiness_topics(infra.kafka, topics, report.synced)
        return report

    return define
