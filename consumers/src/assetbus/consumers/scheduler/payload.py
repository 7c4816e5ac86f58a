"""Upstream events as the scheduler carries them, and readiness signals as bytes.

An event's `payload` is the JSON form of its `TriggeringEvent`, built once when the event is read
and carried unchanged through the queue, the run and the signal (no model round trips on the hot
path). `tests/unit/consumers/scheduler` checks that payloads and signals validate as the contract's
`TriggeringEvent` and `ReadinessSignal`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from assetbus.consumers.storage.runs import RunRow
from assetbus.schemas import SCHEMA_VERSION, Provenance


@dataclass(frozen=True, slots=True)
class UpstreamEvent:
    """A stored event, as the planner needs it, with its TriggeringEvent JSON."""

    event_id: int
    asset_name: str
    partition_key: str | None
    partition_date: datetime | None
    payload: dict[str, Any]
    json: str
    """`payload` serialized once: reused by the queue row, the run row and the signal."""


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def source_json(source: Provenance) -> dict[str, Any]:
    return {"kind": source.kind.value, "dag_id": source.dag_id, "run_id": source.run_id, "task_id": source.task_id,
            "map_index": source.map_index, "try_number": source.try_number}


def upstream_event(event_id: int, asset_name: str, partition_key: str | None, partition_date: datetime | None,
                   source: dict[str, Any], timestamp: datetime) -> UpstreamEvent:
    """An UpstreamEvent whose payload is the TriggeringEvent JSON (`source` already in JSON form)."""
    payload = {"event_id": event_id, "asset_name": asset_name, "partition_key": partition_key,
               "partition_date": _iso(partition_date), "source": source, "timestamp": _iso(timestamp)}
    return UpstreamEvent(event_id, asset_name, partition_key, partition_date, payload, _dumps(payload))


def from_stored(text: str) -> UpstreamEvent:
    """Back from a stored payload (a queue row's `event`, as JSON text)."""
    payload = json.loads(text)
    when = payload.get("partition_date")
    return UpstreamEvent(int(payload["event_id"]), str(payload["asset_name"]), payload.get("partition_key"),
                         datetime.fromisoformat(when) if isinstance(when, str) else None, payload, text)


def events_json(events: list[UpstreamEvent]) -> str:
    """The JSON array of their payloads, from the strings serialized once."""
    return "[" + ",".join(event.json for event in events) + "]"


def signal_json(run: RunRow) -> bytes:
    """The ReadinessSignal of a run, serialized (the same run always gives the same run id)."""
    head = _dumps({
        "schema_version": SCHEMA_VERSION, "run_id": run.run_id, "dag_id": run.dag_id,
        "partition_key": run.partition_key, "partition_date": _iso(run.partition_date),
        "generation": run.generation, "created_at": _iso(run.created_at), "origin": run.origin,
    })
    events = run.events_json if run.events_json is not None else _dumps(run.events)
    return f'{head[:-1]},"events":{events}}}'.encode()
