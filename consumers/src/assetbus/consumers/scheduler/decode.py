"""Records of the asset-events topic → triggering events. Unreadable records are counted and skipped."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from uuid import UUID

from pydantic import ValidationError

from assetbus.consumers.records import ConsumedRecord
from assetbus.consumers.scheduler.payload import UpstreamEvent, source_json, upstream_event
from assetbus.schemas import SUPPORTED_SCHEMA_VERSIONS, AssetEvent

log = logging.getLogger("assetbus.scheduler")


EventRecord = ConsumedRecord
"""What the scheduler needs of a consumed record."""


@dataclass(frozen=True, slots=True)
class IncomingEvent:
    """An event read from the topic, with the command id that lets the scheduler check it is stored here."""

    event: UpstreamEvent
    command_id: UUID


def incoming(event: AssetEvent) -> IncomingEvent:
    return IncomingEvent(upstream_event(event.event_id, event.asset.name, event.partition_key, event.partition_date,
                                        source_json(event.source), event.timestamp), event.command_id)


def decode_events(records: Iterable[EventRecord]) -> tuple[list[IncomingEvent], int]:
    """The readable events of a batch (first occurrence of each event id), and how many records were not."""
    events: dict[int, IncomingEvent] = {}
    unreadable = 0
    for record in records:
        try:
            event = AssetEvent.model_validate_json(record.value or b"")
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
        events.setdefault(event.event_id, incoming(event))
    return list(events.values()), unreadable
