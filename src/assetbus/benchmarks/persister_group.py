"""k persister processes in one consumer group: events/s stored and receipted, on a fresh prefix and database.

The k `assetbus run persister` processes start first, on empty topics; once each has received its
partition assignment (its `assetbus_persister_rebalances` counter, read from its `/metrics`) and a
warm-up command per asset is answered, they are paused (SIGSTOP) while N commands are produced, so
the producer's speed is not what is measured, and resumed (SIGCONT); the time runs from the resume
to the last receipt on the receipts topic. The pause must stay below the group's session timeout
(10 s): a rebalance during the run is counted and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.persister import (
    BenchOptions,
    bench_assets,
    build_commands,
    persister_command,
    preload,
    register_assets,
)
from assetbus.benchmarks.processes import ProcessSampler
from assetbus.benchmarks.scrape import scrape
from assetbus.benchmarks.scratch import record_count, scratch_pipeline, service_env, stop
from assetbus.benchmarks.stats import per_second
from assetbus.consumers.storage import count_events, create_engine
from assetbus.infra.ports import free_port
from assetbus.producers import task_token
from assetbus.schemas import Topics
from assetbus.settings import Settings


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
    async with scratch_pipeline(settings) as (topics, db_url):
        return await _measure(settings, persisters, commands, topics, db_url, timeout_s)


async def _measure(settings: Settings, k: int, n: int, topics: Topics, db_url: str, timeout_s: float) -> GroupReport:
    options = BenchOptions(commands=n)
    assets = bench_assets(options.assets)
    await register_assets(db_url, assets)
    token = task_token(settings.token_secret, "bench_dag", f"run-{topics.prefix}", "load")
    warm_up = build_commands(token, topics, len(assets), options.size, assets)
    load = build_commands(token, topics, n + len(assets), options.size, assets)[len(assets):]  # unique dedupe keys
    engine = create_engine(db_url)
    ports = [free_port() for _ in range(k)]
    processes = [await asyncio.create_subprocess_exec(*persister_command(f"{topics.prefix}-persister", port, options),
                                                      env=service_env(settings, topics, db_url)) for port in ports]
    try:
        async with record_count(settings, [topics.receipts]) as receipts:
            with ProcessSampler(interval_s=0.1).running() as sampler:
                await _until(lambda: _all_assigned(ports), timeout_s, "every persister assigned its partitions")
                await preload(settings.kafka, topics, warm_up)
                await _until(lambda: _receipts_at_least(receipts, len(warm_up)), timeout_s, "warm-up receipts")
                assigned = await _rebalances(ports)
                load_before = os.getloadavg()
                paused = time.perf_counter()
                for process in processes:
                    process.send_signal(signal.SIGSTOP)
                try:
                    await preload(settings.kafka, topics, load)
                finally:
                    for process in processes:
                        process.send_signal(signal.SIGCONT)
                started = time.perf_counter()
                # a rebalance redelivers a batch, answered again as duplicates: receipts alone can count ahead
                await _until(lambda: _all_stored_and_receipted(engine, receipts, len(warm_up) + n), timeout_s,
                             "every command stored and receipted")
                finished = time.perf_counter()
                await asyncio.sleep(0.3)  # one more sample of every process after the last receipt
                rebalanced = await _rebalances(ports) - assigned
        async with engine.connect() as conn:
            stored = await count_events(conn)
        if stored != n + len(warm_up):
            raise RuntimeError(f"{stored} events stored for {n + len(warm_up)} commands")
        members = sampler.by_role("persister")
        return GroupReport(persisters=k, commands=n, produce_s=started - paused, run_s=finished - started,
                           rebalances=rebalanced,
                           cpu_s=sum(p.cpu_between(started, finished + 0.3) for p in members),
                           peak_rss_mb=max((p.peak_rss_mb for p in members), default=0.0),
                           load_before=load_before, load_after=os.getloadavg())
    finally:
        await engine.dispose()
        await asyncio.gather(*(stop(process) for process in processes))


async def _until(check: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
    deadline = time.perf_counter() + timeout_s
    while not await check():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def _all_assigned(ports: list[int]) -> bool:
    try:
        return all(n >= 1 for n in await asyncio.gather(*(_assignments(port) for port in ports)))
    except OSError:
        return False


async def _rebalances(ports: list[int]) -> int:
    return sum(await asyncio.gather(*(_assignments(port) for port in ports)))


async def _assignments(port: int) -> int:
    metrics = await asyncio.to_thread(scrape, f"http://127.0.0.1:{port}/metrics", 2.0)
    return int(metrics.value("assetbus_persister_rebalances"))


async def _all_stored_and_receipted(engine: AsyncEngine, receipts: Callable[[], Awaitable[int]], n: int) -> bool:
    if not await _receipts_at_least(receipts, n):
        return False
    async with engine.connect() as conn:
        return await count_events(conn) >= n


async def _receipts_at_least(receipts: Callable[[], Awaitable[int]], n: int) -> bool:
    with contextlib.suppress(Exception):
        return await receipts() >= n
    return False
