"""In real Airflow, a mapped task (three map indices emitting at once) and an async task's `aemit` each store
exactly their events, with the right map index in the provenance."""

from __future__ import annotations

import uuid

from sqlalchemy.ext.asyncio import AsyncEngine

from tests.integration.airflow.airflow_api import AirflowApi
from tests.integration.airflow.support import events_of

DAG = "mapped_emits"


async def test_each_map_index_and_the_async_task_store_exactly_their_own_events(
        airflow_api: AirflowApi, stack_engine: AsyncEngine) -> None:
    run_id = f"t-{uuid.uuid4().hex[:8]}"
    airflow_api.trigger(DAG, run_id)
    run = airflow_api.wait_run(DAG, run_id, timeout_s=240)
    assert run["state"] == "success", run
    events = [e for e in await events_of(stack_engine, DAG, run_id) if e["asset"] == "mapped.parts"]
    mapped = sorted((e["partition_key"], e["task_id"], e["map_index"]) for e in events if e["task_id"] == "load")
    assert mapped == [("part-0", "load", 0), ("part-1", "load", 1), ("part-2", "load", 2)]
    assert all(e["extra"]["part"] == e["map_index"] for e in events if e["task_id"] == "load")
    from_async = [e for e in events if e["task_id"] == "load_async"]
    assert [(e["partition_key"], e["map_index"], e["source_kind"]) for e in from_async] == [("async-0", -1, "task")]
    assert len(events) == 4  # exactly their events: one per map index, one from the async task
