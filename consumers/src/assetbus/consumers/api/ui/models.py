"""The JSON the `/ui` page reads (`/ui/api/...`): plain views of the storage and observe results (fields
named as the viewed dataclass's are copied from it)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from assetbus.consumers.observe.deadletters import DeadLetterRecord
from assetbus.consumers.observe.lag import GroupLag
from assetbus.consumers.scheduler.dag import ConsumerDag
from assetbus.consumers.storage.catalog import AssetSummary
from assetbus.consumers.storage.dags import DagRow
from assetbus.consumers.storage.events import StoredEvent
from assetbus.consumers.storage.runs import RunRow


class EventOut(BaseModel):
    id: int = Field(description="Stored event id.")
    asset: str = Field(description="Asset name.")
    uri: str = Field(description="Asset URI.")
    partition_key: str | None = Field(description="Partition key; null when unpartitioned.")
    partition_date: datetime | None = Field(description="Partition date, if any.")
    dedupe_key: str = Field(description="The key the event is unique by (within its dedupe scope).")
    extra: dict[str, Any] = Field(description="The emitter's `extra` object.")
    source_kind: str = Field(description="`task` or `dag`: what emitted it (from the emitter's token).")
    dag_id: str = Field(description="Provenance: emitting DAG.")
    run_id: str = Field(description="Provenance: emitting DAG run.")
    task_id: str | None = Field(description="Provenance: emitting task (null for DAG-level emitters).")
    map_index: int | None = Field(description="Provenance: map index of the task.")
    try_number: int | None = Field(description="Provenance: try of the task.")
    created_at: datetime = Field(description="When it was stored.")

    @classmethod
    def of(cls, e: StoredEvent) -> EventOut:
        return cls.model_validate({**asdict(e), "asset": e.asset_name, "uri": e.asset_uri})


class AssetOut(BaseModel):
    name: str = Field(description="Asset name.")
    uri: str = Field(description="Asset URI.")
    active: bool = Field(description="Whether the asset accepts events.")
    events: int = Field(description="Events stored for it, counted up to `events_capped`'s limit.")
    events_capped: bool = Field(description="True when `events` is the counting limit (there may be more).")
    latest: EventOut | None = Field(description="Its newest event.")

    @classmethod
    def of(cls, a: AssetSummary) -> AssetOut:
        return cls(name=a.name, uri=a.uri, active=a.active, events=a.events, events_capped=a.events_capped,
                   latest=EventOut.of(a.latest) if a.latest else None)


class RunOut(BaseModel):
    id: int = Field(description="Row id: the `before` cursor of the next page of runs.")
    run_id: str = Field(description="Consumer run id.")
    dag_id: str = Field(description="Consumer DAG.")
    partition_key: str | None = Field(description="Target partition; null for unpartitioned.")
    partition_date: datetime | None = Field(description="Target partition date.")
    generation: int = Field(description="How many runs this partition has had, this one included.")
    status: str = Field(description="queued, running, success or failed (the outcome).")
    detail: str | None = Field(description="Why it failed, if it did.")
    origin: str = Field(description="What created it: scheduler or replay.")
    published: bool = Field(description="Whether its readiness signal is on the broker.")
    attempts: int = Field(description="How many times a subscriber started it.")
    consumer: str | None = Field(description="The subscriber that ran it last.")
    event_ids: list[int] = Field(description="The triggering events' ids.")
    events: list[dict[str, Any]] = Field(description="The triggering events as the signal carries them.")
    created_at: datetime = Field(description="When it was created.")
    started_at: datetime | None = Field(description="When its handler started.")
    finished_at: datetime | None = Field(description="When its handler finished.")

    @classmethod
    def of(cls, r: RunRow) -> RunOut:
        return cls.model_validate({**asdict(r), "event_ids": [int(e["event_id"]) for e in r.events]})


class WaitOut(BaseModel):
    asset: str = Field(description="Upstream asset waited for.")
    have: int = Field(description="Slots arrived.")
    need: int = Field(description="Slots needed.")
    unit: str = Field(description="What a slot is (hours, days, events...).")
    complete: bool = Field(description="Whether this wait is satisfied.")


class WaitingOut(BaseModel):
    dag_id: str = Field(description="Consumer DAG.")
    target_key: str | None = Field(description="Target partition waiting; null for unpartitioned.")
    target_date: datetime | None = Field(description="Its date, if any.")
    queued_event_ids: list[int] = Field(description="The events queued for it so far, in arrival order.")
    waits: list[WaitOut] = Field(description="Each asset wait of the DAG's condition, with how far it is (none "
                                 "when the DAG's definition cannot be read).")


class DagOut(BaseModel):
    dag_id: str = Field(description="Consumer DAG id.")
    active: bool = Field(description="Whether its definition is active.")
    coalesce: bool = Field(description="Whether queued events coalesce into one run per partition.")
    assets: list[str] = Field(description="The assets it waits for (none when its definition cannot be read).")
    fileloc: str = Field(description="The file that defines it.")
    runs: dict[str, int] = Field(description="Its runs by status.")
    waiting_partitions: int = Field(description="Target partitions with queued events and no run yet.")
    queued_events: int = Field(description="Events queued for those partitions.")

    @classmethod
    def of(cls, d: DagRow, runs: dict[str, int], waiting: tuple[int, int]) -> DagOut:
        dag = ConsumerDag.readable(d.definition)
        return cls(dag_id=d.dag_id, active=d.active, coalesce=d.coalesce, assets=dag.assets if dag else [],
                   fileloc=d.fileloc, runs=runs, waiting_partitions=waiting[0], queued_events=waiting[1])


class EventDetail(BaseModel):
    event: EventOut = Field(description="The event.")
    runs: list[RunOut] = Field(description="The consumer runs it triggered.")
    waiting_in: list[dict[str, str | None]] = Field(description="DAG partitions where it is queued, still waiting.")


class RunDetail(BaseModel):
    run: RunOut = Field(description="The run.")
    events: list[EventOut] = Field(description="Its triggering events as stored.")


class LagOut(BaseModel):
    group: str = Field(description="Consumer group id.")
    lag: int = Field(description="Records not yet committed by the group, over its partitions.")
    topics: dict[str, int] = Field(description="Lag per topic.")

    @classmethod
    def of(cls, g: GroupLag) -> LagOut:
        return cls(group=g.group_id, lag=g.lag, topics=g.by_topic())


class DeadLetterOut(BaseModel):
    partition: int = Field(description="Partition of the dead-letter topic.")
    offset: int = Field(description="Offset on it.")
    timestamp: datetime = Field(description="When it was dead-lettered.")
    key: str | None = Field(description="The original record key.")
    reason: str = Field(description="Machine-readable reason (a DeadLetterReason).")
    error: str = Field(description="What exactly was wrong.")
    source: str | None = Field(description="Where it came from: topic/partition@offset.")
    value_preview: str = Field(description="The start of the original bytes, as text.")
    value_size: int = Field(description="Size of the original value in bytes.")

    @classmethod
    def of(cls, d: DeadLetterRecord) -> DeadLetterOut:
        source = f"{d.source_topic}/{d.source_partition}@{d.source_offset}" if d.source_topic else None
        return cls.model_validate({**asdict(d), "source": source})
