"""The persister benchmark: N commands pre-loaded on a fresh topic prefix and a fresh database, then
one persister process started; time until every command is durable *and* receipted.

A receipt is published only after the transaction holding its event committed, so "all receipts
on the receipts topic" means "all durable and all answered". The persister runs as a real
subprocess (`assetbus run persister`); its peak RSS is sampled with psutil every 50 ms, its batch
sizes and transaction latencies are read from its own Prometheus endpoint.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aiokafka import AIOKafkaProducer
from sqlalchemy.engine import make_url

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.processes import ProcessWatch
from assetbus.benchmarks.scrape import Histogram, scrape
from assetbus.benchmarks.scratch import record_count, scratch_pipeline, service_env, stop
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.storage import count_events, create_engine, register_asset
from assetbus.infra.ports import free_port
from assetbus.producers import source_of, task_token
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.schemas import AssetRef, EmissionCommand, Topics
from assetbus.schemas.codecs import encode_command
from assetbus.settings import Settings


@dataclass(frozen=True)
class BenchOptions:
    commands: int = 100_000
    size: int = 1024
    assets: int = 16
    max_records: int = PersisterConfig.model_fields["max_records"].default
    chunk_size: int = PersisterConfig.model_fields["chunk_size"].default
    transactions_in_flight: int = PersisterConfig.model_fields["transactions_in_flight"].default
    timeout_s: float = 600.0
    keep: bool = False
    profile: Path | None = None
    db_tls: bool = True
    """False: the persister connects with `?ssl=disable` (asyncpg otherwise prefers TLS, even on localhost)."""


@dataclass
class BenchReport:
    options: BenchOptions
    command_bytes: int
    preload_s: float
    startup_s: float
    run_s: float
    total_s: float
    peak_rss_mb: float
    cpu_s: float
    run_cpu_s: float
    stored: int
    receipts: int
    batch_sizes: Histogram
    db_commit: Histogram
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    conditions: dict[str, str] = field(default_factory=dict)

    @property
    def events_per_s(self) -> float:
        return self.stored / self.run_s if self.run_s > 0 else 0.0


def build_commands(token: str, topics: Topics, n: int, size: int, assets: list[AssetRef]) -> list[EmissionCommand]:
    """n valid commands of about `size` bytes each, unique dedupe keys, spread over the assets."""
    source = source_of(token)
    now = datetime.now(UTC)

    def command(i: int, pad: int) -> EmissionCommand:
        return EmissionCommand(
            command_id=uuid.uuid4(), producer_id="bench-producer", reply_to=topics.receipts,
            asset=assets[i % len(assets)], source=source, token=token,
            extra={"rows": i, "path": f"s3://bench/{i}.parquet", "pad": "x" * pad},
            partition_key=f"2026-10-{1 + i % 28:02d}", dedupe_key=f"batch-{i}", emitted_at=now)

    base = len(encode_command(command(0, 0)))
    pad = max(0, size - base)
    return [command(i, pad) for i in range(n)]


async def preload(connection: KafkaConnection, topics: Topics, commands: list[EmissionCommand]) -> int:
    """Produce the commands (key = asset name, as the emitter does); returns the bytes of one."""
    producer = AIOKafkaProducer(**connection.client_kwargs(), acks="all", enable_idempotence=True,
                                linger_ms=20, max_batch_size=1024 * 1024)
    await producer.start()
    try:
        pending = []
        size = 0
        for command in commands:
            value = encode_command(command)
            size = len(value)
            pending.append(await producer.send(topics.emissions, value, key=command.asset.name.encode()))
        await asyncio.gather(*pending)
        return size
    finally:
        await producer.stop()


def persister_command(group_id: str, metrics_port: int, options: BenchOptions) -> list[str]:
    """`assetbus run persister ...`, optionally under pyinstrument."""
    args = ["run", "persister", "--group-id", group_id, "--metrics-port", str(metrics_port),
            "--metrics-host", "127.0.0.1", "--max-records", str(options.max_records),
            "--chunk-size", str(options.chunk_size), "--transactions-in-flight", str(options.transactions_in_flight),
            "--log-level", "WARNING"]
    script = str(Path(sys.executable).parent / "assetbus")
    if options.profile is not None:
        renderer = "html" if options.profile.suffix == ".html" else "text"
        shown = ["--show", "*/aiokafka/*", "--show", "*/sqlalchemy/*"] if renderer == "text" else []
        return [sys.executable, "-m", "pyinstrument", "-r", renderer, *shown, "-o", str(options.profile), script,
                *args]
    return [script, *args]


async def run_benchmark(settings: Settings, options: BenchOptions) -> BenchReport:
    async with scratch_pipeline(settings, keep=options.keep) as (topics, db_url):
        return await _measure(settings, options, topics, db_url)


def bench_assets(n: int) -> list[AssetRef]:
    return [AssetRef(name=f"bench.asset-{i:02d}", uri=f"s3://bench/asset-{i:02d}/") for i in range(n)]


async def register_assets(db_url: str, assets: list[AssetRef]) -> None:
    engine = create_engine(db_url)
    try:
        async with engine.begin() as conn:
            for asset in assets:
                await register_asset(conn, asset.name, asset.uri)
    finally:
        await engine.dispose()


async def _measure(settings: Settings, options: BenchOptions, topics: Topics, db_url: str) -> BenchReport:
    assets = bench_assets(options.assets)
    await register_assets(db_url, assets)
    token = task_token(settings.token_secret, "bench_dag", f"run-{topics.prefix}", "load")
    started = time.perf_counter()
    command_bytes = await preload(settings.kafka, topics,
                                  build_commands(token, topics, options.commands, options.size, assets))
    preload_s = time.perf_counter() - started
    async with record_count(settings, [topics.receipts]) as receipts:
        report = await _run_persister(settings, options, topics, db_url, receipts)
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            report.stored = await count_events(conn)
    finally:
        await engine.dispose()
    if report.stored != options.commands:
        raise RuntimeError(f"{report.stored} events stored for {options.commands} commands")
    report.command_bytes, report.preload_s = command_bytes, preload_s
    return report


async def _run_persister(settings: Settings, options: BenchOptions, topics: Topics, db_url: str,
                         receipts: Callable[[], Awaitable[int]]) -> BenchReport:
    port = free_port()
    if not options.db_tls:
        db_url = make_url(db_url).update_query_dict({"ssl": "disable"}).render_as_string(hide_password=False)
    load_before = os.getloadavg()
    launched = time.perf_counter()
    process = await asyncio.create_subprocess_exec(*persister_command(f"{topics.prefix}-persister", port, options),
                                                   env=service_env(settings, topics, db_url))
    watch = ProcessWatch(process.pid)
    watch.start()
    first: float | None = None
    cpu_at_first = 0.0
    done = 0
    try:
        deadline = launched + options.timeout_s
        while done < options.commands:
            if process.returncode is not None:
                raise RuntimeError(f"the persister exited with code {process.returncode}")
            if time.perf_counter() > deadline:
                raise RuntimeError(f"timed out after {options.timeout_s}s with {done} receipts")
            done = await receipts()
            if done and first is None:
                first, cpu_at_first = time.perf_counter(), watch.cpu_s()
            await asyncio.sleep(0.05)
        finished = time.perf_counter()
        cpu_s = watch.cpu_s()
        metrics = await asyncio.to_thread(scrape, f"http://127.0.0.1:{port}/metrics")
    finally:
        await watch.stop()
        await stop(process, 60 if options.profile else 20)
    assert first is not None
    return BenchReport(
        options=options, command_bytes=0, preload_s=0.0, startup_s=first - launched, run_s=finished - first,
        total_s=finished - launched, peak_rss_mb=watch.peak_rss / 2**20, cpu_s=cpu_s,
        run_cpu_s=cpu_s - cpu_at_first, stored=0, receipts=done,
        batch_sizes=metrics.histogram("assetbus_persister_batch_size"),
        db_commit=metrics.histogram("assetbus_persister_db_commit_seconds"),
        load_before=load_before, load_after=os.getloadavg(),
        conditions=conditions("TLS (asyncpg prefers it)" if options.db_tls else "plain TCP (?ssl=disable)"))
