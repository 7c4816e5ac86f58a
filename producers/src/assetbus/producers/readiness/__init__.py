"""Readiness for downstream services: one consumer DAG's signals, each run handled once.

`ReadinessSubscriber` (aiokafka) or `subscribe_readiness` on a FastStream `KafkaBroker`
(`assetbus.producers.readiness.faststream`, extra `assetbus-sdk[faststream]`), with a run ledger:
`ApiLedger` (leases runs through the execution API with a subscriber token) or `MemoryLedger`.
"""

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
           "Handler", "LedgerRefused", "MemoryLedger", "ReadinessSubscriber", "RunLedger", "RunStatus", "Skipped",
           "SubscriberEvents", "SubscriberStats", "run_once"]
