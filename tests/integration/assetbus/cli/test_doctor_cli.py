"""`assetbus doctor` passes on a migrated database with its topics, and says what to fix otherwise."""

from __future__ import annotations

import json
import uuid

import pytest
from alembic.script import ScriptDirectory

from assetbus.migrate import alembic_config
from tests.integration.assetbus.cli.conftest import Ops


async def test_doctor_passes_on_a_ready_installation(ops: Ops) -> None:
    report = await ops.json("doctor")
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["ok"] is True, report
    assert {"versions", "database", "migrations", "clock skew", "broker", "topics"} <= by_name.keys()
    head = ScriptDirectory.from_config(alembic_config("postgresql://unused")).get_current_head()
    assert by_name["migrations"]["status"] == "ok" and by_name["migrations"]["detail"] == f"at head {head}"
    table = await ops("doctor")
    assert table.exit_code == 0 and "all checks passed" in table.output


async def test_doctor_names_missing_topics_and_migrations(ops: Ops, monkeypatch: pytest.MonkeyPatch,
                                                          empty_db_url: str) -> None:
    monkeypatch.setenv("ASSETBUS_TOPIC_PREFIX", f"missing{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("DATABASE_URL", empty_db_url)
    result = await ops("doctor", "--json")
    assert result.exit_code == 1
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["topics"]["status"] == "fail" and "assetbus migrate" in checks["topics"]["fix"]
    assert checks["migrations"]["status"] == "fail" and checks["migrations"]["fix"] == "run `assetbus migrate`"


async def test_doctor_fails_when_the_forwarder_posted_events_a_bridge_served_dag_waits_on(
        ops: Ops, db_url: str) -> None:
    """Such a DAG ran twice in Airflow (the bridge's run and an asset-triggered one): a double-serving set-up."""
    import json as jsonlib

    from sqlalchemy import text

    from assetbus.consumers.airflow.declared import FILELOC_PREFIX
    from assetbus.consumers.scheduler import AssetWait, ConsumerDag
    from assetbus.consumers.storage import create_engine, register_asset
    from assetbus.consumers.storage.dags import upsert_dag

    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            asset = await register_asset(conn, "orders.twice", "s3://orders/twice")
            dag = ConsumerDag(dag_id="orders_by_the_bridge", schedule=AssetWait("orders.twice"))
            await upsert_dag(conn, dag.dag_id, FILELOC_PREFIX + dag.dag_id, jsonlib.dumps(dag.definition()),
                             dag.fingerprint(), dag.coalesce)
            event_id = (await conn.execute(text(
                "INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, source_kind, dag_id, "
                "run_id) VALUES (:a, 's', 'k', gen_random_uuid(), '{}', 'task', 'up', 'r') RETURNING id"),
                {"a": asset.id})).scalar_one()
            await conn.execute(text("INSERT INTO airflow_forwarded (event_id, airflow_asset_id, state, "
                                    "airflow_event_id, finished_at) VALUES (:e, 7, 'posted', 70, now())"),
                               {"e": event_id})
    finally:
        await engine.dispose()
    result = await ops("doctor", "--json")
    assert result.exit_code == 1, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    forwarder = checks["airflow forwarder"]
    assert forwarder["status"] == "fail" and "orders_by_the_bridge" in forwarder["detail"], forwarder
