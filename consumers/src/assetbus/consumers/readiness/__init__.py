"""Server-side pieces for readiness subscribers (the subscriber itself is the SDK's): the database ledger, which
the server's own subscribers (the Airflow bridge, the demo) use as they hold the database, and the metrics."""

from assetbus.consumers.readiness.ledger import DatabaseLedger
from assetbus.consumers.readiness.metrics import SubscriberMetrics
from assetbus.producers.readiness import MemoryLedger, ReadinessSubscriber, RunStatus

__all__ = ["DatabaseLedger", "MemoryLedger", "ReadinessSubscriber", "RunStatus", "SubscriberMetrics"]
