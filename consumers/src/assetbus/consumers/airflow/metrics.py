"""The Airflow bridge's Prometheus metrics: its subscribers' (signals, lag, readiness latency) and its own.

Served with the probes (`assetbus run airflow-bridge --metrics-port`).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

from assetbus.consumers.observe.buckets import LATENCY_BUCKETS
from assetbus.consumers.readiness.metrics import SubscriberMetrics


class BridgeMetrics(SubscriberMetrics):
    """`SubscriberMetrics` per DAG, plus the Airflow runs created, Airflow's refusals and the outcomes read back."""

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
