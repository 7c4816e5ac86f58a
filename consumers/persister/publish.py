"""Publishing a batch's outcome: receipts, asset events, dead letters; all acknowledged before returning."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka import AIOKafkaProducer

from consumers.persister.batch import BatchResult
from schemas import Topics


def create_producer(bootstrap_servers: str) -> AIOKafkaProducer:
    """Idempotent, acks=all: a receipt or event the persister sent is on the log once."""
    return AIOKafkaProducer(bootstrap_servers=bootstrap_servers, enable_idempotence=True, acks="all",
                            linger_ms=2, max_batch_size=256 * 1024, compression_type=None)


async def publish_result(producer: AIOKafkaProducer, topics: Topics, result: BatchResult) -> None:
    """Send everything, then wait for every broker acknowledgement (raises if one failed)."""
    pending: list[asyncio.Future[Any]] = []
    for event in result.events:
        pending.append(await producer.send(topics.asset_events, event.model_dump_json().encode(),
                                           key=event.asset.name.encode()))
    for out in result.receipts:
        pending.append(await producer.send(out.topic, out.receipt.model_dump_json().encode(), key=out.key.encode()))
    for dead in result.dead_letters:
        record = dead.record
        headers = [
            ("assetbus.dlq.reason", dead.letter.reason.value.encode()),
            ("assetbus.dlq.error", dead.letter.detail.encode("utf-8", "replace")),
            ("assetbus.dlq.source.topic", record.topic.encode()),
            ("assetbus.dlq.source.partition", str(record.partition).encode()),
            ("assetbus.dlq.source.offset", str(record.offset).encode()),
        ]
        pending.append(await producer.send(topics.emissions_dlq, record.value, key=record.key, headers=headers))
    if pending:
        await asyncio.gather(*pending)
