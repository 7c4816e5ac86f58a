"""What a minted Airflow token may publish: the assets its task (or its DAG) is registered with."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.task_assets import attach_task_asset, declared_assets


async def test_a_task_may_publish_its_outlets_and_a_dag_run_what_any_of_its_tasks_declares(
        engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        for name in ("orders", "incidents", "clicks", "elsewhere"):
            await register_asset(conn, name, f"s3://bucket/{name}/")
        await attach_task_asset(conn, "ingest", "load", "orders", "outlet")
        await attach_task_asset(conn, "ingest", "load", "incidents", "inlet")
        await attach_task_asset(conn, "ingest", "report", "clicks", "outlet")
        await attach_task_asset(conn, "other", "load", "elsewhere", "outlet")

        assert await declared_assets(conn, "ingest", "load") == [{"name": "orders", "uri": "s3://bucket/orders/"}]
        assert [a["name"] for a in await declared_assets(conn, "ingest", "load", inlets=True)] == ["incidents",
                                                                                                  "orders"]
        assert [a["name"] for a in await declared_assets(conn, "ingest", None)] == ["clicks", "incidents", "orders"]
        assert await declared_assets(conn, "ingest", "unknown-task") == []
        assert await declared_assets(conn, "no-such-dag", None) == []
