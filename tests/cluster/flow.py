"""A timed stream of emissions and the receipts coming back: what the failover tests count and measure."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.partitioner import DefaultPartitioner
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.producers.kafka import KafkaConnection
from assetbus.schemas import AssetRef, EmissionCommand, Receipt, ReceiptStatus
from tests.integration.consumers.persister.streams import commands


async def spread_assets(engine: AsyncEngine, partitions: int, per_partition: int = 2) -> list[AssetRef]:
    """Registered assets whose names (the emissions key) hash onto every emissions partition."""
    partitioner, chosen, per = DefaultPartitioner(), [], dict.fromkeys(range(partitions), 0)
    i = 0
    while min(per.values()) < per_partition:
        name = f"orders-{i}"
        target = partitioner(name.encode(), list(range(partitions)), list(range(partitions)))
        if per[target] < per_partition:
            per[target] += 1
            chosen.append(AssetRef(name=name, uri=f"s3://bucket/{name}/"))
        i += 1
    async with engine.begin() as conn:
        for asset in chosen:
            await register_asset(conn, asset.name, asset.uri)
    return chosen


def spread_commands(token: str, topics: Any, assets: list[AssetRef], n: int) -> list[EmissionCommand]:
    """n commands, round-robin over the assets (so every partition carries traffic)."""
    per_asset = [commands(token, topics, asset, n // len(assets) + 1, key=asset.name) for asset in assets]
    mixed = [batch[i] for i in range(n // len(assets) + 1) for batch in per_asset]
    return mixed[:n]


@dataclass
class Flow:
    """Send times of the commands, and every receipt with its arrival time."""

    sent_at: dict[uuid.UUID, float] = field(default_factory=dict)
    receipts: dict[uuid.UUID, list[tuple[float, Receipt]]] = field(default_factory=dict)
    arrivals: list[float] = field(default_factory=list)

    @property
    def answered(self) -> int:
        return len(self.receipts)

    def first_receipt(self, command_id: uuid.UUID) -> tuple[float, Receipt]:
        return min(self.receipts[command_id], key=lambda pair: pair[0])

    def answered_after(self, moment: float) -> int:
        """Commands sent after `moment` that have a receipt."""
        return sum(1 for cid, sent in self.sent_at.items() if sent > moment and cid in self.receipts)


async def stream(connection: KafkaConnection, topic: str, items: list[EmissionCommand], flow: Flow, *,
                 rate_per_s: float, on_sent: Callable[[int], Awaitable[None]] | None = None) -> None:
    """Produce `items` at `rate_per_s` (acks=all, idempotent), recording when each was handed to the producer;
    `on_sent(count)` runs after every tick (the test kills things from there)."""
    producer = AIOKafkaProducer(**connection.client_kwargs(), acks="all", enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        tick, per_tick, pending = 0.05, max(1, int(rate_per_s * 0.05)), []
        started = time.monotonic()
        for offset in range(0, len(items), per_tick):
            for command in items[offset:offset + per_tick]:
                flow.sent_at[command.command_id] = time.time()
                pending.append(await producer.send(topic, command.model_dump_json().encode(),
                                                   key=command.asset.name.encode()))
            if on_sent is not None:
                await on_sent(offset + per_tick)
            delay = started + tick * (offset // per_tick + 1) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)  # pacing of the stream, not a wait for a condition
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


async def read_receipts(connection: KafkaConnection, topic: str, flow: Flow, stop: asyncio.Event) -> None:
    """Every receipt of `topic` from the start, with its arrival time, until `stop` is set."""
    consumer = AIOKafkaConsumer(**connection.client_kwargs(), enable_auto_commit=False, group_id=None,
                                auto_offset_reset="earliest")
    await consumer.start()
    try:
        await consumer._client.add_topic(topic)
        parts = [TopicPartition(topic, p) for p in sorted(consumer._client.cluster.partitions_for_topic(topic))]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        while not stop.is_set():
            for batch in (await consumer.getmany(timeout_ms=100, max_records=10_000)).values():
                now = time.time()
                for record in batch:
                    receipt = Receipt.model_validate_json(record.value)
                    flow.receipts.setdefault(receipt.correlation_id, []).append((now, receipt))
                    flow.arrivals.append(now)
    finally:
        await consumer.stop()


def percentile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def failover_figures(flow: Flow, killed_at: float, window_s: float = 20.0) -> dict[str, float]:
    """Latency (send → first receipt) of the warm pipeline before the kill (emissions sent 5 to 2 s before it;
    later ones are still in flight when it lands) and over [kill, kill + window], and how long receipts
    stopped: the longest gap between receipt arrivals after the kill, and the worst latency of the window."""
    before = [flow.first_receipt(c)[0] - t for c, t in flow.sent_at.items()
              if killed_at - 5.0 <= t < killed_at - 2.0 and c in flow.receipts]
    during = [flow.first_receipt(c)[0] - t for c, t in flow.sent_at.items()
              if killed_at <= t <= killed_at + window_s and c in flow.receipts]
    after_kill = sorted(t for t in flow.arrivals if t >= killed_at)
    gaps = [b - a for a, b in zip([killed_at, *after_kill], after_kill, strict=False)]
    return {
        "baseline_p50_s": percentile(before, 50), "baseline_p99_s": percentile(before, 99),
        "window_p50_s": percentile(during, 50), "window_p99_s": percentile(during, 99),
        "window_max_s": max(during, default=float("nan")), "window_emissions": float(len(during)),
        "receipt_stall_s": max(gaps, default=float("nan")),
    }


def receipt_counts(flow: Flow) -> dict[str, int]:
    statuses = [r.status for rs in flow.receipts.values() for _, r in rs]
    return {
        "emissions": len(flow.sent_at), "answered": flow.answered, "receipts": len(statuses),
        "accepted": statuses.count(ReceiptStatus.ACCEPTED), "duplicate": statuses.count(ReceiptStatus.DUPLICATE),
        "rejected": statuses.count(ReceiptStatus.REJECTED),
    }
