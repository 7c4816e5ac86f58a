"""A small run of `assetbus bench api`: it drives the real services and returns the figures bench all reports."""

from __future__ import annotations

from assetbus.benchmarks.api import ApiBenchOptions, run_api_benchmark
from assetbus.settings import Settings


async def test_the_api_benchmark_returns_its_figures(infra: Settings) -> None:
    report = await run_api_benchmark(infra, ApiBenchOptions(requests=40, concurrency=4, emits=20))
    figures = report.figures()
    assert set(figures) == {"api_get_per_s", "api_get_p99_ms", "api_put_per_s", "api_put_p99_ms",
                            "http_emit_per_s", "http_emit_p99_ms"}
    assert all(value > 0 for value in figures.values())
    assert [p.name for p in report.phases] == ["put1", "get1", "put", "get", "emit1", "emit"]
    # The kernel counts a process's CPU in clock ticks (10 ms): a phase of 40 requests can fall between two
    # ticks and read 0, so each phase is only non-negative, and the run as a whole must have been measured.
    assert all(p.api_cpu_us >= 0 and p.client_cpu_us >= 0 for p in report.phases)
    assert sum(p.api_cpu_us for p in report.phases) > 0 and sum(p.client_cpu_us for p in report.phases) > 0
