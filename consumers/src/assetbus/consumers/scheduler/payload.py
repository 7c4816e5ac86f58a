"""Upstream events as the scheduler carries them, and the readiness signal of a run.

An event's `payload` is the JSON form of its `TriggeringEvent` (built by the contract's codec),
serialized once when the event is read and carried unchanged through the queue, the run and the
signal: no model round trips on the hot path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assetbus.consumers.storage.runs import RunRow
from assetbus.schemas.codecs import (
    Fragments,
    json_array,
    plain_json,
    signal_bytes,
    triggering_event,
    triggering_event_json,
)
from assetbus.schemas.codecs.text import IsoTimes


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
