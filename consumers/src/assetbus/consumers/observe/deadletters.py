"""Reading the dead-letter topic with a group-less consumer (nothing is committed). An emission record carries
its emitter's token, so what is shown of a dead letter goes through `redact`; the original bytes
(`read_dead_letter`, for a redrive) are never altered.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from aiokafka import AIOKafkaConsumer, TopicPartition

from assetbus.consumers.observe.lag import partitions_of
from assetbus.producers.kafka import KafkaConnection

HEADER_PREFIX = "assetbus.dlq."
PREVIEW_BYTES = 2048
"""How much of a dead letter's value is kept (as text, undecodable bytes replaced)."""
REDACTED = "<redacted>"

_SEGMENT = r"[A-Za-z0-9_-]{2,}"
_JWT = re.compile(rf"(?<![A-Za-z0-9_.-])({_SEGMENT})\.{_SEGMENT}\.[A-Za-z0-9_-]*")
"""Three base64url segments (the signature may be cut off at the end of a preview)."""
_TOKEN_FIELD = re.compile(r'("[A-Za-z0-9_-]*token"\s*:\s*)"(?:[^"\\]|\\.)*(?:"|\\?$)', re.IGNORECASE)
"""A JSON string under a key named `token` or ending in it (`access_token`), closed or cut off at the end."""


def _json_header(segment: str) -> bool:
    """Whether a base64url segment decodes to a JSON object's start, as every JWT header does."""
    try:
        decoded = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.lstrip().startswith(b"{")


def redact(text: str) -> str:
    """`text` with every JWT-looking value and every `token` field's string value replaced by `"<redacted>"`."""
    text = _TOKEN_FIELD.sub(lambda m: f'{m.group(1)}"{REDACTED}"', text)
    return _JWT.sub(lambda m: REDACTED if _json_header(m.group(1)) else m.group(0), text)


@dataclass(frozen=True, slots=True)
class DeadLetterRecord:
    topic: str
    partition: int
    offset: int
    timestamp: datetime
    key: str | None
    value_preview: str
    """The first PREVIEW_BYTES of the original value, as UTF-8 with replacements, redacted."""
    value_size: int
    reason: str
    """Machine-readable (a DeadLetterReason value), `unknown` if the header is missing."""
    error: str
    source_topic: str | None
    source_partition: int | None
    source_offset: int | None
    headers: dict[str, str]
    """Every `assetbus.dlq.*` header, decoded and redacted, without the prefix."""


def _text(value: bytes | None) -> str:
    return (value or b"").decode("utf-8", "replace")


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


def dead_letter(topic: str, partition: int, offset: int, timestamp_ms: int, key: bytes | None,
                value: bytes | None, headers: Sequence[tuple[str, bytes]]) -> DeadLetterRecord:
    """One dead-letter record, its headers read; what it shows of the value and headers is redacted."""
    ours = {name[len(HEADER_PREFIX):]: redact(_text(raw)) for name, raw in headers
            if name.startswith(HEADER_PREFIX)}
    body = value or b""
    return DeadLetterRecord(
        topic=topic, partition=partition, offset=offset, timestamp=datetime.fromtimestamp(timestamp_ms / 1000, UTC),
        key=None if key is None else _text(key), value_preview=redact(_text(body[:PREVIEW_BYTES])),
        value_size=len(body),
        reason=ours.get("reason", "unknown"), error=ours.get("error", ""), source_topic=ours.get("source.topic"),
        source_partition=_int(ours.get("source.partition")), source_offset=_int(ours.get("source.offset")),
        headers=ours)


async def read_dead_letters(connection: KafkaConnection, topic: str, *, limit: int = 50,
                            timeout_s: float = 10.0) -> list[DeadLetterRecord]:
    """Up to `limit` newest dead letters of `topic` (over all its partitions), newest first; none if it is absent."""
    async with asyncio.timeout(timeout_s):
        partitions = (await partitions_of(connection, [topic])).get(topic)
    if not partitions:
        return []
    async with (AIOKafkaConsumer(**connection.client_kwargs(), enable_auto_commit=False,
                                 auto_offset_reset="earliest") as consumer, asyncio.timeout(timeout_s)):
        tps = [TopicPartition(topic, p) for p in partitions]
        firsts, ends = await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
        wanted = {tp: max(firsts[tp], ends[tp] - limit) for tp in tps if ends[tp] > firsts[tp]}
        consumer.assign(list(wanted))  # the partitions with records left only
        for tp, offset in wanted.items():
            consumer.seek(tp, offset)
        found: list[DeadLetterRecord] = []
        while [tp for tp in wanted if await consumer.position(tp) < ends[tp]]:
            batches = await consumer.getmany(*wanted, timeout_ms=200)
            for tp, records in batches.items():
                found.extend(dead_letter(r.topic, r.partition, r.offset, r.timestamp, r.key, r.value,
                                         list(r.headers)) for r in records if r.offset < ends[tp])
    found.sort(key=lambda d: (d.timestamp, d.partition, d.offset), reverse=True)
    return found[:limit]


async def read_dead_letter(connection: KafkaConnection, topic: str, partition: int, offset: int, *,
                           timeout_s: float = 10.0) -> tuple[DeadLetterRecord, bytes] | None:
    """The dead letter at `partition`/`offset` and its whole original value (`assetbus dlq show`,
    `redrive`), or None when there is none there (never written, or expired with the retention)."""
    if partition not in (await partitions_of(connection, [topic])).get(topic, []):
        return None
    async with (AIOKafkaConsumer(**connection.client_kwargs(), enable_auto_commit=False) as consumer,
                asyncio.timeout(timeout_s)):
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        first, end = (await consumer.beginning_offsets([tp]))[tp], (await consumer.end_offsets([tp]))[tp]
        if not first <= offset < end:
            return None
        consumer.seek(tp, offset)
        while True:
            records = (await consumer.getmany(tp, timeout_ms=200, max_records=1)).get(tp, [])
            if records:
                r = records[0]
                return dead_letter(r.topic, r.partition, r.offset, r.timestamp, r.key, r.value,
                                   list(r.headers)), r.value or b""
