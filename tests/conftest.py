"""Shared fixtures: the real infrastructure, one fresh database and topic prefix per test."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import asyncpg
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from sqlalchemy.engine import make_url

from assetbus.migrate import upgrade
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics
from tests.ahead import AheadPool
from tests.infra_source import containers, use_testcontainers

# Two cores shared with Kafka and PostgreSQL: input generation may be slow, which is not a failure.
hypothesis_settings.register_profile("assetbus", suppress_health_check=[HealthCheck.too_slow], deadline=None)
hypothesis_settings.load_profile("assetbus")

TEMPLATE_DB = f"assetbus_test_template_{os.getpid()}"
"""One per pytest session, so concurrent sessions on one cluster never drop each other's template."""


AIRFLOW_STACK_SCOPE = "airflow-stack"
AIRFLOW_SCOPE = "airflow"
CLUSTER_SCOPE = "cluster"
AIRFLOW_STACK_FILES = ("tests/integration/airflow/", "tests/integration/chaos/test_kill_anywhere_airflow.py")
"""Where the tests that use the one shared Airflow stack live (a test file elsewhere that asks for it is refused
at collection: see `tests/integration/airflow/stack.py`)."""


def names_airflow(path: str) -> bool:
    """Whether a test file belongs to the Airflow group: its path names airflow."""
    return "airflow" in _relative(path)


def on_airflow_stack(path: str) -> bool:
    """Whether a test file is among those that share the Airflow stack (`AIRFLOW_STACK_FILES`)."""
    return _relative(path).startswith(AIRFLOW_STACK_FILES)


def _relative(path: str) -> str:
    """`tests/...` of a test file's path or node id."""
    return "tests/" + path.replace("\\", "/").rsplit("/tests/", 1)[-1].removeprefix("tests/")


OTHER_THREADS_DRAW_RANDOM = pytest.mark.filterwarnings(
    "ignore:Do not use the `random` module inside strategies:hypothesis.errors.HypothesisDeprecationWarning")
"""For a session that runs unit tests beside integration tests (by hand: `make test` runs the unit tests in a
session of their own, where the warning stays an error). There, threads the other tests leave running (the
`tests.ahead` pools, the SDK's emitter thread, the probes' HTTP threads) hold Kafka clients, and aiokafka picks
nodes and partitions with the global `random`; Hypothesis sees the global state move during a draw and cannot
tell it from a strategy's own use."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mixed = any("/tests/unit/" not in str(item.path) for item in items)
    for item in items:
        if "/integration/airflow/" in str(item.path):
            item.add_marker(pytest.mark.airflow)
        if mixed and "/tests/unit/" in str(item.path):
            item.add_marker(OTHER_THREADS_DRAW_RANDOM)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """The `airflow` marker and the files that hold such tests go together (see `pytest_xdist_make_scheduler`)."""
    if item.get_closest_marker("airflow") is not None and not names_airflow(str(item.path)):
        pytest.fail(f"{item.nodeid} is marked airflow: its file's path must name airflow, so that it runs in "
                    "one of the Airflow groups", pytrace=False)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`make test` runs the integration suite and the cluster's failover tests in three pytest-xdist workers.
    Three groups of tests are one unit of work each, run by one worker one after the other: the tests on the one
    Airflow stack (`AIRFLOW_STACK_FILES`: the stack starts once), the other files whose path names airflow (each
    starts an Airflow of its own or runs Airflow's CLI: one at a time beside the stack, not three Airflows fighting
    for the cores), and those in `tests/cluster/` (they share one 3-node cluster, started once). The other tests
    go to the workers a module at a time (module fixtures are made once). The largest unit goes first."""
    from xdist.scheduler import LoadScopeScheduling

    class OneWorkerPerStack(LoadScopeScheduling):  # type: ignore[misc]  # pytest-xdist ships no type information
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if path.startswith("tests/cluster/"):
                return CLUSTER_SCOPE
            if on_airflow_stack(path):
                return AIRFLOW_STACK_SCOPE
            return AIRFLOW_SCOPE if names_airflow(path) else path

    return OneWorkerPerStack(config, log)


async def drop_database(admin_dsn: str, name: str, *, within_s: float = 60.0) -> None:
    """DROP … WITH (FORCE), retried while a backend we may not terminate (autovacuum) holds it, for at most
    `within_s`: a server that does not answer fails the drop instead of holding the session."""
    deadline = time.monotonic() + within_s
    conn = await asyncpg.connect(admin_dsn, timeout=within_s)
    try:
        while (left := deadline - time.monotonic()) > 0:
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', timeout=left)
                return
            except (asyncpg.InsufficientPrivilegeError, asyncpg.ObjectInUseError):
                await asyncio.sleep(0.1)
        raise AssertionError(f"database {name} could not be dropped within {within_s:.0f}s")
    finally:
        await conn.close(timeout=5)


def _plain_dsn(url: str, database: str | None = None) -> str:
    parsed = make_url(url).set(drivername="postgresql")
    if database is not None:
        parsed = parsed.set(database=database)
    return parsed.render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def settings() -> Settings:
    return Settings()


@pytest.fixture(scope="session")
def infra(settings: Settings) -> Iterator[Settings]:
    """Kafka and PostgreSQL are up: configured ones, testcontainers where Docker runs, else the launcher."""
    if use_testcontainers():
        with containers(settings.infra.kafka_version) as (bootstrap, database_url):
            os.environ["KAFKA_BOOTSTRAP_SERVERS"] = settings.conn.kafka_bootstrap_servers = bootstrap
            os.environ["DATABASE_URL"] = settings.conn.database_url = database_url
            yield settings
        return
    from assetbus.infra import up

    up(settings.infra, settings.conn)
    yield settings


@pytest.fixture(scope="session")
def template_db(infra: Settings) -> Iterator[str]:
    """A migrated template database; each test clones it (fast) instead of migrating again."""
    admin = _plain_dsn(infra.database_url)

    async def recreate() -> None:
        await drop_database(admin, TEMPLATE_DB)
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'CREATE DATABASE "{TEMPLATE_DB}"')
        finally:
            await conn.close()

    asyncio.run(recreate())
    url = make_url(infra.database_url).set(database=TEMPLATE_DB).render_as_string(hide_password=False)
    upgrade(url)
    yield url

    asyncio.run(drop_database(admin, TEMPLATE_DB))


async def fresh_database(database_url: str, template: str | None) -> AsyncIterator[str]:
    """A new database on the server of `database_url` (a clone of `template`, or empty), dropped afterwards."""
    name = f"assetbus_t_{uuid.uuid4().hex[:12]}"
    admin = _plain_dsn(database_url)
    conn = await asyncpg.connect(admin)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    finally:
        await conn.close()
    yield make_url(database_url).set(database=name).render_as_string(hide_password=False)
    await drop_database(admin, name)


@pytest.fixture(scope="session")
def database_pool(infra: Settings, template_db: str) -> Iterator[AheadPool[str]]:
    """Clones of the template made ahead of the tests, dropped after them (see `tests.ahead`)."""
    admin = _plain_dsn(infra.database_url)

    async def make() -> str:
        name = f"assetbus_t_{uuid.uuid4().hex[:12]}"
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE_DB}"')
        finally:
            await conn.close()
        return name

    async def drop(name: str) -> None:
        await drop_database(admin, name)

    pool = AheadPool("databases", make, drop)
    yield pool
    pool.close()


@pytest.fixture(scope="session")
def topics_pool(infra: Settings) -> Iterator[AheadPool[Topics]]:
    """Topic prefixes with their core topics created ahead of the tests, deleted after them."""

    async def make() -> Topics:
        fresh = Topics(prefix=f"t{uuid.uuid4().hex[:12]}")
        await ensure_topics(infra.kafka, fresh)
        return fresh

    async def drop(fresh: Topics) -> None:
        if not os.environ.get("ASSETBUS_KEEP_TEST_TOPICS"):
            await delete_topics(infra.kafka, list(fresh.core()))

    pool = AheadPool("topics", make, drop)
    yield pool
    pool.close()


@pytest.fixture
async def db_url(infra: Settings, database_pool: AheadPool[str]) -> AsyncIterator[str]:
    """A fresh database for this test, cloned from the migrated template, dropped afterwards."""
    name = await database_pool.take()
    yield make_url(infra.database_url).set(database=name).render_as_string(hide_password=False)
    database_pool.discard(name)


@pytest.fixture
async def topics(topics_pool: AheadPool[Topics]) -> AsyncIterator[Topics]:
    """A fresh topic prefix for this test, its core topics created, deleted afterwards."""
    fresh = await topics_pool.take()
    yield fresh
    topics_pool.discard(fresh)


@pytest.fixture(scope="session")
def token_secret() -> str:
    return "test-secret-" + uuid.uuid4().hex
