"""The persister's Prometheus metrics, on their own registry (several persisters may share a process), served
with the probes (`assetbus run persister --metrics-port 9464`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from assetbus.consumers.observe.buckets import LATENCY_BUCKETS, offset_metrics
from assetbus.consumers.persister.batch import BatchResult
from assetbus.schemas import ReceiptStatus

BATCH_SIZE_BUCKETS = (1, 10, 50, 100, 250, 500, 1000, 2000, 3000, 4000, 6000, 8000, 12000, 16000)


class PersisterMetrics:
    """Counters of outcomes, batch and latency histograms; the consumer shell's offsets (an `OffsetMetrics`)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.accepted = Counter("assetbus_persister_accepted",
                                "Commands answered accepted: stored as a new event (or handled again).", registry=r)
        self.duplicate = Counter("assetbus_persister_duplicate",
                                 "Commands whose dedupe scope another command stored (answered with the original).",
                                 registry=r)
        self.rejected = Counter("assetbus_persister_rejected", "Commands answered with a rejected receipt.",
                                ["code"], registry=r)
        self.dead_lettered = Counter("assetbus_persister_dead_lettered",
                                     "Records sent to the dead-letter topic.", ["reason"], registry=r)
        self.events_published = Counter("assetbus_persister_events_published",
                                        "Asset events published (republished for repeats too).", registry=r)
        self.batch_size = Histogram("assetbus_persister_batch_size", "Records per batch taken from Kafka.",
                                    buckets=BATCH_SIZE_BUCKETS, registry=r)
        self.db_commit_seconds = Histogram("assetbus_persister_db_commit_seconds",
                                           "Duration of one database transaction (one chunk of a batch).",
                                           buckets=LATENCY_BUCKETS, registry=r)
        self.batch_seconds = Histogram("assetbus_persister_batch_seconds",
                                       "From a batch's arrival to its offsets being committed.",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.batch_failures = Counter("assetbus_persister_batch_failures",
                                      "Batches that failed and were rewound for redelivery.", registry=r)
        self.db_retries = Counter("assetbus_persister_db_retries",
                                  "Database attempts that found the database unavailable.", registry=r)
        self.rebalances, self.commit_failures, self.consumer_lag = offset_metrics(
            "assetbus_persister", "Records on the assigned emission partitions not yet committed by this process.", r)

    def observe(self, result: BatchResult, records: int, seconds: float) -> None:
        """Count one published and committed batch."""
        self.batch_size.observe(records)
        self.batch_seconds.observe(seconds)
        self.accepted.inc(result.statuses[ReceiptStatus.ACCEPTED])
        self.duplicate.inc(result.statuses[ReceiptStatus.DUPLICATE])
        for code, n in result.rejections.items():
            self.rejected.labels(code=code.value).inc(n)
        for reason, n in result.dead_letter_reasons.items():
            self.dead_lettered.labels(reason=reason.value).inc(n)
        self.events_published.inc(len(result.events))
