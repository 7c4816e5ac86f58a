"""What the scheduler benchmark's runs share: the asset, the two consumer DAGs, the services as subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.persister import preload
from assetbus.benchmarks.processes import ProcessWatch
from assetbus.benchmarks.scratch import service_env, stop
from assetbus.consumers.persister import Persister, PersisterConfig
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
from assetbus.consumers.storage import count_events, create_engine, register_asset
from assetbus.consumers.storage.runs import PUBLISHED
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings

ASSET = AssetRef(name="bench.clicks", uri="s3://bench/clicks/")
IDENTITY = ConsumerDag(dag_id="bench.per_event", schedule=AssetWait(ASSET.name, mapping=Identity()), coalesce=False)
DAILY = ConsumerDag(dag_id="bench.daily", schedule=AssetWait(ASSET.name, mapping=HourlyToDaily("UTC")))
START = datetime(2026, 1, 1, tzinfo=UTC)


def readiness_topics(topics: Topics) -> list[str]:
    """The readiness topics of the per-event and the daily DAG."""
    return [topics.readiness(IDENTITY.dag_id), topics.readiness(DAILY.dag_id)]


async def prepare(settings: Settings, topics: Topics, db_url: str, dags: Sequence[ConsumerDag] = (IDENTITY, DAILY),
                  assets: Sequence[AssetRef] = (ASSET,)) -> None:
    """Register the assets, sync the DAGs (by default the per-event and the daily one), create their readiness
    topics (those created already, with fewer partitions say, are kept)."""
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            for asset in assets:
                await register_asset(conn, asset.name, asset.uri)
            loaded = LoadResult(root="/bench", dags=[LoadedDag(dag, "/bench/dags.py") for dag in dags])
            await sync_dags(conn, loaded)
    finally:
        await engine.dispose()
    await create_readiness_topics(settings.kafka, topics, [dag.dag_id for dag in dags])


async def store_events(settings: Settings, topics: Topics, db_url: str, n: int, assets: Sequence[AssetRef] = (ASSET,),
                       *, offset: int = 0) -> None:
    """Store n more events (hourly partitions, round-robin over the assets, numbered from `offset`) through an
    in-process persister, until the database holds `offset + n`: they land on asset-events too."""
    token = task_token(settings.token_secret, "bench", "r1", "load")
    async with AsyncEmitter(settings.kafka, token, topics=topics) as emitter:
        commands = [emitter.command(assets[i % len(assets)], partition_key=f"h{i}",
                                    partition_date=START + timedelta(hours=i), dedupe_key=f"e{i}")
                    for i in range(offset, offset + n)]
    await preload(settings.kafka, topics, commands)
    config = PersisterConfig(kafka=settings.kafka, database_url=db_url, token_secret=settings.token_secret,
                             topics=topics, group_id=f"{topics.prefix}-persister")
    engine = create_engine(db_url)
    try:
        async with Persister(config):
            while True:
                async with engine.connect() as conn:
                    if await count_events(conn) >= offset + n:
                        break
                await asyncio.sleep(0.1)
    finally:
        await engine.dispose()


@asynccontextmanager
async def service(settings: Settings, topics: Topics, db_url: str, *args: str,
                  profile: Path | None = None) -> AsyncIterator[ProcessWatch]:
    """`assetbus run <args>` as a subprocess on the benchmark's prefix and database, its CPU and RSS watched.

    With `profile`, under `py-spy record --format raw` (collapsed stacks, 200 samples/s) into that file.
    """
    bin_dir = Path(sys.executable).parent
    command = [str(bin_dir / "assetbus"), "run", *args, "--log-level", "WARNING"]
    if profile is not None:
        command = [str(bin_dir / "py-spy"), "record", "--format", "raw", "--rate", "200", "--output", str(profile),
                   "--", *command]
    process = await asyncio.create_subprocess_exec(*command, env=service_env(settings, topics, db_url))
    watch = ProcessWatch(process.pid)
    watch.start()
    try:
        yield watch
    finally:
        await watch.stop()
        if process.returncode is None:
            _terminate(process.pid, profiled=profile is not None)
        await stop(process, terminate=False)


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
