"""What the execution API needs to run; built once at the edge (the CLI) and passed in."""

from __future__ import annotations

from dataclasses import dataclass, field

from assetbus.consumers.airflow.client import AirflowAccount
from assetbus.schemas import Topics


@dataclass(frozen=True)
class ApiConfig:
    bootstrap_servers: str
    database_url: str
    token_secret: str = field(repr=False)
    topics: Topics = field(default_factory=Topics)
    receipt_timeout_s: float = 10.0
    """How long `POST /execution/asset-events/emit` waits for the persister's receipt (then 504)."""
    db_pool_size: int = 5
    instance_id: str | None = None
    """Key of this process's receipts on the reply topic; a random one per start by default."""
    airflow: AirflowAccount | None = None
    """Airflow's API server and the service account that checks attempts before `/execution/airflow/tokens`
    mints a token; None turns that route off (501)."""
    airflow_token_ttl_s: int = 3600
    """Lifetime of the tokens minted for Airflow attempts (the SDK asks again before they expire)."""
