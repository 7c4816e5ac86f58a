"""The end-to-end demo (`make demo`, the story told in README.md): producers emit, the persister stores, the
scheduler fans out per partition, and consumer DAGs receive their readiness through the subscriber SDK.

Everything runs in this process against the configured Kafka and PostgreSQL; run ids are fresh each time,
so the demo can be run again.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.persister import Persister, PersisterConfig
from assetbus.consumers.readiness import DatabaseLedger
from assetbus.consumers.scheduler import ConsumerDag, Scheduler, SchedulerConfig, SyncReport, load_dag_files, sync_dags
from assetbus.consumers.scheduler.apply import pending
from assetbus.consumers.scheduler.planner import progress
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.consumers.storage import create_engine, register_asset
from assetbus.consumers.storage.dags import get_dag
from assetbus.consumers.storage.queue import pending_for_dag
from assetbus.consumers.storage.runs import RunRow, list_runs
from assetbus.demo.actors import (
    DAILY_DAG,
    DAY,
    INCIDENT_DAG,
    INCIDENTS,
    ORDERS,
    PER_BATCH_DAG,
    DemoState,
    Show,
    batch_hours,
    consumer_handlers,
    ingest_orders,
    nightly_export,
)
from assetbus.producers import AsyncEmitter, dag_token, task_token
from assetbus.producers.readiness import ReadinessSubscriber
from assetbus.schemas import Topics
from assetbus.settings import Settings
from assetbus.topics import ensure_topics

DAGS_FILE = Path(__file__).resolve().parent / "dags.py"
EXPECTED_RUNS = {PER_BATCH_DAG: len(batch_hours()), DAILY_DAG: 1, INCIDENT_DAG: 1}


class DemoError(Exception):
    """The story did not go as told; the message says which part."""


@dataclass(frozen=True, slots=True)
class SummaryRow:
    dag: str
    role: str
    events: int
    duplicates: int | None
    runs: int | None
    outcome: str


@dataclass(frozen=True)
class DemoResult:
    state: DemoState
    rows: list[SummaryRow]


async def run_demo(settings: Settings, show: Show, dags_file: Path = DAGS_FILE, timeout_s: float = 90) -> DemoResult:
    topics = Topics(prefix=settings.topic_prefix)
    started = datetime.now(UTC)
    tag = f"demo-{secrets.token_hex(3)}"  # fresh run ids: a rerun's events are new, not duplicates
    state = DemoState(ingest_run=tag, export_run=tag)
    await ensure_topics(settings.kafka, topics)
    engine = create_engine(settings.database_url)
    try:
        report = await _setup(engine, settings, topics, dags_file)
        show("setup", f"synced {len(report.synced)} consumer DAGs from {dags_file.name}: {', '.join(report.synced)}")
        async with _pipeline(settings, topics, state, show):
            show("setup", "persister, scheduler and three subscribers are running")
            secret = settings.signing_key
            async with AsyncEmitter(settings.kafka, task_token(secret, "ingest_orders", tag, "load_orders"),
                                    topics=topics, receipt_timeout_s=30) as emitter:
                try:
                    await ingest_orders(emitter, state, show)
                except RuntimeError as error:
                    state.task_error = str(error)
                    count = sum(1 for r in state.receipts["ingest_orders"] if r.accepted)
                    show("ingest_orders", f"load_orders failed: {error}; its {count} events stay stored "
                                          "(an emission is never retracted)")
            await nightly_export(settings.kafka, dag_token(secret, "nightly_export", tag), state, show, topics)
            await _wait_for_runs(engine, state, started, timeout_s)
        return DemoResult(state, await _summary(engine, state, started))
    finally:
        await engine.dispose()


async def _setup(engine: AsyncEngine, settings: Settings, topics: Topics, dags_file: Path) -> SyncReport:
    try:
        loaded = load_dag_files(dags_file)
    except FileNotFoundError as error:
        raise DemoError(f"the demo's DAG file is missing: {dags_file}") from error
    async with engine.begin() as conn:
        for asset in (ORDERS, INCIDENTS):
            await register_asset(conn, asset.name, asset.uri)
        report = await sync_dags(conn, loaded)
    if not report.ok:
        raise DemoError(f"could not sync {dags_file}: {report.file_errors or [o.error for o in report.outcomes]}")
    await create_readiness_topics(settings.kafka, topics, report.synced)
    return report


@contextlib.asynccontextmanager
async def _pipeline(settings: Settings, topics: Topics, state: DemoState, show: Show) -> AsyncIterator[None]:
    """Persister, scheduler and one subscriber per consumer DAG, started and stopped in order."""
    keys = settings.verification_keys
    persister = Persister(PersisterConfig(kafka=settings.kafka, database_url=settings.database_url, topics=topics,
                                          token_jwks=keys["token_jwks"], token_secret=keys["token_secret"]))
    scheduler = Scheduler(SchedulerConfig(kafka=settings.kafka, database_url=settings.database_url,
                                          topics=topics))
    subscribers = [ReadinessSubscriber(settings.kafka, dag_id, handler,  # type: ignore[arg-type]
                                       group_id=f"{topics.prefix}.{dag_id}.workers",
                                       ledger=DatabaseLedger(settings.database_url), topics=topics)
                   for dag_id, handler in consumer_handlers(state, show).items()]
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(persister)
        await stack.enter_async_context(scheduler)
        for subscriber in subscribers:
            await stack.enter_async_context(subscriber)
        await asyncio.gather(*(s.wait_assigned() for s in subscribers))
        yield


async def _mine(engine: AsyncEngine, state: DemoState, dag_id: str, since: datetime) -> list[RunRow]:
    async with engine.connect() as conn:
        runs = await list_runs(conn, dag_id=dag_id, since=since - timedelta(seconds=5), limit=1000)
    ids = {state.ingest_run, state.export_run}
    return [run for run in runs if any(e["source"]["run_id"] in ids for e in run.events)]


async def _wait_for_runs(engine: AsyncEngine, state: DemoState, since: datetime, timeout_s: float) -> None:
    """Until every expected run of this demo has been handled and reported `success`."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        done = {dag: [r for r in await _mine(engine, state, dag, since) if r.status == "success"]
                for dag in EXPECTED_RUNS}
        if all(len(done[dag]) >= n for dag, n in EXPECTED_RUNS.items()):
            return
        if asyncio.get_running_loop().time() > deadline:
            got = ", ".join(f"{dag} {len(done[dag])}/{n}" for dag, n in EXPECTED_RUNS.items())
            raise DemoError(f"timed out waiting for the consumer runs ({got})")
        await asyncio.sleep(0.1)


async def _summary(engine: AsyncEngine, state: DemoState, since: datetime) -> list[SummaryRow]:
    ingest = state.receipts.get("ingest_orders", [])
    export = state.receipts.get("nightly_export", [])
    rows = [
        SummaryRow("ingest_orders", "producer: task", sum(r.accepted for r in ingest),
                   sum(r.duplicate for r in ingest), None, "task failed (on purpose)"),
        SummaryRow("nightly_export", "producer: DAG callback", sum(r.accepted for r in export),
                   sum(r.duplicate for r in export), None, "DAG run failed (on purpose)"),
    ]
    roles = {PER_BATCH_DAG: "consumer: per batch", DAILY_DAG: "consumer: daily roll-up",
             INCIDENT_DAG: "consumer: unpartitioned"}
    for dag_id, role in roles.items():
        runs = await _mine(engine, state, dag_id, since)
        outcomes = Counter(run.status for run in runs)
        outcome = ", ".join(f"{n} {status}" for status, n in sorted(outcomes.items()))
        if dag_id == DAILY_DAG:
            outcome += await _waiting(engine, dag_id)
        rows.append(SummaryRow(dag_id, role, sum(len(r.events) for r in runs), None, len(runs), outcome))
    return rows


async def _waiting(engine: AsyncEngine, dag_id: str) -> str:
    """`; 2026-10-02 waits (demo.orders 2/24 hours)` for the day the task did not finish."""
    async with engine.connect() as conn:
        queued = await pending_for_dag(conn, dag_id)
        dag = await get_dag(conn, dag_id)
    if dag is None:
        raise DemoError(f"consumer DAG {dag_id} disappeared")
    definition = ConsumerDag.from_definition(dag.definition)
    next_day = (DAY + timedelta(days=1)).isoformat()
    entries = [pending(row) for row in queued if row.target_key == next_day]
    if not entries:
        return ""
    lacking = [str(p) for p in progress(definition, next_day, entries) if not p.complete]
    return f"; {next_day} waits: {', '.join(lacking)}"
