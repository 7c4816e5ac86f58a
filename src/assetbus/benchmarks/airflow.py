"""`assetbus bench airflow`: emit → Airflow, with a real Airflow 3 on PostgreSQL (or SQLite), in one run.

The stack, the paths and how each is timed: docs/benchmarks.md ("Airflow"); the bench DAGs are in `airflow_dags/`.
A latency runs from this machine's wall clock to the time Airflow wrote into its row (the same clock).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.benchmarks.conditions import conditions, run_conditions
from assetbus.benchmarks.scratch import migrated_database, postgres_version
from assetbus.benchmarks.stats import percentile
from assetbus.consumers.storage import create_engine
from assetbus.infra.airflow import POSTGRES, airflow_bin
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.infra.databases import drop_database
from assetbus.infra.ports import free_port
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import AssetRef, Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

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
    """One sample of each latency path (`bench_airflow.PATHS`), in seconds (None: that sample was not measured)."""

    event: float | None = None
    native_run: float | None = None
    bridge_run: float | None = None
    rest_run: float | None = None
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

    async def start(self) -> None:
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

    async def every(self, path: str, key: str, **params: Any) -> list[dict[str, Any]]:
        """Every item of one of Airflow's paged lists (`key`: the list's name in a page), 100 a page."""
        found: list[dict[str, Any]] = []
        while True:
            page = await self.get(path, limit=100, offset=len(found), **params)
            found.extend(page[key])
            if not page[key] or len(found) >= page["total_entries"]:
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

    async def _runs_made(self, dag_id: str, keys: Sequence[str], start: Callable[[], None],
                         progress: Callable[[str], None]) -> tuple[float, list[dict[str, Any]]]:
        """Start the service, wait until `dag_id` has a run per key: when the service started, and those runs."""
        before, _ = await self.newest_run(dag_id)
        started, last_said = time.time(), time.monotonic()
        start()

        async def done() -> bool | None:
            nonlocal last_said
            total, _ = await self.newest_run(dag_id)
            if time.monotonic() - last_said > 10:
                progress(f"    {max(0, total - before):,} of {len(keys):,} runs of {dag_id} in Airflow")
                last_said = time.monotonic()
            return True if total >= before + len(keys) else None

        await self.wait(f"{len(keys)} runs of {dag_id}", done, timeout_s=max(self.timeout_s, len(keys) * 3.0),
                        every_s=0.25)
        wanted = set(keys)
        runs = await self.every(f"/dags/{dag_id}/dagRuns", "dag_runs", order_by="id")
        return started, [r for r in runs if r.get("partition_key") in wanted]

    async def bridge_burst(self, count: int, progress: Callable[[str], None]) -> Burst:
        """`count` partitions made ready by the assetbus scheduler while no bridge runs; then one bridge."""
        self.stop_service("bridge")
        keys = [f"burst-{uuid.uuid4().hex[:8]}-{i:05d}" for i in range(count)]
        await self._emit_all(ORDERS, keys)
        await self.wait(f"the assetbus scheduler to make {count} ready runs", lambda: self._ready(keys))
        progress(f"  {count:,} partitions ready in assetbus; starting the bridge (--concurrency "
                 f"{self.bridge_concurrency})")
        started, runs = await self._runs_made(BRIDGE_DAG, keys, self.start_bridge, progress)
        queued = sorted(airflow_time(r["queued_at"]) for r in runs)
        if len(queued) != count:
            raise RuntimeError(f"the bridge made {len(queued)} runs for {count} partitions")
        return Burst(count, queued[-1] - queued[0], queued[-1] - started)

    async def native_burst(self, count: int, progress: Callable[[str], None]) -> Burst:
        """`count` partition-keyed events stored in assetbus while no forwarder runs for their asset; then one
        forwarder posts them, and Airflow's own partitioned scheduling makes a run per partition key."""
        keys = [f"burst-{uuid.uuid4().hex[:8]}-{i:05d}" for i in range(count)]
        await self._emit_all(PARTITIONS, keys)
        progress(f"  {count:,} partition-keyed events stored in assetbus; starting a forwarder")
        started, made = await self._runs_made(PARTITIONS_DAG, keys,
                                              lambda: self.start_forwarder("forwarder-partitions", PARTITIONS),
                                              progress)
        runs = {r["partition_key"]: airflow_time(r["queued_at"]) for r in made}
        # Airflow 3.3's GET /assets/events answers 500 while a run an event triggered has not started (the
        # response model wants the run's start_date): asked again until the runs have started
        listed = await self.wait("GET /assets/events to answer (it fails while a triggered run is queued)",
                                 lambda: self.every("/assets/events", "asset_events", order_by="timestamp",
                                                    asset_id=self.asset_ids[PARTITIONS.name]),
                                 timeout_s=max(self.timeout_s, count * 3.0), every_s=1.0)
        wanted = set(keys)
        events = {e["partition_key"]: airflow_time(e["timestamp"]) for e in listed if e.get("partition_key") in wanted}
        if len(runs) != count or len(events) != count:
            raise RuntimeError(f"Airflow has {len(events)} events and {len(runs)} runs for {count} partitions")
        queued, posted = sorted(runs.values()), sorted(events.values())
        lag = tuple(sorted((runs[k] - events[k]) * 1000 for k in keys))
        return Burst(count, queued[-1] - queued[0], queued[-1] - started, posted[-1] - posted[0], lag)

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
        for name, process in self.services.items():
            if process.poll() is not None:
                raise RuntimeError(f"assetbus {name} exited ({process.returncode}); see {self.stack.home}/{name}.log")


FIRST_EMIT_DAG = "bench_first_emit"
CREDENTIAL_CONN = "assetbus_credential"
MODES = ("credential", "attested")
WARMUP_RUNS = 2


async def _healthy(url: str) -> bool | None:
    async with httpx.AsyncClient(timeout=2) as http:
        return True if (await http.get(f"{url}/healthz")).status_code == 200 else None


async def _credential_minter(paths: AirflowPaths) -> None:
    """A second minter, in credential mode, and the Airflow connection that names it."""
    stack, port = paths.stack, free_port()
    paths.services["api-credential"] = stack.service("api-credential", "api", ASSETBUS_API_PORT=str(port),
                                                     ASSETBUS_API_AIRFLOW_IDENTITY="credential")
    url = f"http://127.0.0.1:{port}"
    await paths.wait("the credential-mode minter", lambda: _healthy(url))
    connection = json.dumps({"conn_type": "assetbus", "host": url, "password": stack.worker_credential})
    done = await asyncio.to_thread(subprocess.run, [str(airflow_bin()), "connections", "add", CREDENTIAL_CONN,
                                                    "--conn-json", connection], env=stack.airflow.env(),
                                   capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cannot add the connection {CREDENTIAL_CONN}: {done.stderr[-500:]}")


async def first_emits(paths: AirflowPaths, samples: int, progress: Callable[[str], None]) -> dict[str, list[float]]:
    """`samples` first emits (ms) per mode, after WARMUP_RUNS runs that are not counted."""
    await _credential_minter(paths)
    (await paths.http.patch(f"/dags/{FIRST_EMIT_DAG}", json={"is_paused": False})).raise_for_status()
    found: dict[str, list[float]] = {mode: [] for mode in MODES}
    total = WARMUP_RUNS + 2 * samples
    for i in range(total):
        mode = MODES[i % 2]
        run_id = f"first-{mode}-{i}-{uuid.uuid4().hex[:6]}"
        conf: dict[str, Any] = {"identity": mode, "conn_id": CREDENTIAL_CONN if mode == "credential" else None}
        (await paths.http.post(f"/dags/{FIRST_EMIT_DAG}/dagRuns",
                               json={"dag_run_id": run_id, "logical_date": None, "conf": conf})).raise_for_status()

        async def finished(run_id: str = run_id) -> dict[str, Any] | None:
            run: dict[str, Any] = await paths.get(f"/dags/{FIRST_EMIT_DAG}/dagRuns/{run_id}")
            return run if run["state"] in ("success", "failed") else None

        run = await paths.wait(f"run {run_id}", finished, every_s=0.2)
        if run["state"] != "success":
            raise RuntimeError(f"{FIRST_EMIT_DAG} run {run_id} ({mode}) failed: see the task's log")
        entry = await paths.get(f"/dags/{FIRST_EMIT_DAG}/dagRuns/{run_id}/taskInstances/first_emit/xcomEntries/"
                                "return_value")
        if i >= WARMUP_RUNS:
            found[mode].append(float(entry["value"]))
        progress(f"  first emit() {i + 1}/{total} ({mode}): {float(entry['value']):,.1f} ms")
    paths.stop_service("api-credential")
    return found


AIRFLOW_SETTINGS: dict[str, str] = {
    "core.executor": "LocalExecutor",
    "core.parallelism": "32",
    "scheduler.scheduler_idle_sleep_time": "1",
}
"""Airflow's settings for the benchmark beyond what `LocalAirflow` sets: Airflow 3.3's defaults for what
decides these paths, so that the figures are what a deployment with default settings gets."""
API_WORKERS = {POSTGRES: "4", "sqlite": "1"}
"""Airflow's default of 4 api-server workers on PostgreSQL; one on SQLite (one writer at a time)."""
BRIDGE_CONCURRENCY = {POSTGRES: 4, "sqlite": 1}
"""The bridge's `--concurrency` (docs/airflow.md: keep 1 for an Airflow on SQLite, more on PostgreSQL)."""
SHOWN = ("core.executor", "core.parallelism", "api.workers", "scheduler.scheduler_idle_sleep_time",
         "dag_processor.refresh_interval", "dag_processor.min_file_process_interval")
"""The settings printed with the figures (with any `--airflow-setting`)."""


@dataclass(frozen=True)
class AirflowBenchOptions:
    metadata: str = POSTGRES
    samples: int = 50
    partitions: int = 200
    warmup: int = 2
    """Rounds before the measured ones (connections, consumer groups, first parse), not counted."""
    bridge_concurrency: int | None = None
    """The bridge's `--concurrency`; None: `BRIDGE_CONCURRENCY` for the metadata DB."""
    airflow_settings: tuple[tuple[str, str], ...] = ()
    keep_home: bool = False
    """Keep Airflow's home (its config and logs) after the run; it is kept anyway when the run fails."""
    first_emits: int = 0
    """A task's first `emit()` per identity mode, runs alternating (`first_emits`); 0: not measured."""
    only_first_emits: bool = False

    @classmethod
    def smoke(cls, metadata: str = POSTGRES) -> AirflowBenchOptions:
        """Tiny sizes: every figure gets a number, in a minute or two, most of it Airflow's start (one api-server
        worker: it starts sooner)."""
        return cls(metadata=metadata, samples=3, partitions=5, warmup=1, airflow_settings=(("api.workers", "1"),))

    @property
    def concurrency(self) -> int:
        return self.bridge_concurrency or BRIDGE_CONCURRENCY[self.metadata]

    def settings(self) -> dict[str, str]:
        return {**AIRFLOW_SETTINGS, "api.workers": API_WORKERS[self.metadata], **dict(self.airflow_settings)}


def environment(settings: dict[str, str]) -> dict[str, str]:
    """Airflow's settings as its environment variables (`AIRFLOW__SECTION__KEY`)."""
    env = {}
    for name, value in settings.items():
        section, _, key = name.partition(".")
        if not section or not key:
            raise ValueError(f"an Airflow setting is section.key=value, not {name!r}")
        env[f"AIRFLOW__{section.upper()}__{key.upper()}"] = value
    return env


@dataclass
class AirflowBenchReport:
    options: AirflowBenchOptions
    rounds: list[Round] = field(default_factory=list)
    bridge: Burst | None = None
    native: Burst | None = None
    skipped_posts: list[str] = field(default_factory=list)
    conditions: dict[str, Any] = field(default_factory=dict)
    first_emit_ms: dict[str, list[float]] = field(default_factory=dict)
    """A task's first `emit()` (ms) per identity mode: `attested`, `credential`."""

    def latencies_ms(self, name: str) -> list[float]:
        return [getattr(r, name) * 1000 for r in self.rounds if getattr(r, name) is not None]

    def figures(self) -> dict[str, float]:
        f: dict[str, float] = {}
        for name in ("event", "native_run", "bridge_run", "rest_run"):
            values = self.latencies_ms(name)
            f[f"airflow_{name}_p50_ms"] = percentile(values, 50)
            f[f"airflow_{name}_p99_ms"] = percentile(values, 99)
        f["airflow_rest_post_p50_ms"] = percentile(self.latencies_ms("rest_post"), 50)
        for mode, values in self.first_emit_ms.items():
            f[f"airflow_first_emit_{mode}_p50_ms"] = percentile(values, 50)
        if self.bridge is not None:
            f["airflow_bridge_runs_per_s"] = self.bridge.runs_per_s
            f["airflow_bridge_backlog_s"] = self.bridge.start_to_last_s
        if self.native is not None:
            f["airflow_native_runs_per_s"] = self.native.runs_per_s
            f["airflow_native_backlog_s"] = self.native.start_to_last_s
            f["airflow_forwarded_events_per_s"] = self.native.events_per_s
            f["airflow_native_lag_p50_ms"] = percentile(self.native.lag_ms, 50)
            f["airflow_native_lag_p99_ms"] = percentile(self.native.lag_ms, 99)
        return f


def airflow_version(venv: Path) -> str:
    found = sorted(venv.glob("lib/python*/site-packages/apache_airflow-*.dist-info"))
    return found[-1].name.removeprefix("apache_airflow-").removesuffix(".dist-info") if found else "unknown"


async def run_airflow_benchmark(settings: Settings, options: AirflowBenchOptions,
                                progress: Callable[[str], None]) -> AirflowBenchReport:
    report = AirflowBenchReport(options)
    load_before = os.getloadavg()
    started = time.perf_counter()
    home = Path(tempfile.mkdtemp(prefix="assetbus-bench-airflow-"))
    dags, definitions = home / "dags", home / "consumers"
    here = Path(__file__).parent
    shutil.copytree(here / "airflow_dags", dags, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(here / "airflow_consumers", definitions, ignore=shutil.ignore_patterns("__pycache__"))
    tag = uuid.uuid4().hex[:8]
    name = f"assetbus_bench_af_{tag}"
    database_url = await migrated_database(settings.database_url, name)
    topics = Topics(prefix=f"benchaf{tag}")
    await ensure_topics(settings.kafka, topics)
    secret = uuid.uuid4().hex
    stack = AirflowStack(home=home, dags_folder=dags, consumer_definitions=definitions,
                         bootstrap_servers=settings.bootstrap_servers, database_url=database_url,
                         topic_prefix=topics.prefix, token_secret=secret, dag_ids=(*DAG_IDS, FIRST_EMIT_DAG))
    stack.airflow.metadata = options.metadata
    stack.airflow.postgres_server = settings.database_url
    stack.airflow.extra_env = environment(options.settings())
    engine = create_engine(database_url)
    failed = True
    try:
        where = "a fresh PostgreSQL database" if options.metadata == POSTGRES else "SQLite"
        progress(f"starting Airflow {airflow_version(stack.airflow.venv)} (metadata DB: {where}, LocalExecutor) "
                 "and assetbus (persister, API, scheduler) …")
        stack.cli("assets", "register", ORDERS.name, ORDERS.uri)  # the bridge target's asset (no Airflow task has it)
        await asyncio.to_thread(stack.start)
        progress(f"  up after {time.perf_counter() - started:.0f} s")
        token = task_token(secret, "bench_upstream", "r1", "load")
        async with AsyncEmitter(settings.bootstrap_servers, token, topics=topics, receipt_timeout_s=60) as emitter:
            paths = AirflowPaths(stack, emitter, engine, bridge_concurrency=options.concurrency)
            try:
                await _measure(paths, options, report, progress)
            finally:
                await paths.http.aclose()
        report.skipped_posts = paths.skipped_posts
        report.conditions = await _conditions(settings, stack, options, load_before)
        report.conditions["skipped_posts"] = len(paths.skipped_posts)
        failed = False
    finally:
        try:
            await asyncio.to_thread(stack.stop)
        finally:
            await engine.dispose()
            await drop_database(settings.database_url, name)
            await delete_topics(settings.kafka, [*topics.core(), topics.readiness(BRIDGE_DAG)])
            if failed or options.keep_home:
                print(f"Airflow's home (config and logs) kept at {home}", file=sys.stderr)
            else:
                shutil.rmtree(home, ignore_errors=True)
    report.conditions["duration_s"] = round(time.perf_counter() - started, 1)
    return report


async def _measure(paths: AirflowPaths, options: AirflowBenchOptions, report: AirflowBenchReport,
                   progress: Callable[[str], None]) -> None:
    await paths.start()
    if options.first_emits:
        progress(f"a task's first emit(): {options.first_emits} runs per identity mode, alternating")
        report.first_emit_ms = await first_emits(paths, options.first_emits, progress)
        if options.only_first_emits:
            return
    paths.start_bridge()
    paths.start_forwarder("forwarder", FORWARDED)
    total = options.warmup + options.samples
    progress(f"latency: {options.warmup} warm-up + {options.samples} rounds, each one emit → forwarded event "
             "and native run, one emit → bridge run, one POST → run")
    said = time.monotonic()
    for i in range(total):
        sample = Round()
        await paths.forwarded(sample)
        await paths.bridged(sample)
        await paths.rest(sample)
        if i >= options.warmup:
            report.rounds.append(sample)
        if i == total - 1 or time.monotonic() - said > 10:
            said = time.monotonic()
            progress(f"  round {i + 1}/{total}: event {_ms(sample.event)}, native run {_ms(sample.native_run)}, "
                     f"bridge run {_ms(sample.bridge_run)}, REST run {_ms(sample.rest_run)}")
    paths.stop_service("forwarder")

    progress(f"runs/s through the bridge: {options.partitions:,} ready partitions, then one bridge")
    report.bridge = await paths.bridge_burst(options.partitions, progress)
    progress(f"  {report.bridge.runs_per_s:,.1f} runs/s, bridge start → last run {report.bridge.start_to_last_s:.1f} s")

    progress(f"runs/s through Airflow's own scheduling: {options.partitions:,} partition-keyed events, then one "
             "forwarder")
    report.native = await paths.native_burst(options.partitions, progress)
    progress(f"  {report.native.runs_per_s:,.1f} runs/s ({report.native.events_per_s:,.1f} events/s posted), "
             f"forwarder start → last run {report.native.start_to_last_s:.1f} s")


def _ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.0f} ms"


async def _conditions(settings: Settings, stack: AirflowStack, options: AirflowBenchOptions,
                      load_before: tuple[float, float, float]) -> dict[str, Any]:
    shared = conditions()
    env = stack.airflow.env()
    shown = [*SHOWN, *(k for k, _ in options.airflow_settings if k not in SHOWN)]
    airflow_settings = {name: env.get(next(iter(environment({name: ""})))) for name in shown}
    postgres = (await postgres_version(settings.database_url)).split(" ")[0]
    metadata = (f"PostgreSQL {postgres} (a database of its own on assetbus's server)" if options.metadata == POSTGRES
                else "SQLite (a file)")
    return {
        "airflow": f"apache-airflow {airflow_version(stack.airflow.venv)}",
        "metadata_db": metadata,
        "metadata_database": stack.airflow.metadata_database if options.metadata == POSTGRES else None,
        "airflow_settings": airflow_settings,
        "bridge_concurrency": options.concurrency,
        "forwarder": "one process per asset (one asset's events posted in order, one at a time)",
        **run_conditions(settings, shared, postgres, load_before),
        "sizes": {name: getattr(options, name) for name in ("samples", "partitions", "warmup")},
    }

