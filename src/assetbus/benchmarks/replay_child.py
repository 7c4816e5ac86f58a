"""`python -m assetbus.benchmarks.replay_child DAG_ID`: replay one consumer DAG over every stored event, nothing
published, on `DATABASE_URL`; prints `{"scanned", "runs", "seconds"}` (the replay's own time, without the
start-up). `bench scale --backlog` runs it as a process of its own, so that its RSS is the replay's."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time

from assetbus.consumers.scheduler import ConsumerDag, ReplayRange, replay
from assetbus.consumers.storage import create_engine
from assetbus.consumers.storage.dags import get_dag


async def main(dag_id: str) -> int:
    engine = create_engine(os.environ["DATABASE_URL"])
    try:
        async with engine.connect() as conn:
            row = await get_dag(conn, dag_id)
        if row is None:
            print(f"no consumer DAG {dag_id!r}", file=sys.stderr)
            return 1
        started = time.perf_counter()
        report = await replay(engine, ConsumerDag.from_definition(row.definition), ReplayRange())
        print(json.dumps({"scanned": report.scanned, "runs": report.runs,
                          "seconds": time.perf_counter() - started}))
        return 0
    finally:
        await engine.dispose()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
