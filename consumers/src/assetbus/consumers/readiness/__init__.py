"""The readiness subscriber SDK for downstream services: one DAG's signals, each run handled once."""

from assetbus.consumers.readiness.ledger import DatabaseLedger, MemoryLedger, RunLedger
from assetbus.consumers.readiness.metrics import SubscriberMetrics
from assetbus.consumers.readiness.subscriber import Handler, ReadinessSubscriber, SubscriberStats
from assetbus.consumers.storage.runs import RunStatus

__all__ = ["DatabaseLedger", "Handler", "MemoryLedger", "ReadinessSubscriber", "RunLedger", "RunStatus",
           "SubscriberMetrics", "SubscriberStats"]
