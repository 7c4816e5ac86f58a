"""`assetbus bench all`: every benchmark at sizes that finish in minutes, as one set of named figures (the JSON
keys of `SuiteReport.figures`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assetbus.benchmarks.api import ApiBenchOptions, run_api_benchmark
from assetbus.benchmarks.conditions import conditions, run_conditions
from assetbus.benchmarks.emit import EmitBenchOptions, run_emit_benchmark
from assetbus.benchmarks.persister import BenchOptions
from assetbus.benchmarks.persister import run_benchmark as run_persister_benchmark
from assetbus.benchmarks.pg_ceiling import CeilingOptions, run_pg_ceiling
from assetbus.benchmarks.processes import ProcessSampler
from assetbus.benchmarks.scale import dags_run
from assetbus.benchmarks.scheduler import SchedulerBenchOptions
from assetbus.benchmarks.scheduler import run_benchmark as run_scheduler_benchmark
from assetbus.benchmarks.scratch import postgres_version
from assetbus.benchmarks.subscriber import SubscriberBenchOptions, run_subscriber_benchmark
from assetbus.settings import Settings


@dataclass(frozen=True)
class SuiteSizes:
    emit_count: int = 100_000
    persister_commands: int = 100_000
    scheduler_events: int = 20_000
    rates: tuple[int, ...] = (1_000, 5_000, 50)
    """Offered emissions/s for the latency runs; the first one gives the latency keys without a suffix, the others
    the same keys with `_at_<rate>` (`readiness_p50_ms_at_50`: the light load, where no backlog hides
    the path's own waits)."""
    latency_seconds: float = 10.0
    dag_counts: tuple[int, int] = (1, 1_000)
    """Consumer DAGs registered in the two runs whose events/s make `scheduler_1000_dags_over_1_dag`."""
    dag_events: int = 20_000
    subscriber_signals: int = 20_000
    api_requests: int = 2_000
    api_emits: int = 500
    api_concurrency: int = 16

    @classmethod
    def smoke(cls) -> SuiteSizes:
        """Tiny sizes: every benchmark runs and every key gets a number, in well under a minute."""
        return cls(emit_count=500, persister_commands=1_000, scheduler_events=4_500, rates=(1_000,),
                   latency_seconds=1.5, dag_counts=(1, 3), dag_events=4_000, subscriber_signals=500, api_requests=20,
                   api_emits=5, api_concurrency=4)


@dataclass
class SuiteReport:
    figures: dict[str, float] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)


async def run_suite(settings: Settings, sizes: SuiteSizes, progress: Callable[[str], None]) -> SuiteReport:
    report = SuiteReport()
    load_before = os.getloadavg()
    shared = conditions()
    f = report.figures

    progress(f"1/5 emit: {sizes.emit_count:,} emissions, alone and with a persister answering")
    emitted = await run_emit_benchmark(settings, EmitBenchOptions(count=sizes.emit_count))
    for run in emitted.runs:
        if run.receipt_rate is None:
            f["emit_broker_per_s"] = run.broker_rate
            f["emit_cpu_us_per_emission"] = run.cpu_us_per_emission
        else:
            f["emit_receipted_per_s"] = run.receipt_rate
    progress(f"  emitter → broker {f['emit_broker_per_s']:,.0f}/s, stored and receipted "
             f"{f['emit_receipted_per_s']:,.0f}/s")

    progress(f"2/5 persister: {sizes.persister_commands:,} pre-loaded commands of 1 KiB")
    with ProcessSampler(infra=True).running() as sampler:
        p = await run_persister_benchmark(settings, BenchOptions(commands=sizes.persister_commands))
    f["receipted_per_s"] = p.events_per_s
    progress(f"2b/5 PostgreSQL's own rate for the same write (the ceiling), {sizes.persister_commands:,} rows")
    ceiling = await run_pg_ceiling(settings, CeilingOptions(rows=sizes.persister_commands), progress)
    f.update(ceiling.figures())
    f["persister_share_of_pg_ceiling"] = p.events_per_s / ceiling.rows_per_s if ceiling.rows_per_s else 0.0
    f["persister_peak_rss_mb"] = p.peak_rss_mb
    f["persister_cpu_us_per_event"] = p.run_cpu_s / max(p.stored, 1) * 1e6
    if persisters := sampler.by_role("persister"):
        end = persisters[-1].samples[-1].at
        kafka_s, postgres_s = sampler.infra_cpu_between(end - p.run_s, end)
        f["kafka_cpu_us_per_event"] = kafka_s / max(p.stored, 1) * 1e6
        f["postgres_cpu_us_per_event"] = postgres_s / max(p.stored, 1) * 1e6
    progress(f"  {p.events_per_s:,.0f} events/s durable + receipted, peak RSS {p.peak_rss_mb:.0f} MB; the ceiling "
             f"{ceiling.rows_per_s:,.0f} rows/s, so {f['persister_share_of_pg_ceiling']:.2f} of it")

    first, *more = sizes.rates
    progress(f"3/5 scheduler: {sizes.scheduler_events:,} pre-loaded events, then {first:,}/s offered for "
             f"{sizes.latency_seconds:g} s" + "".join(f", then {r:,}/s" for r in more))
    with ProcessSampler().running() as sampler:
        s = await run_scheduler_benchmark(settings, SchedulerBenchOptions(
            events=sizes.scheduler_events, rates=sizes.rates, seconds=sizes.latency_seconds))
    f.update(s.summary())
    f["scheduler_peak_rss_mb"] = max(s.peak_rss_mb, sampler.peak_rss_mb("scheduler"))
    for at_rate in s.latency:
        suffix = "" if at_rate.rate == first else f"_at_{at_rate.rate}"
        f[f"receipt_p50_ms{suffix}"] = at_rate.percentile(50, receipts=True)
        f[f"receipt_p99_ms{suffix}"] = at_rate.percentile(99, receipts=True)
        f[f"readiness_p50_ms{suffix}"] = at_rate.percentile(50)
        f[f"readiness_p99_ms{suffix}"] = at_rate.percentile(99)
    progress(f"  scheduler {s.throughput.events_per_s:,.0f} events/s; at {first:,}/s receipt p99 "
             f"{f['receipt_p99_ms']:.0f} ms, readiness p99 {f['readiness_p99_ms']:.0f} ms")

    f["scheduler_share_of_persister"] = s.throughput.events_per_s / p.events_per_s if p.events_per_s else 0.0
    few, many = sizes.dag_counts
    progress(f"3b/5 scheduler with {few:,} and {many:,} consumer DAGs registered, {sizes.dag_events:,} events each")
    by_dags = [await dags_run(settings, n, sizes.dag_events) for n in sizes.dag_counts]
    for dags in by_dags:
        f[f"scheduler_events_per_s_with_{dags.dags}_dags"] = dags.run.events_per_s
        f[f"scheduler_cpu_us_per_event_with_{dags.dags}_dags"] = dags.run.cpu_us_per_event
    one, thousand = (dags.run for dags in by_dags)
    f["scheduler_1000_dags_over_1_dag"] = thousand.events_per_s / one.events_per_s if one.events_per_s else 0.0
    progress(f"  {one.events_per_s:,.0f} events/s at {few:,} DAG(s), {thousand.events_per_s:,.0f} at {many:,}: "
             f"{f['scheduler_1000_dags_over_1_dag']:.2f}")

    progress(f"4/5 readiness subscriber (SDK): {sizes.subscriber_signals:,} signals on the topic, a no-op handler")
    sub = await run_subscriber_benchmark(settings, SubscriberBenchOptions(signals=sizes.subscriber_signals))
    f.update(sub.figures())
    progress(f"  {sub.events_per_s:,.0f} signals/s, {sub.cpu_us_per_event:,.1f} µs CPU per signal")

    progress(f"5/5 api: {sizes.api_requests:,} state requests and {sizes.api_emits:,} HTTP emits, "
             f"1 client and {sizes.api_concurrency}")
    with ProcessSampler().running() as sampler:
        a = await run_api_benchmark(settings, ApiBenchOptions(
            requests=sizes.api_requests, concurrency=sizes.api_concurrency, emits=sizes.api_emits))
    n = sizes.api_concurrency
    f.update(a.figures())
    for key, phase in (("api_put", "put"), ("api_get", "get"), ("http_emit", "emit"), ("api_get_1_client", "get1")):
        row = a.phase(phase)
        f[f"{key}_per_s"], f[f"{key}_p50_ms"], f[f"{key}_p99_ms"] = row.per_s, row.p50_ms, row.p99_ms
        f[f"{key}_api_cpu_us"] = row.api_cpu_us
    f["api_peak_rss_mb"] = sampler.peak_rss_mb("api")
    progress(f"  GET {f['api_get_per_s']:,.0f}/s, PUT {f['api_put_per_s']:,.0f}/s, "
             f"HTTP emit {f['http_emit_per_s']:,.0f}/s ({n} clients)")

    report.conditions = {
        **run_conditions(settings, shared, await postgres_version(settings.database_url), load_before),
        "libraries": shared["libraries"],
        "emit_command_bytes": emitted.message_bytes,
        "persister_command_bytes": p.command_bytes,
        "offered_rates_per_s": list(sizes.rates),
        "latency_seconds_per_rate": sizes.latency_seconds,
        "sizes": {k: v for k, v in vars(sizes).items() if k != "rates"},
    }
    return report
