"""The shell's fetches: a long poll while nothing waits to be handled, the short `fetch_max_wait_ms` while a
partition's records do (`assetbus.producers.kafka.longpoll`)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.protocol.fetch import FetchRequest

from assetbus.producers.kafka.longpoll import IDLE_WAIT_MS
from assetbus.producers.kafka.replies import QUIET_AFTER_S, ReplyReader
from assetbus.producers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

SHORT_MS = 10
REPLY_WAIT_MS = 20
"""The reply reader's own `fetch_max_wait_ms`."""
HANDLING_S = 0.05
"""Each batch's handling time: longer than aiokafka's 0.1 s prefetch back-off over the eight batches of one
fetch, so fetches go out while that partition still has records left."""


async def produce(settings: Settings, topic: str, n: int) -> None:
    """`n` records of one key: one partition."""
    producer = AIOKafkaProducer(**settings.kafka.client_kwargs())
    await producer.start()
    try:
        for i in range(n):
            await producer.send(topic, key=b"one-asset", value=str(i).encode())
        await producer.flush()
    finally:
        await producer.stop()


@dataclass
class Fetch:
    at: float
    max_wait_ms: int
    partitions: int


class SentFetches:
    """Wraps the real consumer's client `send`: notes each fetch request on its way to the broker."""

    def __init__(self, consumer: AIOKafkaConsumer) -> None:
        client = consumer._client
        self.real = client.send
        self.sent: list[Fetch] = []
        client.send = self.send

    async def send(self, node_id: int, request: Any, **kwargs: Any) -> Any:
        if isinstance(request, FetchRequest):
            self.sent.append(Fetch(time.monotonic(), request._max_wait_ms,
                                   sum(len(partitions) for _, partitions in request.topics)))
        return await self.real(node_id, request, **kwargs)

    def since(self, started: float) -> list[Fetch]:
        return [fetch for fetch in self.sent if fetch.at >= started]


async def test_an_idle_shell_long_polls_and_a_partition_with_records_left_keeps_the_short_wait(
        infra: Settings, topics: Topics) -> None:
    handled: list[Any] = []

    async def handler(records: Sequence[Any]) -> None:
        handled.extend(records)
        await asyncio.sleep(HANDLING_S)

    settings = ConsumerSettings(topics=(topics.emissions,), group_id=f"{topics.prefix}-longpoll", max_records=50,
                                fetch_max_wait_ms=SHORT_MS)
    shell = ServiceShell(infra.kafka, settings, handler)
    await shell.start()
    try:
        assert shell.consumer is not None
        fetches = SentFetches(shell.consumer)
        partitions = len(shell.consumer.partitions_for_topic(topics.emissions) or ())
        assert partitions > 1

        async def fetching_all() -> bool:
            return any(fetch.partitions == partitions for fetch in fetches.sent)

        await wait_for(fetching_all, what="a fetch of every partition (the group joined)")
        rest_started = time.monotonic()
        await asyncio.sleep(2.0)  # the window measured at rest, not a wait for a condition
        at_rest = fetches.since(rest_started)
        assert 1 <= len(at_rest) <= 8, f"{len(at_rest)} fetches in 2 s at rest (about 200 with a 10 ms wait)"
        assert {fetch.max_wait_ms for fetch in at_rest} == {IDLE_WAIT_MS}

        busy_started = time.monotonic()
        await produce(infra, topics.emissions, 400)  # one fetch brings them, batches of 50 take them

        async def all_handled() -> bool:
            return len(handled) >= 400

        await wait_for(all_handled, what="every record handled")
        busy = fetches.since(busy_started)
        left_out = [fetch for fetch in busy if fetch.partitions < partitions]
        assert left_out, "no fetch left a partition with records out (batches of 50 from 400 records of one)"
        assert {fetch.max_wait_ms for fetch in left_out} == {SHORT_MS}
        assert {fetch.max_wait_ms for fetch in busy if fetch.partitions == partitions} <= {IDLE_WAIT_MS}
    finally:
        await shell.stop()


async def test_the_reply_reader_long_polls_only_once_no_receipt_has_been_awaited_for_a_second(
        infra: Settings, topics: Topics) -> None:
    reader = ReplyReader(infra.kafka, topics.receipts, f"longpoll-{uuid.uuid4().hex}")
    await reader.start()
    try:
        assert reader._consumer is not None
        fetches = SentFetches(reader._consumer)

        async def long_polling() -> bool:
            return any(fetch.max_wait_ms == IDLE_WAIT_MS for fetch in fetches.sent)

        await wait_for(long_polling, timeout_s=QUIET_AFTER_S + 10, what="a long poll once the reader was quiet")
        with reader.awaiting(uuid.uuid4()):
            awaited_from = time.monotonic()

            async def polling_short() -> bool:
                return sum(fetch.max_wait_ms == REPLY_WAIT_MS for fetch in fetches.since(awaited_from)) >= 3

            await wait_for(polling_short, what="20 ms polls while a receipt is awaited")
            during = fetches.since(awaited_from)
        # the first may have been planned as a long poll just before the receipt was awaited
        assert {fetch.max_wait_ms for fetch in during[1:]} == {REPLY_WAIT_MS}, during
    finally:
        await reader.stop()
