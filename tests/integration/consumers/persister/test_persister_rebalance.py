"""Two persister processes in one group, a rebalance when the second joins and another when the first
leaves, both mid-stream: every command stored once, every command answered."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.schemas import AssetRef, ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import (
    SMALL_BATCHES,
    PersisterProcess,
    commands,
    distinct,
    encoded,
    produce,
    read_topic,
    receipts_by_command,
    stored_at_least,
    stored_command_ids,
    stored_count,
)

N = 20_000


async def test_rebalances_mid_stream_lose_and_duplicate_nothing(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, engine: AsyncEngine, no_autovacuum: None,
        persister_process: Callable[..., Awaitable[PersisterProcess]]) -> None:
    sent = commands(token, topics, orders, N)
    await produce(infra.bootstrap_servers, topics.emissions, encoded(sent))

    first = await persister_process(*SMALL_BATCHES)
    await wait_for(stored_at_least(engine, 1_000), timeout_s=60, what="the first persister to store some rows")
    second = await persister_process(*SMALL_BATCHES)  # joins: the first gives up half its partitions
    await wait_for(stored_at_least(engine, 8_000), timeout_s=60, what="more rows stored")
    assert await first.terminate() == 0, first.logs()  # leaves: the second takes everything
    stored_when_first_left = await stored_count(engine)

    records = await read_topic(infra.bootstrap_servers, topics.receipts, distinct(N, "correlation_id"),
                               timeout_s=90)
    assert await second.terminate() == 0, second.logs()

    assert stored_when_first_left < N, "the first persister must leave in the middle of the stream"
    assert sorted(await stored_command_ids(engine)) == sorted(c.command_id for c in sent)
    receipts = receipts_by_command(records)
    assert set(receipts) == {c.command_id for c in sent}
    statuses = [r.status for rs in receipts.values() for r in rs]
    # a clean hand-over commits the batch in flight first, so nothing is redelivered at all
    assert statuses.count(ReceiptStatus.ACCEPTED) == N
    assert len(statuses) == N, f"{len(statuses) - N} receipts were sent twice"
    assert "partitions assigned" in second.logs()
