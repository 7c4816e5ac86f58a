"""What the scheduler benchmark's runs share: the asset, the two consumer DAGs, the services as subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import psutil
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.process_watch import ProcessWatch
from assetbus.consumers.scheduler import (
    AssetWait,
    ConsumerDag,
    HourlyToDaily,
    Identity,
    LoadedDag,
    LoadResult,
    sync_dags,
)
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.consumers.storage import register_asset
from assetbus.consumers.storage.runs import PUBLISHED
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings

ASSET = AssetRef(name="bench.clicks", uri="s3://bench/clicks/")
IDENTITY = ConsumerDag(dag_id="bench.per_event", schedule=AssetWait(ASSET.name, mapping=Identity()), coalesce=False)
DAILY = ConsumerDag(dag_id="bench.daily", schedule=AssetWait(ASSET.name, mapping=HourlyToDaily("UTC")))
START = datetime(2026, 1, 1, tzinfo=UTC)


async def prepare(settings: Settings, topics: Topics, engine: AsyncEngine,
                  dags: Sequence[ConsumerDag] = (IDENTITY, DAILY), assets: Sequence[AssetRef] = (ASSET,)) -> None:
    """Register the assets, sync the DAGs (by default the per-event and the daily one), create their readiness
    topics (those created already, with fewer partitions say, are kept)."""
    async with engine.begin() as conn:
        for asset in assets:
            await register_asset(conn, asset.name, asset.uri)
        loaded = LoadResult(root="/bench", dags=[LoadedDag(dag, "/bench/dags.py") for dag in dags])
        await sync_dags(conn, loaded)
    await create_readiness_topics(settings.kafka, topics, [dag.dag_id for dag in dags])


@asynccontextmanager
async def service(settings: Settings, topics: Topics, db_url: str, *args: str,
                  profile: Path | None = None) -> AsyncIterator[ProcessWatch]:
    """`assetbus run <args>` as a subprocess on the benchmark's prefix and database, its CPU and RSS watched.

    With `profile`, under `py-spy record --format raw` (collapsed stacks, 200 samples/s) into that file.
    """
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": settings.token_secret}
    bin_dir = Path(sys.executable).parent
    command = [str(bin_dir / "assetbus"), "run", *args, "--log-level", "WARNING"]
    if profile is not None:
        command = [str(bin_dir / "py-spy"), "record", "--format", "raw", "--rate", "200", "--output", str(profile),
                   "--", *command]
    process = await asyncio.create_subprocess_exec(*command, env=env)
    watch = ProcessWatch(process.pid)
    watch.start()
    try:
        yield watch
    finally:
        await watch.stop()
        if process.returncode is None:
            _terminate(process.pid, profiled=profile is not None)
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


def _terminate(pid: int, *, profiled: bool) -> None:
    """SIGTERM to the service (under py-spy: to its child; py-spy then writes its file and exits)."""
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(pid)
        for target in (process.children() if profiled else None) or [process]:
            target.send_signal(signal.SIGTERM)


async def published(engine: AsyncEngine, dag_id: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(
            f"SELECT count(*) FROM consumer_runs WHERE dag_id = :d AND {PUBLISHED}"),
                                       {"d": dag_id})).scalar_one())
