"""`assetbus bench emit`: emissions per second from one process, caller not waiting on each receipt.

The broker, receipts and latency runs, each on a fresh topic prefix, are described in docs/benchmarks.md
("Emitter"). The broker run has no persister, so no receipt ever comes: its in-flight bound is raised to the count.
"""

from __future__ import annotations

import asyncio
import os
import platform
import secrets
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from assetbus.benchmarks.persister import register_assets
from assetbus.benchmarks.scratch import scratch_pipeline, service_env, stop
from assetbus.benchmarks.stats import load_text, percentile
from assetbus.producers import AsyncEmitter, task_token
from assetbus.producers.wire import command_encoder, prepare
from assetbus.schemas import AssetRef, Receipt, Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics


@dataclass(frozen=True)
class EmitBenchOptions:
    count: int = 100_000
    in_flight: int = 10_000
    extra_bytes: int = 100
    linger_ms: int = 5
    compression: str | None = None
    assets: int = 6
    modes: tuple[str, ...] = ("broker", "receipts")
    rates: tuple[int, ...] = (1_000,)
    seconds: float = 10.0
    warmup_s: float = 1.0
    """The first seconds of the latency run left out of its percentiles."""
    trace: bool = False


@dataclass
class EmitRun:
    mode: str
    count: int
    in_flight_bound: int
    broker_s: float = 0.0
    receipts_s: float | None = None
    accepted: int = 0
    peak_in_flight: int = 0
    resent: int = 0
    batches: int = 0
    cpu_s: float = 0.0
    """CPU time of this process (all threads) from the first emission to the broker's last ack."""

    @property
    def cpu_us_per_emission(self) -> float:
        return self.cpu_s / self.count * 1e6

    @property
    def broker_rate(self) -> float:
        return self.count / self.broker_s

    @property
    def receipt_rate(self) -> float | None:
        return None if self.receipts_s is None else self.count / self.receipts_s


@dataclass
class LatencyRun:
    """emit → receipt at an offered rate: every receipt awaited, each one timed."""

    rate: int
    seconds: float
    offered: int = 0
    accepted: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    """One per command offered after the warm-up, in the order offered."""

    @property
    def offered_rate(self) -> float:
        return self.offered / self.seconds

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies_ms, 50)

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies_ms, 99)

    @property
    def max_ms(self) -> float:
        return max(self.latencies_ms, default=float("nan"))


@dataclass
class EmitReport:
    options: EmitBenchOptions
    message_bytes: int
    token_bytes: int
    runs: list[EmitRun] = field(default_factory=list)
    latency: list[LatencyRun] = field(default_factory=list)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def conditions(self) -> dict[str, str]:
        o = self.options
        return {
            "message": f"{self.message_bytes} bytes per command (token {self.token_bytes} bytes, "
                       f"extra {o.extra_bytes} bytes), {o.assets} assets as keys over 6 partitions",
            "producer": f"aiokafka batch API, acks=all, idempotent, linger {o.linger_ms} ms, "
                        f"batches ≤ 512 KiB, compression {o.compression or 'none'}",
            "machine": f"{os.cpu_count()} cores ({platform.machine()}, Python {platform.python_version()}); "
                       "Kafka and PostgreSQL on the same machine",
            "load average before / after": f"{load_text(self.load_before)} / {load_text(self.load_after)}",
            "tracing": "OpenTelemetry SDK TracerProvider, every span recorded, SimpleSpanProcessor into a no-op "
                       "exporter" if o.trace else "off (opentelemetry-api only, no SDK configured)",
        }


def _token(secret: str) -> str:
    return task_token(secret, "bench", "bench-run", "emit")


def _assets(n: int) -> list[AssetRef]:
    return [AssetRef(name=f"bench.emit-{i:02d}", uri=f"s3://bench/emit-{i:02d}/") for i in range(n)]


def _extra(extra_bytes: int) -> dict[str, object]:
    return {"path": "s3://bench/" + "x" * max(0, extra_bytes - 25), "rows": 1}


async def _emit_all(emitter: AsyncEmitter, run: EmitRun, assets: list[AssetRef], extra_bytes: int,
                    wait_receipts: bool) -> None:
    extra = _extra(extra_bytes)
    futures: list[asyncio.Future[Receipt]] = []
    n_assets = len(assets)
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(run.count):
        futures.append(await emitter.emit_nowait(assets[i % n_assets], extra=extra, partition_key="2026-10-01",
                                                 dedupe_key=f"b{i}"))
    await emitter.flush()
    run.broker_s = time.perf_counter() - started
    run.cpu_s = time.process_time() - cpu_started
    if wait_receipts:
        receipts = await asyncio.gather(*futures)
        run.receipts_s = time.perf_counter() - started
        run.accepted = sum(1 for r in receipts if r.accepted)
    else:
        for future in futures:
            future.cancel()
    run.peak_in_flight = emitter.stats.peak_in_flight
    run.resent = emitter.stats.resent
    run.batches = emitter.dispatcher.batches_sent


async def _broker_run(settings: Settings, options: EmitBenchOptions, secret: str) -> EmitRun:
    topics = Topics(prefix=f"bench{uuid.uuid4().hex[:10]}")  # as long as scratch_pipeline's
    await ensure_topics(settings.kafka, topics)
    run = EmitRun("broker", options.count, options.count)
    try:
        async with AsyncEmitter(settings.kafka, _token(secret), topics=topics, receipt_timeout_s=3600,
                                attempts=1, max_in_flight=options.count, linger_ms=options.linger_ms,
                                compression=options.compression) as emitter:
            await _emit_all(emitter, run, _assets(options.assets), options.extra_bytes, wait_receipts=False)
    finally:
        await delete_topics(settings.kafka, list(topics.core()))
    return run


@asynccontextmanager
async def _with_persister(settings: Settings, options: EmitBenchOptions, secret: str) -> AsyncIterator[AsyncEmitter]:
    """A fresh prefix and database, `assetbus run persister` on them, and a warmed-up emitter."""
    async with scratch_pipeline(settings) as (topics, db_url):
        await register_assets(db_url, _assets(options.assets))
        persister = await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "assetbus"), "run", "persister", "--group-id",
            f"{topics.prefix}-persister", "--log-level", "WARNING",
            env={**service_env(settings, topics, db_url), "ASSETBUS_TOKEN_SECRET": secret})
        try:
            async with AsyncEmitter(settings.kafka, _token(secret), topics=topics, receipt_timeout_s=60,
                                    max_in_flight=options.in_flight, linger_ms=options.linger_ms,
                                    compression=options.compression) as emitter:
                warm = await emitter.emit(_assets(1)[0], dedupe_key="warm-up", timeout_s=120)  # persister joined
                assert warm.accepted, warm
                emitter.stats.peak_in_flight = 0
                yield emitter
        finally:
            await stop(persister, 30)


async def _receipts_run(settings: Settings, options: EmitBenchOptions, secret: str) -> EmitRun:
    run = EmitRun("receipts", options.count, options.in_flight)
    async with _with_persister(settings, options, secret) as emitter:
        await _emit_all(emitter, run, _assets(options.assets), options.extra_bytes, wait_receipts=True)
    return run


async def _latency_run(settings: Settings, options: EmitBenchOptions, secret: str, rate: int) -> LatencyRun:
    """Emit at the offered rate without waiting for each receipt; note when each receipt comes."""
    run = LatencyRun(rate, options.seconds)
    assets = _assets(options.assets)
    extra = _extra(options.extra_bytes)
    total = int(rate * options.seconds)
    sent = [0.0] * total
    answered = [0.0] * total
    futures: list[asyncio.Future[Receipt]] = []
    async with _with_persister(settings, options, secret) as emitter:
        started = time.perf_counter()
        for i in range(total):
            delay = started + i / rate - time.perf_counter()
            if delay > 0.001:
                await asyncio.sleep(delay)
            sent[i] = time.perf_counter()
            future = await emitter.emit_nowait(assets[i % len(assets)], extra=extra, partition_key="2026-10-01",
                                               dedupe_key=f"l{i}")
            future.add_done_callback(lambda _, i=i: answered.__setitem__(i, time.perf_counter()))  # type: ignore[misc]
            futures.append(future)
        receipts = await asyncio.gather(*futures)
    run.offered = total
    run.accepted = sum(1 for r in receipts if r.accepted)
    cutoff = started + options.warmup_s
    run.latencies_ms = [(answered[i] - sent[i]) * 1000 for i in range(total) if sent[i] >= cutoff]
    return run


def install_tracing() -> None:
    """An OpenTelemetry SDK TracerProvider that records every span and exports it to nowhere (once per process):
    the SDK's `SpanExporter` interface itself, whose methods do nothing."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(SpanExporter()))
        trace.set_tracer_provider(provider)


async def run_emit_benchmark(settings: Settings, options: EmitBenchOptions) -> EmitReport:
    if options.trace:
        install_tracing()
    secret = secrets.token_urlsafe(32)
    sample = prepare(_assets(1)[0], extra=_extra(options.extra_bytes), partition_key="2026-10-01", dedupe_key="b1000")
    size = len(command_encoder(f"emitter-{uuid.uuid4().hex}", "benchxxxxxxxxxx.receipts", _token(secret))
               .encode(sample))
    report = EmitReport(options, size, len(_token(secret)), load_before=os.getloadavg())
    for mode in options.modes:
        if mode == "latency":
            for rate in options.rates:
                report.latency.append(await _latency_run(settings, options, secret, rate))
        else:
            runner = _broker_run if mode == "broker" else _receipts_run
            report.runs.append(await runner(settings, options, secret))
    report.load_after = os.getloadavg()
    return report
