"""`assetbus demo` (what `make demo` runs) tells its story end to end and exits 0, twice in a row."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from assetbus.demo.actors import FIRST_BATCH, batch_hours
from assetbus.schemas import Topics
from assetbus.settings import Settings


async def test_the_demo_runs_end_to_end_and_can_run_again(infra: Settings, db_url: str, topics: Topics,
                                                         token_secret: str, readiness_cleanup: None) -> None:
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": infra.bootstrap_servers, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix, "ASSETBUS_TOKEN_SECRET": token_secret, "COLUMNS": "200"}
    for _ in range(2):
        process = await asyncio.create_subprocess_exec(str(Path(sys.executable).parent / "assetbus"), "demo", env=env,
                                                       stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(process.communicate(), 120)
        text = out.decode()
        assert process.returncode == 0, text
        # The producer is at least two batches ahead; how far depends on the machine's speed.
        overlap = re.search(r"done with batch 41 while the producer is writing batch (\d+)", text)
        assert overlap is not None and FIRST_BATCH + 3 <= int(overlap[1]) < FIRST_BATCH + len(batch_hours()), text
        assert "duplicate of event" in text and "DAG-level: no task" in text
        assert "demo.orders_daily" in text and "2026-10-02 waits: demo.orders 2/24 hours" in text
