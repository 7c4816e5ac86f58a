"""`bench emit --mode latency` end to end, small: every offered command is receipted and timed."""

from __future__ import annotations

import math

from assetbus.benchmarks.emit import EmitBenchOptions, run_emit_benchmark
from assetbus.settings import Settings


async def test_the_latency_run_times_every_command_offered_after_the_warm_up(infra: Settings) -> None:
    options = EmitBenchOptions(modes=("latency",), rates=(200,), seconds=2.0, warmup_s=0.5, in_flight=1_000)
    report = await run_emit_benchmark(infra, options)
    assert report.runs == []
    (run,) = report.latency
    assert run.rate == 200
    assert run.offered == 400
    assert run.accepted == 400
    assert 250 <= len(run.latencies_ms) <= 310  # the first half second is left out
    assert all(0 < ms < 60_000 for ms in run.latencies_ms)
    assert not math.isnan(run.p50_ms)
    assert run.p50_ms <= run.p99_ms <= run.max_ms
