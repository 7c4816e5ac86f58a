"""The scheduler benchmark (`assetbus bench scheduler`; docs/benchmarks.md), each run on a fresh topic prefix and
database with real subprocesses: a pre-loaded backlog applied by one scheduler (`apply_backlog`), and latency
runs at offered rates (`measure_latency`), each event's path cut into `STAGES` by times recorded on the way
(Kafka's record timestamps among them have millisecond resolution).

The asset, the two consumer DAGs and `service` are shared with `bench scale` and `bench soak`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psutil
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.persister import preload
from assetbus.benchmarks.processes import ProcessWatch, watching
from assetbus.benchmarks.scratch import in_background, record_count, scratch_pipeline, service_env, stop
from assetbus.benchmarks.stats import Throughput, percentile
from assetbus.cli.common import database
from assetbus.consumers.observe.lag import partitions_of
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
from assetbus.consumers.storage import count_events, register_asset
from assetbus.consumers.storage.runs import PUBLISHED
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka.producer import started
from assetbus.schemas import AssetRef, Receipt, Topics
from assetbus.settings import Settings

ASSET = AssetRef(name="bench.clicks", uri="s3://bench/clicks/")
IDENTITY = ConsumerDag(dag_id="bench.per_event", schedule=AssetWait(ASSET.name, mapping=Identity()), coalesce=False)
DAILY = ConsumerDag(dag_id="bench.daily", schedule=AssetWait(ASSET.name, mapping=HourlyToDaily("UTC")))
START = datetime(2026, 1, 1, tzinfo=UTC)


def readiness_topics(topics: Topics) -> list[str]:
    return [topics.readiness(IDENTITY.dag_id), topics.readiness(DAILY.dag_id)]


async def prepare(settings: Settings, topics: Topics, db_url: str, dags: Sequence[ConsumerDag] = (IDENTITY, DAILY),
                  assets: Sequence[AssetRef] = (ASSET,)) -> None:
    """Register the assets, sync the DAGs (by default the per-event and the daily one), create their readiness
    topics (those created already, with fewer partitions say, are kept)."""
    async with database(db_url) as engine, engine.begin() as conn:
        for asset in assets:
            await register_asset(conn, asset.name, asset.uri)
        await sync_dags(conn, LoadResult(root="/bench", dags=[LoadedDag(dag, "/bench/dags.py") for dag in dags]))
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
    async with database(db_url) as engine, Persister(config):
        while True:
            async with engine.connect() as conn:
                if await count_events(conn) >= offset + n:
                    break
            await asyncio.sleep(0.1)


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
    try:
        async with watching(process.pid) as watch:
            yield watch
    finally:
        if process.returncode is None:  # SIGTERM; under py-spy to its child (py-spy then writes its file)
            with contextlib.suppress(psutil.Error):
                running = psutil.Process(process.pid)
                for target in (running.children() if profile is not None else None) or [running]:
                    target.send_signal(signal.SIGTERM)
        await stop(process, terminate=False)


async def published(engine: AsyncEngine, dag_id: str) -> int:
    async with engine.connect() as conn:
        return int((await conn.execute(text(
            f"SELECT count(*) FROM consumer_runs WHERE dag_id = :d AND {PUBLISHED}"),
                                       {"d": dag_id})).scalar_one())


@dataclass(frozen=True)
class SchedulerBenchOptions:
    events: int = 20_000
    rates: tuple[int, ...] = (1_000, 5_000)
    seconds: float = 10.0
    warmup_s: float = 1.0
    max_records: int | None = None
    timeout_s: float = 300.0
    profile: Path | None = None


STAGES = ("emit → persister transaction", "persister transaction → asset event sent",
          "asset event sent → scheduler transaction", "scheduler transaction → signal sent",
          "signal sent → signal read")
"""The stages of a latency run's path, between the marks `measure_latency` records."""


@dataclass
class LatencyRun:
    """One offered rate: emit() → readiness signal read, and emit() → receipt, per event (ms)."""

    rate: int
    offered: int = 0
    offered_rate: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    receipt_latencies_ms: list[float] = field(default_factory=list)
    scheduler_cpu_s: float = 0.0
    """The scheduler process's user + system CPU over the offered seconds."""
    scheduler_peak_rss_mb: float = 0.0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    stages_ms: dict[str, list[float]] = field(default_factory=dict)
    """Per stage of the path (`STAGES`), each counted event's time in it (ms)."""

    def percentile(self, p: float, receipts: bool = False) -> float:
        return percentile(self.receipt_latencies_ms if receipts else self.latencies_ms, p)


@dataclass(frozen=True)
class BacklogRun(Throughput):
    """A scheduler process applying a pre-loaded backlog: events timed, seconds, its CPU (user + system), peak RSS."""

    events: int
    seconds: float
    cpu_s: float
    peak_rss_mb: float


@dataclass
class SchedulerBenchReport:
    options: SchedulerBenchOptions
    throughput: BacklogRun = BacklogRun(0, 0.0, 0.0, 0.0)
    """The throughput run (all zero with `events=0`)."""
    runs_created: dict[str, int] = field(default_factory=dict)
    peak_rss_mb: float = 0.0
    """The scheduler process's peak RSS over every run (psutil, sampled every 50 ms)."""
    latency: list[LatencyRun] = field(default_factory=list)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)
    conditions: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, float]:
        """Flat figures for `bench all --json`: the readiness keys without a suffix are at 1,000/s offered."""
        figures = {"scheduler_events_per_s": round(self.throughput.events_per_s, 1),
                   "scheduler_cpu_us_per_event": round(self.throughput.cpu_us_per_event, 1),
                   "scheduler_peak_rss_mb": round(self.peak_rss_mb, 1)}
        for run in self.latency:
            suffix = "" if run.rate == 1_000 else f"_at_{run.rate}"
            figures[f"readiness_p50_ms{suffix}"] = round(run.percentile(50), 1)
            figures[f"readiness_p99_ms{suffix}"] = round(run.percentile(99), 1)
        return figures


async def run_benchmark(settings: Settings, options: SchedulerBenchOptions) -> SchedulerBenchReport:
    report = SchedulerBenchReport(options, load_before=os.getloadavg(), conditions=conditions())
    if options.events:
        async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
            await prepare(settings, topics, db_url)
            run = await apply_backlog(settings, topics, db_url, options.events, max_records=options.max_records,
                                      profile=options.profile, timeout_s=options.timeout_s)
            report.throughput, report.peak_rss_mb = run, run.peak_rss_mb
            async with database(db_url) as engine:
                for dag in (IDENTITY, DAILY):
                    report.runs_created[dag.dag_id] = await published(engine, dag.dag_id)
    for rate in options.rates:
        async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
            latency = await measure_latency(settings, topics, db_url, rate, options.seconds, options.warmup_s)
        report.latency.append(latency)
        report.peak_rss_mb = max(report.peak_rss_mb, latency.scheduler_peak_rss_mb)
    report.load_after = os.getloadavg()
    return report


async def apply_backlog(settings: Settings, topics: Topics, db_url: str, n: int, *, max_records: int | None = None,
                        profile: Path | None = None, timeout_s: float = 300.0) -> BacklogRun:
    """Store n events (the DAGs are prepared already), then time one scheduler process (`max_records`: its
    --max-records) from its first signal of the per-event DAG to the n-th, and until every one of them is
    marked published."""
    await store_events(settings, topics, db_url, n)
    args = ["scheduler", "--group-id", f"{topics.prefix}-scheduler"]
    if max_records is not None:
        args += ["--max-records", str(max_records)]
    async with service(settings, topics, db_url, *args, profile=profile) as watch, \
            record_count(settings, [topics.readiness(IDENTITY.dag_id)]) as signalled, database(db_url) as engine:
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


async def measure_latency(settings: Settings, topics: Topics, db_url: str, rate: int, seconds: float,
                          warmup_s: float = 1.0) -> LatencyRun:
    await prepare(settings, topics, db_url)
    run = LatencyRun(rate, load_before=os.getloadavg())
    sent: dict[str, float] = {}
    received: dict[str, float] = {}
    receipted: dict[str, float] = {}
    marks: dict[str, dict[str, float]] = {"event_sent": {}, "signal_sent": {}}
    reader = AIOKafkaConsumer(**settings.kafka.client_kwargs(), enable_auto_commit=False, fetch_max_wait_ms=5)
    token = task_token(settings.token_secret, "bench", "r1", "load")
    async with started(reader), \
            service(settings, topics, db_url, "persister", "--group-id", f"{topics.prefix}-persister"), \
            service(settings, topics, db_url, "scheduler", "--group-id", f"{topics.prefix}-scheduler") as watch, \
            AsyncEmitter(settings.kafka, token, topics=topics, receipt_timeout_s=60) as emitter:
        parts = [TopicPartition(topics.readiness(IDENTITY.dag_id), p) for p in range(3)]
        events = [TopicPartition(topics.asset_events, p)
                  for p in (await partitions_of(settings.kafka, [topics.asset_events]))[topics.asset_events]]
        reader.assign([*parts, *events])
        await reader.seek_to_end(*parts, *events)
        offered, all_in = asyncio.Event(), asyncio.Event()
        async with in_background(_read(reader, received, sent, offered, all_in, marks, topics.asset_events)):
            await _warm_up(emitter, received)
            received.clear()
            cpu_before = watch.cpu_s()
            await _offer(emitter, rate, seconds, sent, receipted)
            offered.set()
            with contextlib.suppress(TimeoutError):  # signals that never came are left out of the figures
                await asyncio.wait_for(all_in.wait(), 60)
            run.scheduler_cpu_s = watch.cpu_s() - cpu_before
    run.scheduler_peak_rss_mb = watch.peak_rss / 2**20
    cutoff = min(sent.values(), default=0.0) + warmup_s
    run.offered = len(sent)
    run.offered_rate = len(sent) / seconds
    run.latencies_ms = [(received[k] - t) * 1000 for k, t in sent.items() if k in received and t >= cutoff]
    run.receipt_latencies_ms = [(receipted[k] - t) * 1000 for k, t in sent.items() if k in receipted and t >= cutoff]
    counted = {k for k, t in sent.items() if t >= cutoff}
    marks.update(await _transaction_starts(db_url))
    run.stages_ms = _stages(sent, received, marks, counted)
    return run


async def _transaction_starts(db_url: str) -> dict[str, dict[str, float]]:
    """Per partition key (the run's, for the identity DAG): when the persister's and the scheduler's
    transactions that stored it started (PostgreSQL's `now()`), as Unix times."""
    async with database(db_url) as engine, engine.connect() as conn:
        stored = (await conn.execute(text(
            "SELECT partition_key, extract(epoch FROM created_at) FROM asset_events"))).all()
        planned = (await conn.execute(text(
            "SELECT partition_key, extract(epoch FROM created_at) FROM consumer_runs WHERE dag_id = :d"),
            {"d": IDENTITY.dag_id})).all()
    return {"persister_tx": {k: float(t) for k, t in stored if k is not None},
            "scheduler_tx": {k: float(t) for k, t in planned}}


def _stages(sent: dict[str, float], received: dict[str, float], marks: dict[str, dict[str, float]],
            counted: set[str]) -> dict[str, list[float]]:
    """Each stage's duration (ms) for the counted events that have every mark, on the Unix clock."""
    to_unix = time.time() - time.perf_counter()
    points = ["persister_tx", "event_sent", "scheduler_tx", "signal_sent"]
    stages: dict[str, list[float]] = {name: [] for name in STAGES}
    for key in counted:
        if key not in received or any(key not in marks[p] for p in points):
            continue
        times = [sent[key] + to_unix, *(marks[p][key] for p in points), received[key] + to_unix]
        for name, start, end in zip(STAGES, times[:-1], times[1:], strict=True):
            stages[name].append((end - start) * 1000)
    return stages


async def _warm_up(emitter: AsyncEmitter, received: dict[str, float]) -> None:
    """One event end to end, so that group joins and metadata are not measured."""
    await emitter.emit(ASSET, partition_key="warm-up", partition_date=START - timedelta(hours=1), dedupe_key="warm-up")
    deadline = time.perf_counter() + 60
    while "warm-up" not in received:
        if time.perf_counter() > deadline:
            raise RuntimeError("the pipeline did not produce a readiness signal within 60 s")
        await asyncio.sleep(0.05)


async def offer(emitter: AsyncEmitter, rate: int, count: int,
                started: float) -> AsyncIterator[tuple[str, float, asyncio.Future[Receipt]]]:
    """Emit `count` events of the asset at `rate`/s from `started` (in 10 ms ticks) without waiting for receipts;
    yields each one's partition key, when it was sent, and its receipt's future."""
    for i in range(count):
        delay = started + i / rate - time.perf_counter()
        if delay > 0.01:
            await asyncio.sleep(delay)
        key = f"e{i}"
        command = emitter.command(ASSET, partition_key=key, partition_date=START + timedelta(hours=i), dedupe_key=key)
        sent = time.perf_counter()
        yield key, sent, await emitter.submit(command)


async def _offer(emitter: AsyncEmitter, rate: int, seconds: float, sent: dict[str, float],
                 receipted: dict[str, float]) -> None:
    futures = []
    async for key, at, future in offer(emitter, rate, int(rate * seconds), time.perf_counter()):
        sent[key] = at
        future.add_done_callback(lambda _, k=key: receipted.setdefault(k, time.perf_counter()))  # type: ignore[misc]
        futures.append(future)
    await asyncio.gather(*futures)


async def _read(reader: AIOKafkaConsumer, received: dict[str, float], sent: dict[str, float],
                offered: asyncio.Event, all_in: asyncio.Event, marks: dict[str, dict[str, float]],
                asset_events: str) -> None:
    """Note when each signal arrives (and the record timestamps of signals and asset events); set `all_in`
    once every sent key has a signal (after the offering)."""
    event_sent, signal_sent = marks["event_sent"], marks["signal_sent"]
    while True:
        batches = await reader.getmany(timeout_ms=100)
        now = time.perf_counter()
        for part, records in batches.items():
            if part.topic == asset_events:
                for record in records:
                    key = json.loads(record.value).get("partition_key")
                    if key is not None:
                        event_sent.setdefault(key, record.timestamp / 1000)
                continue
            for record in records:  # the record key is the run's partition key: no decoding on the reader
                if record.key:
                    key = record.key.decode()
                    received.setdefault(key, now)
                    signal_sent.setdefault(key, record.timestamp / 1000)
        if offered.is_set() and sent.keys() <= received.keys():
            all_in.set()
