"""Asset-event records → triggering events; unreadable records are counted, never fatal."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from assetbus.consumers.scheduler.payload import decode_batch
from assetbus.schemas import AssetEvent, AssetRef, Provenance, SourceKind

NOW = datetime(2026, 10, 1, tzinfo=UTC)


@dataclass
class Record:
    value: bytes | None
    topic: str = "t.asset-events"
    partition: int = 0
    offset: int = 0
    headers: tuple[tuple[str, bytes], ...] = ()


def stored(event_id: int) -> bytes:
    return AssetEvent(event_id=event_id, asset=AssetRef(name="orders", uri="s3://o/"), partition_key="batch-1",
                      dedupe_key="batch-1", command_id=uuid.uuid4(), timestamp=NOW,
                      source=Provenance(kind=SourceKind.DAG, dag_id="d", run_id="r")).model_dump_json().encode()


async def test_events_are_decoded_and_repeats_in_a_batch_collapse() -> None:
    events, unreadable = await decode_batch([Record(stored(1)), Record(stored(1)), Record(stored(2))])
    assert [e.event.event_id for e in events] == [1, 2]
    assert events[0].event.asset_name == "orders" and events[0].event.partition_key == "batch-1"
    assert unreadable == 0


async def test_garbage_and_unknown_versions_are_counted_and_skipped() -> None:
    future = stored(3).replace(b'"schema_version":1', b'"schema_version":99')
    events, unreadable = await decode_batch([Record(b"{oops"), Record(None), Record(future), Record(stored(4))])
    assert [e.event.event_id for e in events] == [4]
    assert unreadable == 3
