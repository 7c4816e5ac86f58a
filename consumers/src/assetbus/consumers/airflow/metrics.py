"""The Prometheus metrics of the Airflow bridge and the forwarder, served with their probes (`assetbus run
airflow-bridge --metrics-port`, `run airflow-forwarder --metrics-port`)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from assetbus.consumers.observe.process_metrics import LATENCY_BUCKETS, offset_metrics
from assetbus.consumers.readiness.metrics import SubscriberMetrics


class BridgeMetrics(SubscriberMetrics):
    """The bridge's subscribers' `SubscriberMetrics` per DAG, plus its own of Airflow's runs."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        super().__init__(registry)
        r = self.registry
        self.airflow_runs = Counter("assetbus_bridge_airflow_runs", "Airflow DAG runs the bridge asked for, by "
                                    "outcome: created, or existing (met again on a redelivered signal).",
                                    ["dag_id", "outcome"], registry=r)
        self.airflow_errors = Counter("assetbus_bridge_airflow_errors", "Airflow requests that failed and are "
                                      "retried (unavailable, auth, not_found) or refused for good (refused).",
                                      ["dag_id", "kind"], registry=r)
        self.trigger_seconds = Histogram("assetbus_bridge_trigger_seconds", "From a signal taken to its Airflow run "
                                         "existing and recorded, retries included.", ["dag_id"],
                                         buckets=LATENCY_BUCKETS, registry=r)
        self.outcomes = Counter("assetbus_bridge_run_outcomes", "Final states of bridged runs read back from "
                                "Airflow.", ["dag_id", "state"], registry=r)


class ForwarderMetrics:
    """The forwarder's metrics; `consumer_lag`, `rebalances` and `commit_failures` are the shell's `OffsetMetrics`."""

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
