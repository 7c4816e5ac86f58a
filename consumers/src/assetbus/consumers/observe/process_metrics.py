"""What the services' metrics share: histogram buckets (so dashboards compare like with like), the consumer
shell's offset metrics, and the process's metrics every `/metrics` serves (docs/metrics.md). Those are a
collector, not metric objects: under prometheus-client's multiprocess mode (the API's workers) a gauge would be
written to the shared directory once per worker.
"""

from __future__ import annotations

import platform
import weakref
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from assetbus.consumers.observe.logs import REPEATS, RepeatLimiter
from assetbus.producers.distributions import installed_version
from assetbus.producers.kafka.access import AccessRefusals

__all__ = ["LATENCY_BUCKETS", "READINESS_BUCKETS", "offset_metrics", "register_process_metrics"]

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


class _ProcessMetrics(Collector):
    def __init__(self, limiter: RepeatLimiter) -> None:
        self.limiter = limiter
        self.refusals: AccessRefusals | None = None
        found = {key: installed_version(name) or "unknown" for key, name in
                 (("version", "assetbus"), ("sdk", "assetbus-sdk"), ("schemas", "assetbus-schemas"))}
        self.build = {**found, "python": platform.python_version()}

    def collect(self) -> Iterator[Metric]:
        build = GaugeMetricFamily("assetbus_build_info", "The assetbus release this process runs (always 1).",
                                  labels=list(self.build))
        build.add_metric(list(self.build.values()), 1.0)
        yield build
        lines = CounterMetricFamily("assetbus_log_lines_suppressed", "Warning and error lines not printed because "
                                    "one like them was printed less than 10 s before.", labels=["logger", "level"])
        for (logger, level), count in sorted(self.limiter.suppressed.items()):
            lines.add_metric([logger, level], count)
        yield lines
        if self.refusals is not None:
            denied = GaugeMetricFamily("assetbus_kafka_access_denied", "1 while the cluster's ACLs refuse this work "
                                       "of the service (the labels name the operation and resource to grant; "
                                       "/readyz names it too).", labels=["work", "principal", "operation", "resource"])
            for work, refused in sorted(self.refusals.current().items()):
                denied.add_metric([work, refused.principal, refused.operation, refused.resource], 1.0)
            yield denied


_REGISTERED: weakref.WeakKeyDictionary[CollectorRegistry, _ProcessMetrics] = weakref.WeakKeyDictionary()


def register_process_metrics(registry: CollectorRegistry, refusals: AccessRefusals | None = None, *,
                             limiter: RepeatLimiter = REPEATS) -> None:
    """Serve these metrics on `registry` (once: registering again adds nothing), `assetbus_kafka_access_denied`
    only once given `refusals` (a registry that has them already reads the new `refusals` from now on: a service
    started again with the same metrics)."""
    collector = _REGISTERED.get(registry)
    if collector is None:
        collector = _REGISTERED[registry] = _ProcessMetrics(limiter)
        registry.register(collector)
    if refusals is not None:
        collector.refusals = refusals
