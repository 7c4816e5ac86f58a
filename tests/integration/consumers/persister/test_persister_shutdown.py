"""SIGTERM with a batch in flight: the process stops cleanly and commits no offset past what it stored."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.schemas import AssetRef, EmissionCommand, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for
from tests.integration.consumers.persister.streams import (
    SMALL_BATCHES,
    PersisterProcess,
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
)

N = 20_000


async def test_sigterm_mid_stream_stops_cleanly_without_committing_past_stored_rows(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, engine: AsyncEngine, no_autovacuum: None,
        persister_process: Callable[..., Awaitable[PersisterProcess]]) -> None:
    sent = commands(token, topics, orders, N)
    await produce(infra.bootstrap_servers, topics.emissions, encoded(sent))
    first = await persister_process(*SMALL_BATCHES)

    await wait_for(stored_at_least(engine, 2_000), timeout_s=60, what="some rows stored")
    assert await first.terminate(timeout_s=20) == 0, first.logs()
    group = f"{topics.prefix}-persister"
    committed = await committed_offsets(infra.bootstrap_servers, group, topics.emissions)
    stored = set(await stored_command_ids(engine))
    below = await records_below(infra.bootstrap_servers, topics.emissions, committed)

    assert 0 < len(below) < N, "the stop must land in the middle of the stream"
    assert {EmissionCommand.model_validate_json(r.value).command_id for r in below} <= stored

    second = await persister_process(*SMALL_BATCHES)
    records = await read_topic(infra.bootstrap_servers, topics.receipts, distinct(N, "correlation_id"),
                               timeout_s=90)
    assert await second.terminate() == 0, second.logs()
    assert sorted(await stored_command_ids(engine)) == sorted(c.command_id for c in sent)
    assert set(receipts_by_command(records)) == {c.command_id for c in sent}
