"""Readiness for downstream services: one consumer DAG's signals, each run handled once.

`ReadinessSubscriber` (aiokafka) or `subscribe_readiness` on a FastStream `KafkaBroker`
(`assetbus.producers.readiness.faststream`, extra `assetbus-sdk[faststream]`), with a run ledger:
`ApiLedger` (claims through the execution API with a subscriber token) or `MemoryLedger`.
"""

from assetbus.producers.readiness.ledger import (
    SCOPE_RUNS_CLAIM,
    ApiLedger,
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

__all__ = ["SCOPE_RUNS_CLAIM", "ApiLedger", "Handler", "LedgerRefused", "MemoryLedger", "ReadinessSubscriber",
           "RunLedger", "RunStatus", "Skipped", "SubscriberEvents", "SubscriberStats", "run_once"]
