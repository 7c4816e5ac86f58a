"""Two subscribers of one consumer group, a rebalance while handlers are slow: one run's handler never
runs twice at once.

Every signal is on one Kafka partition. The first subscriber fetches them all and is in its first
handler when the second joins the group; the rebalance gives the partition to the second (its client
id sorts first, so the group's assignor lists it first) without waiting for the first's batch (a short
revoke wait, as a handler slower than the wait would). The first keeps handling the batch it fetched;
the second reads the partition from its uncommitted start: both reach the same runs at the same time,
and each handler waits for the other subscriber to try its run. Only the run's lease keeps them apart.
"""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiokafka import TopicPartition
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from assetbus.consumers.readiness import DatabaseLedger, ReadinessSubscriber
from assetbus.consumers.scheduler import AssetWait, ConsumerDag
from assetbus.consumers.scheduler.publish import ReadinessPublisher, create_producer
from assetbus.consumers.scheduler.topics import ReadinessTopics
from assetbus.consumers.storage.runs import list_runs
from assetbus.producers.kafka import ConsumerSettings
from assetbus.producers.kafka.sender import partition_for
from assetbus.producers.readiness import Claim
from assetbus.schemas import ReadinessSignal, Topics
from assetbus.settings import Settings
from tests.helpers import wait_for

pytestmark = pytest.mark.integration

DAG = ConsumerDag(dag_id="slow_report", schedule=AssetWait("orders"))
RUNS = 6
LEASE_S = 2.0
"""Shorter than a handler that waits for the rebalance: its holder keeps the run by renewing the lease."""
CONTENDED_S = 5.0
"""The most a handler waits for the other subscriber to try its run."""
KEY = next(f"2026-10-{day:02d}" for day in range(1, 32) if partition_for(f"2026-10-{day:02d}".encode(), [0, 1, 2]) == 0)
"""A partition key whose signals go to Kafka partition 0: each run of this test is a generation of it."""


class Journal:
    """What both subscribers did, in monotonic time: claim attempts and handler intervals, per run id."""

    def __init__(self) -> None:
        self.attempts: dict[str, list[tuple[str, float]]] = defaultdict(list)
        self.intervals: dict[str, list[tuple[str, float, float]]] = defaultdict(list)

    def tried_by_other(self, run_id: str, me: str, since: float) -> bool:
        return any(who != me and at >= since for who, at in self.attempts[run_id])

    def overlaps(self) -> list[tuple[str, tuple[str, float, float], tuple[str, float, float]]]:
        found = []
        for run_id, spans in self.intervals.items():
            ordered = sorted(spans, key=lambda span: span[1])
            found += [(run_id, a, b) for a, b in itertools.pairwise(ordered) if b[1] < a[2]]
        return found

    def contended(self) -> int:
        """Claims tried while the other subscriber's handler of that run was running."""
        return sum(1 for run_id, spans in self.intervals.items() for who, start, end in spans
                   for other, at in self.attempts[run_id] if other != who and start < at < end)


class JournalledLedger(DatabaseLedger):
    def __init__(self, name: str, journal: Journal, database_url: str) -> None:
        super().__init__(database_url, lease_s=LEASE_S)
        self.name = name
        self.journal = journal

    async def claim(self, run_id: str, consumer: str) -> Claim:
        self.journal.attempts[run_id].append((self.name, time.monotonic()))
        return await super().claim(run_id, consumer)


@pytest.fixture
async def published(infra: Settings, topics: Topics, engine: AsyncEngine,
                    define_dags: Callable[..., Awaitable[object]]) -> AsyncIterator[list[str]]:
    """RUNS runs of `slow_report` (generations of one partition key), their signals on Kafka partition 0."""
    await define_dags(DAG)
    async with engine.begin() as conn:
        for n in range(RUNS):
            await conn.execute(text("INSERT INTO consumer_runs (run_id, dag_id, partition_key, generation, events, "
                                    "origin) VALUES (:r, 'slow_report', :k, :g, '[]', 'scheduler')"),
                               {"r": f"run-{n}", "k": KEY, "g": n + 1})
        runs = await list_runs(conn, dag_id="slow_report", limit=RUNS)
    producer = create_producer(infra.kafka)
    await producer.start()
    try:
        await ReadinessPublisher(producer, engine, topics, ReadinessTopics(infra.kafka, topics)).publish(runs)
    finally:
        await producer.stop()
    yield sorted(run.run_id for run in runs)


async def test_two_subscribers_in_a_rebalance_never_run_one_runs_handler_at_once(
        infra: Settings, topics: Topics, db_url: str, engine: AsyncEngine, published: list[str]) -> None:
    journal = Journal()
    subscribers: dict[str, ReadinessSubscriber] = {}

    def handler_for(me: str) -> Callable[[ReadinessSignal], Awaitable[None]]:
        async def handle(signal: ReadinessSignal) -> None:
            started = time.monotonic()
            try:
                await wait_for(_true(lambda: "second" in subscribers), what="the second subscriber", timeout_s=60)
                await wait_for(_true(lambda: bool(_assignment(subscribers["second"]))), what="the rebalance",
                               timeout_s=60)
                await _at_most(lambda: journal.tried_by_other(signal.run_id, me, started), CONTENDED_S)
            finally:
                journal.intervals[signal.run_id].append((me, started, time.monotonic()))
        return handle

    def subscriber(name: str, client_id: str, revoke_wait_s: float = 15.0) -> ReadinessSubscriber:
        group = f"{topics.prefix}-reports"
        settings = ConsumerSettings(topics=(topics.readiness(DAG.dag_id),), group_id=group, max_records=100,
                                    batch_timeout_ms=500, fetch_max_wait_ms=10, revoke_wait_s=revoke_wait_s)
        return ReadinessSubscriber(infra.kafka.model_copy(update={"client_id": client_id}), DAG.dag_id,
                                   handler_for(name), group_id=group, consumer_name=name, topics=topics,
                                   ledger=JournalledLedger(name, journal, db_url), settings=settings)

    # the first's rebalance does not wait for its slow batch
    first = subscribers["first"] = subscriber("first", "z-first", revoke_wait_s=0.2)
    async with first:
        await wait_for(_true(lambda: bool(journal.attempts)), what="the first subscriber's first claim")
        async with subscriber("second", "a-second") as second:
            subscribers["second"] = second
            await wait_for(_true(lambda: bool(_assignment(second))), what="the second subscriber's partitions")
            taken = _assignment(second)

            async def all_finished() -> bool:
                async with engine.connect() as conn:
                    runs = await list_runs(conn, dag_id=DAG.dag_id, limit=RUNS)
                return len(runs) == RUNS and all(run.status == "success" for run in runs)

            await wait_for(all_finished, what="every run to finish", timeout_s=120)

    assert TopicPartition(topics.readiness(DAG.dag_id), 0) in taken, f"the second subscriber got {taken} only"
    assert journal.overlaps() == [], "one run's handler ran twice at once"
    assert sorted(journal.intervals) == published
    assert journal.contended() > 0, "no subscriber tried a run while the other ran it: nothing was tested"


def _assignment(subscriber: ReadinessSubscriber) -> set[TopicPartition]:
    consumer = subscriber.shell.consumer
    return set(consumer.assignment()) if consumer is not None else set()


def _true(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    async def condition() -> bool:
        return check()
    return condition


async def _at_most(check: Callable[[], bool], timeout_s: float) -> None:
    """Until `check()` holds or `timeout_s` has passed (either is fine: the other subscriber may not come)."""
    try:
        await wait_for(_true(check), what="the other subscriber", timeout_s=timeout_s, interval=0.02)
    except AssertionError:
        return
