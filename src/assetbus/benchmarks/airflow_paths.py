"""The paths `assetbus bench airflow` measures, against a running `AirflowStack`.

Every latency starts at the emitting call (or, on Airflow's own path, at the REST POST) on this machine's
wall clock, and ends at the time Airflow itself recorded: the asset event's `timestamp`, the run's
`queued_at` (both set when the row is made, on the same clock). Airflow is polled only to learn that
the row is there, every `poll_s`, so the polling interval is not in the figures and the polls are few.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import AsyncEmitter
from assetbus.schemas import AssetRef

T = TypeVar("T")

ORDERS = AssetRef(name="bench_airflow.orders", uri="bench://airflow/orders")
"""Emitted through assetbus; the assetbus scheduler makes a run of `BRIDGE_DAG` per partition, the bridge
creates it in Airflow."""
FORWARDED = AssetRef(name="bench_airflow.forwarded", uri="bench://airflow/forwarded")
"""Emitted through assetbus, forwarded to Airflow; `FORWARDED_DAG` has `schedule=[asset]`."""
NATIVE = AssetRef(name="bench_airflow.native", uri="bench://airflow/native")
"""POSTed to Airflow's REST API by the benchmark (Airflow's own path); `NATIVE_DAG` has `schedule=[asset]`."""
PARTITIONS = AssetRef(name="bench_airflow.partitions", uri="bench://airflow/partitions")
"""Emitted through assetbus with partition keys, forwarded; `PARTITIONS_DAG` has a `PartitionedAssetTimetable`."""
BRIDGE_DAG = "bench_bridge_target"
FORWARDED_DAG = "bench_forwarded_consumer"
NATIVE_DAG = "bench_native_consumer"
PARTITIONS_DAG = "bench_native_partitions"
DAG_IDS = (BRIDGE_DAG, FORWARDED_DAG, NATIVE_DAG, PARTITIONS_DAG)


def airflow_time(value: str) -> float:
    """An Airflow timestamp (ISO 8601, with its offset) as seconds since the epoch."""
    return datetime.fromisoformat(value).timestamp()


@dataclass
class Round:
    """One sample of each latency path, in seconds (None: that sample was not measured)."""

    event: float | None = None
    """emit → the forwarded asset event exists in Airflow."""
    native_run: float | None = None
    """emit → Airflow's own scheduling made the `schedule=[asset]` run."""
    bridge_run: float | None = None
    """emit → the bridge made the run."""
    rest_run: float | None = None
    """POST /assets/events → the asset-triggered run exists."""
    rest_post: float | None = None
    """How long Airflow took to answer the POST."""


@dataclass(frozen=True)
class Burst:
    """`runs` ready partitions, then one service started: how fast Airflow got their runs."""

    runs: int
    first_to_last_s: float
    """Between the first and the last run's `queued_at`."""
    start_to_last_s: float
    """From starting the service (a process start and a consumer-group join included) to the last run."""
    events_first_to_last_s: float | None = None
    """Native path: between the first and the last forwarded asset event's `timestamp`."""
    lag_ms: tuple[float, ...] = ()
    """Native path: each partition's asset event `timestamp` → its run's `queued_at` (Airflow's scheduling)."""

    @property
    def runs_per_s(self) -> float:
        return (self.runs - 1) / self.first_to_last_s if self.first_to_last_s > 0 else float("nan")

    @property
    def events_per_s(self) -> float:
        span = self.events_first_to_last_s
        return (self.runs - 1) / span if span else float("nan")


class AirflowPaths:
    """The measured paths, over one stack, one emitter and one Airflow REST client."""

    def __init__(self, stack: AirflowStack, emitter: AsyncEmitter, engine: AsyncEngine, *, bridge_concurrency: int,
                 poll_s: float = 0.1, timeout_s: float = 180.0) -> None:
        self.stack = stack
        self.emitter = emitter
        self.engine = engine
        self.bridge_concurrency = bridge_concurrency
        self.poll_s = poll_s
        self.timeout_s = timeout_s
        self.http = httpx.AsyncClient(base_url=f"{stack.airflow.url}/api/v2", timeout=60,
                                      headers={"Authorization": f"Bearer {stack.airflow.token()}"})
        self.asset_ids: dict[str, int] = {}
        self.skipped_posts: list[str] = []
        self.services: dict[str, subprocess.Popen[bytes]] = {}

    async def aclose(self) -> None:
        await self.http.aclose()

    async def get(self, path: str, **params: Any) -> Any:
        response = await self.http.get(path, params=params)
        response.raise_for_status()
        return response.json()

    async def wait(self, what: str, found: Callable[[], Awaitable[T | None]], timeout_s: float | None = None,
                   every_s: float | None = None) -> T:
        deadline = time.monotonic() + (timeout_s or self.timeout_s)
        while True:
            try:
                value = await found()
            except httpx.HTTPError:
                value = None
            if value is not None:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout_s or self.timeout_s:.0f}s waiting for {what}")
            self.check_services()
            await asyncio.sleep(every_s or self.poll_s)

    # Airflow's side

    async def start(self) -> None:
        """Every bench DAG unpaused, the Airflow ids of the assets known."""
        for dag_id in DAG_IDS:
            (await self.http.patch(f"/dags/{dag_id}", json={"is_paused": False})).raise_for_status()
        for asset in (FORWARDED, NATIVE, PARTITIONS):
            items = (await self.get("/assets", name_pattern=asset.name))["assets"]
            self.asset_ids[asset.name] = next(int(a["id"]) for a in items if a["name"] == asset.name)

    async def newest_run(self, dag_id: str) -> tuple[int, dict[str, Any] | None]:
        page = await self.get(f"/dags/{dag_id}/dagRuns", limit=1, order_by="-id")
        runs = page["dag_runs"]
        return int(page["total_entries"]), (runs[0] if runs else None)

    async def new_run(self, dag_id: str, before: int) -> dict[str, Any] | None:
        total, newest = await self.newest_run(dag_id)
        return newest if total > before else None

    async def runs(self, dag_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            page = await self.get(f"/dags/{dag_id}/dagRuns", limit=100, offset=len(found), order_by="id")
            found.extend(page["dag_runs"])
            if not page["dag_runs"] or len(found) >= page["total_entries"]:
                return found

    async def events(self, asset: AssetRef) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        while True:
            page = await self.get("/assets/events", asset_id=self.asset_ids[asset.name], limit=100,
                                  offset=len(found), order_by="timestamp")
            found.extend(page["asset_events"])
            if not page["asset_events"] or len(found) >= page["total_entries"]:
                return found

    async def forwarded_event(self, asset: AssetRef, event_id: int) -> dict[str, Any] | None:
        """Airflow's asset event that carries assetbus event `event_id` (the forwarder's `extra["assetbus"]`).
        Airflow answers 500 while the run the event triggered is queued (see `native_burst`): `wait` asks again,
        and the event's own timestamp is what is measured."""
        page = await self.get("/assets/events", asset_id=self.asset_ids[asset.name], limit=5,
                              order_by="-timestamp")
        for item in page["asset_events"]:
            ours = (item.get("extra") or {}).get("assetbus") or {}
            if ours.get("event_id") == event_id:
                return dict(item)
        return None

    # The latency paths, one sample each

    async def forwarded(self, sample: Round) -> None:
        """emit → the forwarder's asset event in Airflow, and → the `schedule=[asset]` run it triggers."""
        before, _ = await self.newest_run(FORWARDED_DAG)
        started = time.time()
        receipt = await self.emitter.emit(FORWARDED, extra={"bench": "forwarded"})
        assert receipt.event_id is not None
        run = await self.wait(f"Airflow to run {FORWARDED_DAG}", lambda: self.new_run(FORWARDED_DAG, before))
        event = await self.wait(f"the forwarded event {receipt.event_id} in Airflow",
                                lambda: self.forwarded_event(FORWARDED, receipt.event_id),  # type: ignore[arg-type]
                                every_s=0.25)
        sample.event = airflow_time(event["timestamp"]) - started
        sample.native_run = airflow_time(run["queued_at"]) - started

    async def bridged(self, sample: Round) -> None:
        """emit → the bridge's run of that partition in Airflow."""
        key = f"lat-{uuid.uuid4().hex[:10]}"
        started = time.time()
        await self.emitter.emit(ORDERS, partition_key=key)

        async def made() -> dict[str, Any] | None:
            _, newest = await self.newest_run(BRIDGE_DAG)
            return newest if newest is not None and newest.get("partition_key") == key else None

        run = await self.wait(f"the bridge's run of {key}", made)
        sample.bridge_run = airflow_time(run["queued_at"]) - started

    async def rest(self, sample: Round) -> None:
        """Airflow's own path: POST /assets/events → the asset-triggered run exists."""
        before, _ = await self.newest_run(NATIVE_DAG)
        started = time.time()
        posted = await self.http.post("/assets/events", json={"asset_id": self.asset_ids[NATIVE.name], "extra": {}})
        answered = time.time()
        if posted.status_code >= 500:  # a busy SQLite: this sample is not a measurement
            self.skipped_posts.append(f"{posted.status_code}: {posted.text[:200]}")
            return
        posted.raise_for_status()
        run = await self.wait(f"Airflow to run {NATIVE_DAG}", lambda: self.new_run(NATIVE_DAG, before))
        sample.rest_post = answered - started
        sample.rest_run = airflow_time(run["queued_at"]) - started

    # The throughput paths: ready partitions, then one service started

    async def _emit_all(self, asset: AssetRef, keys: Sequence[str]) -> None:
        futures = [await self.emitter.emit_nowait(asset, partition_key=key) for key in keys]
        receipts = await asyncio.gather(*futures)
        if rejected := [r for r in receipts if not r.accepted]:
            raise RuntimeError(f"{len(rejected)} of {len(keys)} emissions of {asset.name} rejected: {rejected[0]}")

    async def _ready(self, keys: Sequence[str]) -> bool | None:
        async with self.engine.connect() as conn:
            found = (await conn.execute(text("SELECT count(*) FROM consumer_runs WHERE dag_id = :d AND "
                                             "partition_key = ANY(:k)"), {"d": BRIDGE_DAG, "k": list(keys)})).scalar()
        return True if found == len(keys) else None

    async def _all_runs(self, dag_id: str, before: int, count: int, progress: Callable[[str], None]) -> None:
        last_said = time.monotonic()

        async def done() -> bool | None:
            nonlocal last_said
            total, _ = await self.newest_run(dag_id)
            if time.monotonic() - last_said > 10:
                progress(f"    {max(0, total - before):,} of {count:,} runs of {dag_id} in Airflow")
                last_said = time.monotonic()
            return True if total >= before + count else None

        await self.wait(f"{count} runs of {dag_id}", done, timeout_s=max(self.timeout_s, count * 3.0), every_s=0.25)

    async def bridge_burst(self, count: int, progress: Callable[[str], None]) -> Burst:
        """`count` partitions made ready by the assetbus scheduler while no bridge runs; then one bridge."""
        self.stop_service("bridge")
        keys = [f"burst-{uuid.uuid4().hex[:8]}-{i:05d}" for i in range(count)]
        await self._emit_all(ORDERS, keys)
        await self.wait(f"the assetbus scheduler to make {count} ready runs", lambda: self._ready(keys))
        before, _ = await self.newest_run(BRIDGE_DAG)
        progress(f"  {count:,} partitions ready in assetbus; starting the bridge (--concurrency "
                 f"{self.bridge_concurrency})")
        started = time.time()
        self.start_bridge()
        await self._all_runs(BRIDGE_DAG, before, count, progress)
        wanted = set(keys)
        queued = sorted(airflow_time(r["queued_at"]) for r in await self.runs(BRIDGE_DAG)
                        if r.get("partition_key") in wanted)
        if len(queued) != count:
            raise RuntimeError(f"the bridge made {len(queued)} runs for {count} partitions")
        return Burst(count, queued[-1] - queued[0], queued[-1] - started)

    async def native_burst(self, count: int, progress: Callable[[str], None]) -> Burst:
        """`count` partition-keyed events stored in assetbus while no forwarder runs for their asset; then one
        forwarder posts them, and Airflow's own partitioned scheduling makes a run per partition key."""
        keys = [f"burst-{uuid.uuid4().hex[:8]}-{i:05d}" for i in range(count)]
        await self._emit_all(PARTITIONS, keys)
        before, _ = await self.newest_run(PARTITIONS_DAG)
        progress(f"  {count:,} partition-keyed events stored in assetbus; starting a forwarder")
        started = time.time()
        self.start_forwarder("forwarder-partitions", PARTITIONS)
        await self._all_runs(PARTITIONS_DAG, before, count, progress)
        wanted = set(keys)
        runs = {r["partition_key"]: airflow_time(r["queued_at"]) for r in await self.runs(PARTITIONS_DAG)
                if r.get("partition_key") in wanted}
        # Airflow 3.3's GET /assets/events answers 500 while a run an event triggered has not started (the
        # response model wants the run's start_date): asked again until the runs have started
        listed = await self.wait("GET /assets/events to answer (it fails while a triggered run is queued)",
                                 lambda: self.events(PARTITIONS), timeout_s=max(self.timeout_s, count * 3.0),
                                 every_s=1.0)
        events = {e["partition_key"]: airflow_time(e["timestamp"]) for e in listed if e.get("partition_key") in wanted}
        if len(runs) != count or len(events) != count:
            raise RuntimeError(f"Airflow has {len(events)} events and {len(runs)} runs for {count} partitions")
        queued, posted = sorted(runs.values()), sorted(events.values())
        lag = tuple(sorted((runs[k] - events[k]) * 1000 for k in keys))
        return Burst(count, queued[-1] - queued[0], queued[-1] - started, posted[-1] - posted[0], lag)

    # The services

    def start_bridge(self) -> None:
        self.services["bridge"] = self.stack.service("bridge", "airflow-bridge", "--dag", BRIDGE_DAG,
                                                     "--concurrency", str(self.bridge_concurrency))

    def start_forwarder(self, name: str, asset: AssetRef) -> None:
        self.services[name] = self.stack.service(name, "airflow-forwarder", "--asset", asset.name, "--group-id",
                                                  f"bench-{name}-{uuid.uuid4().hex[:8]}")

    def stop_service(self, name: str) -> None:
        self.stack.stop_service(name)
        self.services.pop(name, None)

    def check_services(self) -> None:
        """Fail at once when a service the benchmark started has exited, naming its log."""
        for name, process in self.services.items():
            if process.poll() is not None:
                raise RuntimeError(f"assetbus {name} exited ({process.returncode}); see {self.stack.home}/{name}.log")
