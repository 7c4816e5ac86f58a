"""What the execution API needs to run; built once at the edge (the CLI) and passed in."""

from __future__ import annotations

from dataclasses import dataclass, field

from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import Topics


@dataclass(frozen=True)
class ApiConfig:
    kafka: KafkaConnection
    database_url: str
    token_secret: str = field(repr=False)
    topics: Topics = field(default_factory=Topics)
    receipt_timeout_s: float = 10.0
    """How long `POST /execution/asset-events/emit` waits for the persister's receipt (then 504)."""
    db_pool_size: int = 5
    instance_id: str | None = None
    """Key of this process's receipts on the reply topic; a random one per start by default."""
    startup_timeout_s: float = 60.0
    """How long to wait for Kafka and PostgreSQL at start-up before exiting with code 75."""
