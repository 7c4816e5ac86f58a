"""`assetbus bench all --smoke --json`: every benchmark runs and its JSON line has every figure.

A smoke run at tiny sizes, so the command cannot silently break; benchmarks are not timed tests, so
nothing here asserts a speed. Each benchmark makes (and drops) its own topic prefix and database.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import sys
from pathlib import Path

from assetbus.settings import Settings
from tests.bench_figures import SUITE_REQUIRED as REQUIRED


async def test_bench_all_smoke_prints_every_figure_as_the_last_json_line(infra: Settings) -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": infra.database_url,
           "COLUMNS": "200"}
    process = await asyncio.create_subprocess_exec(
        str(Path(sys.executable).parent / "assetbus"), "bench", "all", "--smoke", "--json", env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(process.communicate(), 240)
    stdout, stderr = out.decode(), err.decode()
    assert process.returncode == 0, stderr

    figures = json.loads(stdout.strip().splitlines()[-1])
    for key in REQUIRED:
        value = figures[key]
        assert isinstance(value, int | float) and math.isfinite(value) and value > 0, (key, value)
    conditions = figures["conditions"]
    assert conditions["cores"] == os.cpu_count()
    assert len(conditions["load_average_before"]) == len(conditions["load_average_after"]) == 3
    assert conditions["offered_rates_per_s"] == [1000]
    assert conditions["postgresql"] and conditions["kafka"]

    assert all(f"{n}/5 " in stderr for n in range(1, 6)), stderr  # progress on stderr, as it runs
    assert "receipted_per_s" in stdout.split(stdout.strip().splitlines()[-1])[0]  # the table before the JSON
