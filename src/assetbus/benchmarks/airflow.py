"""Measured with real Airflow: emit → Airflow DAG run created (p50, p99), Airflow runs created per second
through the bridge, and, back to back, Airflow's own path (POST an asset event to Airflow's REST API →
the asset-triggered DAG run exists).

    python -m assetbus.benchmarks.airflow [--latency-samples 60] [--burst 200] [--native-samples 20]

Starts its own stack (`AirflowStack`: Airflow api-server, scheduler, dag-processor on SQLite, and
the assetbus persister, API and scheduler on a scratch database and topic prefix) and stops it.
The bridge target DAG stays paused: Airflow creates its runs but does not execute them, so the
figures are about run creation. Airflow's own path needs an unpaused DAG, so its runs execute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

from assetbus.benchmarks.conditions import conditions
from assetbus.benchmarks.scratch import create_database, drop_database
from assetbus.consumers.storage import create_engine
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

HERE = Path(__file__).parent
TARGET = "bench_bridge_target"
NATIVE = "bench_native_consumer"
ORDERS = AssetRef(name="bench_airflow.orders", uri="bench://airflow/orders")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _until(condition: Callable[[], Awaitable[object]], interval_s: float) -> None:
    while True:
        if await condition():
            return
        await asyncio.sleep(interval_s)


class Bench:
    def __init__(self, stack: AirflowStack) -> None:
        self.stack = stack
        self.engine = create_engine(stack.database_url)
        self.http = httpx.Client(base_url=f"{stack.airflow.url}/api/v2", timeout=60,
                                 headers={"Authorization": f"Bearer {stack.airflow_token()}"})

    async def recorded(self, keys: set[str]) -> set[str]:
        """Which of these partitions have their Airflow run created (the bridge recorded its id)."""
        async with self.engine.connect() as conn:
            rows = await conn.execute(text("SELECT partition_key FROM consumer_runs WHERE dag_id = :d AND "
                                           "external_run_id IS NOT NULL AND partition_key = ANY(:k)"),
                                      {"d": TARGET, "k": list(keys)})
            return {row.partition_key for row in rows}

    async def latency(self, emitter: AsyncEmitter, samples: int) -> list[float]:
        """One emit at a time: from the emit call until Airflow has created the run."""
        found = []
        for i in range(samples):
            key = f"lat-{uuid.uuid4().hex[:6]}-{i}"
            start = time.perf_counter()
            await emitter.emit(ORDERS, partition_key=key)
            await _until(lambda key=key: self.recorded({key}), 0.01)  # type: ignore[misc]
            found.append(time.perf_counter() - start)
        return found

    async def burst(self, emitter: AsyncEmitter, count: int) -> tuple[float, float]:
        """`count` partitions ready while no bridge runs; then one bridge creates their runs.
        Returns (runs per second from the first created to the last, seconds from bridge start to last)."""
        self.stack.stop_service("bridge")
        keys = {f"burst-{uuid.uuid4().hex[:6]}-{i}" for i in range(count)}
        for key in keys:
            await emitter.emit_nowait(ORDERS, partition_key=key)
        async def queued() -> bool:
            async with self.engine.connect() as conn:
                found = (await conn.execute(text("SELECT count(*) FROM consumer_runs WHERE dag_id = :d AND "
                                                 "partition_key = ANY(:k)"), {"d": TARGET, "k": list(keys)})).scalar()
            return bool(found == count)

        await _until(queued, 0.05)
        started = time.perf_counter()
        self.stack.service("bridge", "airflow-bridge", "--dag", TARGET)
        first: float | None = None
        while len(done := await self.recorded(keys)) < count:
            if done and first is None:
                first = time.perf_counter()
            await asyncio.sleep(0.02)
        last = time.perf_counter()
        first = first or last
        return (count - 1) / max(last - first, 1e-6), last - started

    def native(self, samples: int) -> list[float]:
        """Airflow's own path: POST /assets/events, then wait until the asset-triggered run exists."""
        asset = self.http.get("/assets", params={"name_pattern": "bench_airflow.native"}).json()["assets"][0]
        found = []
        for _ in range(samples):
            before = self.http.get(f"/dags/{NATIVE}/dagRuns", params={"limit": 1}).json()["total_entries"]
            start = time.perf_counter()
            posted = self.http.post("/assets/events", json={"asset_id": asset["id"], "extra": {}})
            if posted.status_code >= 500:  # a busy SQLite: this sample is not a measurement
                print(f"POST /assets/events answered {posted.status_code}: {posted.text[:200]}", file=sys.stderr)
                continue
            while self.http.get(f"/dags/{NATIVE}/dagRuns", params={"limit": 1}).json()["total_entries"] <= before:
                time.sleep(0.02)
            found.append(time.perf_counter() - start)
        return found

    def close(self) -> None:
        self.http.close()


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    settings = Settings()
    home = Path(tempfile.mkdtemp(prefix="assetbus-bench-airflow-"))
    dags, definitions = home / "dags", home / "consumers"
    shutil.copytree(HERE / "airflow_dags", dags, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(HERE / "airflow_consumers", definitions, ignore=shutil.ignore_patterns("__pycache__"))
    name = f"assetbus_bench_af_{uuid.uuid4().hex[:8]}"
    database_url = await create_database(settings.database_url, name)
    topics = Topics(prefix=f"bench{uuid.uuid4().hex[:8]}")
    await ensure_topics(settings.kafka, topics)
    secret = uuid.uuid4().hex
    stack = AirflowStack(home=home, dags_folder=dags, consumer_definitions=definitions,
                         bootstrap_servers=settings.bootstrap_servers, database_url=database_url,
                         topic_prefix=topics.prefix, token_secret=secret, dag_ids=(TARGET, NATIVE))
    try:
        await asyncio.to_thread(stack.start)
        bench = Bench(stack)
        bench.http.patch(f"/dags/{TARGET}", json={"is_paused": True}).raise_for_status()
        bench.http.patch(f"/dags/{NATIVE}", json={"is_paused": False}).raise_for_status()
        stack.service("bridge", "airflow-bridge", "--dag", TARGET)
        token = task_token(secret, "bench_upstream", "r1", "load")
        async with AsyncEmitter(settings.bootstrap_servers, token, topics=topics, receipt_timeout_s=30) as emitter:
            await bench.latency(emitter, 3)  # warm-up: group join, connections
            latencies = await bench.latency(emitter, args.latency_samples)
            print("latency (s):", json.dumps([round(v, 3) for v in latencies]), file=sys.stderr, flush=True)
            rate, burst_s = await bench.burst(emitter, args.burst)
            print(f"burst: {rate:.2f} runs/s, {burst_s:.1f} s", file=sys.stderr, flush=True)
        native = await asyncio.to_thread(bench.native, args.native_samples)
        bench.close()
        await bench.engine.dispose()
    finally:
        stack.stop()
        await drop_database(settings.database_url, name)
        await delete_topics(settings.kafka, [*topics.core(), topics.readiness(TARGET)])
        shutil.rmtree(home, ignore_errors=True)
    ms = [v * 1000 for v in latencies]
    native_ms = [v * 1000 for v in native]
    return {
        "emit → Airflow run created (assetbus bridge)": {
            "samples": len(ms), "p50_ms": round(statistics.median(ms)), "p99_ms": round(_percentile(ms, 0.99)),
            "max_ms": round(max(ms))},
        "Airflow runs created per second through one bridge": {
            "runs": args.burst, "runs_per_s": round(rate, 1), "bridge start → last run s": round(burst_s, 1)},
        "Airflow's own path: POST /api/v2/assets/events → asset-triggered run exists": {
            "samples": len(native_ms), "p50_ms": round(statistics.median(native_ms)),
            "p99_ms": round(_percentile(native_ms, 0.99)), "max_ms": round(max(native_ms))},
        "conditions": {**conditions(), "airflow": "apache-airflow 3.3.2, SQLite, LocalExecutor, one scheduler, "
                       "api-server with 1 worker, scheduler_idle_sleep_time 0.2 s"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency-samples", type=int, default=60)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--native-samples", type=int, default=20)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stop the stack on SIGTERM too
    print(json.dumps(asyncio.run(measure(parser.parse_args())), indent=2))


if __name__ == "__main__":
    main()
