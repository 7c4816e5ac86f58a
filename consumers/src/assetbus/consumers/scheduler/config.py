"""What the scheduler needs to run: one settings model (`ASSETBUS_SCHEDULER_*`, `.env`, or keywords).

Built once at the edge (`assetbus run scheduler`, the demo, tests) and passed in.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from assetbus.consumers.settings import (
    ServiceSettings,
    group_id_field,
    group_id_for,
    group_instance_id_field,
    service_settings_config,
)

READINESS_PARTITIONS = 3
"""Partitions of a readiness topic: signals of one target partition key stay in order on one of them."""


def readiness_partitions_field(who: str) -> Any:
    """The `readiness_partitions` setting of a service that creates readiness topics (`who` does)."""
    return Field(default=READINESS_PARTITIONS, ge=1, description=f"Partitions of each readiness topic {who}.")


class SchedulerConfig(ServiceSettings):
    """The scheduler's settings; connection fields are given by the edge, the rest have defaults."""

    model_config = service_settings_config("ASSETBUS_SCHEDULER_")

    group_id: str = group_id_field("scheduler")
    group_instance_id: str | None = group_instance_id_field()
    max_records: int = Field(default=2000, ge=1, description="Largest batch of asset events applied in one "
                             "transaction.")
    batch_timeout_ms: int = Field(default=20, ge=0, description="How long to wait to fill a batch.")
    fetch_max_wait_ms: int = Field(default=10, ge=0, description="The broker's long-poll limit per fetch; kept short "
                                   "so the hot partition is not held back by a long poll on the idle ones (it is "
                                   "a fixed wait on the path to readiness: 10 ms costs ~100 small fetches/s idle).")
    readiness_partitions: int = readiness_partitions_field("the scheduler creates")
    republish_interval_s: float = Field(default=5.0, gt=0, description="How often unpublished runs (a crash after "
                                        "the commit, a replay) are looked for, besides after each batch.")
    session_timeout_ms: int = Field(default=10_000, ge=6_000, description="How soon the group gives a killed "
                                    "member's partitions away (the broker's minimum is 6000).")
    heartbeat_interval_ms: int = Field(default=2_000, ge=100, description="Heartbeats to the group coordinator.")
    backoff_initial_s: float = Field(default=0.2, gt=0, description="First wait while the database is away.")
    backoff_max_s: float = Field(default=5.0, gt=0, description="Longest wait while the database is away.")
    metrics_port: int | None = Field(default=None, ge=0, le=65535, description="Serve /metrics, /healthz and "
                                     "/readyz on this port (0: any free port); unset: no endpoint.")
    metrics_host: str = Field(default="0.0.0.0", description="Address the metrics and probes endpoint binds to.")

    @model_validator(mode="before")
    @classmethod
    def _group(cls, data: Any) -> Any:
        return group_id_for(data, "scheduler")

    @model_validator(mode="after")
    def _consistent(self) -> SchedulerConfig:
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError("backoff_max_s must not be below backoff_initial_s")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat_interval_ms must be below session_timeout_ms")
        return self
