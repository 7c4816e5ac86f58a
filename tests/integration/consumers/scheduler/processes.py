"""`assetbus run scheduler` as a real child process, for the tests that kill it."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from assetbus.schemas import Topics


async def start_scheduler(bootstrap: str, db_url: str, topics: Topics, log: Path) -> asyncio.subprocess.Process:
    """A scheduler in the test's group (`<prefix>-sched`), small batches, 1 s republishing; output to `log`."""
    env = {**os.environ, "KAFKA_BOOTSTRAP_SERVERS": bootstrap, "DATABASE_URL": db_url,
           "ASSETBUS_TOPIC_PREFIX": topics.prefix}
    with log.open("ab") as out:
        return await asyncio.create_subprocess_exec(
            str(Path(sys.executable).parent / "assetbus"), "run", "scheduler", "--group-id", f"{topics.prefix}-sched",
            "--session-timeout-ms", "6000", "--max-records", "50", "--republish-interval-s", "1",
            env=env, stdout=out, stderr=out)
