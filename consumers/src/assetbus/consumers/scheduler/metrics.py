"""The scheduler's Prometheus metrics, on their own registry (several schedulers may share a process), served
with the probes (`assetbus run scheduler --metrics-port`)."""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Sequence
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry, Counter, Histogram

from assetbus.consumers.observe.process_metrics import LATENCY_BUCKETS, READINESS_BUCKETS, offset_metrics
from assetbus.consumers.scheduler.apply import ORIGIN_SCHEDULER
from assetbus.consumers.storage.runs import RunRow


class SchedulerMetrics:
    """Events in, runs and signals out, readiness latency, transaction time; the consumer shell's offsets
    (`consumer_lag`, `rebalances`, `commit_failures`: an `OffsetMetrics`)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.events = Counter("assetbus_scheduler_events", "Asset events applied (routed to the waiting DAGs).",
                              registry=r)
        self.unreadable = Counter("assetbus_scheduler_unreadable", "Records on the asset-events topic that could "
                                  "not be read (skipped).", registry=r)
        self.skipped = Counter("assetbus_scheduler_skipped", "Events a DAG's partition mapping could not map.",
                               registry=r)
        self.runs_created = Counter("assetbus_scheduler_runs_created", "Consumer runs created.", ["dag_id"],
                                    registry=r)
        self.signals_published = Counter("assetbus_scheduler_signals_published",
                                         "Readiness signals acknowledged by the broker.", ["dag_id"], registry=r)
        self.readiness_seconds = Histogram(
            "assetbus_scheduler_readiness_latency_seconds",
            "From the storage of the event that made a run ready to the broker's ack of its readiness signal "
            "(live runs only).", buckets=READINESS_BUCKETS, registry=r)
        self.db_commit_seconds = Histogram("assetbus_scheduler_db_commit_seconds",
                                           "Duration of one batch's database transaction.",
                                           buckets=LATENCY_BUCKETS, registry=r)
        self.batch_failures = Counter("assetbus_scheduler_batch_failures",
                                      "Batches that failed and will be redelivered.", registry=r)
        self.rebalances, self.commit_failures, self.consumer_lag = offset_metrics(
            "assetbus_scheduler", "Asset events on the assigned partitions not yet applied by this process.", r)

    def applied(self, events: int, unreadable: int, skipped: int, runs: Sequence[RunRow], seconds: float) -> None:
        """Count one committed batch."""
        self.events.inc(events)
        self.unreadable.inc(unreadable)
        self.skipped.inc(skipped)
        self.db_commit_seconds.observe(seconds)
        for dag_id, n in Tally(run.dag_id for run in runs).items():
            self.runs_created.labels(dag_id=dag_id).inc(n)

    def published(self, runs: Sequence[RunRow]) -> None:
        """Count signals the broker acknowledged, and how long after their newest event they went out."""
        now = time.time()
        for dag_id, n in Tally(run.dag_id for run in runs).items():
            self.signals_published.labels(dag_id=dag_id).inc(n)
        observe = self.readiness_seconds.observe
        for run in runs:
            if run.origin == ORIGIN_SCHEDULER:
                stored = newest_event_time(run)
                if stored is not None:
                    observe(max(0.0, now - stored))


def newest_event_time(run: RunRow) -> float | None:
    """When the newest triggering event of a run was stored (a Unix time). A plain loop with one conversion per
    run: it runs for every signal published (generators and a conversion per event cost 4x)."""
    newest: datetime | None = None
    for event in run.events:
        if text := event.get("timestamp"):
            when = datetime.fromisoformat(str(text))
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            if newest is None or when > newest:
                newest = when
    return None if newest is None else newest.timestamp()
