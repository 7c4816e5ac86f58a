"""`assetbus bench subscriber`: readiness signals handled per second by the SDK's `ReadinessSubscriber` alone
(docs/benchmarks.md, "Readiness subscriber"). The signals are on a fresh readiness topic before it starts; the
handler does nothing, and `MemoryLedger` keeps the leases, so what is measured is the subscriber's own path: fetch,
decode, claim, lease, handler, finish, commit.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiokafka import AIOKafkaProducer

from assetbus.benchmarks.stats import Throughput
from assetbus.consumers.scheduler.topics import create_readiness_topics
from assetbus.producers.kafka.producer import started
from assetbus.producers.readiness import MemoryLedger, ReadinessSubscriber
from assetbus.schemas import Provenance, ReadinessSignal, SourceKind, Topics, TriggeringEvent
from assetbus.schemas.codecs import encode_signal
from assetbus.settings import Settings
from assetbus.topics import delete_topics

DAG_ID = "bench.subscriber"


@dataclass(frozen=True)
class SubscriberBenchOptions:
    signals: int = 20_000
    partitions: int = 3
    """The readiness topic's partitions: the scheduler's default."""
    timeout_s: float = 300.0


@dataclass
class SubscriberReport(Throughput):
    """`events` signals handled in `seconds` (first handler to last), this process using `cpu_s` meanwhile."""

    events: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0
    signal_bytes: int = 0
    counted: dict[str, int] = field(default_factory=dict)

    def figures(self) -> dict[str, float]:
        return {"subscriber_signals_per_s": self.events_per_s, "subscriber_cpu_us_per_signal": self.cpu_us_per_event}


def _signal(i: int, now: datetime) -> bytes:
    event = TriggeringEvent(event_id=i, asset_name="bench.asset", partition_key=f"p{i}", timestamp=now,
                            source=Provenance(kind=SourceKind.TASK, dag_id="bench", run_id="bench-run", task_id="emit",
                                              map_index=-1, try_number=1))
    return encode_signal(ReadinessSignal(run_id=f"run-{i}", dag_id=DAG_ID, partition_key=f"p{i}", generation=1,
                                         events=[event], created_at=now, origin="scheduler"))


async def run_subscriber_benchmark(settings: Settings, options: SubscriberBenchOptions) -> SubscriberReport:
    topics = Topics(prefix=f"bench{uuid.uuid4().hex[:10]}")
    topic = topics.readiness(DAG_ID)
    await create_readiness_topics(settings.kafka, topics, [DAG_ID], partitions=options.partitions)
    report = SubscriberReport()
    marks: list[tuple[float, float]] = []
    done = asyncio.Event()

    async def handle(signal: ReadinessSignal) -> None:
        mark = time.perf_counter(), time.process_time()
        if not marks:
            marks.append(mark)
        report.events += 1
        if report.events == options.signals:
            marks.append(mark)
            done.set()

    try:
        now = datetime.now(UTC)
        async with started(AIOKafkaProducer(**settings.kafka.client_kwargs(), acks="all", linger_ms=20)) as producer:
            values = [_signal(i, now) for i in range(options.signals)]
            report.signal_bytes = len(values[0])
            await asyncio.gather(*[await producer.send(topic, v, key=f"p{i}".encode()) for i, v in enumerate(values)])
        subscriber = ReadinessSubscriber(settings.kafka, DAG_ID, handle, group_id=f"{topics.prefix}-subscriber",
                                         ledger=MemoryLedger(), topics=topics)
        async with subscriber:
            await asyncio.wait_for(done.wait(), options.timeout_s)
        (first_at, first_cpu), (last_at, last_cpu) = marks
        report.seconds, report.cpu_s = last_at - first_at, last_cpu - first_cpu
        report.events -= 1  # the first handler's start is the clock's start
        report.counted = {k: v for k, v in vars(subscriber.stats).items() if v}
    finally:
        await delete_topics(settings.kafka, [topic])
    return report
