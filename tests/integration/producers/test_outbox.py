"""The emitter's outbox against the real broker: a lone record goes out at once, a burst fills batches."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from assetbus.producers.kafka.producer import create_producer
from assetbus.producers.outbox import Outbox
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

LINGER_S = 5.0
"""Far longer than any broker round trip here: a record that waited for it would be seen waiting."""


async def test_a_lone_record_does_not_wait_for_linger_and_a_burst_behind_a_batch_in_flight_fills_batches(
        infra: Settings, topics: Topics) -> None:
    producer = create_producer(infra.kafka, linger_ms=0)
    await producer.start()
    failures: list[Any] = []
    try:
        partitions = sorted(await producer.partitions_for(topics.emissions))
        outbox = Outbox(producer, topics.emissions, partitions, linger_s=LINGER_S,
                        on_failure=lambda tags, error: failures.append(error))
        outbox.start()
        try:
            def handed_over(n: int) -> Callable[[], Awaitable[bool]]:
                async def check() -> bool:
                    return outbox.sender.batches_sent >= n
                return check

            started = time.monotonic()
            outbox.put(b"lone", b"x", tag=None)
            await wait_for(handed_over(1), timeout_s=LINGER_S / 2, what="the lone record handed over before the linger")
            await outbox.flush()
            assert time.monotonic() - started < LINGER_S / 2
            for i in range(2_000):  # one key: one partition, so batches can only come from the in-flight rule
                outbox.put(b"burst", f"{i}".encode(), tag=None)
                if i == 0:
                    await wait_for(handed_over(2), what="the burst's first record handed over at once")
            await outbox.flush()
            assert outbox.sender.records_sent == 2_001
            batches = outbox.sender.batches_sent
            assert batches <= 4, batches  # the 1,999 behind the first in 1 or 2 batches
            assert time.monotonic() - started < LINGER_S, "a batch waited for the full linger"
        finally:
            await outbox.stop()
    finally:
        await producer.stop()
    assert not failures
