"""What the persister needs to run; built once at the edge (the CLI) and passed in."""

from __future__ import annotations

from dataclasses import dataclass, field

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import Topics


@dataclass(frozen=True)
class PersisterConfig:
    kafka: KafkaConnection
    database_url: str
    token_secret: str = field(repr=False)
    topics: Topics = field(default_factory=Topics)
    group_id: str = "assetbus-persister"
    max_records: int = 4000
    """Largest batch taken from Kafka; its offsets are committed together."""
    chunk_size: int = 1000
    """Records per database transaction; the chunks of a batch are pipelined (check the next ones
    while earlier ones are in their transactions, publish each as soon as it is stored)."""
    transactions_in_flight: int = 2
    """Chunks of a batch in their transactions at once (one connection each). Chunks that repeat a
    dedupe key of an earlier chunk wait for it, so the earlier record is still the one accepted."""
    batch_timeout_ms: int = 50
    fetch_max_wait_ms: int = 50
    """The broker's long-poll limit per fetch. aiokafka keeps one fetch in flight per broker; with the
    500 ms default, a long poll on idle partitions (emissions are keyed by asset) holds back the busy one."""
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    session_timeout_ms: int = 10_000
    """How long the group waits for a silent (killed) member before giving its partitions away."""
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 10 * 60 * 1000
    """A batch stuck longer than this (the database is down) makes the process leave the group; its
    partitions go to another member and the stuck batch is redelivered, never committed by us."""
    rebalance_timeout_ms: int = 30_000
    revoke_wait_s: float = 15.0
    """On a rebalance, how long to let the batch in flight finish (and commit) before giving up its
    partitions; keep it below `rebalance_timeout_ms`."""
    max_partition_fetch_bytes: int = 4 * 1024 * 1024
    producer_linger_ms: int = 5
    metrics_port: int | None = None
    """Serve Prometheus metrics on this port (`/metrics`); None: no endpoint (metrics still counted)."""
    metrics_host: str = "0.0.0.0"
    startup_timeout_s: float = 60.0
    """How long to wait for Kafka and PostgreSQL at start-up before exiting with code 75."""
