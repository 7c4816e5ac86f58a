"""Records of the asset-events topic → triggering events. Unreadable records are counted and skipped."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from pydantic import ValidationError

from assetbus.consumers.scheduler.payload import UpstreamEvent, upstream_event
from assetbus.producers.kafka.types import ConsumedRecord
from assetbus.schemas import SUPPORTED_SCHEMA_VERSIONS
from assetbus.schemas.codecs import read_event

log = logging.getLogger("assetbus.scheduler")


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class IncomingEvent:
    """An event read from the topic, with the command id that lets the scheduler check it is stored here."""

    event: UpstreamEvent
    command_id: UUID


async def decode_batch(records: Sequence[ConsumedRecord], chunk: int = 256) -> tuple[list[IncomingEvent], int]:
    """The readable events of a batch (first occurrence of each event id), and how many records were not,
    yielding to the event loop every `chunk` records (the batch before this one moves on meanwhile: the
    shell's prepare stage)."""
    events: dict[int, IncomingEvent] = {}
    unreadable = 0
    for n, record in enumerate(records):
        if n and not n % chunk:
            await asyncio.sleep(0)
        try:
            event = read_event(record.value)
        except ValidationError as error:
            unreadable += 1
            log.warning("skipping an unreadable asset event at %s[%d]@%d: %s", record.topic, record.partition,
                        record.offset, error.errors()[0]["msg"])
            continue
        if event.schema_version not in SUPPORTED_SCHEMA_VERSIONS:
            unreadable += 1
            log.warning("skipping asset event %d: schema_version %d is not supported", event.event_id,
                        event.schema_version)
            continue
        if event.event_id not in events:
            events[event.event_id] = IncomingEvent(upstream_event(
                event.event_id, event.asset_name, event.partition_key, event.partition_date, event.source,
                event.timestamp), UUID(event.command_id_text))
    return list(events.values()), unreadable
