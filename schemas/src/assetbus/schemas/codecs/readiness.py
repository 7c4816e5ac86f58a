"""ReadinessSignal on the wire, and the TriggeringEvent payloads it carries.

The scheduler builds a `TriggeringEvent` payload once, when it reads an asset event, and carries
its JSON unchanged through the queue, the run and the signal; `signal_bytes` wraps the run's fields
around the serialized payloads. Both parse to the models they stand for
(`tests/unit/schemas/codecs` checks it both ways).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from assetbus.schemas.codecs.text import IsoTimes, json_str
from assetbus.schemas.codecs.typed import model_codec
from assetbus.schemas.provenance import Provenance
from assetbus.schemas.readiness import ReadinessSignal
from assetbus.schemas.version import SCHEMA_VERSION


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def source_dict(source: Provenance) -> dict[str, Any]:
    return {"kind": source.kind.value, "dag_id": source.dag_id, "run_id": source.run_id, "task_id": source.task_id,
            "map_index": source.map_index, "try_number": source.try_number}


def triggering_event(event_id: int, asset_name: str, partition_key: str | None, partition_date: datetime | None,
                     source: dict[str, Any], timestamp: datetime) -> dict[str, Any]:
    """A TriggeringEvent as its JSON object (`source` from `source_dict`); serialize it with `plain_json`."""
    return {"event_id": event_id, "asset_name": asset_name, "partition_key": partition_key,
            "partition_date": _iso(partition_date), "source": source, "timestamp": _iso(timestamp)}


def triggering_event_json(payload: dict[str, Any], source_json: str) -> str:
    """`plain_json(payload)` of a `triggering_event` payload, assembled from JSON fragments (the same text);
    `source_json`: its source's JSON, which many events share (see `Fragments.source`)."""
    return (f'{{"event_id":{int(payload["event_id"])},"asset_name":{json_str(payload["asset_name"])},'
            f'"partition_key":{json_str(payload["partition_key"])},'
            f'"partition_date":{json_str(payload["partition_date"])},"source":{source_json},'
            f'"timestamp":{json_str(payload["timestamp"])}}}')


def json_array(items_json: Iterable[str]) -> str:
    return "[" + ",".join(items_json) + "]"


def signal_bytes(run_id: str, dag_id: str, partition_key: str | None, partition_date: datetime | None,
                 generation: int, created_at: datetime, origin: str | None, events_json: str,
                 times: IsoTimes | None = None) -> bytes:
    """A readiness signal around its triggering events (`events_json`: a JSON array of payloads), assembled
    from JSON fragments. `times`: format the timestamps once per object across a batch of signals."""
    iso = _iso if times is None else times.iso
    return (f'{{"schema_version":{SCHEMA_VERSION},"run_id":{json_str(run_id)},"dag_id":{json_str(dag_id)},'
            f'"partition_key":{json_str(partition_key)},"partition_date":{json_str(iso(partition_date))},'
            f'"generation":{int(generation)},"created_at":{json_str(iso(created_at))},"origin":{json_str(origin)},'
            f'"events":{events_json}}}').encode()


encode_signal, decode_signal = model_codec(ReadinessSignal)
