"""Helpers for the persister's failure tests: raw streams in and out of Kafka, persister processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.producers import source_of
from assetbus.schemas import AssetRef, EmissionCommand, Receipt, Topics

SMALL_BATCHES = ("--max-records", "500", "--chunk-size", "250")
"""Arguments of `assetbus run persister` for many small batches (so that a failure lands mid-stream)."""


def commands(token: str, topics: Topics, asset: AssetRef, n: int, *, key: str = "batch") -> list[EmissionCommand]:
    """n valid commands with unique dedupe keys `<key>-<i>`."""
    source, now = source_of(token), datetime.now(UTC)
    return [EmissionCommand(command_id=uuid.uuid4(), producer_id="test-producer", reply_to=topics.receipts,
                            asset=asset, source=source, token=token, extra={"i": i, "path": f"s3://b/{i}"},
                            dedupe_key=f"{key}-{i}", emitted_at=now) for i in range(n)]


def encoded(items: Iterable[EmissionCommand]) -> list[tuple[bytes | None, bytes | None]]:
    return [(c.asset.name.encode(), c.model_dump_json().encode()) for c in items]


async def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=20, max_batch_size=1024 * 1024,
                                max_request_size=4 * 1024 * 1024)
    await producer.start()
    try:
        pending = [await producer.send(topic, value, key=key) for key, value in records]
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


async def read_topic(bootstrap: str, topic: str, done: Callable[[list[ConsumerRecord[Any, Any]]], bool], *,
                     timeout_s: float = 60.0) -> list[ConsumerRecord[Any, Any]]:
    """Every record of `topic` from the start, read until `done(records)` (fails after `timeout_s`)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, group_id=None,
                                auto_offset_reset="earliest")
    await consumer.start()
    records: list[ConsumerRecord[Any, Any]] = []
    try:
        await consumer._client.add_topic(topic)
        parts = [TopicPartition(topic, p) for p in sorted(consumer._client.cluster.partitions_for_topic(topic))]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not done(records):
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out reading {topic}: {len(records)} records")
            for batch in (await consumer.getmany(timeout_ms=200, max_records=10_000)).values():
                records.extend(batch)
        return records
    finally:
        await consumer.stop()


def distinct(n: int, field: str) -> Callable[[list[ConsumerRecord[Any, Any]]], bool]:
    """A `done` condition for `read_topic`: `n` distinct values of a JSON field have been read."""
    seen: set[Any] = set()
    read = 0

    def done(records: list[ConsumerRecord[Any, Any]]) -> bool:
        nonlocal read
        for record in records[read:]:
            seen.add(json.loads(record.value)[field])
        read = len(records)
        return len(seen) >= n

    return done


def receipts_by_command(records: list[ConsumerRecord[Any, Any]]) -> dict[uuid.UUID, list[Receipt]]:
    by_command: dict[uuid.UUID, list[Receipt]] = {}
    for record in records:
        receipt = Receipt.model_validate_json(record.value)
        by_command.setdefault(receipt.correlation_id, []).append(receipt)
    return by_command


async def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offset per partition (0 where nothing is committed)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer._client.add_topic(topic)
        offsets = {}
        for p in sorted(consumer._client.cluster.partitions_for_topic(topic)):
            offsets[p] = await consumer.committed(TopicPartition(topic, p)) or 0
        return offsets
    finally:
        await consumer.stop()


async def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer._client.add_topic(topic)
        parts = [TopicPartition(topic, p) for p in sorted(consumer._client.cluster.partitions_for_topic(topic))]
        return {tp.partition: offset for tp, offset in (await consumer.end_offsets(parts)).items()}
    finally:
        await consumer.stop()


async def records_below(bootstrap: str, topic: str, offsets: dict[int, int]) -> list[ConsumerRecord[Any, Any]]:
    """The records of each partition below the given offset."""
    wanted = sum(offsets.values())
    records = await read_topic(bootstrap, topic, lambda got: sum(
        1 for r in got if r.offset < offsets.get(r.partition, 0)) >= wanted)
    return [r for r in records if r.offset < offsets.get(r.partition, 0)]


async def stored_command_ids(engine: AsyncEngine) -> list[uuid.UUID]:
    async with engine.connect() as conn:
        return list((await conn.execute(text("SELECT command_id FROM asset_events"))).scalars())


async def stored_count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM asset_events"))).scalar_one())


def stored_at_least(engine: AsyncEngine, n: int) -> Callable[[], Awaitable[bool]]:
    """For `wait_for`: at least n events stored."""
    async def check() -> bool:
        return await stored_count(engine) >= n
    return check


async def stored_event_ids(engine: AsyncEngine) -> set[int]:
    async with engine.connect() as conn:
        return set((await conn.execute(text("SELECT id FROM asset_events"))).scalars())


class PersisterProcess:
    """`assetbus run persister` as a real child process, on a test's database and topics."""

    def __init__(self, *, bootstrap: str, db_url: str, topics: Topics, token_secret: str, group_id: str,
                 log_dir: Path, args: tuple[str, ...] = ()) -> None:
        self.env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "DATABASE_URL": db_url,
                    "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret}
        self.args = ("run", "persister", "--group-id", group_id, "--session-timeout-ms", "6000", *args)
        self.log_dir = log_dir
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0

    async def start(self) -> None:
        self.starts += 1
        log = (self.log_dir / f"persister-{self.starts}.log").open("wb")
        executable = Path(sys.executable).parent / "assetbus"
        self.process = await asyncio.create_subprocess_exec(str(executable), *self.args, env=self.env,
                                                            stdout=log, stderr=log)
        log.close()

    async def kill(self) -> None:
        """SIGKILL: no shutdown code runs at all."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def terminate(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, and the exit code once it has stopped."""
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            await self.stop()
            why = f"the persister did not stop within {timeout_s} s of SIGTERM:\n{self.logs()}"
            raise AssertionError(why) from None

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-4000:] for p in sorted(self.log_dir.glob("persister-*.log")))

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
