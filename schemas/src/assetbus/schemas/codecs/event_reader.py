"""The reader's view of an AssetEvent, and the fast way to read one from JSON.

Like `command_reader`: a TypedDict generated from `AssetEvent` validates the bytes into plain
dicts (no model instances, no Python-level validator calls), and Provenance's one model-level rule
is applied here. `read_event` takes the fast path and falls back to the model, so what it refuses,
it refuses with the model's ValidationError; both paths give the same `EventView`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from assetbus.schemas.codecs.readiness import source_dict
from assetbus.schemas.codecs.typed import plain_adapter
from assetbus.schemas.events import AssetEvent
from assetbus.schemas.provenance import task_fields_match_kind


@dataclass(frozen=True, slots=True)
class EventView:
    """An asset event as plain values; `source` is the Provenance's JSON object (all six keys)."""

    schema_version: int
    event_id: int
    asset_name: str
    asset_uri: str
    extra: dict[str, Any]
    partition_key: str | None
    partition_date: datetime | None
    dedupe_key: str
    command_id_text: str
    """The command id in canonical form (lowercase, dashed)."""
    source: dict[str, Any]
    timestamp: datetime

    @classmethod
    def of(cls, model: AssetEvent) -> EventView:
        """From the validated model (the reference path)."""
        return cls(model.schema_version, model.event_id, model.asset.name, model.asset.uri, model.extra,
                   model.partition_key, model.partition_date, model.dedupe_key, str(model.command_id),
                   source_dict(model.source), model.timestamp)


_DEFAULT_VERSION: int = AssetEvent.model_fields["schema_version"].default


@functools.cache
def _adapter() -> TypeAdapter[Any]:
    return plain_adapter(AssetEvent, ("command_id",))


def read_event_fast(value: bytes) -> EventView | None:
    """The event, if the bytes are a valid AssetEvent by the strictest reading; None means: ask the model."""
    try:
        data = _adapter().validate_json(value, strict=True)
    except ValidationError:
        return None
    src = data["source"]
    source = {"kind": src["kind"], "dag_id": src["dag_id"], "run_id": src["run_id"], "task_id": src.get("task_id"),
              "map_index": src.get("map_index"), "try_number": src.get("try_number")}
    if not task_fields_match_kind(source["kind"], (source["task_id"], source["map_index"], source["try_number"])):
        return None
    asset = data["asset"]
    return EventView(data.get("schema_version", _DEFAULT_VERSION), data["event_id"], asset["name"], asset["uri"],
                     data.get("extra", {}), data.get("partition_key"), data.get("partition_date"),
                     data["dedupe_key"], data["command_id"], source, data["timestamp"])


def read_event(value: bytes | None) -> EventView:
    """The event in `value` (fast path first); raises the model's ValidationError for anything else."""
    view = read_event_fast(value) if value else None
    return view if view is not None else EventView.of(AssetEvent.model_validate_json(value or b""))
