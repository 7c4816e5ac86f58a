"""`assetbus bench airflow --smoke --json`: one run with a real Airflow 3 on PostgreSQL measures every path, and
leaves no database behind.

A dedicated run at tiny sizes (the session's Airflow of tests/integration/airflow runs on SQLite with other
DAGs; the benchmark starts its own stack once, as users run it). Most of its time is Airflow's start.
Benchmarks are not timed tests: nothing here asserts a speed, only that each figure is there and sane.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from pathlib import Path

import asyncpg
import pytest

from assetbus.settings import Settings
from tests.bench_figures import AIRFLOW_REQUIRED as REQUIRED
from tests.conftest import _plain_dsn
from tests.integration.airflow.stack import require_airflow_venv

pytestmark = [pytest.mark.airflow, pytest.mark.timeout(900)]


async def databases(admin: str) -> set[str]:
    conn = await asyncpg.connect(admin)
    try:
        return {row["datname"] for row in await conn.fetch("SELECT datname FROM pg_database")}
    finally:
        await conn.close()


async def test_bench_airflow_smoke_prints_every_figure_and_drops_airflows_database(infra: Settings) -> None:
    require_airflow_venv()
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": infra.database_url,
           "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "bench", "airflow", "--smoke", "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 840)
    stdout, stderr = out.decode(), err.decode()
    assert process.returncode == 0, stderr

    last = stdout.strip().splitlines()[-1]
    figures = json.loads(last)
    for key in REQUIRED:
        value = figures[key]
        assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (key, value)
    for key in REQUIRED:
        if key.endswith("_ms"):
            assert figures[key] < 300_000, (key, figures[key])  # latencies measured in ms, not s or µs
    # each native run follows the forwarded event that triggered it, so every order statistic does too
    assert figures["airflow_native_run_p50_ms"] >= figures["airflow_event_p50_ms"]
    assert figures["airflow_native_run_p99_ms"] >= figures["airflow_event_p99_ms"]
    assert figures["airflow_event_p50_ms"] <= figures["airflow_event_p99_ms"]

    conditions = figures["conditions"]
    assert conditions["metadata_db"].startswith("PostgreSQL")
    assert conditions["airflow_settings"]["core.executor"] == "LocalExecutor"
    assert conditions["airflow_settings"]["scheduler.scheduler_idle_sleep_time"]
    assert conditions["cores"] == os.cpu_count()
    assert conditions["sizes"] == {"samples": 3, "partitions": 5, "warmup": 1}
    assert conditions["metadata_database"] not in await databases(_plain_dsn(infra.database_url))

    table = stdout.split(last)[0]
    assert "Airflow's own path" in table and "runs per second" in table and "LocalExecutor" in table
    assert "latency:" in stderr and "runs/s through the bridge" in stderr  # progress on stderr, as it runs
