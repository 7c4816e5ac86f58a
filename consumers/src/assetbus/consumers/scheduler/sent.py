"""Which unpublished runs' signals are on their readiness topics already (sent, acknowledged or not, before a crash).

A kill -9 between the broker's ack and the `published` mark would send those signals again at the next start:
the publisher reads the tail of each readiness partition its unpublished runs hash to, and marks the runs
whose signal it finds there instead.

The tail read is bounded: for n unpublished runs on a partition, the last `2n + margin` records. The
publisher sends in run order and marks in send order, so every record after the last marked run's
signal belongs to an unpublished run: with one publisher per topic, the last n records are enough. A
signal further back (other schedulers writing the same topic meanwhile) is not found, and its run is
sent again, as before: a repeat carries the same run id.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from aiokafka import AIOKafkaConsumer, TopicPartition

from assetbus.producers.kafka.access import naming_refusals
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.producer import started

Place = tuple[str, int]
"""(readiness topic, partition) of a run's signal."""


async def on_the_broker(connection: KafkaConnection, runs: Iterable[tuple[str, Place]], *, margin: int = 100,
                        timeout_ms: int = 10_000) -> set[str]:
    """The run ids among `(run id, place)` whose signal is among the last records of its partition. Without Read
    on a readiness topic: `KafkaAccessDenied` naming it."""
    wanted: dict[Place, set[str]] = {}
    for run_id, place in runs:
        wanted.setdefault(place, set()).add(run_id)
    if not wanted:
        return set()
    async with started(AIOKafkaConsumer(**connection.client_kwargs(), group_id=None,
                                        enable_auto_commit=False)) as consumer:
        with naming_refusals(connection, "Read", topics=tuple(sorted({topic for topic, _ in wanted}))):
            parts = {place: TopicPartition(*place) for place in wanted}
            consumer.assign(list(parts.values()))
            ends = await consumer.end_offsets(list(parts.values()))
            begins = await consumer.beginning_offsets(list(parts.values()))
            open_parts: dict[TopicPartition, int] = {}
            for place, tp in parts.items():
                start = max(begins[tp], ends[tp] - 2 * len(wanted[place]) - margin)
                if start < ends[tp]:
                    consumer.seek(tp, start)
                    open_parts[tp] = ends[tp]
            return await _read_until(consumer, open_parts, lambda tp: wanted[(tp.topic, tp.partition)], timeout_ms)


async def _read_until(consumer: AIOKafkaConsumer, ends: dict[TopicPartition, int],
                      wanted: Callable[[TopicPartition], set[str]], timeout_ms: int) -> set[str]:
    """Read each partition up to its end offset (at most `timeout_ms` of polls that bring nothing)."""
    found: set[str] = set()
    remaining = dict(ends)
    idle_ms = 0
    while remaining and idle_ms < timeout_ms:
        batches = await consumer.getmany(*remaining, timeout_ms=200)
        idle_ms = 0 if batches else idle_ms + 200
        for tp, records in batches.items():
            ids = wanted(tp)
            found.update(run_id for record in records if (run_id := _run_id(record.value)) in ids)
        for tp in list(remaining):
            if await consumer.position(tp) >= remaining[tp]:
                del remaining[tp]
    return found


def _run_id(value: bytes | None) -> str | None:
    try:
        found = json.loads(value) if value else None
    except ValueError:
        return None
    return found.get("run_id") if isinstance(found, dict) else None

