"""What the services' metrics share: histogram buckets (so dashboards compare like with like), and the consumer
shell's offset metrics."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
"""Seconds: database commits, batches, handlers."""

READINESS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0)
"""Seconds from an upstream event's storage to its readiness signal (published, or handled)."""


def offset_metrics(prefix: str, lag_help: str, registry: CollectorRegistry,
                   labels: Sequence[str] = ()) -> tuple[Counter, Counter, Gauge]:
    """The toolkit's `OffsetMetrics` (rebalances, commit failures, consumer lag) of one service, named
    `<prefix>_rebalances`, `<prefix>_offset_commit_failures` and `<prefix>_consumer_lag`."""
    return (Counter(f"{prefix}_rebalances", "Partition assignments received.", labels, registry=registry),
            Counter(f"{prefix}_offset_commit_failures", "Offset commits that failed or were skipped after a "
                    "rebalance (the batch is redelivered).", labels, registry=registry),
            Gauge(f"{prefix}_consumer_lag", lag_help, labels, registry=registry))
