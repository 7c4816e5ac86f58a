"""The scheduler benchmark's latency run at one offered rate: emit() → readiness signal read, per event.

A persister and a scheduler run as subprocesses; events are emitted at the rate (in 10 ms ticks)
through the async emitter without waiting for receipts, and each one's signal is read from the
identity DAG's readiness topic. Latency = signal received minus emit() called (emitter → Kafka →
persister → PostgreSQL → Kafka → scheduler → PostgreSQL → Kafka → reader); the first
`warmup_s` seconds are left out.

Each event's path is also cut into stages (`LatencyRun.stages_ms`) by times recorded on the way, on
one machine's clock: the persister's transaction start (`asset_events.created_at`, PostgreSQL's
`now()`), the asset event's record timestamp (set by the persister's producer when it is handed the
record, after the commit), the scheduler's transaction start (`consumer_runs.created_at`), the
readiness record's timestamp (set when the scheduler's producer is handed it, after its commit),
and the reader's receipt of the signal. Kafka's timestamps have millisecond resolution.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from datetime import timedelta
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import text

from assetbus.benchmarks.scheduler_report import STAGES, LatencyRun, SchedulerBenchOptions, SchedulerBenchReport
from assetbus.benchmarks.scheduler_setup import ASSET, IDENTITY, START, prepare, service
from assetbus.consumers.observe.lag import partitions_of
from assetbus.consumers.storage import create_engine
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import Topics
from assetbus.settings import Settings


async def measure_latency(settings: Settings, options: SchedulerBenchOptions, topics: Topics, db_url: str,
                          report: SchedulerBenchReport, *, rate: int) -> None:
    """One latency run at `rate` emissions/s, appended to `report.latency`."""
    await prepare(settings, topics, db_url)
    run = LatencyRun(rate, load_before=os.getloadavg())
    sent: dict[str, float] = {}
    received: dict[str, float] = {}
    receipted: dict[str, float] = {}
    marks: dict[str, dict[str, float]] = {"event_sent": {}, "signal_sent": {}}
    reader = AIOKafkaConsumer(**settings.kafka.client_kwargs(), enable_auto_commit=False, fetch_max_wait_ms=5)
    await reader.start()
    token = task_token(settings.token_secret, "bench", "r1", "load")
    async with service(settings, topics, db_url, "persister", "--group-id", f"{topics.prefix}-persister"), \
            service(settings, topics, db_url, "scheduler", "--group-id", f"{topics.prefix}-scheduler") as watch, \
            AsyncEmitter(settings.kafka, token, topics=topics, receipt_timeout_s=60) as emitter:
        parts = [TopicPartition(topics.readiness(IDENTITY.dag_id), p) for p in range(3)]
        events = [TopicPartition(topics.asset_events, p)
                  for p in (await partitions_of(settings.kafka, [topics.asset_events]))[topics.asset_events]]
        reader.assign([*parts, *events])
        await reader.seek_to_end(*parts, *events)
        offered, all_in = asyncio.Event(), asyncio.Event()
        reading = asyncio.create_task(_read(reader, received, sent, offered, all_in, marks, topics.asset_events))
        try:
            await _warm_up(emitter, received)
            received.clear()
            cpu_before = watch.cpu_s()
            await _offer(emitter, rate, options.seconds, sent, receipted)
            offered.set()
            with contextlib.suppress(TimeoutError):  # signals that never came are left out of the figures
                await asyncio.wait_for(all_in.wait(), 60)
            run.scheduler_cpu_s = watch.cpu_s() - cpu_before
        finally:
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
            await reader.stop()
    report.peak_rss_mb = max(report.peak_rss_mb, watch.peak_rss / 2**20)
    cutoff = min(sent.values(), default=0.0) + options.warmup_s
    run.offered = len(sent)
    run.offered_rate = len(sent) / options.seconds
    run.latencies_ms = [(received[k] - t) * 1000 for k, t in sent.items() if k in received and t >= cutoff]
    run.receipt_latencies_ms = [(receipted[k] - t) * 1000 for k, t in sent.items() if k in receipted and t >= cutoff]
    counted = {k for k, t in sent.items() if t >= cutoff}
    marks.update(await _transaction_starts(db_url))
    run.stages_ms = _stages(sent, received, marks, counted)
    report.latency.append(run)


async def _transaction_starts(db_url: str) -> dict[str, dict[str, float]]:
    """Per partition key (the run's, for the identity DAG): when the persister's and the scheduler's
    transactions that stored it started (PostgreSQL's `now()`), as Unix times."""
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            stored = (await conn.execute(text(
                "SELECT partition_key, extract(epoch FROM created_at) FROM asset_events"))).all()
            planned = (await conn.execute(text(
                "SELECT partition_key, extract(epoch FROM created_at) FROM consumer_runs WHERE dag_id = :d"),
                {"d": IDENTITY.dag_id})).all()
    finally:
        await engine.dispose()
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


async def _offer(emitter: AsyncEmitter, rate: int, seconds: float, sent: dict[str, float],
                 receipted: dict[str, float]) -> None:
    """Emit at the offered rate (in 10 ms ticks), without waiting for receipts."""
    total = int(rate * seconds)
    started = time.perf_counter()
    futures: list[asyncio.Future[Any]] = []
    for i in range(total):
        due = started + i / rate
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
