"""Commits and rewinds by batch: only the batch's own offsets, only while its partitions are ours."""

from __future__ import annotations

from dataclasses import dataclass

from aiokafka import TopicPartition
from aiokafka.errors import CommitFailedError, IllegalStateError

from assetbus.consumers.persister.metrics import PersisterMetrics
from assetbus.producers.kafka.offsets import Offsets, batch_ranges

T = "t.emissions"


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


class FakeConsumer:
    """The four consumer calls `Offsets` makes, recorded."""

    def __init__(self, assigned: set[TopicPartition], fail_commit: bool = False) -> None:
        self.assigned = assigned
        self.fail_commit = fail_commit
        self.commits: list[dict[TopicPartition, int]] = []
        self.seeks: dict[TopicPartition, int] = {}
        self.revoked_during_seek: set[TopicPartition] = set()

    def assignment(self) -> set[TopicPartition]:
        return self.assigned

    async def commit(self, offsets: dict[TopicPartition, int]) -> None:
        if self.fail_commit:
            raise CommitFailedError("the group rebalanced")
        self.commits.append(offsets)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if tp in self.revoked_during_seek:
            raise IllegalStateError(f"{tp} is not assigned")
        self.seeks[tp] = offset

    def highwater(self, tp: TopicPartition) -> int | None:
        return 100


BATCH = [Record(T, 0, 10), Record(T, 0, 11), Record(T, 1, 5), Record(T, 0, 12), Record(T, 2, 7)]
P0, P1, P2 = (TopicPartition(T, p) for p in range(3))


def offsets(consumer: FakeConsumer, metrics: PersisterMetrics | None = None) -> Offsets:
    kept = Offsets(metrics or PersisterMetrics(), revoke_wait_s=0.1)
    kept.consumer = consumer
    return kept


def test_batch_ranges_are_first_and_last_offset_per_partition() -> None:
    assert batch_ranges(BATCH) == {P0: (10, 12), P1: (5, 5), P2: (7, 7)}


async def test_a_batch_commits_the_offset_after_its_last_record_of_each_assigned_partition() -> None:
    consumer = FakeConsumer({P0, P1})  # P2 went to another member meanwhile
    assert await offsets(consumer).commit(BATCH, generation=0)
    assert consumer.commits == [{P0: 13, P1: 6}]


async def test_a_batch_from_before_a_rebalance_is_not_committed() -> None:
    consumer, metrics = FakeConsumer({P0, P1, P2}), PersisterMetrics()
    kept = offsets(consumer, metrics)
    await kept.on_partitions_assigned({P0, P1, P2})
    assert not await kept.commit(BATCH, generation=0)
    assert consumer.commits == []
    assert metrics.registry.get_sample_value("assetbus_persister_offset_commit_failures_total") == 1


async def test_a_refused_commit_is_reported_not_raised() -> None:
    consumer = FakeConsumer({P0, P1, P2}, fail_commit=True)
    assert not await offsets(consumer).commit(BATCH, generation=0)


def test_a_failed_batch_rewinds_every_partition_still_assigned_even_if_one_was_revoked() -> None:
    consumer = FakeConsumer({P0, P1, P2})
    consumer.revoked_during_seek = {P0}
    offsets(consumer).rewind(BATCH, generation=0)
    assert consumer.seeks == {P1: 5, P2: 7}


async def test_no_rewind_after_a_rebalance_positions_come_from_the_committed_offsets() -> None:
    consumer = FakeConsumer({P0, P1, P2})
    kept = offsets(consumer)
    await kept.on_partitions_assigned({P0})
    kept.rewind(BATCH, generation=0)
    assert consumer.seeks == {}


async def test_lag_counts_records_behind_the_end_of_committed_partitions() -> None:
    consumer, metrics = FakeConsumer({P0, P1, P2}), PersisterMetrics()
    kept = offsets(consumer, metrics)
    await kept.commit(BATCH, generation=0)
    kept.update_lag()
    assert metrics.registry.get_sample_value("assetbus_persister_consumer_lag") == (100 - 13) + (100 - 6) + (100 - 8)
