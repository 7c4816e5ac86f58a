"""Readiness for downstream services: one consumer DAG's signals, each run handled once (`ReadinessSubscriber`, or
`subscribe_readiness` on a FastStream broker, with a run ledger); the guide: docs/consumer-dags.md.
"""

from assetbus.producers.readiness.leases import Leases
from assetbus.producers.readiness.ledger import (
    DEFAULT_LEASE_S,
    FINISHED,
    SCOPE_RUNS_CLAIM,
    ApiLedger,
    Claim,
    ClaimState,
    FinishResult,
    LedgerRefused,
    MemoryLedger,
    RunLedger,
    RunStatus,
)
from assetbus.producers.readiness.subscriber import (
    Handler,
    ReadinessSubscriber,
    Skipped,
    SubscriberEvents,
    SubscriberStats,
    run_once,
)

__all__ = ["DEFAULT_LEASE_S", "FINISHED", "SCOPE_RUNS_CLAIM", "ApiLedger", "Claim", "ClaimState", "FinishResult",
           "Handler", "Leases", "LedgerRefused", "MemoryLedger", "ReadinessSubscriber", "RunLedger", "RunStatus",
           "Skipped", "SubscriberEvents", "SubscriberStats", "run_once"]
