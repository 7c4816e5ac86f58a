"""What the scheduler needs to run: one settings model (`ASSETBUS_SCHEDULER_*`, `.env`, or keywords)."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings

from assetbus.consumers.settings import (
    BackoffSettings,
    ConsumerGroupSettings,
    ProbeSettings,
    ServiceSettings,
    service_settings_config,
)

READINESS_PARTITIONS = 3
"""Partitions of a readiness topic: signals of one target partition key stay in order on one of them."""


def readiness_partitions_field(who: str) -> Any:
    """The `readiness_partitions` setting of a service that creates readiness topics (`who` does)."""
    return Field(default=READINESS_PARTITIONS, ge=1, description=f"Partitions of each readiness topic {who}.")


class ReadinessPartitions(BaseSettings):
    """The scheduler's `readiness_partitions`, read from the scheduler's environment as `SchedulerConfig` reads it,
    without the connections: for `assetbus topics plan`, which connects to nothing."""

    model_config = service_settings_config("ASSETBUS_SCHEDULER_")

    readiness_partitions: int = readiness_partitions_field("the scheduler creates")


class SchedulerConfig(ServiceSettings, ConsumerGroupSettings, BackoffSettings, ProbeSettings):
    model_config = service_settings_config("ASSETBUS_SCHEDULER_")
    service = "scheduler"

    max_records: int = Field(default=2000, ge=1, description="Largest batch of asset events applied in one "
                             "transaction.")
    batch_timeout_ms: int = Field(default=20, ge=0, description="How long to wait to fill a batch.")
    heartbeat_interval_ms: int = Field(default=2_000, ge=100, description="Heartbeats to the group coordinator.")
    readiness_partitions: int = readiness_partitions_field("the scheduler creates")
    republish_interval_s: float = Field(default=5.0, gt=0, description="How often unpublished runs (a crash after "
                                        "the commit, a replay) are looked for, besides after each batch.")
