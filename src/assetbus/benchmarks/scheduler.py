"""The scheduler benchmark, on a fresh topic prefix and a fresh database per run, with real subprocesses.

1. **Throughput**: N events are stored and put on the asset-events topic first (as the persister
   would), then one `assetbus run scheduler` process starts; time from its first run to the last of
   N runs published, and its CPU over that time. Two consumer DAGs wait on the asset: an identity DAG
   (a run and a readiness signal per event, the most work per event) and an hourly → daily roll-up.
2. **Latency** (`scheduler_latency`), once per offered rate: a persister and a scheduler process run;
   events are emitted at the rate through the async emitter and each one's readiness signal is read
   from the identity DAG's topic.

From Python: `report = await run_benchmark(settings, SchedulerBenchOptions())`, then `report.summary()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.scheduler_latency import measure_latency
from assetbus.benchmarks.scheduler_report import LatencyRun, SchedulerBenchOptions, SchedulerBenchReport
from assetbus.benchmarks.scheduler_setup import ASSET, DAILY, IDENTITY, START, prepare, published, service
from assetbus.benchmarks.scratch import create_database, drop_database
from assetbus.consumers.observe.lag import partitions_of
from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.storage import count_events, create_engine
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import Topics
from assetbus.schemas.codecs import encode_command
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

__all__ = ["BacklogRun", "LatencyRun", "SchedulerBenchOptions", "SchedulerBenchReport", "apply_backlog",
           "run_benchmark"]

Phase = Callable[[Settings, SchedulerBenchOptions, Topics, str, SchedulerBenchReport], Awaitable[None]]


async def run_benchmark(settings: Settings, options: SchedulerBenchOptions) -> SchedulerBenchReport:
    """The throughput run (none with `events=0`), then one latency run per offered rate."""
    report = SchedulerBenchReport(options, load_before=os.getloadavg(), conditions=conditions())
    phases: list[Phase] = [*([_throughput] if options.events else []),
                           *(functools.partial(measure_latency, rate=rate) for rate in options.rates)]
    for phase in phases:
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


def _scheduler_args(topics: Topics, options: SchedulerBenchOptions) -> list[str]:
    args = ["scheduler", "--group-id", f"{topics.prefix}-scheduler"]
    return args if options.max_records is None else [*args, "--max-records", str(options.max_records)]


async def _throughput(settings: Settings, options: SchedulerBenchOptions, topics: Topics, db_url: str,
                      report: SchedulerBenchReport) -> None:
    engine = create_engine(db_url)
    try:
        await prepare(settings, topics, engine)
        run = await apply_backlog(settings, topics, db_url, engine, options.events, _scheduler_args(topics, options),
                                  profile=options.profile, timeout_s=options.timeout_s)
        report.peak_rss_mb = max(report.peak_rss_mb, run.peak_rss_mb)
        report.throughput_events, report.throughput_s, report.throughput_cpu_s = run.events, run.seconds, run.cpu_s
        for dag in (IDENTITY, DAILY):
            report.runs_created[dag.dag_id] = await published(engine, dag.dag_id)
    finally:
        await engine.dispose()


@dataclass(frozen=True)
class BacklogRun:
    """A scheduler process applying a pre-loaded backlog: events timed, seconds, its CPU then, its peak RSS."""

    events: int
    seconds: float
    cpu_s: float
    peak_rss_mb: float


async def apply_backlog(settings: Settings, topics: Topics, db_url: str, engine: AsyncEngine, n: int,
                        scheduler_args: list[str], *, profile: Path | None = None,
                        timeout_s: float = 300.0) -> BacklogRun:
    """Store n events (the DAGs are prepared already), then time one scheduler process from its first
    signal of the per-event DAG to the n-th, and until every one of them is marked published."""
    await _preload(settings, topics, db_url, n)
    async with service(settings, topics, db_url, *scheduler_args, profile=profile) as watch, \
            _signals_counter(settings, topics) as signalled:
        deadline = time.perf_counter() + timeout_s
        first: tuple[float, int, float] | None = None  # when signals were first seen, how many, CPU then
        while (done := await signalled()) < n:
            if done and first is None:
                first = (time.perf_counter(), done, watch.cpu_s())
            if time.perf_counter() > deadline:
                raise RuntimeError(f"timed out with {done} of {n} signals")
            await asyncio.sleep(0.02)
        finished, cpu = time.perf_counter(), watch.cpu_s()
        while True:  # each run is marked published after the broker's ack: wait for the last marks
            if await published(engine, IDENTITY.dag_id) >= n:
                break
            await asyncio.sleep(0.05)
    if first is None:
        raise RuntimeError("every event was applied before the first look: pre-load more events (--events)")
    # timed from the first runs seen: scheduler start-up and group join are left out
    return BacklogRun(n - first[1], finished - first[0], cpu - first[2], watch.peak_rss / 2**20)


@contextlib.asynccontextmanager
async def _signals_counter(settings: Settings, topics: Topics) -> AsyncIterator[Callable[[], Awaitable[int]]]:
    """Readiness signals of the per-event DAG on the broker (the sum of its topic's end offsets).

    Watched on Kafka, not by counting rows: a `count(*)` every 20 ms took a quarter of a core of
    PostgreSQL from the scheduler it measures."""
    topic = topics.readiness(IDENTITY.dag_id)
    parts = [TopicPartition(topic, p) for p in (await partitions_of(settings.kafka, [topic]))[topic]]
    consumer = AIOKafkaConsumer(**settings.kafka.client_kwargs(), enable_auto_commit=False)
    await consumer.start()
    try:

        async def signalled() -> int:
            return int(sum((await consumer.end_offsets(parts)).values()))

        yield signalled
    finally:
        await consumer.stop()


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
