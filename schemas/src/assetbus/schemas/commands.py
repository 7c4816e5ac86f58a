"""EmissionCommand: what an emitter sends to the emissions topic."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from assetbus.schemas.limits import KEY_MAX_LENGTH, NAME_MAX_LENGTH
from assetbus.schemas.provenance import Provenance
from assetbus.schemas.version import SCHEMA_VERSION


class AssetRef(BaseModel):
    """An asset as named by the emitter; it must match a registered asset by name *and* URI."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(min_length=1, max_length=NAME_MAX_LENGTH, description="Registered asset name.")
    uri: str = Field(min_length=1, max_length=NAME_MAX_LENGTH, description="Registered asset URI.")


class EmissionCommand(BaseModel):
    """"This output is ready now": one emission, keyed on the topic by asset name.

    `partition_date` is a plain datetime here so that a naive one reaches the persister and gets
    a precise `invalid_partition` rejection instead of a generic parse error.
    """

    schema_version: int = Field(default=SCHEMA_VERSION, description="Contract version of this message.")
    command_id: UUID = Field(description="Unique per emit() call; resent unchanged on retries. "
                             "It is the receipt's correlation id and the default dedupe key.")
    producer_id: str = Field(min_length=1, max_length=200,
                             description="The emitting process; key of its receipts on the reply topic.")
    reply_to: str = Field(min_length=1, max_length=249, description="Topic the receipt is published to.")
    asset: AssetRef = Field(description="The asset that is ready.")
    source: Provenance = Field(description="Who emits, as claimed by the body; must equal the token's claims.")
    token: str = Field(min_length=1, max_length=8192, description="Signed emitter token (JWT).")
    extra: dict[str, Any] = Field(default_factory=dict,
                                  description="JSON object of references (paths, counts); no secrets or logs.")
    partition_key: str | None = Field(default=None, min_length=1, max_length=KEY_MAX_LENGTH,
                                      description="Partition that is ready; null for unpartitioned.")
    partition_date: datetime | None = Field(default=None,
                                            description="Time-zone-aware date of the partition; needs a key.")
    dedupe_key: str | None = Field(default=None, min_length=1, max_length=KEY_MAX_LENGTH,
                                   description="Explicit dedupe key, scoped to (asset, dag, run, task, map "
                                   "index); null means the command id.")
    emitted_at: datetime = Field(description="Emitter's clock when emit() was called.")
