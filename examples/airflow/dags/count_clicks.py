"""A producer DAG for the daily roll-up: its task counts one day's clicks hour by hour, and emits each hour
once it is stored.

Each hour is one partition of `airflow_demo.hourly_clicks`: the key is the hour in the format of Airflow's
`StartOfDayMapper` (`2026-10-01T00:00:00`, UTC) and `partition_date` is the same instant, which is what
assetbus rolls up by. Trigger it with `{"day": "2026-10-01"}`: 24 events, and `daily_clicks_report` gets one
run for the day.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import emit

hourly_clicks = Asset("airflow_demo.hourly_clicks", uri="s3://example/clicks/hourly")

with DAG(dag_id="count_clicks", schedule=None, catchup=False, tags=["assetbus-example"]):

    @task(outlets=[hourly_clicks])
    def count(**context: object) -> None:
        conf = context["dag_run"].conf or {}  # type: ignore[attr-defined]
        day = datetime.fromisoformat(conf.get("day", "2026-10-01")).replace(tzinfo=UTC)
        for hour in (day + timedelta(hours=h) for h in range(24)):
            receipt = emit(hourly_clicks, extra={"clicks": 1000 + hour.hour}, partition_key=f"{hour:%Y-%m-%dT%H:%M:%S}",
                           partition_date=hour, dedupe_key=f"clicks-{hour:%Y-%m-%dT%H}")
            print(f"{hour:%Y-%m-%d %H:00}: {receipt.status} event {receipt.id}")

    count()
