"""What the scheduler needs to run; built once at the edge (the CLI) and passed in."""

from __future__ import annotations

from dataclasses import dataclass, field

from assetbus.consumers.scheduler.topics import READINESS_PARTITIONS
from assetbus.schemas import Topics


@dataclass(frozen=True)
class SchedulerConfig:
    bootstrap_servers: str
    database_url: str
    topics: Topics = field(default_factory=Topics)
    group_id: str = "assetbus-scheduler"
    max_records: int = 2000
    batch_timeout_ms: int = 20
    fetch_max_wait_ms: int = 50
    """The broker's long-poll limit per fetch. Kept short: aiokafka fetches the partitions without buffered
    records on their own while a batch is applied, and the hot partition (asset events are keyed by asset) can
    only be fetched again once that long poll on the idle ones returns (aiokafka's default 500 ms stalled it)."""
    readiness_partitions: int = READINESS_PARTITIONS
    republish_interval_s: float = 5.0
    """How often unpublished runs (a crash after the commit, a replay) are looked for, besides after each batch."""
    session_timeout_ms: int = 10_000
    """How long the group waits for a silent (killed) member before giving its partitions away (min 6000)."""
    heartbeat_interval_ms: int = 2_000
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    metrics_port: int | None = None
    """Serve Prometheus metrics and the probes on this port (`/metrics`, `/healthz`, `/readyz`); None: none."""
    metrics_host: str = "0.0.0.0"
