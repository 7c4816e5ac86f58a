"""The checkpointed ingestion example, killed with SIGKILL mid-run and restarted as a new try, resumes
after the last committed batch and leaves exactly one event per batch."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.state import TaskKey, get_task_state
from assetbus.consumers.storage.task_assets import attach_task_asset
from assetbus.producers import task_token
from assetbus.schemas import Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "checkpointed_ingestion.py"
DAG, RUN, TASK = "ingest", "2026-10-01", "load_orders"
BATCHES = 10


@pytest.fixture
async def orders_outlet(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, "orders", "s3://bucket/orders/")
        await attach_task_asset(conn, DAG, TASK, "orders", "outlet")


async def start_try(try_number: int, *, infra: Settings, api_url: str, topics: Topics, secret: str, out: Path,
                    batch_delay: float) -> asyncio.subprocess.Process:
    env = {**os.environ, "ASSETBUS_TOKEN": task_token(secret, DAG, RUN, TASK, try_number=try_number),
           "ASSETBUS_API_URL": api_url, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix}
    return await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--batches", str(BATCHES), "--batch-delay", str(batch_delay),
        "--partition", RUN, "--out", str(out), env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT)


async def committed_batch(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        entry = await get_task_state(conn, TaskKey(DAG, RUN, TASK, -1), "last_committed_batch")
    return int(entry.value["batch"]) if entry is not None else -1


@pytest.mark.usefixtures("orders_outlet", "persister")
async def test_killed_ingestion_resumes_after_the_last_committed_batch_and_emits_each_batch_once(
        infra: Settings, api_url: str, topics: Topics, token_secret: str, engine: AsyncEngine,
        tmp_path: Path) -> None:
    common = {"infra": infra, "api_url": api_url, "topics": topics, "secret": token_secret, "out": tmp_path}
    first = await start_try(1, batch_delay=0.3, **common)  # type: ignore[arg-type]
    try:
        await wait_for(lambda: _at_least(engine, 2), timeout_s=40, what="try 1 to commit batch 2")
    finally:
        first.send_signal(signal.SIGKILL)
        await first.wait()
    assert first.returncode == -signal.SIGKILL
    killed_after = await committed_batch(engine)
    assert 2 <= killed_after < BATCHES - 1, "try 1 should have been killed mid-run"

    second = await start_try(2, batch_delay=0, **common)  # type: ignore[arg-type]
    output, _ = await asyncio.wait_for(second.communicate(), timeout=45)
    log = output.decode()
    assert second.returncode == 0, log
    assert f"try 2: resuming after batch {killed_after}" in log
    redone = [int(line.split()[1].rstrip(":")) for line in log.splitlines() if line.startswith("batch ")]
    assert redone == list(range(killed_after + 1, BATCHES))

    async with engine.connect() as conn:
        rows = (await conn.execute(text("SELECT dedupe_key, try_number FROM asset_events ORDER BY id"))).all()
        watermark = (await conn.execute(text("SELECT value FROM asset_state WHERE key = 'watermark'"))).scalar_one()
    assert sorted(key for key, _ in rows) == sorted(f"batch-{n}" for n in range(BATCHES))  # once each
    by_key: dict[str, int] = dict(rows)
    assert all(by_key[f"batch-{n}"] == 1 for n in range(killed_after + 1))  # try 2 re-emitted none of them
    assert await committed_batch(engine) == BATCHES - 1
    assert watermark == {"partition": RUN, "batches": BATCHES}
    assert len(await asyncio.to_thread(lambda: list(tmp_path.glob("*.json")))) == BATCHES


async def _at_least(engine: AsyncEngine, batch: int) -> bool:
    return await committed_batch(engine) >= batch


@pytest.mark.usefixtures("orders_outlet", "persister")
async def test_batches_emitted_but_not_checkpointed_are_re_emitted_as_duplicates(
        infra: Settings, api_url: str, topics: Topics, token_secret: str, engine: AsyncEngine,
        tmp_path: Path) -> None:
    common = {"infra": infra, "api_url": api_url, "topics": topics, "secret": token_secret, "out": tmp_path}
    first = await start_try(1, batch_delay=0, **common)  # type: ignore[arg-type]
    await asyncio.wait_for(first.communicate(), timeout=45)
    # the worst moment for a kill: batches 1..9 were emitted, but only batch 0's checkpoint was written
    async with engine.begin() as conn:
        await conn.execute(text("UPDATE task_state SET value = '{\"batch\": 0}' WHERE key = 'last_committed_batch'"))
    second = await start_try(2, batch_delay=0, **common)  # type: ignore[arg-type]
    output, _ = await asyncio.wait_for(second.communicate(), timeout=45)
    log = output.decode()
    assert second.returncode == 0, log
    assert "try 2: resuming after batch 0" in log
    assert log.count(": duplicate event") == BATCHES - 1 and ": accepted event" not in log
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM asset_events"))).scalar_one() == BATCHES
