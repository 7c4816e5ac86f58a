"""`dags sync`: idempotent, removed DAGs deactivated (not deleted), unregistered assets reported."""

from __future__ import annotations

from pathlib import Path

from aiokafka.admin import AIOKafkaAdminClient
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.cli.dags import sync_path
from assetbus.consumers.scheduler import SyncReport
from assetbus.consumers.storage.dags import SyncChange, list_dags
from assetbus.consumers.storage.task_assets import attach_task_asset
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings

TWO_DAGS = """
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, HourlyToDaily
per_batch = ConsumerDag(dag_id="per_batch", schedule=AssetWait("orders"))
daily = ConsumerDag(dag_id="daily", schedule=AssetWait("clicks", mapping=HourlyToDaily("{zone}")))
"""


async def sync(tmp_path: Path, infra: Settings, db_url: str, topics: Topics) -> SyncReport:
    return await sync_path(tmp_path, db_url, infra.kafka, topics)


async def test_sync_creates_then_is_idempotent_then_updates_and_deactivates(
        tmp_path: Path, infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine,
        assets: list[AssetRef], readiness_cleanup: None) -> None:
    dag_file = tmp_path / "dags.py"
    dag_file.write_text(TWO_DAGS.format(zone="UTC"))
    first = await sync(tmp_path, infra, db_url, topics)
    assert first.ok and first.count(SyncChange.CREATED) == 2

    again = await sync(tmp_path, infra, db_url, topics)
    assert again.count(SyncChange.UNCHANGED) == 2 and again.deactivated == []

    dag_file.write_text(TWO_DAGS.format(zone="Europe/Amsterdam").replace('per_batch = ConsumerDag(dag_id="per_batch", '
                                                                         'schedule=AssetWait("orders"))', ""))
    changed = await sync(tmp_path, infra, db_url, topics)
    assert [(o.dag_id, o.change) for o in changed.outcomes] == [("daily", SyncChange.UPDATED)]
    assert changed.deactivated == ["per_batch"]
    async with engine.connect() as conn:
        assert {(d.dag_id, d.active) for d in await list_dags(conn)} == {("daily", True), ("per_batch", False)}

    admin = AIOKafkaAdminClient(bootstrap_servers=infra.bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
    finally:
        await admin.close()
    assert {topics.readiness("daily"), topics.readiness("per_batch")} <= existing


async def test_a_dag_waiting_for_an_unregistered_asset_is_reported_and_not_synced(
        tmp_path: Path, infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine,
        readiness_cleanup: None) -> None:
    (tmp_path / "dags.py").write_text(TWO_DAGS.format(zone="UTC"))
    report = await sync(tmp_path, infra, db_url, topics)
    assert not report.ok
    errors = {o.dag_id: o.error for o in report.outcomes}
    assert "unregistered asset(s) orders" in (errors["per_batch"] or "")
    async with engine.connect() as conn:
        assert await list_dags(conn) == []


async def test_a_file_that_fails_to_load_keeps_its_dags_active(
        tmp_path: Path, infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine,
        assets: list[AssetRef], readiness_cleanup: None) -> None:
    dag_file = tmp_path / "dags.py"
    dag_file.write_text(TWO_DAGS.format(zone="UTC"))
    await sync(tmp_path, infra, db_url, topics)
    dag_file.write_text("raise RuntimeError('half-written file')")
    report = await sync(tmp_path, infra, db_url, topics)
    assert not report.ok and report.deactivated == []
    async with engine.connect() as conn:
        assert all(d.active for d in await list_dags(conn))


SELF_FEEDING = """
from assetbus.consumers.scheduler import AssetWait, ConsumerDag
loop = ConsumerDag(dag_id="loop", schedule=AssetWait("orders"), outlets=("orders",))
"""


async def test_sync_refuses_a_dag_whose_outlets_feed_its_own_schedule_unless_told_to_warn(
        tmp_path: Path, infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine,
        assets: list[AssetRef], readiness_cleanup: None) -> None:
    (tmp_path / "dags.py").write_text(SELF_FEEDING)
    refused = await sync(tmp_path, infra, db_url, topics)
    assert not refused.ok and refused.synced == []
    assert "trigger itself" in (refused.outcomes[0].error or "")
    warned = await sync_path(tmp_path, db_url, infra.kafka, topics, allow_self_trigger=True)
    assert warned.ok and warned.synced == ["loop"] and "trigger itself" in (warned.outcomes[0].warning or "")


async def test_a_task_registered_as_an_outlet_of_its_own_dags_input_counts_as_feeding_itself(
        tmp_path: Path, infra: Settings, db_url: str, topics: Topics, engine: AsyncEngine,
        assets: list[AssetRef], readiness_cleanup: None) -> None:
    async with engine.begin() as conn:
        await attach_task_asset(conn, "per_batch", "notify", "orders", "outlet")
    (tmp_path / "dags.py").write_text(TWO_DAGS.format(zone="UTC"))
    report = await sync(tmp_path, infra, db_url, topics)
    assert {o.dag_id: o.error is None for o in report.outcomes} == {"per_batch": False, "daily": True}
