"""Server-side pieces for readiness subscribers: the database ledger and the Prometheus metrics.

The subscriber itself is in the SDK (`assetbus.producers.readiness`): downstream services install
`assetbus-sdk` alone and claim runs through the execution API. The server's own subscribers (the
Airflow bridge, the demo) keep a direct `DatabaseLedger`, as they hold the database anyway.
"""

from assetbus.consumers.readiness.ledger import DatabaseLedger
from assetbus.consumers.readiness.metrics import SubscriberMetrics
from assetbus.producers.readiness import (
           Handler,
           MemoryLedger,
           ReadinessSubscriber,
           RunLedger,
           RunStatus,
           SubscriberStats,
)

__all__ = ["DatabaseLedger", "Handler", "MemoryLedger", "ReadinessSubscriber", "RunLedger", "RunStatus",
           "SubscriberMetrics", "SubscriberStats"]
