"""The readiness subscriber SDK for downstream services: one DAG's signals, each run handled once."""

from consumers.readiness.ledger import DatabaseLedger, MemoryLedger, RunLedger
from consumers.readiness.subscriber import Handler, ReadinessSubscriber, SubscriberStats
from consumers.storage.runs import RunStatus

__all__ = ["DatabaseLedger", "Handler", "MemoryLedger", "ReadinessSubscriber", "RunLedger", "RunStatus",
           "SubscriberStats"]
