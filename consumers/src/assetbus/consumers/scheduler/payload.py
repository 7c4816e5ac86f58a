"""Upstream events as the scheduler carries them, decoded from the asset-events topic with their
TriggeringEvent JSON built once by the contract's codec (no model round trips on the hot path), and the
readiness signal of a run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import ValidationError

from assetbus.consumers.storage.runs import RunRow
from assetbus.producers.kafka.types import ConsumedRecord
from assetbus.schemas import SUPPORTED_SCHEMA_VERSIONS
from assetbus.schemas.codecs import (
    Fragments,
    json_array,
    plain_json,
    read_event,
    signal_bytes,
    triggering_event,
    triggering_event_json,
)
from assetbus.schemas.codecs.text import IsoTimes

log = logging.getLogger("assetbus.scheduler")


@dataclass(slots=True)  # not frozen: built per event, and a frozen __init__ costs 4x
class UpstreamEvent:
    """A stored event, as the planner needs it, with its TriggeringEvent JSON."""

    event_id: int
    asset_name: str
    partition_key: str | None
    partition_date: datetime | None
    payload: dict[str, Any]
    json: str
    """`payload` serialized once: reused by the queue row, the run row and the signal."""


_FRAGMENTS = Fragments()
"""Sources' JSON, shared by the events of one emitter (bounded)."""


def upstream_event(event_id: int, asset_name: str, partition_key: str | None, partition_date: datetime | None,
                   source: dict[str, Any], timestamp: datetime) -> UpstreamEvent:
    """An UpstreamEvent whose payload is the TriggeringEvent JSON (`source` already in JSON form)."""
    payload = triggering_event(event_id, asset_name, partition_key, partition_date, source, timestamp)
    return UpstreamEvent(event_id, asset_name, partition_key, partition_date, payload,
                         triggering_event_json(payload, _FRAGMENTS.source(source)))


def from_stored(text: str) -> UpstreamEvent:
    """Back from a stored payload (a queue row's `event`, as JSON text)."""
    payload = json.loads(text)
    when = payload.get("partition_date")
    return UpstreamEvent(int(payload["event_id"]), str(payload["asset_name"]), payload.get("partition_key"),
                         datetime.fromisoformat(when) if isinstance(when, str) else None, payload, text)


def events_json(events: Sequence[UpstreamEvent]) -> str:
    """The JSON array of their payloads, from the strings serialized once."""
    return json_array(event.json for event in events)


def signal_json(run: RunRow, times: IsoTimes | None = None) -> bytes:
    """The ReadinessSignal of a run, serialized (the same run always gives the same run id). `times`: one
    per batch of signals (a batch's runs share their creation time, a per-event run its event's date)."""
    events = run.events_json if run.events_json is not None else plain_json(run.events)
    return signal_bytes(run.run_id, run.dag_id, run.partition_key, run.partition_date, run.generation,
                        run.created_at, run.origin, events, times)


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
