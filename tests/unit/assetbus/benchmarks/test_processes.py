"""The process sampler finds a benchmark's services by command line and reads their RSS and CPU."""

from __future__ import annotations

import asyncio
import sys

from assetbus.benchmarks.processes import ProcessSampler, Sample, Sampled, _role


def test_a_service_is_named_by_the_word_after_run() -> None:
    assert _role(["/venv/bin/python", "/venv/bin/assetbus", "run", "persister", "--group-id", "g"]) == "persister"
    assert _role(["python", "-c", "from assetbus.cli.main import main; main()", "run", "api"]) == "api"
    assert _role(["python", "-m", "pytest", "run"]) is None
    assert _role(["assetbus", "run", "demo"]) is None


def test_cpu_between_uses_the_samples_inside_the_window() -> None:
    sampled = Sampled("scheduler", 1, [Sample(0.0, 100, 1.0), Sample(1.0, 120, 1.5), Sample(2.0, 110, 2.5)])
    assert sampled.cpu_between(0.5, 2.0) == 1.0
    assert sampled.cpu_between(0.0, 0.5) == 0.0  # one sample: nothing measured
    assert sampled.peak_rss_mb == 120


async def test_a_running_child_service_is_sampled() -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import time; x = bytearray(50 * 2**20); time.sleep(30)", "run", "scheduler")
    try:
        sampler = ProcessSampler(interval_s=0.05)
        # other tests' services may still be children of this pytest process: look at ours only
        def mine() -> list[Sampled]:
            return [p for p in sampler.by_role("scheduler") if p.pid == child.pid]

        with sampler.running():
            for _ in range(200):
                if any(p.peak_rss_mb >= 50 for p in mine()):
                    break
                await asyncio.sleep(0.05)
        ours = mine()
        assert len(ours) == 1 and ours[0].peak_rss_mb >= 50
        assert child.pid not in {p.pid for p in sampler.by_role("persister")}
    finally:
        child.kill()
        await child.wait()
