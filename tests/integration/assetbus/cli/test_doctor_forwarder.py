"""`assetbus doctor` reads the Airflow forwarder's ledger: nothing forwarded is fine, refused events and
intents open for long are warnings."""

from __future__ import annotations

from sqlalchemy import text

from assetbus.consumers.storage import create_engine
from tests.integration.assetbus.cli.conftest import Ops


async def _ledger(db_url: str, *rows: str) -> None:
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            asset = (await conn.execute(text(
                "INSERT INTO assets (name, uri) VALUES ('fwd.doctor', 's3://fwd/doctor') "
                "ON CONFLICT (name) DO UPDATE SET uri = EXCLUDED.uri RETURNING id"))).scalar_one()
            for i, row in enumerate(rows):
                event = (await conn.execute(text(
                    "INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, source_kind, "
                    "dag_id, run_id) VALUES (:a, 's', :k, gen_random_uuid(), '{}', 'dag', 'd', 'r') RETURNING id"),
                    {"a": asset, "k": f"{row}-{i}"})).scalar_one()
                await conn.execute(text(f"INSERT INTO airflow_forwarded (event_id, airflow_asset_id, state, "
                                        f"created_at, finished_at) VALUES (:e, 1, {row})"), {"e": event})
    finally:
        await engine.dispose()


async def _check(ops: Ops) -> dict[str, str]:
    report = await ops.json("doctor")
    check: dict[str, str] = next(c for c in report["checks"] if c["name"] == "airflow forwarder")
    return check


async def test_doctor_reports_the_forwarders_ledger(ops: Ops, db_url: str) -> None:
    nothing = await _check(ops)
    assert nothing["status"] == "ok" and "nothing forwarded" in nothing["detail"]

    await _ledger(db_url, "'posted', now(), now()", "'intent', now(), NULL")
    fine = await _check(ops)
    assert fine["status"] == "ok", fine
    assert "1 event(s) posted" in fine["detail"] and "1 open intent(s)" in fine["detail"]

    await _ledger(db_url, "'intent', now() - interval '1 hour', NULL")
    stale = await _check(ops)
    assert stale["status"] == "warn" and "airflow_forwarded" in stale["fix"], stale
