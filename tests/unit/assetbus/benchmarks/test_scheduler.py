"""The scheduler benchmark's result object: the flat figures `bench all --json` reads."""

from __future__ import annotations

from assetbus.benchmarks.scheduler import BacklogRun, LatencyRun, SchedulerBenchOptions, SchedulerBenchReport


def test_summary_names_readiness_at_1000_per_s_without_a_suffix_and_other_rates_with_one() -> None:
    report = SchedulerBenchReport(SchedulerBenchOptions(), throughput=BacklogRun(10_000, 2.0, 0.5, 150.04),
                                  peak_rss_mb=150.04,
                                  latency=[LatencyRun(1_000, latencies_ms=[float(i) for i in range(1, 101)]),
                                           LatencyRun(5_000, latencies_ms=[7.0])])
    assert report.summary() == {
        "scheduler_events_per_s": 5000.0, "scheduler_cpu_us_per_event": 50.0, "scheduler_peak_rss_mb": 150.0,
        "readiness_p50_ms": 51.0, "readiness_p99_ms": 99.0,
        "readiness_p50_ms_at_5000": 7.0, "readiness_p99_ms_at_5000": 7.0}


def test_a_report_without_events_has_no_rate() -> None:
    report = SchedulerBenchReport(SchedulerBenchOptions())
    assert report.throughput.events_per_s == 0.0 and not report.latency
