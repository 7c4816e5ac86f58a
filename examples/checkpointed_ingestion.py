"""A checkpointed ingestion task: process batches, emit readiness per batch, checkpoint in task state.

Killed at any point and restarted as a new try (a new token for the same task instance), it
resumes after the last committed batch. A batch whose emission went out but whose checkpoint did
not is emitted again with the same dedupe key (`batch-<n>`), and the persister answers
`duplicate`: every batch becomes exactly one event. The checkpoint is written with
compare-and-set, so a zombie of the previous try cannot silently overwrite the new one's progress.
At the end the asset's cross-run watermark (asset state) says which partition is complete.

    export ASSETBUS_TOKEN=$(assetbus token issue --dag ingest --run 2026-10-01 --task load_orders --try 1)
    python examples/checkpointed_ingestion.py --batches 8 --out /tmp/orders

Configuration: ASSETBUS_TOKEN (from the task runner), ASSETBUS_API_URL (http://127.0.0.1:8321),
KAFKA_BOOTSTRAP_SERVERS (127.0.0.1:19092), ASSETBUS_TOPIC_PREFIX (assetbus). The task must be
registered as an outlet of the asset (`assetbus assets attach ... --role outlet`) for the watermark.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import jwt

from assetbus.producers import AsyncEmitter
from assetbus.producers.state import AsyncStateClient, StateConflict
from assetbus.schemas import AssetRef, Topics

CHECKPOINT = "last_committed_batch"


@dataclass(frozen=True)
class Job:
    token: str
    api_url: str
    bootstrap_servers: str
    topics: Topics
    asset: AssetRef
    partition: str
    batches: int
    batch_delay_s: float
    out: Path


def process_batch(job: Job, batch: int) -> Path:
    """The "work": write the batch's rows to a file. Idempotent, so redoing a batch after a kill is harmless."""
    rows = [{"order_id": batch * 1000 + i, "amount": (batch * 7 + i) % 97} for i in range(100)]
    path = job.out / f"{job.partition}-batch-{batch:04d}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows))
    tmp.replace(path)
    return path


async def ingest(job: Job) -> int:
    """Run (or resume) the task; returns the number of batches this try committed."""
    job.out.mkdir(parents=True, exist_ok=True)
    partition_date = datetime.fromisoformat(job.partition).replace(tzinfo=UTC)
    try_number = jwt.decode(job.token, options={"verify_signature": False}).get("try_number")
    async with AsyncStateClient(job.api_url, job.token) as state, \
            AsyncEmitter(job.bootstrap_servers, job.token, topics=job.topics, receipt_timeout_s=15) as emitter:
        entry = await state.task_state.get_entry(CHECKPOINT)
        last = entry.value["batch"] if entry is not None else -1
        version = entry.version if entry is not None else None
        print(f"try {try_number}: " + (f"resuming after batch {last}" if last >= 0 else "starting"),
              flush=True)
        committed = 0
        for batch in range(last + 1, job.batches):
            path = process_batch(job, batch)
            receipt = await emitter.emit(job.asset, extra={"batch": batch, "rows": 100, "path": str(path)},
                                         partition_key=job.partition, partition_date=partition_date,
                                         dedupe_key=f"batch-{batch}")
            checkpoint = {"batch": batch, "event_id": receipt.event_id}
            if version is None:
                saved = await state.task_state.set(CHECKPOINT, checkpoint, only_if_absent=True)
            else:
                saved = await state.task_state.set(CHECKPOINT, checkpoint, if_version=version)
            version = saved.version
            committed += 1
            print(f"batch {batch}: {receipt.status.value} event {receipt.event_id}, checkpoint v{version}",
                  flush=True)
            if job.batch_delay_s:
                await asyncio.sleep(job.batch_delay_s)
        await state.asset(job.asset).state.set("watermark", {"partition": job.partition, "batches": job.batches})
        print(f"done: {job.batches} batches of {job.partition}; watermark set", flush=True)
        return committed


def parse(argv: list[str]) -> Job:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-url", default=env.get("ASSETBUS_API_URL", "http://127.0.0.1:8321"))
    parser.add_argument("--bootstrap-servers", default=env.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:19092"))
    parser.add_argument("--topic-prefix", default=env.get("ASSETBUS_TOPIC_PREFIX", "assetbus"))
    parser.add_argument("--asset-name", default="orders")
    parser.add_argument("--asset-uri", default="s3://bucket/orders/")
    parser.add_argument("--partition", default="2026-10-01", help="The day being ingested (partition key).")
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-delay", type=float, default=0.0, help="Seconds to pause after each batch.")
    parser.add_argument("--out", type=Path, default=Path("ingested"))
    args = parser.parse_args(argv)
    token = env.get("ASSETBUS_TOKEN")
    if not token:
        parser.error("set ASSETBUS_TOKEN to the task's token (`assetbus token issue --dag ... --task ...`)")
    return Job(token=token, api_url=args.api_url, bootstrap_servers=args.bootstrap_servers,
               topics=Topics(prefix=args.topic_prefix), asset=AssetRef(name=args.asset_name, uri=args.asset_uri),
               partition=args.partition, batches=args.batches, batch_delay_s=args.batch_delay, out=args.out)


def main(argv: list[str] | None = None) -> int:
    job = parse(sys.argv[1:] if argv is None else argv)
    try:
        asyncio.run(ingest(job))
    except StateConflict as error:
        print(f"another try of this task moved the checkpoint ({error}); stopping", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
