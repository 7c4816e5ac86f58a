"""Benchmark DAG (Airflow): one task that times its first `emit()`, token included, in the identity mode that
conf["identity"] names (`attested`: through Airflow's task_state_store; `credential`: the worker credential, at
the minter conf["conn_id"] names). It returns the milliseconds."""

from __future__ import annotations

import os
import time
from typing import Any

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import emit

first = Asset("bench_airflow.first_emit", uri="bench://airflow/first_emit")

with DAG(dag_id="bench_first_emit", schedule=None, catchup=False):

    @task(outlets=[first])  # type: ignore[untyped-decorator]  # airflow is Any here (its own venv)
    def first_emit(**context: Any) -> float:
        conf = context["dag_run"].conf or {}
        os.environ["ASSETBUS_AIRFLOW_IDENTITY"] = conf["identity"]
        started = time.perf_counter()
        emit(first, conn_id=conf.get("conn_id"), partition_key=context["run_id"])
        return round((time.perf_counter() - started) * 1000, 2)

    first_emit()
