"""Server-side pieces for readiness subscribers: the database ledger and the Prometheus metrics.

The subscriber itself is in the SDK (`assetbus.producers.readiness`): downstream services install
`assetbus-sdk` alone and claim runs through the execution API. The server's own subscribers (the
Airflow bridge, the demo) keep a direct `DatabaseLedger`, as they hold the database anyway.
"""

from assetbus.consumers.readiness.ledger import DatabaseLedger
from assetbus.consumers.readiness.metrics import SubscriberMetrics
from assetbus.producers.readiness import MemoryLedger, ReadinessSubscriber, RunStatus

__all__ = ["DatabaseLedger", "MemoryLedger", "ReadinessSubscriber", "RunStatus", "SubscriberMetrics"]
