"""The persister's Prometheus metrics, on their own registry (several persisters may share a process).

Served over HTTP by `MetricsServer` (`assetbus run persister --metrics-port 9464`, path `/metrics`).
"""

from __future__ import annotations

import logging
import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from assetbus.consumers.persister.batch import BatchResult
from assetbus.schemas import ReceiptStatus

log = logging.getLogger("assetbus.persister")

BATCH_SIZE_BUCKETS = (1, 10, 50, 100, 250, 500, 1000, 2000, 3000, 4000, 6000, 8000, 12000, 16000)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class PersisterMetrics:
    """Counters of outcomes, batch and latency histograms, consumer lag."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.accepted = Counter("assetbus_persister_accepted", "Commands stored as a new event.", registry=r)
        self.duplicate = Counter("assetbus_persister_duplicate",
                                 "Commands whose dedupe scope was already stored (answered with the original).",
                                 registry=r)
        self.rejected = Counter("assetbus_persister_rejected", "Commands answered with a rejected receipt.",
                                ["code"], registry=r)
        self.dead_lettered = Counter("assetbus_persister_dead_lettered",
                                     "Records sent to the dead-letter topic.", ["reason"], registry=r)
        self.events_published = Counter("assetbus_persister_events_published",
                                        "Asset events published (republished for duplicates too).", registry=r)
        self.batch_size = Histogram("assetbus_persister_batch_size", "Records per batch taken from Kafka.",
                                    buckets=BATCH_SIZE_BUCKETS, registry=r)
        self.db_commit_seconds = Histogram("assetbus_persister_db_commit_seconds",
                                           "Duration of one database transaction (one chunk of a batch).",
                                           buckets=LATENCY_BUCKETS, registry=r)
        self.batch_seconds = Histogram("assetbus_persister_batch_seconds",
                                       "From a batch's arrival to its offsets being committed.",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.consumer_lag = Gauge("assetbus_persister_consumer_lag",
                                  "Records on the assigned emission partitions not yet committed by this process.",
                                  registry=r)
        self.batch_failures = Counter("assetbus_persister_batch_failures",
                                      "Batches that failed and were rewound for redelivery.", registry=r)
        self.db_retries = Counter("assetbus_persister_db_retries",
                                  "Database attempts that found the database unavailable.", registry=r)
        self.commit_failures = Counter("assetbus_persister_offset_commit_failures",
                                       "Offset commits that failed or were skipped after a rebalance "
                                       "(the batch is redelivered and answered as duplicates).", registry=r)
        self.rebalances = Counter("assetbus_persister_rebalances", "Partition assignments received.",
                                  registry=r)

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


class MetricsServer:
    """`/metrics` over HTTP in a daemon thread; `start()` / `stop()`."""

    def __init__(self, registry: CollectorRegistry, port: int, host: str = "0.0.0.0") -> None:
        self._registry = registry
        self._port = port
        self._host = host
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (useful with port 0)."""
        return self._server.server_port if self._server is not None else self._port

    def start(self) -> None:
        self._server, self._thread = start_http_server(self._port, self._host, registry=self._registry)
        log.info("metrics served", extra={"url": f"http://{self._host}:{self.port}/metrics"})

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
