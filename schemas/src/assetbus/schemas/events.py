"""AssetEvent: a persisted emission, published to the asset-events topic after the commit."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, Field

from assetbus.schemas.commands import AssetRef
from assetbus.schemas.provenance import Provenance
from assetbus.schemas.version import SCHEMA_VERSION


class AssetEvent(BaseModel):
    """One stored event. Republished unchanged on redelivery, so readers dedupe by event_id."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version of this message.")
    event_id: int = Field(description="Database id of the event; increases with storage order.")
    asset: AssetRef = Field(description="The registered asset.")
    extra: dict[str, Any] = Field(default_factory=dict, description="The emitter's references.")
    partition_key: str | None = Field(default=None, description="Ready partition; null for unpartitioned.")
    partition_date: datetime | None = Field(default=None, description="Time-zone-aware partition date.")
    dedupe_key: str = Field(description="Effective dedupe key (explicit, or the command id).")
    command_id: UUID = Field(description="Command that created the event.")
    source: Provenance = Field(description="Authenticated emitter.")
    timestamp: datetime = Field(description="When the event was stored.")
