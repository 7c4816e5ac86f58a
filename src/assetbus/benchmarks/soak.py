"""`assetbus bench soak`: a long run at a fixed offered rate, sampled over time (RSS, latency, backlog).

The scheduler benchmark's latency pipeline, for up to N events or a time bound; every `interval_s` a `Window` of
what was emitted, receipted and signalled, its p50/p99, and both services' RSS and CPU. Only the events still in
flight are held in memory here, so a million events cost the load generator little.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from aiokafka import AIOKafkaConsumer, TopicPartition

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.processes import ProcessSampler
from assetbus.benchmarks.scheduler import ASSET, IDENTITY, START, offer, prepare, readiness_topics, service
from assetbus.benchmarks.scratch import in_background, scratch_pipeline
from assetbus.benchmarks.stats import percentile
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.kafka.producer import started
from assetbus.schemas import Receipt
from assetbus.settings import Settings


@dataclass(frozen=True)
class SoakOptions:
    events: int = 1_000_000
    rate: int = 2_000
    max_seconds: float = 600.0
    interval_s: float = 30.0


@dataclass
class Window:
    at_s: float
    emitted: int
    receipted: int
    signalled: int
    receipt_p50_ms: float
    receipt_p99_ms: float
    readiness_p50_ms: float
    readiness_p99_ms: float
    persister_rss_mb: float
    scheduler_rss_mb: float
    persister_cpu_pct: float
    scheduler_cpu_pct: float
    load_1m: float


@dataclass
class SoakReport:
    windows: list[Window] = field(default_factory=list)
    emitted: int = 0
    receipted: int = 0
    signalled: int = 0
    seconds: float = 0.0
    conditions: dict[str, str] = field(default_factory=dict)


@dataclass
class _Live:
    """What the emitter, the receipt callbacks and the reader share during the run."""

    sent_at: dict[str, float] = field(default_factory=dict)
    receipt_ms: list[float] = field(default_factory=list)
    readiness_ms: list[float] = field(default_factory=list)
    emitted: int = 0
    receipted: int = 0
    signalled: int = 0
    warmed: asyncio.Event = field(default_factory=asyncio.Event)


async def run_soak(settings: Settings, options: SoakOptions, progress: Callable[[str], None]) -> SoakReport:
    report = SoakReport(conditions=conditions())
    async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
        await prepare(settings, topics, db_url)
        live = _Live()
        reader = AIOKafkaConsumer(**settings.kafka.client_kwargs(), enable_auto_commit=False, fetch_max_wait_ms=5)
        token = task_token(settings.token_secret, "bench", "r1", "soak")
        async with started(reader), \
                service(settings, topics, db_url, "persister", "--group-id", f"{topics.prefix}-persister",
                        "--batch-timeout-ms", "5"), \
                service(settings, topics, db_url, "scheduler", "--group-id", f"{topics.prefix}-scheduler",
                        "--batch-timeout-ms", "5"), \
                AsyncEmitter(settings.kafka, token, topics=topics, receipt_timeout_s=120) as emitter:
            parts = [TopicPartition(topics.readiness(IDENTITY.dag_id), p) for p in range(3)]
            reader.assign(parts)
            await reader.seek_to_end(*parts)
            async with in_background(_read(reader, live)):
                with ProcessSampler(interval_s=1.0).running() as sampler:
                    live.sent_at["warm-up"] = time.perf_counter()
                    await emitter.emit(ASSET, partition_key="warm-up", partition_date=START - timedelta(hours=1),
                                       dedupe_key="warm-up", timeout_s=120)
                    await asyncio.wait_for(live.warmed.wait(), 120)
                    began = time.perf_counter()
                    async with in_background(_offer(emitter, options, live, began)) as offering:
                        await _watch(options, live, sampler, report, began, offering, progress)
    report.emitted, report.receipted, report.signalled = live.emitted, live.receipted, live.signalled
    return report


async def _offer(emitter: AsyncEmitter, options: SoakOptions, live: _Live, began: float) -> None:
    async for key, sent, future in offer(emitter, options.rate, options.events, began):
        live.sent_at[key] = sent
        future.add_done_callback(lambda f, t=sent: _receipted(live, t, f))  # type: ignore[misc]
        live.emitted += 1


def _receipted(live: _Live, sent: float, future: asyncio.Future[Receipt]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    live.receipted += 1
    live.receipt_ms.append((time.perf_counter() - sent) * 1000)


async def _read(reader: AIOKafkaConsumer, live: _Live) -> None:
    while True:
        batches = await reader.getmany(timeout_ms=100)
        now = time.perf_counter()
        for records in batches.values():
            for record in records:
                key = record.key.decode() if record.key else None  # the run's partition key: no decoding
                sent = live.sent_at.pop(key, None) if key is not None else None
                if sent is None:
                    continue
                if key == "warm-up":
                    live.warmed.set()
                    continue
                live.signalled += 1
                live.readiness_ms.append((now - sent) * 1000)


async def _watch(options: SoakOptions, live: _Live, sampler: ProcessSampler, report: SoakReport, began: float,
                 offering: asyncio.Task[None], progress: Callable[[str], None]) -> None:
    """Record a window every interval until every event is signalled, or the time bound (+ 60 s to drain)."""
    deadline, draining = began + options.max_seconds, False
    previous = began
    while True:
        await asyncio.sleep(0.2)
        if offering.done() and not offering.cancelled() and (error := offering.exception()) is not None:
            raise error
        now = time.perf_counter()
        finished = offering.done() and live.signalled >= live.emitted
        if now - previous >= options.interval_s or finished or now > deadline:
            report.windows.append(w := _window(live, sampler, now - began, previous, now))
            progress(f"{w.at_s:5.0f}s emitted {w.emitted:,} receipted {w.receipted:,} signalled {w.signalled:,}; "
                     f"receipt p99 {w.receipt_p99_ms:.0f} ms, readiness p99 {w.readiness_p99_ms:.0f} ms; RSS "
                     f"persister {w.persister_rss_mb:.0f} MB, scheduler {w.scheduler_rss_mb:.0f} MB; "
                     f"load {w.load_1m:.2f}")
            previous = now
        if finished or (draining and now > deadline):
            break
        if now > deadline:  # the time bound: stop offering; what was emitted gets 60 s to drain
            offering.cancel()
            deadline, draining = now + 60, True
    report.seconds = time.perf_counter() - began


def _window(live: _Live, sampler: ProcessSampler, at_s: float, start: float, end: float) -> Window:
    receipts, signals = live.receipt_ms, live.readiness_ms
    live.receipt_ms, live.readiness_ms = [], []

    def service(role: str) -> tuple[float, float]:
        processes = sampler.by_role(role)
        if not processes or not processes[-1].samples:
            return 0.0, 0.0
        p = processes[-1]
        return p.samples[-1].rss_mb, p.cpu_between(start, end) / max(end - start, 1e-9) * 100

    (p_rss, p_cpu), (s_rss, s_cpu) = service("persister"), service("scheduler")
    return Window(at_s=at_s, emitted=live.emitted, receipted=live.receipted, signalled=live.signalled,
                  receipt_p50_ms=percentile(receipts, 50), receipt_p99_ms=percentile(receipts, 99),
                  readiness_p50_ms=percentile(signals, 50), readiness_p99_ms=percentile(signals, 99),
                  persister_rss_mb=p_rss, scheduler_rss_mb=s_rss, persister_cpu_pct=p_cpu, scheduler_cpu_pct=s_cpu,
                  load_1m=os.getloadavg()[0])
