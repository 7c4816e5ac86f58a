"""Emits from a mapped task (three map indices at once) and from an async task (`aemit`)."""

from __future__ import annotations

from airflow.sdk import DAG, Asset, task

from assetbus.producers.airflow import aemit, emit

parts = Asset("mapped.parts", uri="s3://mapped/parts")

with DAG(dag_id="mapped_emits", schedule=None, catchup=False, tags=["assetbus-test"]):

    @task(outlets=[parts])
    def load(part: int) -> str:
        receipt = emit(parts, extra={"part": part}, partition_key=f"part-{part}", dedupe_key=f"part-{part}")
        return receipt.status.value

    @task(outlets=[parts])
    async def load_async() -> str:
        receipt = await aemit(parts, extra={"async": True}, partition_key="async-0", dedupe_key="async-0")
        return receipt.status.value

    load.expand(part=[0, 1, 2])
    load_async()
