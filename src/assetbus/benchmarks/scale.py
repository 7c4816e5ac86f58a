"""`assetbus bench scale`: how cost grows, offered rate against latency, and persisters in one group.

1. **Offered rate**: the scheduler benchmark's latency run (emitter → persister → scheduler →
   readiness reader, real subprocesses) at each offered rate, for the same number of seconds.
2. **Persisters in one group**: `persister_group.run_group` with 1, 2, … processes.
3. **Schedulers in one group** (`--schedulers`): `scheduler_group.run_scheduler_group` with 1, 2, …
   processes sharing the asset-events partitions.
4. **What users grow** (`--dags`, `--partitions`, `--backlog`; `scale_growth`): consumer DAGs registered,
   distinct partitions stored, a backlog replayed to a new consumer DAG.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from assetbus.benchmarks.persister_group import GroupReport, run_group
from assetbus.benchmarks.processes import ProcessSampler
from assetbus.benchmarks.scale_growth import GrowthReport, run_growth
from assetbus.benchmarks.scheduler_group import SchedulerGroupReport, run_scheduler_group
from assetbus.benchmarks.scheduler_latency import measure_latency
from assetbus.benchmarks.scheduler_report import LatencyRun, SchedulerBenchOptions, SchedulerBenchReport
from assetbus.benchmarks.scheduler_setup import readiness_topics
from assetbus.benchmarks.scratch import scratch_pipeline
from assetbus.settings import Settings


@dataclass(frozen=True)
class ScaleOptions:
    rates: tuple[int, ...] = (1_000, 5_000, 10_000)
    seconds: float = 10.0
    persisters: tuple[int, ...] = (1, 2, 3)
    commands: int = 50_000
    schedulers: tuple[int, ...] = ()
    """Scheduler processes in one group, one run each (none by default)."""
    scheduler_events: int = 20_000
    pin_schedulers: frozenset[int] | None = None
    """CPUs for the scheduler processes of the `schedulers` runs (`pinning.py`); None: not pinned."""
    pin_infra: frozenset[int] | None = None
    """CPUs for Kafka, PostgreSQL and the benchmark's own process during those runs; None: not pinned."""
    dags: tuple[int, ...] = ()
    """Consumer DAGs registered, one scheduler run each (none by default)."""
    dag_events: int = 20_000
    partitions: tuple[int, ...] = ()
    """Partitions whose history is stored before a latency run, one run each (none by default)."""
    partition_rate: int = 1_000
    backlog: tuple[int, ...] = ()
    """Stored events replayed to a new consumer DAG, one replay each (none by default)."""


@dataclass
class RateRow:
    offered_per_s: int
    report: LatencyRun
    persister_peak_rss_mb: float
    scheduler_peak_rss_mb: float
    load_after: tuple[float, float, float]

    def figures(self) -> dict[str, float]:
        r = self.report
        return {"offered_per_s": self.offered_per_s, "emitted": r.offered,
                "signals_measured": len(r.latencies_ms), "receipts_measured": len(r.receipt_latencies_ms),
                "receipt_p50_ms": r.percentile(50, receipts=True), "receipt_p99_ms": r.percentile(99, receipts=True),
                "readiness_p50_ms": r.percentile(50), "readiness_p99_ms": r.percentile(99),
                "persister_peak_rss_mb": self.persister_peak_rss_mb,
                "scheduler_peak_rss_mb": self.scheduler_peak_rss_mb,
                "load_average_before": r.load_before[0], "load_average_after": self.load_after[0]}


@dataclass
class ScaleReport:
    options: ScaleOptions
    rates: list[RateRow] = field(default_factory=list)
    groups: list[GroupReport] = field(default_factory=list)
    scheduler_groups: list[SchedulerGroupReport] = field(default_factory=list)
    growth: GrowthReport = field(default_factory=GrowthReport)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


async def run_scale(settings: Settings, options: ScaleOptions, progress: Callable[[str], None]) -> ScaleReport:
    report = ScaleReport(options, load_before=os.getloadavg())
    for rate in options.rates:
        progress(f"offered {rate:,}/s for {options.seconds:g} s (emitter, persister, scheduler, reader)")
        bench = SchedulerBenchReport(SchedulerBenchOptions(rates=(rate,), seconds=options.seconds))
        with ProcessSampler().running() as sampler:
            async with scratch_pipeline(settings, readiness_topics) as (topics, db_url):
                await measure_latency(settings, bench.options, topics, db_url, bench, rate=rate)
        r = bench.latency[-1]
        row = RateRow(rate, r, sampler.peak_rss_mb("persister"), sampler.peak_rss_mb("scheduler"), os.getloadavg())
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
