"""What the persister needs to run: one settings model (`ASSETBUS_PERSISTER_*`, `.env`, or keywords).

Built once at the edge (`assetbus run persister`, the demo, tests) and passed in.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from assetbus.consumers.settings import (
    VerificationKeys,
    group_id_field,
    group_id_for,
    group_instance_id_field,
    service_settings_config,
)


class PersisterConfig(VerificationKeys):
    """The persister's settings; connection fields are given by the edge, the rest have defaults."""

    model_config = service_settings_config("ASSETBUS_PERSISTER_")

    group_id: str = group_id_field("persister")
    group_instance_id: str | None = group_instance_id_field()
    max_records: int = Field(default=4000, ge=1,
                             description="Largest batch taken from Kafka; its offsets are committed together.")
    chunk_size: int = Field(default=1000, ge=1, description="Records per database transaction; the chunks of a "
                            "batch are pipelined (each published as soon as it is stored).")
    transactions_in_flight: int = Field(default=2, ge=1, description="Chunks of a batch in their transactions at "
                                        "once (one connection each); a chunk repeating an earlier chunk's dedupe "
                                        "key waits for it.")
    batch_timeout_ms: int = Field(default=50, ge=0, description="How long to wait to fill a batch.")
    fetch_max_wait_ms: int = Field(default=10, ge=0, description="The broker's long-poll limit per fetch; kept short "
                                   "so a long poll on idle partitions does not hold back the busy one.")
    backoff_initial_s: float = Field(default=0.2, gt=0, description="First wait while the database is away.")
    backoff_max_s: float = Field(default=5.0, gt=0, description="Longest wait while the database is away.")
    session_timeout_ms: int = Field(default=10_000, ge=6_000, description="How soon the group gives a killed "
                                    "member's partitions away (the broker's minimum is 6000).")
    heartbeat_interval_ms: int = Field(default=3_000, ge=100, description="Heartbeats to the group coordinator.")
    max_poll_interval_ms: int = Field(default=10 * 60 * 1000, ge=1_000, description="A batch stuck longer "
                                      "(database down) makes this process leave the group; the batch is "
                                      "redelivered, never committed by us.")
    rebalance_timeout_ms: int = Field(default=30_000, ge=1_000, description="How long the group waits for members "
                                      "to rejoin during a rebalance.")
    revoke_wait_s: float = Field(default=15.0, gt=0, description="On a rebalance, how long the batch in flight may "
                                 "finish (and commit) before its partitions are given up.")
    max_partition_fetch_bytes: int = Field(default=4 * 1024 * 1024, ge=1024,
                                           description="Largest fetch per partition.")
    producer_linger_ms: int = Field(default=5, ge=0, description="How long receipts and events wait to be batched.")
    metrics_port: int | None = Field(default=None, ge=0, le=65535, description="Serve /metrics, /healthz and "
                                     "/readyz on this port (0: any free port); unset: no endpoint.")
    metrics_host: str = Field(default="0.0.0.0", description="Address the metrics and probes endpoint binds to.")

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: Any) -> Any:
        return group_id_for(data, "persister")

    @model_validator(mode="after")
    def _consistent(self) -> PersisterConfig:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("backoff_max_s must not be below backoff_initial_s")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
        if self.revoke_wait_s * 1000 >= self.rebalance_timeout_ms:
            raise ValueError("revoke_wait_s must be below rebalance_timeout_ms")
        return self
