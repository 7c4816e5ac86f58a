"""A readiness subscriber's Prometheus metrics, labelled by DAG (how to pass and serve them: docs/metrics.md,
"A readiness subscriber's probes").
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from assetbus.consumers.observe.process_metrics import LATENCY_BUCKETS, READINESS_BUCKETS, offset_metrics
from assetbus.producers.kafka.offsets import OffsetCounters, OffsetMetrics
from assetbus.producers.readiness import SubscriberEvents


class SubscriberMetrics(SubscriberEvents):
    """Signals received and their outcomes, handler time, readiness latency, consumer lag; per DAG."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.signals = Counter("assetbus_subscriber_signals", "Readiness signals taken from the topic, by outcome "
                               "(success, failed, duplicate, unreadable, lease_lost).", ["dag_id", "outcome"],
                               registry=r)
        self.handler_seconds = Histogram("assetbus_subscriber_handler_seconds", "Duration of the handler per run.",
                                         ["dag_id"], buckets=LATENCY_BUCKETS, registry=r)
        self.readiness_seconds = Histogram("assetbus_subscriber_readiness_latency_seconds",
                                           "From a run's creation by the scheduler to its handler starting here.",
                                           ["dag_id"], buckets=READINESS_BUCKETS, registry=r)
        self.rebalances, self.commit_failures, self.consumer_lag = offset_metrics(
            "assetbus_subscriber", "Signals on the assigned partitions not yet handled and committed.", r, ["dag_id"])
        self.leases_lost = Counter("assetbus_subscriber_leases_lost", "Handlers that lost their run's lease while "
                                   "they ran (another claim took the run; their outcome was refused).", ["dag_id"],
                                   registry=r)

    def signal(self, dag_id: str, outcome: str) -> None:
        self.signals.labels(dag_id=dag_id, outcome=outcome).inc()

    def handled(self, dag_id: str, seconds: float) -> None:
        self.handler_seconds.labels(dag_id=dag_id).observe(seconds)

    def ready_after(self, dag_id: str, seconds: float) -> None:
        self.readiness_seconds.labels(dag_id=dag_id).observe(seconds)

    def offset_metrics(self, dag_id: str) -> OffsetMetrics:
        return OffsetCounters(self.rebalances.labels(dag_id=dag_id), self.commit_failures.labels(dag_id=dag_id),
                              self.consumer_lag.labels(dag_id=dag_id))

    def lease_lost(self, dag_id: str) -> None:
        self.leases_lost.labels(dag_id=dag_id).inc()
