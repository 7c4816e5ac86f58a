"""Airflow DAG runs for readiness signals: one deterministic `dag_run_id` per signal. Airflow refuses a second
POST of that id (409), so a redelivered signal meets the run that exists: run creation is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.producers.readiness import RunStatus
from assetbus.producers.tracing import TRACEPARENT, headers_of, traceparent_of
from assetbus.schemas import ReadinessSignal

RUN_ID_PREFIX = "assetbus__"
CONF_KEY = "assetbus"
"""The key under which a run's `conf` carries the assetbus run: id, partition, triggering events."""

FINAL_STATES = {"success": RunStatus.SUCCESS, "failed": RunStatus.FAILED}
"""Airflow's final DAG-run states and the outcome they give the assetbus run."""


def dag_run_id(signal: ReadinessSignal) -> str:
    """The Airflow run id of a signal: the same for every delivery of it."""
    return RUN_ID_PREFIX + signal.run_id


def run_conf(signal: ReadinessSignal) -> dict[str, Any]:
    """What the Airflow run gets in `conf`: references to the triggering events, never their payloads; and
    `traceparent`, the current trace context (the subscriber's `assetbus handle` span), when there is one."""
    conf: dict[str, Any] = {CONF_KEY: {
        "run_id": signal.run_id,
        "partition_key": signal.partition_key,
        "partition_date": signal.partition_date.isoformat() if signal.partition_date else None,
        "generation": signal.generation,
        "event_ids": [event.event_id for event in signal.events],
        "origin": signal.origin,
        "events": [{"event_id": e.event_id, "asset": e.asset_name, "partition_key": e.partition_key,
                    "partition_date": e.partition_date.isoformat() if e.partition_date else None,
                    "stored_at": e.timestamp.isoformat(),
                    "source": e.source.model_dump(mode="json", exclude_none=True)}
                   for e in signal.events],
    }}
    traceparent = traceparent_of(headers_of())
    if traceparent is not None:
        conf[TRACEPARENT] = traceparent
    return conf


def _note(signal: ReadinessSignal) -> str:
    """The run's note in Airflow's UI: why it started (Airflow's consumed-events link is not settable by REST)."""
    assets = sorted({e.asset_name for e in signal.events})
    return (f"started by assetbus for run {signal.run_id}: partition {signal.partition_key or '(none)'}, "
            f"{len(signal.events)} event(s) of {', '.join(assets) or '-'} "
            f"(ids {', '.join(str(e.event_id) for e in signal.events[:20])}"
            f"{', ...' if len(signal.events) > 20 else ''}); details in conf['assetbus']")[:1000]


@dataclass(frozen=True)
class CreatedRun:
    dag_run_id: str
    state: str
    created: bool
    """False when the run existed already (a redelivered signal)."""


def runs_path(dag_id: str, run_id: str | None = None) -> str:
    """The REST path of a DAG's runs, or of one of them."""
    path = f"/dags/{quote(dag_id, safe='')}/dagRuns"
    return path if run_id is None else f"{path}/{quote(run_id, safe='')}"


async def trigger_run(airflow: AirflowClient, signal: ReadinessSignal) -> CreatedRun:
    """Create the signal's Airflow DAG run, or find the one a previous delivery created."""
    run_id = dag_run_id(signal)
    body = {"dag_run_id": run_id, "logical_date": None, "partition_key": signal.partition_key,
            "conf": run_conf(signal), "note": _note(signal)}
    response = await airflow.request("POST", runs_path(signal.dag_id), json=body, accept=(409,))
    if response.status_code == 409:
        existing = await airflow.get(runs_path(signal.dag_id, run_id))
        return CreatedRun(run_id, str(existing.get("state")), created=False)
    return CreatedRun(run_id, str(response.json().get("state", "queued")), created=True)
