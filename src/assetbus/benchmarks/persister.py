"""The persister benchmark (`assetbus bench persister`; docs/benchmarks.md, "Persister").

`run_group` (`bench scale --persisters`, docs/benchmarks.md "Scaling"): the persisters' pause while the commands
are produced must stay below the group's session timeout (10 s); a rebalance during the run is counted and reported.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from aiokafka import AIOKafkaProducer
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.processes import ProcessSampler, watching
from assetbus.benchmarks.scrape import Histogram, scrape
from assetbus.benchmarks.scratch import at_least, record_count, scratch_pipeline, service_env, stop, until
from assetbus.benchmarks.stats import per_second
from assetbus.cli.common import database
from assetbus.consumers.persister.config import PersisterConfig
from assetbus.consumers.storage import count_events, register_asset
from assetbus.infra.ports import free_port
from assetbus.producers import source_of, task_token
from assetbus.producers.kafka.connection import KafkaConnection
from assetbus.producers.kafka.producer import started
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
    async with started(AIOKafkaProducer(**connection.client_kwargs(), acks="all", enable_idempotence=True,
                                        linger_ms=20, max_batch_size=1024 * 1024)) as producer:
        pending = []
        size = 0
        for command in commands:
            value = encode_command(command)
            size = len(value)
            pending.append(await producer.send(topics.emissions, value, key=command.asset.name.encode()))
        await asyncio.gather(*pending)
        return size


def persister_command(group_id: str, metrics_port: int, options: BenchOptions) -> list[str]:
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


def bench_assets(n: int) -> list[AssetRef]:
    return [AssetRef(name=f"bench.asset-{i:02d}", uri=f"s3://bench/asset-{i:02d}/") for i in range(n)]


async def register_assets(db_url: str, assets: list[AssetRef]) -> None:
    async with database(db_url) as engine, engine.begin() as conn:
        for asset in assets:
            await register_asset(conn, asset.name, asset.uri)


async def run_benchmark(settings: Settings, options: BenchOptions) -> BenchReport:
    async with scratch_pipeline(settings, keep=options.keep) as (topics, db_url):
        assets = bench_assets(options.assets)
        await register_assets(db_url, assets)
        token = task_token(settings.token_secret, "bench_dag", f"run-{topics.prefix}", "load")
        began = time.perf_counter()
        command_bytes = await preload(settings.kafka, topics,
                                      build_commands(token, topics, options.commands, options.size, assets))
        preload_s = time.perf_counter() - began
        port = free_port()
        persister_url = db_url if options.db_tls else make_url(db_url).update_query_dict(
            {"ssl": "disable"}).render_as_string(hide_password=False)
        async with record_count(settings, [topics.receipts]) as receipts:
            load_before = os.getloadavg()
            launched = time.perf_counter()
            process = await asyncio.create_subprocess_exec(
                *persister_command(f"{topics.prefix}-persister", port, options),
                env=service_env(settings, topics, persister_url))
            first: float | None = None
            cpu_at_first = 0.0
            done = 0
            try:
                async with watching(process.pid) as watch:
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
                await stop(process, 60 if options.profile else 20)
        assert first is not None
        async with database(db_url) as engine, engine.connect() as conn:
            stored = await count_events(conn)
        if stored != options.commands:
            raise RuntimeError(f"{stored} events stored for {options.commands} commands")
        return BenchReport(
            options=options, command_bytes=command_bytes, preload_s=preload_s, startup_s=first - launched,
            run_s=finished - first, total_s=finished - launched, peak_rss_mb=watch.peak_rss / 2**20, cpu_s=cpu_s,
            run_cpu_s=cpu_s - cpu_at_first, stored=stored, receipts=done,
            batch_sizes=metrics.histogram("assetbus_persister_batch_size"),
            db_commit=metrics.histogram("assetbus_persister_db_commit_seconds"),
            load_before=load_before, load_after=os.getloadavg(),
            conditions=conditions("TLS (asyncpg prefers it)" if options.db_tls else "plain TCP (?ssl=disable)"))


@dataclass
class GroupReport:
    persisters: int
    commands: int
    produce_s: float
    """how long the persisters were paused while the commands were produced"""
    run_s: float
    """resumed → last receipt on the receipts topic"""
    rebalances: int
    """partition assignments received during the run (0 when the group held together)"""
    cpu_s: float
    """user + system CPU of all the persister processes over the run"""
    peak_rss_mb: float
    """the largest of the persister processes"""
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]

    @property
    def events_per_s(self) -> float:
        return per_second(self.commands, self.run_s)

    @property
    def cpu_us_per_event(self) -> float:
        return self.cpu_s / self.commands * 1e6 if self.commands else 0.0


async def run_group(settings: Settings, persisters: int, commands: int, timeout_s: float = 300.0) -> GroupReport:
    options = BenchOptions(commands=commands)
    assets = bench_assets(options.assets)
    async with scratch_pipeline(settings) as (topics, db_url):
        await register_assets(db_url, assets)
        token = task_token(settings.token_secret, "bench_dag", f"run-{topics.prefix}", "load")
        warm_up = build_commands(token, topics, len(assets), options.size, assets)
        # the load's dedupe keys follow the warm-up's
        load = build_commands(token, topics, commands + len(assets), options.size, assets)[len(assets):]
        ports = [free_port() for _ in range(persisters)]
        processes = [await asyncio.create_subprocess_exec(
            *persister_command(f"{topics.prefix}-persister", port, options), env=service_env(settings, topics, db_url))
            for port in ports]
        try:
            async with record_count(settings, [topics.receipts]) as receipts, database(db_url) as engine:
                with ProcessSampler(interval_s=0.1).running() as sampler:
                    await until(lambda: _all_assigned(ports), timeout_s, "every persister assigned its partitions")
                    await preload(settings.kafka, topics, warm_up)
                    await until(lambda: at_least(receipts, len(warm_up)), timeout_s, "warm-up receipts")
                    assigned = sum(await _assignments(ports))
                    load_before = os.getloadavg()
                    paused = time.perf_counter()
                    for process in processes:
                        process.send_signal(signal.SIGSTOP)
                    try:
                        await preload(settings.kafka, topics, load)
                    finally:
                        for process in processes:
                            process.send_signal(signal.SIGCONT)
                    began = time.perf_counter()
                    # a rebalance redelivers a batch, answered again as duplicates: receipts alone can count ahead
                    await until(lambda: _all_stored_and_receipted(engine, receipts, len(warm_up) + commands),
                                timeout_s, "every command stored and receipted")
                    finished = time.perf_counter()
                    await asyncio.sleep(0.3)  # one more sample of every process after the last receipt
                    rebalanced = sum(await _assignments(ports)) - assigned
                async with engine.connect() as conn:
                    stored = await count_events(conn)
            if stored != commands + len(warm_up):
                raise RuntimeError(f"{stored} events stored for {commands + len(warm_up)} commands")
            members = sampler.by_role("persister")
            return GroupReport(persisters=persisters, commands=commands, produce_s=began - paused,
                               run_s=finished - began, rebalances=rebalanced,
                               cpu_s=sum(p.cpu_between(began, finished + 0.3) for p in members),
                               peak_rss_mb=max((p.peak_rss_mb for p in members), default=0.0),
                               load_before=load_before, load_after=os.getloadavg())
        finally:
            await asyncio.gather(*(stop(process) for process in processes))


async def _all_assigned(ports: list[int]) -> bool:
    try:
        return min(await _assignments(ports)) >= 1
    except OSError:
        return False


async def _assignments(ports: list[int]) -> list[int]:
    """The partition assignments each persister received so far (its `assetbus_persister_rebalances`)."""
    found = await asyncio.gather(*(asyncio.to_thread(scrape, f"http://127.0.0.1:{p}/metrics", 2.0) for p in ports))
    return [int(metrics.value("assetbus_persister_rebalances")) for metrics in found]


async def _all_stored_and_receipted(engine: AsyncEngine, receipts: Callable[[], Awaitable[int]], n: int) -> bool:
    if not await at_least(receipts, n):
        return False
    async with engine.connect() as conn:
        return await count_events(conn) >= n

