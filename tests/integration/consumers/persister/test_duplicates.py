"""Repeats of a dedupe key inside one batch, across the chunks of a batch, and across batches.

Another command with the same dedupe key is a `duplicate` of the first; the same command again (a Kafka
redelivery, a producer's resend) is `accepted` with its own event, as the first delivery was answered.
"""

from __future__ import annotations

import json

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.schemas import AssetRef, ReceiptStatus, Topics
from assetbus.settings import Settings
from tests.helpers import replaced, wait_for
from tests.integration.consumers.persister.streams import (
    commands,
    distinct,
    encoded,
    produce,
    read_topic,
    receipts_by_command,
    stored_count,
)


async def test_repeats_in_one_batch_and_across_batches_are_duplicates_and_replays_are_accepted(
        infra: Settings, topics: Topics, orders: AssetRef, token: str, engine: AsyncEngine,
        persister_config: PersisterConfig) -> None:
    unique = commands(token, topics, orders, 10, key="unique")
    repeated = commands(token, topics, orders, 4, key="repeat")
    same_key = [c.model_copy(update={"dedupe_key": "batch-41"}) for c in repeated]  # 4 commands, one key
    resent = unique[3]  # the very same command again, as a producer retry or a redelivery does
    twin = unique[6]  # ... and again right behind itself, in the same chunk
    # one partition (one key), all sent before the persister starts: one batch, several chunks of 3
    stream = [same_key[0], *unique[:5], same_key[1], resent, *unique[5:7], twin, *unique[7:], same_key[2]]
    await produce(infra.bootstrap_servers, topics.emissions, encoded(stream))
    config = replaced(persister_config, chunk_size=3)
    async with Persister(config) as persister:
        records = await read_topic(infra.bootstrap_servers, topics.receipts, lambda r: len(r) == len(stream))

        async def counted() -> float | None:
            return persister.metrics.registry.get_sample_value("assetbus_persister_batch_size_sum")

        batches = await wait_for(counted, what="the first batch counted")
        await produce(infra.bootstrap_servers, topics.emissions, encoded([same_key[3], resent]))
        records = await read_topic(infra.bootstrap_servers, topics.receipts, lambda r: len(r) == len(stream) + 2)

    assert batches == len(stream), "the first stream was one batch"
    receipts = receipts_by_command(records)
    first = receipts[same_key[0].command_id][0]
    assert first.status is ReceiptStatus.ACCEPTED
    for later in same_key[1:]:  # in the same batch (other chunks) and in a later batch
        (receipt,) = receipts[later.command_id]
        assert receipt.status is ReceiptStatus.DUPLICATE
        assert (receipt.event_id, receipt.timestamp, receipt.dedupe_key) == (first.event_id, first.timestamp,
                                                                             "batch-41")
    for replayed, times in ((resent, 3), (twin, 2)):  # every answer is the first one
        answers = receipts[replayed.command_id]
        assert len(answers) == times and all(r.status is ReceiptStatus.ACCEPTED for r in answers)
        assert len({(r.event_id, r.timestamp, r.dedupe_key) for r in answers}) == 1
    original = receipts[resent.command_id][0]
    assert all(receipts[c.command_id][0].accepted for c in unique)
    assert await stored_count(engine) == len(unique) + 1

    events = await read_topic(infra.bootstrap_servers, topics.asset_events, distinct(len(unique) + 1, "event_id"))
    per_event = [json.loads(e.value)["event_id"] for e in events]
    # one event per stored scope in the first batch; the later batch republishes the originals it answered
    stored = [r[0].event_id for r in receipts.values() if r[0].accepted] + [first.event_id, original.event_id]
    assert sorted(per_event) == sorted(event_id or 0 for event_id in stored)  # 0: no id, matches none
