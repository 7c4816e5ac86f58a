"""A consumer DAG scheduled with Airflow's own `schedule=[asset]`: it runs from forwarded events."""

from typing import Any

from airflow.sdk import DAG, Asset, task

NATIVE = Asset("forward.native", uri="s3://forward/native")

with DAG("forward_native", schedule=[NATIVE], catchup=False, tags=["assetbus-test"]):

    @task
    def consume(**context: Any) -> list[Any]:
        events = context["triggering_asset_events"][NATIVE]
        return [event.extra.get("rows") for event in events]

    consume()
