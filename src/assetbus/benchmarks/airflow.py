"""`assetbus bench airflow`: emit → Airflow, with a real Airflow 3 on PostgreSQL (or SQLite), in one run.

One stack for the whole run (`AirflowStack`: Airflow's api-server, scheduler, dag-processor and triggerer
with its metadata DB on a fresh PostgreSQL database, or SQLite; the assetbus persister, API and
scheduler on a scratch database and topic prefix; the bridge and forwarders started by the benchmark).
Events are emitted as users emit them: the SDK's `AsyncEmitter` with a task token, to Kafka, stored by
the persister. Measured:

- latency, one sample of each path per round, rounds interleaved so that the machine's load falls on
  every path alike: emit → the forwarded asset event exists in Airflow; emit → Airflow's own
  scheduling made the run of a DAG with `schedule=[asset]`; emit → the bridge made the run; Airflow's
  own REST path, `POST /api/v2/assets/events` → the asset-triggered run exists;
- runs per second for `partitions` ready partitions: through the bridge (the assetbus scheduler made
  them ready while no bridge ran, then one bridge starts) and through Airflow's own partitioned
  scheduling (the events stored while no forwarder ran, then one forwarder posts them and a DAG on
  `PartitionedAssetTimetable` gets a run per partition key).

Every bench DAG's task on these paths is an `EmptyOperator`, which Airflow's scheduler completes without an
executor, so a run costs Airflow its scheduling on every path and no task process. With `--first-emits N`,
a task's first `emit()` is timed too, in each identity mode (`assetbus.benchmarks.airflow_identity`). The
measurement of each path is in `assetbus.benchmarks.airflow_paths`.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assetbus.benchmarks.airflow_identity import FIRST_EMIT_DAG, first_emits
from assetbus.benchmarks.airflow_paths import DAG_IDS, FORWARDED, ORDERS, AirflowPaths, Burst, Round
from assetbus.benchmarks.conditions import conditions, run_conditions
from assetbus.benchmarks.scratch import create_database, drop_database, postgres_version
from assetbus.benchmarks.stats import percentile
from assetbus.consumers.storage import create_engine
from assetbus.infra.airflow import AIRFLOW_VENV, METADATA_DATABASES, POSTGRES
from assetbus.infra.airflow_stack import AirflowStack
from assetbus.producers import AsyncEmitter, task_token
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import delete_topics, ensure_topics

HERE = Path(__file__).parent
BRIDGE_DAG = DAG_IDS[0]

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

REQUIRED = ("airflow_event_p50_ms", "airflow_event_p99_ms", "airflow_native_run_p50_ms", "airflow_native_run_p99_ms",
            "airflow_bridge_run_p50_ms", "airflow_bridge_run_p99_ms", "airflow_rest_run_p50_ms",
            "airflow_rest_run_p99_ms", "airflow_rest_post_p50_ms", "airflow_bridge_runs_per_s",
            "airflow_bridge_backlog_s", "airflow_native_runs_per_s", "airflow_native_backlog_s",
            "airflow_forwarded_events_per_s", "airflow_native_lag_p50_ms", "airflow_native_lag_p99_ms")
"""The figures every run prints (`--json`, and `assetbus bench all` when it runs this benchmark)."""


@dataclass(frozen=True)
class AirflowBenchOptions:
    metadata: str = POSTGRES
    """Airflow's metadata DB: "postgres" (a fresh database on assetbus's PostgreSQL server) or "sqlite"."""
    samples: int = 50
    """Measured rounds: one sample of each latency path per round."""
    partitions: int = 200
    """Ready partitions for each runs-per-second figure."""
    warmup: int = 2
    """Rounds before the measured ones (connections, consumer groups, first parse), not counted."""
    bridge_concurrency: int | None = None
    """The bridge's `--concurrency`; None: `BRIDGE_CONCURRENCY` for the metadata DB."""
    airflow_settings: tuple[tuple[str, str], ...] = ()
    """More Airflow settings, ("section.key", value), over the benchmark's."""
    keep_home: bool = False
    """Keep Airflow's home (its config and logs) after the run; it is kept anyway when the run fails."""
    first_emits: int = 0
    """A task's first `emit()` per identity mode, runs alternating (`airflow_identity`); 0: not measured."""
    only_first_emits: bool = False
    """Measure the first emits only (no latency rounds, no bursts)."""

    @classmethod
    def smoke(cls, metadata: str = POSTGRES) -> AirflowBenchOptions:
        """Tiny sizes: every figure gets a number, in a minute or two, most of it Airflow's start (one api-server
        worker: it starts sooner)."""
        return cls(metadata=metadata, samples=3, partitions=5, warmup=1, airflow_settings=(("api.workers", "1"),))

    @property
    def concurrency(self) -> int:
        return self.bridge_concurrency or BRIDGE_CONCURRENCY[self.metadata]

    def settings(self) -> dict[str, str]:
        """Airflow's settings the benchmark sets, "section.key" → value (LocalAirflow's others aside)."""
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


def airflow_version(venv: Path = AIRFLOW_VENV) -> str:
    found = sorted(venv.glob("lib/python*/site-packages/apache_airflow-*.dist-info"))
    return found[-1].name.removeprefix("apache_airflow-").removesuffix(".dist-info") if found else "unknown"


def _bench_home() -> tuple[Path, Path, Path]:
    home = Path(tempfile.mkdtemp(prefix="assetbus-bench-airflow-"))
    dags, definitions = home / "dags", home / "consumers"
    shutil.copytree(HERE / "airflow_dags", dags, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(HERE / "airflow_consumers", definitions, ignore=shutil.ignore_patterns("__pycache__"))
    return home, dags, definitions


async def run_airflow_benchmark(settings: Settings, options: AirflowBenchOptions,
                                progress: Callable[[str], None]) -> AirflowBenchReport:
    if options.metadata not in METADATA_DATABASES:
        raise ValueError(f"--metadata is one of {', '.join(METADATA_DATABASES)}, not {options.metadata!r}")
    if min(options.samples, options.partitions) < 2 or options.warmup < 0:
        raise ValueError("samples and partitions must be at least 2, warmup not negative")
    report = AirflowBenchReport(options)
    load_before = os.getloadavg()
    started = time.perf_counter()
    home, dags, definitions = _bench_home()
    tag = uuid.uuid4().hex[:8]
    name = f"assetbus_bench_af_{tag}"
    database_url = await create_database(settings.database_url, name)
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
                await paths.aclose()
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


def main() -> None:
    """`python -m assetbus.benchmarks.airflow ARGS` is `assetbus bench airflow ARGS`."""
    from assetbus.cli.main import main as cli

    sys.argv = ["assetbus", "bench", "airflow", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
