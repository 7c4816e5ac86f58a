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
