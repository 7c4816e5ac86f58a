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
import functools
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.scheduler_latency import measure_latency
from assetbus.benchmarks.scheduler_report import SchedulerBenchOptions, SchedulerBenchReport
from assetbus.benchmarks.scheduler_setup import (
    DAILY,
    IDENTITY,
    prepare,
    published,
    readiness_topics,
    service,
    store_events,
)
from assetbus.benchmarks.scratch import record_count, scratch_pipeline
from assetbus.consumers.storage import create_engine
from assetbus.schemas import Topics
from assetbus.settings import Settings

Phase = Callable[[Settings, SchedulerBenchOptions, Topics, str, SchedulerBenchReport], Awaitable[None]]


async def run_benchmark(settings: Settings, options: SchedulerBenchOptions) -> SchedulerBenchReport:
    """The throughput run (none with `events=0`), then one latency run per offered rate."""
    report = SchedulerBenchReport(options, load_before=os.getloadavg(), conditions=conditions())
    phases: list[Phase] = [*([_throughput] if options.events else []),
                           *(functools.partial(measure_latency, rate=rate) for rate in options.rates)]
    for phase in phases:
        async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
            await phase(settings, options, topics, db_url, report)
    report.load_after = os.getloadavg()
    return report


def _scheduler_args(topics: Topics, options: SchedulerBenchOptions) -> list[str]:
    args = ["scheduler", "--group-id", f"{topics.prefix}-scheduler"]
    return args if options.max_records is None else [*args, "--max-records", str(options.max_records)]


async def _throughput(settings: Settings, options: SchedulerBenchOptions, topics: Topics, db_url: str,
                      report: SchedulerBenchReport) -> None:
    await prepare(settings, topics, db_url)
    engine = create_engine(db_url)
    try:
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
    await store_events(settings, topics, db_url, n)
    async with service(settings, topics, db_url, *scheduler_args, profile=profile) as watch, \
            record_count(settings, [topics.readiness(IDENTITY.dag_id)]) as signalled:
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
