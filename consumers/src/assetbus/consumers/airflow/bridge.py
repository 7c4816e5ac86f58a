"""The Airflow bridge: each readiness signal of an Airflow DAG becomes exactly one Airflow DAG run
(`dagruns.trigger_run`), its offset committed once the run is recorded; docs/airflow.md, "Consumer DAGs and
the bridge", tells what it guarantees and how it syncs the DAGs tagged `assetbus` (`declared`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from assetbus.consumers.airflow.client import AirflowClient
from assetbus.consumers.airflow.config import BridgeConfig
from assetbus.consumers.airflow.dagruns import CreatedRun, trigger_run
from assetbus.consumers.airflow.declared import sync_from_airflow
from assetbus.consumers.airflow.errors import AirflowError, AirflowRefused, error_kind
from assetbus.consumers.airflow.metrics import BridgeMetrics
from assetbus.consumers.airflow.outcomes import OutcomePoller
from assetbus.consumers.errors import NotStarted
from assetbus.consumers.observe.service import Service, cancel_and_wait, every
from assetbus.consumers.readiness import DatabaseLedger, ReadinessSubscriber, RunStatus
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.consumers.storage import create_engine, translated
from assetbus.consumers.storage.runs import note_run_problem, record_external_run
from assetbus.producers.kafka.retry import retry_until
from assetbus.producers.kafka.topics import TopicCreator, TopicsNotCreated, core_specs
from assetbus.producers.readiness import FinishResult
from assetbus.schemas import ReadinessSignal

log = logging.getLogger("assetbus.airflow.bridge")

CONSUMER = "airflow-bridge"


class BridgeLedger(DatabaseLedger):
    """A returned handler does not finish the run: Airflow's outcome does (see OutcomePoller). The run stays
    `running` and the bridge releases its lease, so a redelivered signal claims it again at once and meets
    the Airflow run that exists (run creation is idempotent)."""

    async def finish(self, run_id: str, fence: int, status: RunStatus, detail: str | None = None) -> FinishResult:
        if status is not RunStatus.SUCCESS:
            return await super().finish(run_id, fence, status, detail)
        return FinishResult.RECORDED if await self.release(run_id, fence) else FinishResult.STALE_FENCE


class BatchSubscriber(ReadinessSubscriber):
    """A readiness subscriber that handles the signals of a fetched batch concurrently, then commits: safe, as a
    crash mid-batch redelivers it and the runs that exist already are met again, not created twice."""

    def __init__(self, *args: Any, concurrency: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._gate = asyncio.Semaphore(concurrency)

    async def _one(self, value: bytes | None) -> None:
        async with self._gate:
            await self.handle(value)

    async def _on_batch(self, records: Sequence[Any]) -> None:
        await asyncio.gather(*(self._one(record.value) for record in records))


class AirflowBridge(Service):
    """`async with AirflowBridge(config) as bridge: await bridge.run_forever()`."""

    def __init__(self, config: BridgeConfig, *, engine: AsyncEngine | None = None,
                 metrics: BridgeMetrics | None = None) -> None:
        self.config: BridgeConfig = config
        self.log = log
        self.metrics: BridgeMetrics = metrics or BridgeMetrics()
        self._owned_engine = engine is None
        self._engine = engine or create_engine(config.database_url, pool_size=4)
        self._airflow = AirflowClient(config.airflow)
        self._retry = config.retry_policy()
        self._topic_creator = TopicCreator(config.kafka, create=config.create_topics)
        self._waiting_topics: set[str] = set()
        self.subscribers = [self._subscriber(dag_id) for dag_id in config.dag_ids]
        self.without_rule: dict[str, str] = {}
        """Airflow DAGs tagged `assetbus` that have no readiness rule, and why (from the last sync)."""
        self.poller = OutcomePoller(self._airflow, self._engine, config.dag_ids, self.metrics.outcomes)
        self._started: list[BatchSubscriber] = []
        self._runs: list[asyncio.Task[None]] = []
        self._poll_task: asyncio.Task[None] | None = None
        self._sync_task: asyncio.Task[None] | None = None

    def _subscriber(self, dag_id: str) -> BatchSubscriber:
        topic = self.config.topics.readiness(dag_id)
        ledger = BridgeLedger(engine=self._engine, lease_s=self.config.lease_s)
        return BatchSubscriber(self.config.kafka, dag_id, self.handle, group_id=self.config.group_id,
                               ledger=ledger, topics=self.config.topics,
                               consumer_name=CONSUMER, concurrency=self.config.concurrency, metrics=self.metrics,
                               settings=self.config.consumer_settings(topic))

    @property
    def dag_ids(self) -> list[str]:
        return [s.dag_id for s in self.subscribers]

    async def sync_once(self) -> list[str]:
        """Sync assets, registrations and readiness rules from Airflow; serve new DAGs. Returns the new ones."""
        synced, report = await sync_from_airflow(self._airflow, self._transaction,
                                                 metadata_url=self.config.airflow_metadata_url)
        found = report.active if not self.config.dag_ids else []
        for name, reason in synced.errors.items():
            log.warning("asset %s not synced from Airflow: %s", name, reason)
        for dag_id, reason in report.without_rule.items():
            if self.without_rule.get(dag_id) != reason:
                log.warning("Airflow DAG %s is tagged assetbus but has no readiness rule: %s", dag_id, reason)
        self.without_rule = report.without_rule
        new = await self._available([dag_id for dag_id in found if dag_id not in self.dag_ids])
        if new:
            for dag_id in new:
                await self._serve(self._subscriber(dag_id))
            log.info("serving Airflow DAG(s) %s", ", ".join(new))
        return new

    async def _available(self, dag_ids: Sequence[str]) -> list[str]:
        """Those of `dag_ids` whose readiness topic exists now (created here first, if this bridge may); until
        then a warning names the topics waited for."""
        try:
            await create_readiness_topics(self._topic_creator, self.config.topics, dag_ids,
                                          partitions=self.config.readiness_partitions)
            missing: set[str] = set()
        except TopicsNotCreated as error:
            missing = set(error.missing)
        if missing - self._waiting_topics:
            log.warning("waiting for the readiness topic(s) %s before serving their DAGs: ASSETBUS_CREATE_TOPICS="
                        "false, so the bridge creates none (the assetbus scheduler creates them once it has the "
                        "consumer DAG, or create them as `assetbus topics plan` lists)", ", ".join(sorted(missing)))
        self._waiting_topics = missing
        return [dag_id for dag_id in dag_ids if self.config.topics.readiness(dag_id) not in missing]

    async def _serve(self, subscriber: BatchSubscriber) -> None:
        if subscriber not in self.subscribers:
            self.subscribers.append(subscriber)
        await subscriber.start()
        self._started.append(subscriber)
        self.poller.watch(subscriber.dag_id)
        self._runs.append(asyncio.create_task(subscriber.run_forever(), name=f"assetbus-bridge-{subscriber.dag_id}"))

    @contextlib.asynccontextmanager
    async def _transaction(self) -> AsyncIterator[AsyncConnection]:
        async with translated(), self._engine.begin() as conn:
            yield conn

    async def dependencies(self, stack: AsyncExitStack) -> None:
        stack.push_async_callback(self._airflow.aclose)
        await self.wait_for(stack, self.config, engine=self._engine, owned_engine=self._owned_engine,
                            required=core_specs(self.config.topics, only=[self.config.topics.asset_events]))
        # the given DAGs' readiness topics, as the scheduler creates them (TopicsNotCreated names them if it may not);
        # never a core topic: a bridge on an unmigrated install or a mistyped prefix stopped on asset-events above
        await create_readiness_topics(self._topic_creator, self.config.topics, self.config.dag_ids,
                                      partitions=self.config.readiness_partitions)

    async def join(self, stack: AsyncExitStack) -> None:
        """The configured DAGs' subscribers and the outcome poller; the probes come up with them, before the
        first sync from Airflow (slow against a large or busy Airflow), while signals are served."""
        stack.push_async_callback(self._stop_subscribers)
        for subscriber in list(self.subscribers):
            await self._serve(subscriber)
        self._poll_task = every(self.config.poll_interval_s, self.poller.poll_once, what="reading run outcomes from "
                                "Airflow", log=log, first_after_s=0, stack=stack)

    async def started(self, stack: AsyncExitStack) -> None:
        """The first sync (a failure is logged and tried again), then one every `sync_interval_s`."""
        try:
            await self.sync_once()
        except Exception as error:
            log.warning("cannot sync from Airflow at start-up, trying again in %.1fs: %s",
                        self.config.sync_interval_s, error)
        if self.config.sync_interval_s > 0:
            self._sync_task = every(self.config.sync_interval_s, self.sync_once, what="syncing from Airflow", log=log,
                                    stack=stack)

    async def _stop_subscribers(self) -> None:
        """Each finishes its signals in flight and commits, then its run task ends."""
        while self._started:
            await self._started.pop().stop()
        while self._runs:
            with contextlib.suppress(Exception):  # a run task that died: `run_forever` raised its error already
                await cancel_and_wait(self._runs.pop())

    async def run_forever(self) -> None:
        """Block while the subscribers, the poller and the sync run (re-raises if one of them died)."""
        poller = self._poll_task
        if poller is None:
            raise NotStarted("the Airflow bridge")
        while True:
            watched = {poller, *self._runs, *([self._sync_task] if self._sync_task else [])}
            done, _ = await asyncio.wait(watched, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()  # re-raises a failure
                if task is poller or task is self._sync_task:
                    return

    async def handle(self, signal: ReadinessSignal) -> None:
        """Create the signal's Airflow run, backing off while Airflow cannot; raise only if it refuses it."""
        started = time.perf_counter()

        async def attempt() -> CreatedRun:
            try:
                return await trigger_run(self._airflow, signal)
            except AirflowError as error:
                self.metrics.airflow_errors.labels(dag_id=signal.dag_id, kind=error_kind(error)).inc()
                if _airflow_transient(error):
                    with contextlib.suppress(Exception):  # the note is for the operator: the retry does not need it
                        async with translated(), self._engine.begin() as conn:
                            await note_run_problem(conn, signal.run_id, f"waiting for Airflow: {error}")
                raise

        def waiting(error: BaseException, delay: float) -> None:
            log.warning("cannot create the Airflow run of %s (dag %s, partition %s), retrying in %.1fs: %s",
                        signal.run_id, signal.dag_id, signal.partition_key, delay, error)

        created = await retry_until(attempt, self._retry, what=f"the Airflow run of {signal.run_id}",
                                    retriable=_airflow_transient, on_retry=waiting)
        async with translated(), self._engine.begin() as conn:
            await record_external_run(conn, signal.run_id, created.dag_run_id, created.state, CONSUMER)
        outcome = "created" if created.created else "existing"
        self.metrics.airflow_runs.labels(dag_id=signal.dag_id, outcome=outcome).inc()
        self.metrics.trigger_seconds.labels(dag_id=signal.dag_id).observe(time.perf_counter() - started)
        log.info("%s Airflow run %s of %s (partition %s, %d event(s))",
                 "created" if created.created else "found existing", created.dag_run_id, signal.dag_id,
                 signal.partition_key, len(signal.events))


def _airflow_transient(error: BaseException) -> bool:
    """Airflow could not take the run now (down, a 5xx, a login that failed): try again; a refusal is final."""
    return isinstance(error, AirflowError) and not isinstance(error, AirflowRefused)
