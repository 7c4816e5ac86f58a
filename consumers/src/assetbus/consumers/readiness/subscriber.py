"""The readiness subscriber SDK: one consumer DAG's signals, typed, each run handled once.

```python
async def handle(signal: ReadinessSignal) -> None:
    print(signal.partition_key, signal.partition_date, [e.source.run_id for e in signal.events])

async with ReadinessSubscriber(KafkaConnection.from_environ(), "orders_daily", handle,
                               group_id="orders-daily-workers", ledger=DatabaseLedger(database_url)) as subscriber:
    await subscriber.wait_assigned()
    ...
```

Per signal, in order within each Kafka partition: claim the run in the ledger (skip it if it has
finished: a re-published or redelivered signal), run the handler, record `success` (it returned)
or `failed` (it raised). The toolkit's service shell commits a batch's offsets once every signal in
it is recorded. A crash mid-handler leaves the offsets uncommitted and the run `running`: the
signals come again, finished runs are skipped, and the interrupted run is retried (at least once).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from assetbus.consumers.kafka.shell import ConsumerSettings, ServiceShell
from assetbus.consumers.readiness.ledger import RunLedger
from assetbus.consumers.readiness.metrics import SubscriberMetrics
from assetbus.consumers.storage.runs import RunStatus
from assetbus.producers.kafka.connection import KafkaConnection, as_connection
from assetbus.schemas import ReadinessSignal, Topics
from assetbus.schemas.codecs import decode_signal

log = logging.getLogger("assetbus.readiness")

Handler = Callable[[ReadinessSignal], Awaitable[None]]


@dataclass
class SubscriberStats:
    received: int = 0
    processed: int = 0
    failed: int = 0
    duplicates: int = 0
    unreadable: int = 0


class ReadinessSubscriber:
    """Subscribe to `<prefix>.readiness.<dag_id>` in a consumer group. Explicit lifecycle or `async with`."""

    def __init__(self, connection: KafkaConnection | str, dag_id: str, handler: Handler, *, group_id: str,
                 ledger: RunLedger, topics: Topics | None = None, consumer_name: str | None = None,
                 max_records: int = 100, metrics: SubscriberMetrics | None = None) -> None:
        self.topics = topics or Topics()
        self.dag_id = dag_id
        self.topic = self.topics.readiness(dag_id)
        self.group_id = group_id
        self.consumer_name = consumer_name or group_id
        self.stats = SubscriberStats()
        self.metrics = metrics or SubscriberMetrics()
        self._handler = handler
        self._ledger = ledger
        self._max_records = max_records
        self.shell = ServiceShell(
            as_connection(connection),
            # a short long-poll: while a batch is handled, the next fetch of its partition waits behind the
            # long poll on the topic's idle partitions (a fixed wait on the path to the handler)
            ConsumerSettings(topics=(self.topic,), group_id=group_id, max_records=max_records, batch_timeout_ms=500,
                             fetch_max_wait_ms=10),
            self._on_batch, log=log, name=f"assetbus-readiness-{dag_id}", metrics=self.metrics.offsets(dag_id))

    async def start(self) -> None:
        await self._ledger.start()
        try:
            await self.shell.start()
        except BaseException:
            await self._ledger.stop()
            raise

    async def stop(self) -> None:
        """Finish the signals in flight (their offsets are committed), leave the group, close the ledger."""
        try:
            await self.shell.stop()
        finally:
            await self._ledger.stop()

    async def __aenter__(self) -> ReadinessSubscriber:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def wait_assigned(self, timeout_s: float = 30.0) -> None:
        """Wait until the group has given this subscriber its partitions (useful before emitting in tests)."""
        await self.shell.wait_assigned(timeout_s)

    async def run_forever(self) -> None:
        """For scripts: block while the subscriber runs (re-raises if its loop died)."""
        await self.shell.run_forever()

    async def _on_batch(self, records: Sequence[Any]) -> None:
        for record in records:
            await self.handle(record.value)

    async def handle(self, value: bytes | None) -> RunStatus | None:
        """Handle one record value. Returns the run's outcome, or None if it was skipped."""
        outcome = await self._handle(value)
        self.metrics.signals.labels(dag_id=self.dag_id, outcome=outcome).inc()
        return outcome if isinstance(outcome, RunStatus) else None

    async def _handle(self, value: bytes | None) -> RunStatus | str:
        self.stats.received += 1
        try:
            signal = decode_signal(value)
        except ValidationError as error:
            self.stats.unreadable += 1
            log.warning("skipping an unreadable readiness signal on %s: %s", self.topic, error.errors()[0]["msg"])
            return "unreadable"
        if signal.dag_id != self.dag_id:
            self.stats.unreadable += 1
            log.warning("skipping a signal for dag %s on the topic of %s", signal.dag_id, self.dag_id)
            return "unreadable"
        if not await self._ledger.claim(signal.run_id, self.consumer_name):
            self.stats.duplicates += 1
            log.info("run %s of %s has finished already (or is unknown to this database); skipping the signal",
                     signal.run_id, self.dag_id)
            return "duplicate"
        started = time.perf_counter()
        self.metrics.readiness_seconds.labels(dag_id=self.dag_id).observe(
            max(0.0, time.time() - signal.created_at.timestamp()))
        try:
            await self._handler(signal)
        except Exception as error:
            log.exception("handler failed for run %s of %s", signal.run_id, self.dag_id)
            await self._ledger.finish(signal.run_id, RunStatus.FAILED, f"{type(error).__name__}: {error}"[:2000])
            self.stats.failed += 1
            return RunStatus.FAILED
        finally:
            self.metrics.handler_seconds.labels(dag_id=self.dag_id).observe(time.perf_counter() - started)
        await self._ledger.finish(signal.run_id, RunStatus.SUCCESS)
        self.stats.processed += 1
        return RunStatus.SUCCESS
