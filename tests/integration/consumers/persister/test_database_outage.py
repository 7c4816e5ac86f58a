"""PostgreSQL going away mid-stream: no offset moves past rows that are not stored, every event arrives once."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import asyncpg
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.schemas import AssetRef, EmissionCommand, ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.helpers import replaced, wait_for
from tests.integration.consumers.persister.streams import (
    commands,
    committed_offsets,
    distinct,
    encoded,
    produce,
    read_topic,
    receipts_by_command,
    records_below,
    stored_at_least,
    stored_command_ids,
    stored_count,
)

N = 6_000


class Outage:
    """Makes the test's database unreachable: no new connections, existing ones terminated."""

    def __init__(self, admin_dsn: str, database: str) -> None:
        self.admin_dsn, self.database = admin_dsn, database

    async def begin(self) -> None:
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            await conn.execute(f'ALTER DATABASE "{self.database}" ALLOW_CONNECTIONS false')
            await conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 "
                               "AND pid <> pg_backend_pid() AND backend_type = 'client backend'", self.database)
        finally:
            await conn.close()

    async def end(self) -> None:
        conn = await asyncpg.connect(self.admin_dsn)
        try:
            await conn.execute(f'ALTER DATABASE "{self.database}" ALLOW_CONNECTIONS true')
        finally:
            await conn.close()


@pytest.fixture
async def outage(infra: Settings, db_url: str) -> AsyncIterator[Outage]:
    url = make_url(db_url)
    admin = url.set(drivername="postgresql", database=make_url(infra.database_url).database)
    made = Outage(admin.render_as_string(hide_password=False), str(url.database))
    yield made
    await made.end()


def small_batches(config: PersisterConfig, **changes: object) -> PersisterConfig:
    return replaced(config, max_records=500, chunk_size=250, backoff_initial_s=0.1, backoff_max_s=0.5, **changes)


def _count(persister: Persister, counter: str) -> float:
    """The persister's counter `assetbus_persister_<counter>` as its metrics endpoint shows it."""
    value = persister.metrics.registry.get_sample_value(f"assetbus_persister_{counter}_total")
    assert value is not None, counter
    return value


async def test_database_outage_mid_stream_commits_no_offset_past_unstored_rows_and_loses_nothing(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, engine: AsyncEngine, no_autovacuum: None,
        persister_config: PersisterConfig, outage: Outage) -> None:
    sent = commands(token, topics, orders, N)
    await produce(infra.bootstrap_servers, topics.emissions, encoded(sent))
    async with Persister(small_batches(persister_config)) as persister:
        await wait_for(stored_at_least(engine, 1_000), timeout_s=60, what="some rows stored")
        await outage.begin()

        async def retrying(n: int) -> bool:
            return _count(persister, "db_retries") >= n

        await wait_for(lambda: retrying(2), what="the persister to hit the outage")
        committed = await committed_offsets(infra.bootstrap_servers, persister_config.group_id, topics.emissions)
        await wait_for(lambda: retrying(5), what="the persister to keep retrying")
        await outage.end()
        records = await read_topic(infra.bootstrap_servers, topics.receipts, distinct(N, "correlation_id"),
                                   timeout_s=60)
        retries = _count(persister, "db_retries")

    below = await records_below(infra.bootstrap_servers, topics.emissions, committed)
    assert 0 < len(below) < N, "the outage must land in the middle of the stream"
    stored = set(await stored_command_ids(engine))
    # every record below a committed offset was stored before the outage
    assert {EmissionCommand.model_validate_json(r.value).command_id for r in below} <= stored
    assert len(stored) == N == await stored_count(engine)
    receipts = receipts_by_command(records)
    assert set(receipts) == {c.command_id for c in sent}
    assert all(r.status is not ReceiptStatus.REJECTED for rs in receipts.values() for r in rs)
    assert retries < 40, "the back-off is bounded, not a busy loop"


async def test_outage_longer_than_the_poll_interval_leaves_the_group_and_redelivers_without_loss(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, engine: AsyncEngine, no_autovacuum: None,
        persister_config: PersisterConfig, outage: Outage) -> None:
    sent = commands(token, topics, orders, 3_000)
    await produce(infra.bootstrap_servers, topics.emissions, encoded(sent[:1_000]))
    config = small_batches(persister_config, max_poll_interval_ms=2_000, session_timeout_ms=6_000,
                           heartbeat_interval_ms=500)
    async with Persister(config) as persister:
        await wait_for(stored_at_least(engine, 1_000), timeout_s=60, what="the first commands stored")
        await outage.begin()
        began = time.monotonic()
        await produce(infra.bootstrap_servers, topics.emissions, encoded(sent[1_000:]))

        async def stuck_past_the_poll_interval() -> bool:
            # still retrying, 5 s (well past the 2 s poll interval) after the outage began; the back-off
            # has jitter, so a count of retries alone does not say how long the batch has been stuck
            return _count(persister, "db_retries") >= 5 and time.monotonic() - began >= 5.0

        await wait_for(stuck_past_the_poll_interval, timeout_s=30, what="an outage longer than the poll interval")
        await outage.end()
        records = await read_topic(infra.bootstrap_servers, topics.receipts, distinct(3_000, "correlation_id"),
                                   timeout_s=60)
        assignments = _count(persister, "rebalances")

    # it left the group while stuck (its stuck batch's commit is then refused, or accepted as a standalone
    # commit when nobody else is in the group: both safe, the batch was stored), and joined again
    assert assignments >= 2, "the process left the group and rejoined it"
    assert sorted(await stored_command_ids(engine)) == sorted(c.command_id for c in sent)
    assert set(receipts_by_command(records)) == {c.command_id for c in sent}
