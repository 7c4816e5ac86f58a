"""The scheduler benchmark, on a fresh topic prefix and a fresh database, with real subprocesses.

1. **Throughput**: N events are stored and put on the asset-events topic first (as the persister
   would), then one `assetbus run scheduler` process starts; time from its first run to the last of
   N runs published. Two consumer DAGs wait on the asset: an identity DAG (a run and a readiness
   signal per event, the most work per event) and an hourly → daily roll-up.
2. **Latency**: a persister and a scheduler process run; events are emitted at a fixed offered
   rate (1,000/s by default) through the async emitter; each one's readiness signal is read from
   the identity DAG's topic. Latency = signal received minus emit() called (emitter → Kafka →
   persister → PostgreSQL → Kafka → scheduler → PostgreSQL → Kafka → reader).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.scratch import create_database, drop_database
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
from assetbus.consumers.scheduler.config import SchedulerConfig
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.consumers.storage import count_events, create_engine, register_asset
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.schemas.codecs import decode_signal, encode_command
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

ASSET = AssetRef(name="bench.clicks", uri="s3://bench/clicks/")
IDENTITY = ConsumerDag(dag_id="bench.per_event", schedule=AssetWait(ASSET.name, mapping=Identity()), coalesce=False)
DAILY = ConsumerDag(dag_id="bench.daily", schedule=AssetWait(ASSET.name, mapping=HourlyToDaily("UTC")))
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class SchedulerBenchOptions:
    events: int = 20_000
    rate: int = 1_000
    seconds: float = 10.0
    warmup_s: float = 1.0
    max_records: int = SchedulerConfig.model_fields["max_records"].default
    timeout_s: float = 300.0
    phases: tuple[str, ...] = ("throughput", "latency")


@dataclass
class SchedulerBenchReport:
    options: SchedulerBenchOptions
    throughput_events: int = 0
    throughput_s: float = 0.0
    runs_created: dict[str, int] = field(default_factory=dict)
    offered: int = 0
    offered_rate: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    receipt_latencies_ms: list[float] = field(default_factory=list)
    """emit() → receipt (persister only), for the same events: what the scheduler adds is the difference."""
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    conditions: dict[str, str] = field(default_factory=dict)

    @property
    def events_per_s(self) -> float:
        return self.throughput_events / self.throughput_s if self.throughput_s else 0.0

    def percentile(self, p: float, receipts: bool = False) -> float:
        ordered = sorted(self.receipt_latencies_ms if receipts else self.latencies_ms)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def run_benchmark(settings: Settings, options: SchedulerBenchOptions) -> SchedulerBenchReport:
    report = SchedulerBenchReport(options, load_before=os.getloadavg(), conditions=conditions())
    for phase in (p for p in (_throughput, _latency) if p.__name__.lstrip("_") in options.phases):
        tag = uuid.uuid4().hex[:10]
        topics = Topics(prefix=f"bench{tag}")
        db_name = f"assetbus_bench_{tag}"
        await ensure_topics(settings.kafka, topics)
        db_url = await create_database(settings.database_url, db_name)
        try:
            await phase(settings, options, topics, db_url, report)
        finally:
            await delete_topics(settings.kafka,
                                [*topics.core(), topics.readiness(IDENTITY.dag_id), topics.readiness(DAILY.dag_id)])
            await drop_database(settings.database_url, db_name)
    report.load_after = os.getloadavg()
    return report


async def _prepare(settings: Settings, topics: Topics, engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await register_asset(conn, ASSET.name, ASSET.uri)
        loaded = LoadResult(root="/bench", dags=[LoadedDag(dag, "/bench/dags.py") for dag in (IDENTITY, DAILY)])
        await sync_dags(conn, loaded)
    await create_readiness_topics(settings.kafka, topics, [IDENTITY.dag_id, DAILY.dag_id])


@asynccontextmanager
async def _service(settings: Settings, topics: Topics, db_url: str, *args: str) -> AsyncIterator[None]:
    """`assetbus run <args>` as a subprocess on the benchmark's prefix and database."""
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": settings.token_secret}
    process = await asyncio.create_subprocess_exec(str(Path(sys.executable).parent / "assetbus"), "run", *args,
                                                   "--log-level", "WARNING", env=env)
    try:
        yield
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 20)
        except TimeoutError:
            process.kill()
            await process.wait()


async def _published(engine: AsyncEngine, dag_id: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text("SELECT count(*) FROM consumer_runs WHERE dag_id = :d AND published"),
                                       {"d": dag_id})).scalar_one())


async def _throughput(settings: Settings, options: SchedulerBenchOptions, topics: Topics, db_url: str,
                      report: SchedulerBenchReport) -> None:
    engine = create_engine(db_url)
    try:
        await _prepare(settings, topics, engine)
        await _preload(settings, topics, db_url, options.events)
        async with _service(settings, topics, db_url, "scheduler", "--group-id", f"{topics.prefix}-scheduler",
                            "--max-records", str(options.max_records)):
            deadline = time.perf_counter() + options.timeout_s
            first: tuple[float, int] | None = None  # when runs were first seen, and how many
            while (done := await _published(engine, IDENTITY.dag_id)) < options.events:
                if done and first is None:
                    first = (time.perf_counter(), done)
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"timed out with {done} of {options.events} runs")
                await asyncio.sleep(0.02)
            finished = time.perf_counter()
        if first is None:
            raise RuntimeError("every event was applied before the first look: pre-load more events (--events)")
        # timed from the first runs seen: scheduler start-up and group join are left out
        report.throughput_events, report.throughput_s = options.events - first[1], finished - first[0]
        for dag in (IDENTITY, DAILY):
            report.runs_created[dag.dag_id] = await _published(engine, dag.dag_id)
    finally:
        await engine.dispose()


async def _preload(settings: Settings, topics: Topics, db_url: str, n: int) -> None:
    """Store n events (hourly partitions over n/24 days) through a persister: they land on asset-events too."""
    token = task_token(settings.token_secret, "bench", "r1", "load")
    producer = AIOKafkaProducer(**settings.kafka.client_kwargs(), acks="all", linger_ms=20,
                                max_batch_size=1024 * 1024)
    async with AsyncEmitter(settings.kafka, token, topics=topics) as emitter:
        commands = [emitter.command(ASSET, partition_key=f"h{i}", partition_date=START + timedelta(hours=i),
                                    dedupe_key=f"e{i}") for i in range(n)]
    await producer.start()
    try:
        pending = [await producer.send(topics.emissions, encode_command(c), key=ASSET.name.encode())
                   for c in commands]
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    config = PersisterConfig(kafka=settings.kafka, database_url=db_url,
                             token_secret=settings.token_secret, topics=topics, group_id=f"{topics.prefix}-persister")
    engine = create_engine(db_url)
    try:
        async with Persister(config):
            while True:
                async with engine.connect() as conn:
                    if await count_events(conn) >= n:
                        break
                await asyncio.sleep(0.1)
    finally:
        await engine.dispose()


async def _latency(settings: Settings, options: SchedulerBenchOptions, topics: Topics, db_url: str,
                   report: SchedulerBenchReport) -> None:
    engine = create_engine(db_url)
    try:
        await _prepare(settings, topics, engine)
    finally:
        await engine.dispose()
    sent: dict[str, float] = {}
    received: dict[str, float] = {}
    receipted: dict[str, float] = {}
    reader = AIOKafkaConsumer(**settings.kafka.client_kwargs(), enable_auto_commit=False,
                              fetch_max_wait_ms=5)
    await reader.start()
    token = task_token(settings.token_secret, "bench", "r1", "load")
    async with _service(settings, topics, db_url, "persister", "--group-id", f"{topics.prefix}-persister",
                        "--batch-timeout-ms", "5"), \
            _service(settings, topics, db_url, "scheduler", "--group-id", f"{topics.prefix}-scheduler",
                     "--batch-timeout-ms", "5"), \
            AsyncEmitter(settings.kafka, token, topics=topics, receipt_timeout_s=60) as emitter:
        parts = [TopicPartition(topics.readiness(IDENTITY.dag_id), p) for p in range(3)]
        reader.assign(parts)
        await reader.seek_to_end(*parts)
        offered, all_in = asyncio.Event(), asyncio.Event()
        reading = asyncio.create_task(_read(reader, received, sent, offered, all_in))
        try:
            await _warm_up(emitter, received)
            received.clear()
            await _offer(emitter, options, sent, receipted)
            offered.set()
            with contextlib.suppress(TimeoutError):  # signals that never came are left out of the figures
                await asyncio.wait_for(all_in.wait(), 60)
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            await reader.stop()
    cutoff = min(sent.values(), default=0.0) + options.warmup_s
    report.offered = len(sent)
    report.offered_rate = len(sent) / options.seconds
    report.latencies_ms = [(received[k] - t) * 1000 for k, t in sent.items() if k in received and t >= cutoff]
    report.receipt_latencies_ms = [(receipted[k] - t) * 1000 for k, t in sent.items()
                                   if k in receipted and t >= cutoff]


async def _warm_up(emitter: AsyncEmitter, received: dict[str, float]) -> None:
    """One event end to end, so that group joins and metadata are not measured."""
    await emitter.emit(ASSET, partition_key="warm-up", partition_date=START - timedelta(hours=1), dedupe_key="warm-up")
    deadline = time.perf_counter() + 60
    while "warm-up" not in received:
        if time.perf_counter() > deadline:
            raise RuntimeError("the pipeline did not produce a readiness signal within 60 s")
        await asyncio.sleep(0.05)


async def _offer(emitter: AsyncEmitter, options: SchedulerBenchOptions, sent: dict[str, float],
                 receipted: dict[str, float]) -> None:
    """Emit at the offered rate (in 10 ms ticks), without waiting for receipts."""
    total = int(options.rate * options.seconds)
    started = time.perf_counter()
    futures: list[asyncio.Future[Any]] = []
    for i in range(total):
        due = started + i / options.rate
        delay = due - time.perf_counter()
        if delay > 0.01:
            await asyncio.sleep(delay)
        key = f"e{i}"
        command = emitter.command(ASSET, partition_key=key, partition_date=START + timedelta(hours=i), dedupe_key=key)
        sent[key] = time.perf_counter()
        future = await emitter.submit(command)
        future.add_done_callback(lambda _, k=key: receipted.setdefault(k, time.perf_counter()))  # type: ignore[misc]
        futures.append(future)
    await asyncio.gather(*futures)


async def _read(reader: AIOKafkaConsumer, received: dict[str, float], sent: dict[str, float],
                offered: asyncio.Event, all_in: asyncio.Event) -> None:
    """Note when each signal arrives; set `all_in` once every sent key has one (after the offering)."""
    while True:
        batches = await reader.getmany(timeout_ms=100)
        now = time.perf_counter()
        for records in batches.values():
            for record in records:
                signal_ = decode_signal(record.value)
                if signal_.partition_key is not None:
                    received.setdefault(signal_.partition_key, now)
        if offered.is_set() and sent.keys() <= received.keys():
            all_in.set()
