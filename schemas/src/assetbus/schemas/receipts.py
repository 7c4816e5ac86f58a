"""Receipt: the persister's answer to one command, published on the command's reply topic."""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from pydantic import BaseModel, Field

from assetbus.schemas.compat import StrEnum
from assetbus.schemas.errors import ErrorCode
from assetbus.schemas.version import SCHEMA_VERSION


class ReceiptStatus(StrEnum):
    """What happened to the command."""

    ACCEPTED = "accepted"
    """Stored now; the event's PostgreSQL transaction has committed."""
    DUPLICATE = "duplicate"
    """Stored before under the same dedupe scope; the receipt names the original event."""
    REJECTED = "rejected"
    """Not stored; `error_code` says why."""


class Receipt(BaseModel):
    """Sent only after the database transaction holding the event has committed."""

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version of this message.")
    correlation_id: UUID = Field(description="The command_id of the command this answers.")
    status: ReceiptStatus = Field(description="accepted, duplicate or rejected.")
    event_id: int | None = Field(default=None, description="Stored event's id (the original one for duplicates).")
    timestamp: datetime | None = Field(default=None,
                                       description="When the event was stored (the original time for duplicates).")
    asset_name: str | None = Field(default=None, description="Asset the command named.")
    dedupe_key: str | None = Field(default=None, description="Effective dedupe key (explicit, or the command id).")
    error_code: ErrorCode | None = Field(default=None, description="Why it was rejected.")
    error_message: str | None = Field(default=None, description="Human-readable reason for a rejection.")

    @property
    def id(self) -> int | None:
        """The stored event's id, as the emit proposal names it (`receipt.id`): the same as `event_id`."""
        return self.event_id

    @property
    def accepted(self) -> bool:
        return self.status is ReceiptStatus.ACCEPTED

    @property
    def duplicate(self) -> bool:
        return self.status is ReceiptStatus.DUPLICATE

    @property
    def rejected(self) -> bool:
        return self.status is ReceiptStatus.REJECTED
