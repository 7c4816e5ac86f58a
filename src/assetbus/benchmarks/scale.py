"""`assetbus bench scale`: offered rate against latency, persisters and schedulers in one group, and how the
scheduler's cost grows with consumer DAGs (`dags_run`), partitions (`partitions_run`) and a replayed backlog
(`backlog_run`); docs/benchmarks.md ("Scaling") says what each run does.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

from assetbus.benchmarks.persister import GroupReport, run_group
from assetbus.benchmarks.processes import ProcessSampler, watching
from assetbus.benchmarks.scheduler import (
    ASSET,
    DAILY,
    IDENTITY,
    START,
    BacklogRun,
    LatencyRun,
    apply_backlog,
    measure_latency,
    prepare,
    readiness_topics,
)
from assetbus.benchmarks.scheduler_group import SchedulerGroupReport, run_scheduler_group
from assetbus.benchmarks.scratch import connection, scratch_pipeline
from assetbus.benchmarks.stats import per_second
from assetbus.consumers.scheduler import AssetWait, ConsumerDag, Identity
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.schemas import AssetRef
from assetbus.settings import Settings

IDLE_ASSETS = 50
"""Assets that the DAGs beyond the matching ones wait on (no event comes for them)."""

SCHEDULER_TABLES = ("asset_events", "partition_queue", "consumer_runs", "unpublished_batches")


@dataclass
class DagsRow:
    dags: int
    matching: int
    """DAGs that each event matches."""
    run: BacklogRun

    def figures(self) -> dict[str, float]:
        return {"dags": self.dags, "matching_per_event": self.matching, "events": self.run.events,
                "events_per_s": round(self.run.events_per_s, 1),
                "cpu_us_per_event": round(self.run.cpu_us_per_event, 1),
                "peak_rss_mb": round(self.run.peak_rss_mb, 1)}


@dataclass
class PartitionsRow:
    partitions: int
    """Distinct partitions whose history the database holds before the latency run."""
    latency: LatencyRun
    tables: dict[str, tuple[int, float]]
    """Table → (rows, MB with indexes), after the run."""

    def figures(self) -> dict[str, object]:
        r = self.latency
        return {"partitions": self.partitions, "offered_per_s": r.rate, "signals_measured": len(r.latencies_ms),
                "readiness_p50_ms": round(r.percentile(50), 1), "readiness_p99_ms": round(r.percentile(99), 1),
                "scheduler_peak_rss_mb": round(r.scheduler_peak_rss_mb, 1),
                "tables": {name: {"rows": rows, "mb": round(mb, 1)} for name, (rows, mb) in self.tables.items()}}


@dataclass
class BacklogRow:
    events: int
    runs: int
    seconds: float
    peak_rss_mb: float

    def figures(self) -> dict[str, float]:
        return {"events": self.events, "runs_created": self.runs, "seconds": round(self.seconds, 2),
                "events_per_s": round(per_second(self.events, self.seconds), 1),
                "peak_rss_mb": round(self.peak_rss_mb, 1)}


async def dags_run(settings: Settings, dags: int, events: int, timeout_s: float = 600.0) -> DagsRow:
    matching = [IDENTITY, DAILY][:min(dags, 2)]
    idle_assets = [AssetRef(name=f"bench.idle-{i}", uri=f"s3://bench/idle-{i}/")
                   for i in range(min(dags - len(matching), IDLE_ASSETS))]
    idle = [ConsumerDag(dag_id=f"bench.idle.{i}", schedule=AssetWait(idle_assets[i % len(idle_assets)].name,
                                                                      mapping=Identity()), coalesce=i % 2 == 0)
            for i in range(dags - len(matching))]
    readiness = [dag.dag_id for dag in (*matching, *idle)]
    async with scratch_pipeline(settings, lambda t: [t.readiness(d) for d in readiness]) as (topics, db_url):
        # the idle DAGs' readiness topics with one partition each (the scheduler would create three): lighter
        # on the broker this runs on, and the scheduler's work does not depend on it
        await create_readiness_topics(settings.kafka, topics, [dag.dag_id for dag in idle], partitions=1)
        await prepare(settings, topics, db_url, dags=[*matching, *idle], assets=[ASSET, *idle_assets])
        run = await apply_backlog(settings, topics, db_url, events, timeout_s=timeout_s)
    return DagsRow(dags, len(matching), run)


async def partitions_run(settings: Settings, partitions: int, rate: int, seconds: float) -> PartitionsRow:
    """The history of `partitions` partitions stored, then a latency run at `rate` on new ones."""
    async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
        await prepare(settings, topics, db_url)
        await store_history(db_url, partitions, runs=True)
        latency = await measure_latency(settings, topics, db_url, rate, seconds)
        tables = await table_sizes(db_url)
    return PartitionsRow(partitions, latency, tables)


BACKLOG_DAG = ConsumerDag(dag_id="bench.replayed", schedule=AssetWait(ASSET.name, mapping=Identity()), coalesce=False)


async def backlog_run(settings: Settings, events: int, timeout_s: float = 1800.0) -> BacklogRow:
    """`events` stored events, then a per-event DAG registered and replayed over all of them (no publishing:
    the replay's own work), in a process of its own: the replay's time, the process's peak RSS."""
    async with scratch_pipeline(settings, lambda t: [t.readiness(BACKLOG_DAG.dag_id)]) as (topics, db_url):
        await prepare(settings, topics, db_url, dags=[])
        await store_history(db_url, events, runs=False)
        await prepare(settings, topics, db_url, dags=[BACKLOG_DAG])
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "assetbus.benchmarks.replay_child", BACKLOG_DAG.dag_id,
            env={**os.environ, "DATABASE_URL": db_url}, stdout=asyncio.subprocess.PIPE)
        try:
            async with watching(process.pid) as watch:
                out, _ = await asyncio.wait_for(process.communicate(), timeout_s)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        if process.returncode != 0:
            raise RuntimeError(f"the replay process exited with {process.returncode}")
        done = json.loads(out.decode().strip().splitlines()[-1])
        runs, seconds = int(done["runs"]), float(done["seconds"])
    return BacklogRow(events, runs, seconds, watch.peak_rss / 2**20)


_EVENTS = """
INSERT INTO asset_events (asset_id, dedupe_scope, dedupe_key, command_id, extra, partition_key, partition_date,
                          source_kind, dag_id, run_id, task_id, map_index, try_number)
SELECT a.id, 'bench', 'pre' || i, gen_random_uuid(), '{}', 'pre' || i, $2::timestamptz - make_interval(hours => i),
       'task', 'bench', 'r1', 'load', -1, 1
FROM assets a, generate_series(1, $3::int) AS i WHERE a.name = $1
"""
_PER_EVENT_RUNS = """
INSERT INTO consumer_runs (run_id, dag_id, partition_key, partition_date, generation, events, origin, event_id, status)
SELECT 'pre-' || e.id, $1, e.partition_key, e.partition_date, 1,
       jsonb_build_array(jsonb_build_object('event_id', e.id, 'asset_name', $2::text, 'partition_key', e.partition_key,
                                            'partition_date', e.partition_date)),
       'scheduler', e.id, 'success'
FROM asset_events e WHERE e.dedupe_scope = 'bench'
"""
_DAILY_QUEUE = """
INSERT INTO partition_queue (dag_id, event_id, asset_name, target_key, target_date, slot, event, run_id)
SELECT $1, e.id, $2, to_char(e.partition_date AT TIME ZONE 'UTC', 'YYYY-MM-DD'),
       date_trunc('day', e.partition_date AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
       to_char(e.partition_date AT TIME ZONE 'UTC', 'HH24'), 'null',
       'pre-day-' || to_char(e.partition_date AT TIME ZONE 'UTC', 'YYYY-MM-DD')
FROM asset_events e WHERE e.dedupe_scope = 'bench'
"""
_DAILY_RUNS = """
INSERT INTO consumer_runs (run_id, dag_id, partition_key, partition_date, generation, events, origin, status)
SELECT DISTINCT ON (q.target_key) q.run_id, q.dag_id, q.target_key, q.target_date, 1, '[]', 'scheduler', 'success'
FROM partition_queue q WHERE q.dag_id = $1
"""


async def store_history(db_url: str, partitions: int, *, runs: bool) -> None:
    """Store `partitions` events of the benchmark's asset, one partition each, on hours before the benchmark's
    own (as a persister would have); with `runs`, also the per-event DAG's run of each, and the daily DAG's
    consumed queue rows and runs (as a scheduler would have)."""
    async with connection(db_url) as conn:
        await conn.execute(_EVENTS, ASSET.name, START - timedelta(days=2), partitions)
        if runs:
            await conn.execute(_PER_EVENT_RUNS, IDENTITY.dag_id, ASSET.name)
            await conn.execute(_DAILY_QUEUE, DAILY.dag_id, ASSET.name)
            await conn.execute(_DAILY_RUNS, DAILY.dag_id)
        await conn.execute("VACUUM (ANALYZE)")  # settled before anything is measured: no autovacuum meanwhile


async def table_sizes(db_url: str) -> dict[str, tuple[int, float]]:
    """Rows and MB (with indexes and TOAST) of the scheduler's tables."""
    async with connection(db_url) as conn:
        return {name: (int(await conn.fetchval(f"SELECT count(*) FROM {name}")),
                       int(await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", name)) / 2**20)
                for name in SCHEDULER_TABLES}


@dataclass
class GrowthReport:
    dags: list[DagsRow] = field(default_factory=list)
    partitions: list[PartitionsRow] = field(default_factory=list)
    backlog: list[BacklogRow] = field(default_factory=list)

    def figures(self) -> dict[str, object]:
        return {"dags": [r.figures() for r in self.dags], "partitions": [r.figures() for r in self.partitions],
                "backlog": [r.figures() for r in self.backlog]}


async def run_growth(settings: Settings, *, dags: tuple[int, ...], dag_events: int, partitions: tuple[int, ...],
                     partition_rate: int, seconds: float, backlog: tuple[int, ...],
                     progress: Callable[[str], None]) -> GrowthReport:
    report = GrowthReport()
    for n in dags:
        progress(f"{n:,} consumer DAG(s) registered, {dag_events:,} events applied by one scheduler")
        row = await dags_run(settings, n, dag_events)
        report.dags.append(row)
        progress(f"  {row.run.events_per_s:,.0f} events/s, {row.run.cpu_us_per_event:.0f} µs CPU per event, "
                 f"peak RSS {row.run.peak_rss_mb:.0f} MB")
    for p in partitions:
        progress(f"{p:,} partitions stored, then {partition_rate:,}/s offered for {seconds:g} s")
        prow = await partitions_run(settings, p, partition_rate, seconds)
        report.partitions.append(prow)
        progress(f"  readiness p50/p99 {prow.latency.percentile(50):.0f}/{prow.latency.percentile(99):.0f} ms, "
                 f"consumer_runs "
                 f"{prow.tables['consumer_runs'][0]:,} rows")
    for n in backlog:
        progress(f"{n:,} stored events replayed to a new consumer DAG")
        brow = await backlog_run(settings, n)
        report.backlog.append(brow)
        progress(f"  {per_second(brow.events, brow.seconds):,.0f} events/s, {brow.runs:,} runs, "
                 f"peak RSS {brow.peak_rss_mb:.0f} MB")
    return report


@dataclass(frozen=True)
class ScaleOptions:
    rates: tuple[int, ...] = (1_000, 5_000, 10_000)
    seconds: float = 10.0
    persisters: tuple[int, ...] = (1, 2, 3)
    commands: int = 50_000
    schedulers: tuple[int, ...] = ()
    scheduler_events: int = 20_000
    pin_schedulers: frozenset[int] | None = None
    pin_infra: frozenset[int] | None = None
    dags: tuple[int, ...] = ()
    dag_events: int = 20_000
    partitions: tuple[int, ...] = ()
    partition_rate: int = 1_000
    backlog: tuple[int, ...] = ()


@dataclass
class RateRow:
    report: LatencyRun
    persister_peak_rss_mb: float
    scheduler_peak_rss_mb: float
    load_after: tuple[float, float, float]

    def figures(self) -> dict[str, float]:
        r = self.report
        return {"offered_per_s": r.rate, "emitted": r.offered,
                "signals_measured": len(r.latencies_ms), "receipts_measured": len(r.receipt_latencies_ms),
                "receipt_p50_ms": r.percentile(50, receipts=True), "receipt_p99_ms": r.percentile(99, receipts=True),
                "readiness_p50_ms": r.percentile(50), "readiness_p99_ms": r.percentile(99),
                "persister_peak_rss_mb": self.persister_peak_rss_mb,
                "scheduler_peak_rss_mb": self.scheduler_peak_rss_mb,
                "load_average_before": r.load_before[0], "load_average_after": self.load_after[0]}


@dataclass
class ScaleReport:
    rates: list[RateRow] = field(default_factory=list)
    groups: list[GroupReport] = field(default_factory=list)
    scheduler_groups: list[SchedulerGroupReport] = field(default_factory=list)
    growth: GrowthReport = field(default_factory=GrowthReport)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


async def run_scale(settings: Settings, options: ScaleOptions, progress: Callable[[str], None]) -> ScaleReport:
    report = ScaleReport(load_before=os.getloadavg())
    for rate in options.rates:
        progress(f"offered {rate:,}/s for {options.seconds:g} s (emitter, persister, scheduler, reader)")
        with ProcessSampler().running() as sampler:
            async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
                r = await measure_latency(settings, topics, db_url, rate, options.seconds)
        row = RateRow(r, sampler.peak_rss_mb("persister"), sampler.peak_rss_mb("scheduler"), os.getloadavg())
        report.rates.append(row)
        progress(f"  receipt p50/p99 {r.percentile(50, receipts=True):.0f}/{r.percentile(99, receipts=True):.0f} ms, "
                 f"readiness p50/p99 {r.percentile(50):.0f}/{r.percentile(99):.0f} ms, load {row.load_after[0]:.2f}")
    for k in options.persisters:
        progress(f"{k} persister process(es) in one group, {options.commands:,} commands")
        g = await run_group(settings, k, options.commands)
        report.groups.append(g)
        progress(f"  {g.events_per_s:,.0f} events/s, {g.cpu_us_per_event:.0f} µs CPU per event, "
                 f"load {g.load_after[0]:.2f}")
    for k in options.schedulers:
        progress(f"{k} scheduler process(es) in one group, {options.scheduler_events:,} events over one asset per "
                 "asset-events partition")
        s = await run_scheduler_group(settings, k, options.scheduler_events, pin_schedulers=options.pin_schedulers,
                                      pin_infra=options.pin_infra)
        report.scheduler_groups.append(s)
        progress(f"  {s.events_per_s:,.0f} events/s, {s.cpu_us_per_event:.0f} µs scheduler CPU and "
                 f"{s.infra_cpu_us_per_event:.0f} µs Kafka + PostgreSQL CPU per event, load {s.load_after[0]:.2f}")
    report.growth = await run_growth(settings, dags=options.dags, dag_events=options.dag_events,
                                     partitions=options.partitions, partition_rate=options.partition_rate,
                                     seconds=options.seconds, backlog=options.backlog, progress=progress)
    report.load_after = os.getloadavg()
    return report
