"""What the persister needs to run; built once at the edge (the CLI) and passed in."""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas import Topics


@dataclass(frozen=True)
class PersisterConfig:
    bootstrap_servers: str
    database_url: str
    token_secret: str = field(repr=False)
    topics: Topics = field(default_factory=Topics)
    group_id: str = "assetbus-persister"
    max_records: int = 2000
    batch_timeout_ms: int = 50
    backoff_initial_s: float = 0.2
    backoff_max_s: float = 5.0
    metrics_port: int | None = None
