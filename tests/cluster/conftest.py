"""Fixtures of the cluster tests: one secure 3-node cluster per session, fresh replicated topics per test.

The cluster lives in its own home (``<launcher home>/test-cluster``, reusing the launcher's Kafka jars)
and on its own ports, so it never touches the broker other tests share. It is stopped at the end.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import create_engine
from assetbus.producers import task_token
from assetbus.schemas import Topics
from assetbus.settings import ConnectionSettings, Settings
from assetbus.topics import delete_topics, ensure_topics
from tests.cluster.harness import LocalCluster, cluster_settings
from tests.cluster.pg_pair import PgPair, started_pair
from tests.integration.consumers.persister.streams import PersisterProcess


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "/cluster/" in str(item.fspath):
            item.add_marker(pytest.mark.cluster)


@pytest.fixture(scope="session")
def cluster(infra: Settings) -> Iterator[LocalCluster]:
    """The 3-node cluster (secure listener included), started once; `down` at the end must stop it."""
    home = infra.infra.home.expanduser().resolve() / "test-cluster"
    home.mkdir(parents=True, exist_ok=True)
    dist = home / f"kafka-{infra.infra.kafka_version}"
    shared = infra.infra.home.expanduser().resolve() / dist.name
    if not dist.exists() and shared.is_dir():
        dist.symlink_to(shared)  # the jars `infra up` already fetched
    conn = ConnectionSettings(kafka_bootstrap_servers=None, database_url=infra.database_url)
    running = LocalCluster(cluster_settings(home), conn)
    running.start()
    try:
        yield running
    finally:
        pids = list(running.pids().values())
        running.stop()
        assert not running.pids(), f"`infra down` left cluster nodes running: {pids}"


@pytest.fixture
async def cluster_topics(cluster: LocalCluster) -> AsyncIterator[Topics]:
    """A fresh prefix with its core topics made by the topic creator of `assetbus migrate`, with its defaults on
    three brokers: replication factor 3, min.insync.replicas 2."""
    fresh = Topics(prefix=f"c{uuid.uuid4().hex[:12]}")
    await ensure_topics(cluster.connection(), fresh)
    yield fresh
    if not os.environ.get("ASSETBUS_KEEP_TEST_TOPICS"):
        await delete_topics(cluster.connection(), list(fresh.core()))


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(db_url)
    async with engine.begin() as conn:  # thousands of rows: no autovacuum worker may hold the drop
        await conn.execute(text("ALTER TABLE asset_events SET (autovacuum_enabled = false)"))
    yield engine
    await engine.dispose()


@pytest.fixture
def token(token_secret: str) -> str:
    return task_token(token_secret, "ingest", "run-1", "load")


@pytest.fixture
async def persisters(db_url: str, cluster_topics: Topics, token_secret: str,
                     tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[PersisterProcess]]]:
    """`await persisters(bootstrap, *args, env=…)`: a started `assetbus run persister` in the test's group."""
    started: list[PersisterProcess] = []

    async def start(bootstrap: str, *args: str, env: dict[str, str] | None = None) -> PersisterProcess:
        log_dir = tmp_path / f"persister-{len(started)}"
        log_dir.mkdir()
        process = PersisterProcess(bootstrap=bootstrap, db_url=db_url, topics=cluster_topics,
                                   token_secret=token_secret, group_id=f"{cluster_topics.prefix}-persister",
                                   log_dir=log_dir, args=args)
        process.env.update(env or {})
        await process.start()
        started.append(process)
        return process

    yield start
    for process in started:
        await process.stop()


@pytest.fixture
def pg_pair() -> Iterator[PgPair]:
    """A fresh primary + synchronous standby on ports of their own, migrated; stopped and removed afterwards."""
    with started_pair() as pair:
        yield pair
