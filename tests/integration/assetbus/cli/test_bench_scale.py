"""`assetbus bench scale` and `assetbus bench soak` at tiny sizes: they run and their JSON line holds the figures.

Smoke runs, not timed tests: nothing here asserts a speed. Each run makes (and drops) its own topic
prefix and database.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from assetbus.settings import Settings


async def _bench(infra: Settings, *args: str) -> tuple[Any, str]:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": infra.database_url,
           "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "bench", *args, "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 240)
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1]), err.decode()


async def test_bench_scale_measures_each_rate_and_each_group_size(infra: Settings) -> None:
    figures, stderr = await _bench(infra, "scale", "--rates", "400", "--seconds", "1.5", "--persisters", "1,2",
                                   "--commands", "600")
    [rate] = figures["rates"]
    assert rate["offered_per_s"] == 400 and rate["emitted"] == 600
    assert 0 < rate["receipt_p50_ms"] <= rate["receipt_p99_ms"]
    assert 0 < rate["readiness_p50_ms"] <= rate["readiness_p99_ms"]
    assert rate["persister_peak_rss_mb"] > 0 and rate["scheduler_peak_rss_mb"] > 0
    assert [g["persisters"] for g in figures["persisters"]] == [1, 2]
    assert all(g["commands"] == 600 and g["events_per_s"] > 0 for g in figures["persisters"])
    assert "2 persister process(es) in one group" in stderr


async def test_bench_scale_measures_each_scheduler_group_size(infra: Settings) -> None:
    figures, stderr = await _bench(infra, "scale", "--rates", "", "--persisters", "", "--schedulers", "1,2",
                                   "--scheduler-events", "600")
    assert figures["rates"] == [] and figures["persisters"] == []
    assert [g["schedulers"] for g in figures["schedulers"]] == [1, 2]
    assert all(g["events"] == 600 and g["events_per_s"] > 0 and g["cpu_us_per_event"] > 0
               for g in figures["schedulers"])
    assert "2 scheduler process(es) in one group" in stderr


async def test_bench_soak_samples_windows_until_every_event_is_signalled(infra: Settings) -> None:
    report, stderr = await _bench(infra, "soak", "--events", "600", "--rate", "300", "--interval", "1")
    assert report["emitted"] == report["receipted"] == report["signalled"] == 600
    windows = report["windows"]
    assert len(windows) >= 2 and windows[-1]["signalled"] == 600
    assert [w["at_s"] for w in windows] == sorted(w["at_s"] for w in windows)
    assert all(w["persister_rss_mb"] > 0 and w["scheduler_rss_mb"] > 0 for w in windows)
    assert report["load_average_before"] and report["load_average_after"]
    assert "signalled 600" in stderr


async def test_bench_scale_smoke_measures_dags_partitions_and_a_replayed_backlog(infra: Settings) -> None:
    figures, stderr = await _bench(infra, "scale", "--smoke")
    assert figures["rates"] == [] and figures["persisters"] == []
    assert [d["dags"] for d in figures["dags"]] == [1, 3]
    assert [d["matching_per_event"] for d in figures["dags"]] == [1, 2]
    assert all(d["events"] > 0 and d["events_per_s"] > 0 and d["cpu_us_per_event"] > 0 and d["peak_rss_mb"] > 0
               for d in figures["dags"])
    assert [p["partitions"] for p in figures["partitions"]] == [100, 1_000]
    for row in figures["partitions"]:
        assert 0 < row["readiness_p50_ms"] <= row["readiness_p99_ms"]
        # the stored history, plus the run's own events (and its warm-up)
        assert row["tables"]["asset_events"]["rows"] > row["partitions"]
        assert row["tables"]["consumer_runs"]["rows"] > row["partitions"]
        assert row["tables"]["partition_queue"]["rows"] >= row["partitions"]
    [backlog] = figures["backlog"]
    assert backlog["events"] == 500 and backlog["runs_created"] == 500
    assert backlog["events_per_s"] > 0 and backlog["peak_rss_mb"] > 0
    assert "1,000 partitions stored" in stderr and "500 stored events replayed" in stderr
