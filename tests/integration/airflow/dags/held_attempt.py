"""A producer DAG for the token tests (tests only): its attempt stays running between two emits.

The task emits `first` and pushes how long that first `emit()` took (the token exchange included) to
XCom as `first_emit_ms`. It then waits until the file named by conf["release"] exists, emits
`second` with dedupe key conf["dedupe_key"], and pushes that receipt's status as `second_status`.
While it waits, a test acts as an attacker who knows the running attempt's ids.
"""

from __future__ import annotations

import time
from pathlib import Path

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import emit

held = Asset("airflow_test.held", uri="s3://example/held")

with DAG(dag_id="held_attempt", schedule=None, catchup=False):

    @task(outlets=[held])
    def hold(**context: object) -> None:
        ti = context["ti"]
        conf = context["dag_run"].conf or {}  # type: ignore[attr-defined]
        started = time.perf_counter()
        first = emit(held, extra={"step": "first"}, partition_key="first")
        ti.xcom_push(key="first_emit_ms", value=round((time.perf_counter() - started) * 1000, 1))  # type: ignore[attr-defined]
        ti.xcom_push(key="first_status", value=first.status.value)  # type: ignore[attr-defined]
        release, deadline = Path(conf["release"]), time.monotonic() + 240
        while not release.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{release} never appeared")
            time.sleep(0.1)
        second = emit(held, extra={"step": "second"}, partition_key="second", dedupe_key=conf["dedupe_key"])
        ti.xcom_push(key="second_status", value=second.status.value)  # type: ignore[attr-defined]

    hold()
