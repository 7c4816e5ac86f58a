"""ReadinessSignal: one consumer run of one DAG for one target partition is ready."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from assetbus.schemas.provenance import Provenance
from assetbus.schemas.version import SCHEMA_VERSION


class TriggeringEvent(BaseModel):
    """An upstream event that contributed to a consumer run."""

    event_id: int = Field(description="Stored event id.")
    asset_name: str = Field(description="Upstream asset.")
    partition_key: str | None = Field(default=None, description="Upstream partition key.")
    partition_date: datetime | None = Field(default=None, description="Upstream partition date.")
    source: Provenance = Field(description="Who emitted the upstream event.")
    timestamp: datetime = Field(description="When the upstream event was stored.")


class ReadinessSignal(BaseModel):
    """Published to `<prefix>.readiness.<dag_id>`, keyed by partition key. Re-publishing keeps run_id."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version of this message.")
    run_id: str = Field(description="Consumer run id; unique per (dag, partition, generation).")
    dag_id: str = Field(description="Consumer DAG that should run.")
    partition_key: str | None = Field(default=None, description="Target partition; null for unpartitioned.")
    partition_date: datetime | None = Field(default=None, description="Target partition date, if any.")
    generation: int = Field(ge=1, description="How many runs this (dag, partition) has had, this one included.")
    events: list[TriggeringEvent] = Field(description="Upstream events that made the run ready.")
    created_at: datetime = Field(description="When the run was created.")
    origin: str | None = Field(default=None, description="What created the run: `scheduler` (live events) or "
                               "`replay` (re-derived from stored events); null from older senders.")
