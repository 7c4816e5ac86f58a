"""What the persister needs to run: one settings model (`ASSETBUS_PERSISTER_*`, `.env`, or keywords)."""

from __future__ import annotations

from pydantic import Field

from assetbus.consumers.settings import (
    BackoffSettings,
    ConsumerGroupSettings,
    ProbeSettings,
    VerificationKeys,
    service_settings_config,
)


class PersisterConfig(VerificationKeys, ConsumerGroupSettings, BackoffSettings, ProbeSettings):
    model_config = service_settings_config("ASSETBUS_PERSISTER_")
    service = "persister"

    max_records: int = Field(default=4000, ge=1,
                             description="Largest batch taken from Kafka; its offsets are committed together.")
    chunk_size: int = Field(default=1000, ge=1, description="Records per database transaction; the chunks of a "
                            "batch are pipelined (each published as soon as it is stored).")
    transactions_in_flight: int = Field(default=2, ge=1, description="Chunks of a batch in their transactions at "
                                        "once (one connection each); a chunk repeating an earlier chunk's dedupe "
                                        "key waits for it.")
    max_partition_fetch_bytes: int = Field(default=4 * 1024 * 1024, ge=1024,
                                           description="Largest fetch per partition.")
    producer_linger_ms: int = Field(default=5, ge=0, description="How long receipts and events wait to be batched.")
