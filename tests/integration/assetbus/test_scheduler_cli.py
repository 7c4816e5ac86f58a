"""`assetbus dags sync|list`, `replay` and `runs list` as a user runs them, on the example DAG files."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister
from assetbus.consumers.storage import count_events
from assetbus.consumers.storage.runs import list_runs
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

REPO = Path(__file__).resolve().parents[3]
WAREHOUSE = REPO / "examples" / "dags" / "warehouse.py"
ASSETS = {f"warehouse.{name}": f"s3://example/{name}/"  # as the README registers them
          for name in ("clicks", "fx_rates", "fx_rates_backup", "sales", "daily_sales")}


async def assetbus(infra: Settings, db_url: str, topics: Topics, secret: str, *args: str) -> tuple[int, str]:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": secret, "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(str(Path(sys.executable).parent / "assetbus"), *args, env=env,
                                                   stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


async def test_sync_list_replay_and_runs_list_from_the_command_line(
        infra: Settings, db_url: str, topics: Topics, token_secret: str, engine: AsyncEngine,
        persister: Persister, readiness_cleanup: None) -> None:
    async def cli(*args: str) -> tuple[int, str]:
        return await assetbus(infra, db_url, topics, token_secret, *args)

    missing, out = await cli("dags", "sync", str(WAREHOUSE))
    assert missing == 1 and "unregistered asset" in out
    for name, uri in ASSETS.items():
        assert (await cli("assets", "register", name, uri))[0] == 0
    code, out = await cli("dags", "sync", str(WAREHOUSE))
    assert code == 0 and out.count("created") == 4, out
    code, out = await cli("dags", "list")
    assert code == 0 and "warehouse.weekly_sales" in out and "[daily → weekly (Europe/Amsterdam)]" in out, out

    # the seven days of ISO week 2026-W40 are stored while no scheduler runs
    amsterdam = ZoneInfo("Europe/Amsterdam")
    token = task_token(token_secret, "sales", "backfill", "load")
    daily_sales = AssetRef(name="warehouse.daily_sales", uri=ASSETS["warehouse.daily_sales"])
    async with AsyncEmitter(infra.bootstrap_servers, token, topics=topics, receipt_timeout_s=20) as emitter:
        for offset in range(7):
            day = date(2026, 9, 28) + timedelta(days=offset)
            await emitter.emit(daily_sales, partition_key=day.isoformat(), dedupe_key=day.isoformat(),
                               partition_date=datetime_at(day, amsterdam))

    async def stored() -> bool:
        async with engine.connect() as conn:
            return await count_events(conn) == 7

    await wait_for(stored, what="seven stored events")
    code, out = await cli("replay", "--dag", "warehouse.weekly_sales", "--from", "2026-09-28", "--to", "2026-10-05",
                          "--dry-run")
    assert code == 0 and "would create 1 run(s)" in out, out
    async with engine.connect() as conn:
        assert await list_runs(conn) == []
    code, out = await cli("replay", "--dag", "warehouse.weekly_sales", "--from", "2026-09-28", "--to", "2026-10-05")
    assert code == 0 and "created 1 run(s)" in out and "published 1 signal(s)" in out, out
    code, out = await cli("runs", "list", "--dag", "warehouse.weekly_sales")
    assert code == 0 and "2026-W40" in out and "replay" in out


def datetime_at(day: date, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, time(), tzinfo=zone)
