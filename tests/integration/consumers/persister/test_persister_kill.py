"""kill -9 of a persister process in the middle of a stream: a new process finishes it, exactly once."""

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
    stored_event_ids,
)

N = 20_000


async def test_kill_9_mid_stream_then_a_new_process_stores_every_command_exactly_once(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, engine: AsyncEngine, no_autovacuum: None,
        persister_process: Callable[..., Awaitable[PersisterProcess]]) -> None:
    sent = commands(token, topics, orders, N)
    await produce(infra.bootstrap_servers, topics.emissions, encoded(sent))

    first = await persister_process(*SMALL_BATCHES)

    await wait_for(stored_at_least(engine, 2_000), timeout_s=60, what="the first persister to store some rows")
    await first.kill()
    at_kill = await stored_count(engine)
    assert 0 < at_kill < N, "the kill must land in the middle of the stream"

    second = await persister_process(*SMALL_BATCHES)
    records = await read_topic(infra.bootstrap_servers, topics.receipts, distinct(N, "correlation_id"),
                               timeout_s=90)

    receipts = receipts_by_command(records)
    assert set(receipts) == {c.command_id for c in sent}
    # a command handled again after the kill is answered as it was the first time: accepted, never duplicate
    assert all(r.status is ReceiptStatus.ACCEPTED for rs in receipts.values() for r in rs)
    assert await stored_count(engine) == N
    assert sorted(await stored_command_ids(engine)) == sorted(c.command_id for c in sent)
    # every receipt names the one stored event of its command, however often it was answered
    assert all(len({r.event_id for r in rs}) == 1 for rs in receipts.values())
    assert {rs[0].event_id for rs in receipts.values()} == await stored_event_ids(engine)
    events = await read_topic(infra.bootstrap_servers, topics.asset_events, distinct(N, "event_id"), timeout_s=60)
    assert all(e.key == orders.name.encode() for e in events)
    assert await second.terminate() == 0, second.logs()
