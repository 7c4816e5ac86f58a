"""The Airflow forwarder's Prometheus metrics, served with its probes (`run airflow-forwarder --metrics-port`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from assetbus.consumers.observe.buckets import LATENCY_BUCKETS, offset_metrics


class ForwarderMetrics:
    """Events forwarded by outcome, Airflow's errors, the delay from storage to Airflow, the consumer's lag
    (`consumer_lag`, `rebalances`, `commit_failures`: an `OffsetMetrics` for the shell)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry or CollectorRegistry()
        self.events = Counter("assetbus_forwarder_events", "Stored events handled, by outcome: posted (new in "
                              "Airflow), found (an unconfirmed intent found in Airflow), existing (already "
                              "posted, met again), refused (Airflow answered 4xx), unknown_asset (not in Airflow), "
                              "skipped (not a forwarded asset), bridge_served (a DAG the Airflow bridge serves waits "
                              "on the asset: the bridge starts its runs).", ["outcome"], registry=r)
        self.airflow_errors = Counter("assetbus_forwarder_airflow_errors", "Airflow requests that failed and are "
                                      "retried, by kind (unavailable, auth, not_found, refused).", ["kind"],
                                      registry=r)
        self.delay_seconds = Histogram("assetbus_forwarder_delay_seconds", "From an event stored in assetbus to "
                                       "its asset event existing in Airflow.", buckets=LATENCY_BUCKETS, registry=r)
        self.rebalances, self.commit_failures, self.consumer_lag = offset_metrics(
            "assetbus_forwarder", "Asset events not yet read by this forwarder, over its assigned partitions.", r)
